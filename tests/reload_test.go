package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// writeConfig replaces the file the way editors do: write a temp file in
// the same directory, then rename it over the old one.
func writeConfig(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".config.json.tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// reloadConfig is the given servers with hour-long pings and refreshes.
func reloadConfig(ss servers) cfg {
	return cfg{PingInterval: "1h", RefreshInterval: "1h", Servers: ss}
}

// stdioWithEnv is the go-sdk test upstream with MARKER=marker in its
// environment (changing the marker changes the server's config).
func stdioWithEnv(marker string) upstream {
	return goStdio(upstream{Env: map[string]string{"MARKER": marker}})
}

// TestHotReloadUnderLoad: while calls to an unchanged server run without a
// single error, the file changes (rename-write) to add, remove and change
// servers. Watchers see exactly those changes; the unchanged server is not
// reconnected.
func TestHotReloadUnderLoad(t *testing.T) {
	t.Parallel()
	p := startToolsvc(t, reloadConfig(servers{"keep": stdioWithEnv("1"), "gone": stdioWithEnv("1"), "change": stdioWithEnv("1")}))
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	w := startWatch(t, ctx, p.client, "")
	snap := w.next(t, 10*time.Second)
	cat := map[string]*toolsvcv1.Tool{}
	perServer := 0 // every server runs the same testserver
	for _, tool := range snap.GetSnapshot().GetTools() {
		cat[tool.GetName()] = tool
		if tool.GetServer() == "keep" {
			perServer++
		}
	}

	var calls, failures atomic.Int64
	var firstErr atomic.Value
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for loadCtx.Err() == nil {
				_, err := p.client.CallTool(loadCtx, &toolsvcv1.CallToolRequest{Name: "keep__echo", ArgumentsJson: `{"text": "x"}`})
				if loadCtx.Err() != nil {
					return
				}
				calls.Add(1)
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	writeConfig(t, p.configPath, reloadConfig(servers{"keep": stdioWithEnv("1"), "added": stdioWithEnv("1"), "change": stdioWithEnv("2")}).String())

	// Watch until added's tools are in and change's are available again.
	removedSeen := map[string]bool{}
	deadline := time.Now().Add(20 * time.Second)
	done := func() bool {
		a, c := 0, 0
		for _, tool := range cat {
			switch tool.GetServer() {
			case "added":
				a++
			case "change":
				if tool.GetAvailable() {
					c++
				}
			}
		}
		return a == perServer && c == perServer
	}
	for !done() {
		ev := w.next(t, time.Until(deadline))
		for _, tool := range ev.GetChanges().GetUpserted() {
			if tool.GetServer() == "keep" {
				t.Errorf("unchanged server's tool %s changed: %v", tool.GetName(), tool)
			}
			cat[tool.GetName()] = tool
		}
		for _, name := range ev.GetChanges().GetRemoved() {
			if !strings.HasPrefix(name, "gone__") {
				t.Errorf("unexpected removal of %s", name)
			}
			removedSeen[name] = true
			delete(cat, name)
		}
	}
	stopLoad()
	wg.Wait()
	if len(removedSeen) != perServer {
		t.Errorf("removed %d tools of the removed server, want %d", len(removedSeen), perServer)
	}
	for name := range cat {
		if strings.HasPrefix(name, "gone__") {
			t.Errorf("removed server's tool %s still in the watched catalog", name)
		}
	}
	if f := failures.Load(); f != 0 {
		t.Errorf("%d of %d calls to the unchanged server failed during the reload; first: %v", f, calls.Load(), firstErr.Load())
	}
	if st := serverStatus(t, ctx, p.client, "keep"); st.GetConnectCount() != 1 {
		t.Errorf("unchanged server connect_count = %d, want 1", st.GetConnectCount())
	}
	resp, err := p.client.ListServers(ctx, &toolsvcv1.ListServersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	cs := resp.GetConfig()
	if !cs.GetLastReloadOk() || cs.GetReloadCount() < 1 || strings.Join(cs.GetAdded(), ",") != "added" ||
		strings.Join(cs.GetRemoved(), ",") != "gone" || strings.Join(cs.GetRestarted(), ",") != "change" {
		t.Errorf("config status = %v", cs)
	}
	t.Logf("%d calls to the unchanged server during the reload, %d failed", calls.Load(), failures.Load())
}

// TestInvalidReloadKeepsRunning: a broken edit keeps the old configuration
// running and says why; fixing the file recovers.
func TestInvalidReloadKeepsRunning(t *testing.T) {
	t.Parallel()
	p := startToolsvc(t, reloadConfig(servers{"a": stdioWithEnv("1")}))
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	writeConfig(t, p.configPath, `{"mcpServers": {"a": {"command": 42}, "b": {"url": "ftp://x"}}}`)
	var cs *toolsvcv1.ConfigStatus
	eventually(t, 10*time.Second, "the failed reload to be reported", func() bool {
		resp, err := p.client.ListServers(ctx, &toolsvcv1.ListServersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		cs = resp.GetConfig()
		return cs.GetReloadCount() >= 1
	})
	if cs.GetLastReloadOk() || !strings.Contains(cs.GetLastReloadError(), `server "a": field "command"`) ||
		!strings.Contains(cs.GetLastReloadError(), `server "b": field "url"`) {
		t.Errorf("config status after a broken edit = %v", cs)
	}
	res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "a__ping_me", ArgumentsJson: `{"x": 1}`})
	if err != nil || resultText(res) != "2" {
		t.Fatalf("the old configuration stopped serving: %v, %v", res, err)
	}
	if m := scrape(t, p.adminAddr); !strings.Contains(m, "toolsvc_config_last_reload_success 0") {
		t.Errorf("/metrics does not show the failed reload")
	}
	writeConfig(t, p.configPath, reloadConfig(servers{"a": stdioWithEnv("1"), "b": stdioWithEnv("1")}).String())
	eventually(t, 15*time.Second, "the fixed file to apply", func() bool {
		tools, _ := listAll(t, ctx, p.client, 0)
		return hasTool(tools, "b__echo")
	})
	if m := scrape(t, p.adminAddr); !strings.Contains(m, "toolsvc_config_last_reload_success 1") {
		t.Errorf("/metrics does not show the recovered reload")
	}
	resp, _ := p.client.ListServers(ctx, &toolsvcv1.ListServersRequest{})
	if !resp.GetConfig().GetLastReloadOk() {
		t.Errorf("config status after the fix = %v", resp.GetConfig())
	}
	if st := serverStatus(t, ctx, p.client, "a"); st.GetConnectCount() != 1 {
		t.Errorf("server a reconnected (%d) although its config never changed", st.GetConnectCount())
	}
}

// TestSecretsStaySecret: a secret given through ${ENV} in headers, env and
// a URL appears in no log line, status, error or CLI output, even when the
// upstream prints it and the URL shows up in connection errors.
func TestSecretsStaySecret(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-Value-7f2c9d"
	c := cfg{Servers: servers{
		"talker": {Command: "sh", Args: []string{"-c", `echo "my token is $UPSTREAM_TOKEN" >&2; exec ` + bin.testserver + ` -mode stdio`},
			Env: map[string]string{"UPSTREAM_TOKEN": "${TOOLSVC_TEST_SECRET}"}},
		"remote": {URL: "http://127.0.0.1:1/mcp?token=${TOOLSVC_TEST_SECRET}", Headers: map[string]string{"Authorization": "Bearer ${TOOLSVC_TEST_SECRET}"},
			ConnectTimeout: "1s"},
	}}
	p := startToolsvcEnv(t, c, []string{"TOOLSVC_TEST_SECRET=" + secret})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	// The child got the secret: it said so on stderr (redacted in our log).
	p.log.waitFor(t, regexpMust(`my token is <redacted>`), 10*time.Second)
	var outputs []string
	resp, err := p.client.ListServers(ctx, &toolsvcv1.ListServersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(resp)
	outputs = append(outputs, string(b))
	_, err = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "remote__echo"})
	if err != nil {
		outputs = append(outputs, err.Error())
	}
	for _, args := range [][]string{{"servers"}, {"servers", "--json"}, {"tools", "--json"}} {
		out, _ := execToolsvc(ctx, p.addr, args...)
		outputs = append(outputs, out)
	}
	outputs = append(outputs, p.log.String())
	for _, o := range outputs {
		if strings.Contains(o, secret) {
			t.Fatalf("the secret leaked into:\n%s", o)
		}
	}
	if !strings.Contains(resp.String(), "remote") {
		t.Fatal("ListServers lacks the remote server")
	}
}

// TestReloadWithAuthLeavesServersAlone: with an auth section (whose token
// values are added to every server's redaction list), a reload that only
// adds a server must not restart the others.
func TestReloadWithAuthLeavesServersAlone(t *testing.T) {
	t.Parallel()
	const tok = "reload-token-0123456789"
	withAuth := func(ss servers) cfg {
		c := reloadConfig(ss)
		c.Auth = &authCfg{Tokens: map[string]string{"ops": tok}, Admins: []string{"ops"}}
		return c
	}
	p := startToolsvc(t, withAuth(servers{"a": stdioWithEnv("1")}))
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+tok), defaultTestTimeout)
	defer cancel()
	writeConfig(t, p.configPath, withAuth(servers{"a": stdioWithEnv("1"), "b": stdioWithEnv("1")}).String())
	eventually(t, 15*time.Second, "server b to be added", func() bool {
		tools, _ := listAll(t, ctx, p.client, 0)
		return hasTool(tools, "b__echo")
	})
	resp, err := p.client.ListServers(ctx, &toolsvcv1.ListServersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if cs := resp.GetConfig(); strings.Join(cs.GetRestarted(), ",") != "" || strings.Join(cs.GetAdded(), ",") != "b" {
		t.Errorf("reload with auth: added %v, restarted %v; want added [b], nothing restarted", cs.GetAdded(), cs.GetRestarted())
	}
	if st := serverStatus(t, ctx, p.client, "a"); st.GetConnectCount() != 1 {
		t.Errorf("unchanged server a reconnected (connect_count %d)", st.GetConnectCount())
	}
	// The operator CLI authenticates with --token / $TOOLSVC_TOKEN.
	if out, err := execToolsvc(ctx, p.addr, "reload"); err == nil || !strings.Contains(out, "Unauthenticated") {
		t.Errorf("toolsvc reload without a token = %v\n%s", err, out)
	}
	if out, err := execToolsvc(ctx, p.addr, "reload", "--token", tok); err != nil || !strings.Contains(out, "reloaded") {
		t.Errorf("toolsvc reload --token = %v\n%s", err, out)
	}
	cmd := exec.CommandContext(ctx, bin.toolsvc, "refresh", "--addr", p.addr, "a")
	cmd.Env = append(os.Environ(), "TOOLSVC_TOKEN="+tok)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "a: ready") {
		t.Errorf("TOOLSVC_TOKEN=… toolsvc refresh a = %v\n%s", err, out)
	}
}
