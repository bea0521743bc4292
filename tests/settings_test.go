package tests

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestSettingsFileFlagsAndReload: serve's settings have one name, their
// key in the file's serve section, and a flag only overrides it. A real
// toolsvc reads serve.logLevel and serve.maxRequestBytes from the file,
// with --max-request-bytes overriding the latter; a reload (the file
// rewritten, as editors do) that changes one live setting
// (serve.logLevel), one restart-only setting (serve.mcpPageSize) and the
// overridden one reports each as what it is, in ReloadConfig's status and
// in the log, and the live one takes effect.
func TestSettingsFileFlagsAndReload(t *testing.T) {
	t.Parallel()
	file := func(level string, pageSize, maxReq int) cfg {
		c := reloadConfig(servers{"up": goStdio(upstream{})})
		c.Serve = map[string]any{"logLevel": level, "mcpPageSize": pageSize, "maxRequestBytes": maxReq}
		return c
	}
	p := startToolsvc(t, file("warn", 7, 1000), "--max-request-bytes", "200000")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()

	// The flag wins over the file's 1000 bytes, and is the limit in force.
	big := `{"text": "` + strings.Repeat("x", 5000) + `"}`
	if res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__echo", ArgumentsJson: big}); err != nil || len(resultText(res)) != 5000 {
		t.Fatalf("a 5 kB call under --max-request-bytes 200000 (file: 1000) = %v, %v", res, err)
	}
	_, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__echo", ArgumentsJson: `{"text": "` + strings.Repeat("x", 300000) + `"}`})
	if ei := wantStatus(t, err, codes.ResourceExhausted, "REQUEST_TOO_LARGE", "", ""); ei.GetMetadata()["limit_bytes"] != "200000" {
		t.Errorf("the limit in force is %s, want the flag's 200000", ei.GetMetadata()["limit_bytes"])
	}
	// serve.logLevel "warn" from the file: the first listing's debug line
	// is not logged.
	if strings.Contains(p.log.String(), "tools listed") {
		t.Fatalf("a debug line was logged under serve.logLevel warn:\n%s", p.log.String())
	}

	writeConfig(t, p.configPath, file("debug", 3, 2000).String())
	var cs *toolsvcv1.ConfigStatus
	eventually(t, 20*time.Second, "the reload to be reported", func() bool {
		resp, err := p.client.ListServers(ctx, &toolsvcv1.ListServersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		cs = resp.GetConfig()
		return cs.GetReloadCount() >= 1
	})
	if !cs.GetLastReloadOk() {
		t.Fatalf("reload failed: %s", cs.GetLastReloadError())
	}
	if got := cs.GetAppliedSettings(); !slices.Equal(got, []string{"serve.logLevel"}) {
		t.Errorf("applied_settings = %q, want [serve.logLevel]", got)
	}
	if got := cs.GetRestartSettings(); !slices.Equal(got, []string{"serve.mcpPageSize"}) {
		t.Errorf("restart_settings = %q, want [serve.mcpPageSize]", got)
	}
	if !slices.ContainsFunc(cs.GetWarnings(), func(w string) bool {
		return strings.Contains(w, "serve.maxRequestBytes changed, but --max-request-bytes overrides it")
	}) {
		t.Errorf("no warning that --max-request-bytes overrides the changed serve.maxRequestBytes: %q", cs.GetWarnings())
	}
	p.log.waitFor(t, regexp.MustCompile(`config reloaded.*applied="?\[serve\.logLevel\]"?.*needs_restart="?\[serve\.mcpPageSize\]`), 10*time.Second)

	// serve.logLevel applied: a refresh's debug line is logged now.
	admin := toolsvcv1.NewAdminServiceClient(grpcConn(t, p.addr))
	if _, err := admin.RefreshServer(ctx, &toolsvcv1.RefreshServerRequest{Name: "up"}); err != nil {
		t.Fatal(err)
	}
	p.log.waitFor(t, regexp.MustCompile(`tools listed`), 10*time.Second)
	// The override still holds: the file's 2000 bytes are not in force.
	if _, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__echo", ArgumentsJson: big}); err != nil {
		t.Errorf("a 5 kB call after the reload: %v (the flag's 200000 bytes should stay in force)", err)
	}
}

// TestConfigCheckKnowsEverySetting: toolsvc config check refuses a key it
// does not know, naming it (serve itself only warns of an unknown
// top-level key, which other programs' files carry, but refuses one in
// its own serve section), refuses a bad setting naming the key and its
// flag, and sorts the settings a valid file sets by whether a reload
// applies them.
func TestConfigCheckKnowsEverySetting(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	dir := t.TempDir()
	check := func(body string) (string, error) {
		path := filepath.Join(dir, "c.json")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(ctx, bin.toolsvc, "config", "check", path).CombinedOutput()
		return string(out), err
	}
	for _, c := range []struct{ body, want string }{
		{`{"mcpServers": {}, "serve": {"listne": ":1"}}`, `field "serve.listne": unknown key "listne"`},
		{`{"mcpServers": {}, "callTimeuot": "1s"}`, `unknown key "callTimeuot"`},
		{`{"mcpServers": {"a": {"command": "x", "pingIntervall": "1s"}}}`, `unknown key "mcpServers.a.pingIntervall"`},
		{`{"mcpServers": {}, "serve": {"mcpDiscovery": "partial"}}`, `serve.mcpDiscovery (--mcp-discovery): "partial" is neither full nor progressive`},
		{`{"mcpServers": {}, "serve": {"maxWaiting": "lots"}}`, `field "serve.maxWaiting": want a whole number`},
	} {
		out, err := check(c.body)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out, c.want) {
			t.Errorf("config check %s = %v:\n%s\nwant exit status 1 naming %s", c.body, err, out, c.want)
		}
	}
	out, err := check(`{"mcpServers": {}, "callTimeout": "5s", "serve": {"logLevel": "debug", "listen": ":1"}}`)
	if err != nil {
		t.Fatalf("config check of a valid file: %v\n%s", err, out)
	}
	for _, want := range []string{"a reload applies changes to: mcpServers, callTimeout, serve.logLevel", "changes need a restart: serve.listen"} {
		if !strings.Contains(out, want) {
			t.Errorf("config check output lacks %q:\n%s", want, out)
		}
	}
}
