package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// hostileFileRefs are ${file:} targets that must be refused: devices, a
// FIFO nobody writes, a /proc pseudo-file that holds the process's own
// environment, and a regular file over the 1 MiB limit.
func hostileFileRefs(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 1<<20+1), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"/dev/zero":          "not a regular file (a character device)",
		"/dev/stdin":         "not a regular file",
		fifo:                 "not a regular file (a FIFO)",
		"/proc/self/environ": "pseudo-file",
		big:                  "larger than the 1 MiB limit",
	}
}

// TestConfigCheckRefusesHostileFileRefs: `toolsvc config check` refuses
// each hostile ${file:} at once, naming the file, the server, the field
// and its line, and exits with an error (not killed, not hung).
func TestConfigCheckRefusesHostileFileRefs(t *testing.T) {
	t.Parallel()
	for target, want := range hostileFileRefs(t) {
		t.Run(filepath.Base(target), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.json")
			cfg := fmt.Sprintf("{\"mcpServers\": {\n  \"a\": {\"command\": \"x\",\n    \"env\": {\"TOKEN\": \"${file:%s}\"}}}}", target)
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin.toolsvc, "config", "check", path).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("config check = %v (want exit status 1):\n%s", err, out)
			}
			line := fmt.Sprintf(`%s:3: server "a": field "env.TOKEN": ${file:%s}: `, path, target)
			if !strings.Contains(string(out), line) || !strings.Contains(string(out), want) {
				t.Errorf("config check output lacks %q … %q:\n%s", line, want, out)
			}
		})
	}
}

// TestReloadRefusesHostileFileRefs: a running toolsvc whose config file is
// edited (and SIGHUPed) to reference each hostile file keeps its running
// configuration and stays up; the refusal is in its log and in
// ListServers' configuration status.
func TestReloadRefusesHostileFileRefs(t *testing.T) {
	t.Parallel()
	good := reloadConfig(servers{"a": stdioWithEnv("1")})
	p := startToolsvc(t, good)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	reloads := int64(0)
	for target, want := range hostileFileRefs(t) {
		bad := reloadConfig(servers{"a": stdioWithEnv("${file:" + target + "}")})
		writeConfig(t, p.configPath, bad.String())
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		var cs *toolsvcv1.ConfigStatus
		eventually(t, 20*time.Second, "the reload of ${file:"+target+"} to be refused", func() bool {
			resp, err := p.client.ListServers(ctx, &toolsvcv1.ListServersRequest{})
			if err != nil {
				t.Fatalf("ListServers after referencing %s: %v", target, err)
			}
			cs = resp.GetConfig()
			return cs.GetReloadCount() > reloads && strings.Contains(cs.GetLastReloadError(), "${file:"+target+"}")
		})
		reloads = cs.GetReloadCount()
		if cs.GetLastReloadOk() || !strings.Contains(cs.GetLastReloadError(), `server "a": field "env.MARKER"`) ||
			!strings.Contains(cs.GetLastReloadError(), want) {
			t.Errorf("config status after referencing %s = %v, want a refusal naming the field and saying %q", target, cs, want)
		}
		p.log.waitFor(t, regexp.MustCompile(`config reload failed; keeping the running configuration.*`+regexp.QuoteMeta("${file:"+target+"}")), 10*time.Second)
		res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "a__ping_me", ArgumentsJson: `{"x": 1}`})
		if err != nil || resultText(res) != "2" {
			t.Fatalf("after referencing %s the running configuration stopped serving: %v, %v", target, res, err)
		}
		select {
		case <-p.exited():
			t.Fatalf("toolsvc exited after referencing %s: %v", target, p.exitErr())
		default:
		}
	}
	if st := serverStatus(t, ctx, p.client, "a"); st.GetConnectCount() != 1 {
		t.Errorf("server a reconnected (%d times) although no reload applied", st.GetConnectCount())
	}
}
