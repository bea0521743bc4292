package server

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/config"
)

// TestSettingsCoverServe: Settings has one row per key of the serve
// section, in its order, each with its own flag; FileSettings and the
// serve section are every top-level key config knows; and a flag set
// on the command line is recorded as overriding its key.
func TestSettingsCoverServe(t *testing.T) {
	var keys, flags []string
	for _, s := range Settings {
		keys = append(keys, s.Key)
		if slices.Contains(flags, s.Flag) {
			t.Errorf("flag --%s overrides two settings", s.Flag)
		}
		flags = append(flags, s.Flag)
	}
	if want := config.ServeKeys(); !slices.Equal(keys, want) {
		t.Errorf("Settings keys = %q\nconfig.Serve keys = %q", keys, want)
	}
	top := []string{"serve"}
	for _, s := range FileSettings {
		top = append(top, s.Key)
	}
	slices.Sort(top)
	if want := config.TopKeys(); !slices.Equal(top, want) {
		t.Errorf("FileSettings and serve = %q\nconfig's top-level keys = %q", top, want)
	}
	c, err := parseFlags([]string{"--max-waiting", "9", "--mcp-core-tools", "a*, b", "--drain-timeout", "3s"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Serve.MaxWaiting != 9 || !slices.Equal(c.Serve.MCPCoreTools, []string{"a*", "b"}) || c.Serve.ShutdownTimeout.String() != "3s" {
		t.Errorf("parsed settings: maxWaiting %d, mcpCoreTools %q, shutdownTimeout %s", c.Serve.MaxWaiting, c.Serve.MCPCoreTools, c.Serve.ShutdownTimeout)
	}
	if want := map[string]string{"maxWaiting": "--max-waiting", "mcpCoreTools": "--mcp-core-tools", "shutdownTimeout": "--drain-timeout"}; !maps.Equal(c.Overrides, want) {
		t.Errorf("overrides = %v, want %v", c.Overrides, want)
	}
}

// TestEffectiveSettings: a key the file sets applies unless a flag
// overrides it; a key the file leaves out keeps its default.
func TestEffectiveSettings(t *testing.T) {
	c, err := config.Parse("c.json", []byte(`{"mcpServers": {}, "serve": {"maxWaiting": 10, "logLevel": "debug", "mcpAllowedHosts": ["a", "b"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	base, err := parseFlags([]string{"--log-level", "warn"})
	if err != nil {
		t.Fatal(err)
	}
	s := effective(base, c)
	if s.MaxWaiting != 10 || s.LogLevel != "warn" || !slices.Equal(s.MCPAllowedHosts, []string{"a", "b"}) || s.Listen != ":50051" {
		t.Errorf("effective: maxWaiting %d (want the file's 10), logLevel %q (want the flag's warn), mcpAllowedHosts %q, listen %q (want the default)",
			s.MaxWaiting, s.LogLevel, s.MCPAllowedHosts, s.Listen)
	}
	if err := validate(&s); err == nil || !strings.Contains(err.Error(), "serve.maxWaitingPerPrincipal (--max-waiting-per-principal) must not exceed serve.maxWaiting (--max-waiting)") {
		t.Errorf("validate: %v, want the per-principal share over the pool named", err)
	}
}
