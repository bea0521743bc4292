package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLICallThroughStdioAndHTTP: `toolsvc call` reaches a configured
// stdio upstream and a configured HTTP upstream, as a new user would.
func TestCLICallThroughStdioAndHTTP(t *testing.T) {
	t.Parallel()
	url := startHTTPUpstream(t)
	p := startToolsvc(t, cfg{Servers: servers{
		"local":  goStdio(upstream{}),
		"remote": goHTTP(url, upstream{Headers: map[string]string{"Authorization": "Bearer not-to-be-logged"}}),
	}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, bin.toolsvc, append(args[:1:1], append([]string{"--addr", p.addr}, args[1:]...)...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("toolsvc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if got := run("call", "local__ping_me", `{"x": 41}`); strings.TrimSpace(got) != "42" {
		t.Errorf("call local__ping_me = %q, want 42", got)
	}
	if got := run("call", "remote__ping_me", `{"x": 1}`); strings.TrimSpace(got) != "2" {
		t.Errorf("call remote__ping_me = %q, want 2", got)
	}
	tools := run("tools")
	for _, want := range []string{"local__echo", "remote__register_extra"} {
		if !strings.Contains(tools, want) {
			t.Errorf("toolsvc tools lacks %s:\n%s", want, tools)
		}
	}
	// search: the query's words and flags in any order; --server narrows.
	found := run("search", "register", "--limit", "3", "extra")
	if !strings.Contains(found, "remote__register_extra") {
		t.Errorf("toolsvc search register extra:\n%s", found)
	}
	if only := run("search", "--server", "local", "echo", "text"); !strings.Contains(only, "local__echo") || strings.Contains(only, "remote__") {
		t.Errorf("toolsvc search --server local echo text:\n%s", only)
	}
	servers := run("servers")
	if !strings.Contains(servers, "remote") || !strings.Contains(servers, "ready") {
		t.Errorf("toolsvc servers:\n%s", servers)
	}
	if strings.Contains(p.log.String(), "not-to-be-logged") {
		t.Error("an upstream header value appeared in toolsvc's log")
	}
}

// TestServeRejectsInvalidConfig: serve exits non-zero and names the file,
// the server and the field.
func TestServeRejectsInvalidConfig(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"broken": {"args": ["x"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin.toolsvc, "serve", "--config", path, "--listen", "127.0.0.1:0").CombinedOutput()
	if err == nil {
		t.Fatalf("serve with an invalid config exited 0:\n%s", out)
	}
	for _, want := range []string{path, `server "broken"`, `field "command"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("serve output lacks %q:\n%s", want, out)
		}
	}
	out, err = exec.Command(bin.toolsvc, "config", "check", path).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `field "command"`) {
		t.Errorf("config check = %v:\n%s", err, out)
	}
}
