package tests

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/config"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// TestRealWorldConfigFiles: files as Claude Desktop, Cursor and VS Code
// write them, and toolsvc's YAML, load unchanged into what a user expects.
func TestRealWorldConfigFiles(t *testing.T) {
	secretFile := filepath.Join(t.TempDir(), "api_key")
	if err := os.WriteFile(secretFile, []byte("file-secret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("INTERNAL_TOOLS_TOKEN", "env-secret-value")
	type want struct {
		transport mcpbridge.Transport
		command   string
		url       string
	}
	tests := []struct {
		file  string
		patch func([]byte) []byte
		want  map[string]want
		check func(t *testing.T, byName map[string]mcpbridge.ServerConfig, c *config.Config)
	}{
		{file: "claude_desktop_config.json", want: map[string]want{
			"filesystem": {mcpbridge.TransportStdio, "npx", ""}, "github": {mcpbridge.TransportStdio, "npx", ""},
			"fetch": {mcpbridge.TransportStdio, "uvx", ""}, "sqlite": {mcpbridge.TransportStdio, "uvx", ""},
		}, check: func(t *testing.T, s map[string]mcpbridge.ServerConfig, _ *config.Config) {
			if s["github"].Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "ghp_exampleexampleexample" || len(s["filesystem"].Args) != 4 {
				t.Errorf("claude: github env %v, filesystem args %v", s["github"].Env, s["filesystem"].Args)
			}
		}},
		{file: "cursor_mcp.json", patch: func(b []byte) []byte {
			return []byte(strings.ReplaceAll(string(b), "/run/secrets/api_key", secretFile))
		}, want: map[string]want{
			"linear":         {mcpbridge.TransportStreamableHTTP, "", "https://mcp.linear.app/mcp"},
			"internal-tools": {mcpbridge.TransportStreamableHTTP, "", "http://localhost:3000/mcp"},
			"local-script":   {mcpbridge.TransportStdio, "node", ""},
		}, check: func(t *testing.T, s map[string]mcpbridge.ServerConfig, _ *config.Config) {
			if got := s["internal-tools"].Headers["Authorization"]; got != "Bearer env-secret-value" {
				t.Errorf("cursor: ${ENV} header resolved to %q", got)
			}
			if got := s["local-script"].Env["API_KEY"]; got != "file-secret-value" {
				t.Errorf("cursor: ${file:} env resolved to %q", got)
			}
			if !slices.Contains(s["internal-tools"].Secrets, "env-secret-value") || !slices.Contains(s["local-script"].Secrets, "file-secret-value") {
				t.Errorf("resolved secrets are not recorded for redaction")
			}
		}},
		{file: "vscode_mcp.json", want: map[string]want{
			"playwright": {mcpbridge.TransportStdio, "npx", ""},
			"github":     {mcpbridge.TransportStreamableHTTP, "", "https://api.githubcopilot.com/mcp/"},
			"legacy":     {mcpbridge.TransportSSE, "", "http://localhost:8931/sse"},
		}},
		{file: "toolsvc.yaml", want: map[string]want{
			"everything": {mcpbridge.TransportStdio, "npx", ""},
			"remote":     {mcpbridge.TransportStreamableHTTP, "", "http://127.0.0.1:3000/mcp"},
		}, check: func(t *testing.T, s map[string]mcpbridge.ServerConfig, c *config.Config) {
			r := s["remote"]
			if c.Bridge.CallTimeout != time.Minute || c.Bridge.PingInterval != 10*time.Second || r.NamePrefix != "rt" ||
				r.Breaker.Failures != 5 || r.BackoffBase != 500*time.Millisecond || s["everything"].MaxConcurrentCalls != 16 ||
				!slices.Equal(s["everything"].ToolsDeny, []string{"trigger-*"}) {
				t.Errorf("yaml: %+v / %+v", c.Bridge, r)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if tt.patch != nil {
				data = tt.patch(data)
			}
			c, err := config.Parse(tt.file, data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(c.Warnings) != 0 {
				t.Errorf("warnings: %q", c.Warnings)
			}
			byName := map[string]mcpbridge.ServerConfig{}
			for _, s := range c.Bridge.Servers {
				byName[s.Name] = s
			}
			if len(byName) != len(tt.want) {
				t.Fatalf("servers %v, want %v", byName, tt.want)
			}
			for name, w := range tt.want {
				s, ok := byName[name]
				if !ok || s.Transport != w.transport || s.Command != w.command || s.URL != w.url {
					t.Errorf("server %q = %+v, want %+v", name, s, w)
				}
			}
			if tt.check != nil {
				tt.check(t, byName, c)
			}
		})
	}
}
