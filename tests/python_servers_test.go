package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestSeedPushVictimPython is the founding scenario run as written: the
// seed's push-victim FastMCP server (tests/python/seed_push_victim.py, the
// seed's SERVER_SRC byte for byte; docs/interop.md has its provenance) under
// the Python SDK release it was written for (mcp 1.30.0, .venv/mcp1), over
// streamable HTTP, with the seed's three assertions made through toolsvc's
// gRPC API:
//   - the triggering call (register_extra, which pushes tools/list_changed
//     while in flight) returns promptly;
//   - the pushed tool lands on the same session (connect_count stays 1);
//   - the new tool dispatches (extra_tool y=21 -> 42).
func TestSeedPushVictimPython(t *testing.T) {
	port := freePort(t)
	script := filepath.Join(rootDir(t), "tests", "python", "seed_push_victim.py")
	srv := startProc(t, exec.Command(venvBin(t, "mcp1", "python"), script, fmt.Sprint(port)))
	waitTCP(t, fmt.Sprintf("127.0.0.1:%d", port), 30*time.Second, srv)

	// As the seed: connect bounded at 5 s, the health loop slowed right
	// down (30 s) and no backstop re-list, so only the push itself can
	// bring the new tool, on the original session.
	p := startToolsvc(t, cfg{Servers: servers{"push": goHTTP(fmt.Sprintf("http://127.0.0.1:%d/mcp", port),
		upstream{ConnectTimeout: "5s", PingInterval: "30s", RefreshInterval: "1h"})}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()

	w := startWatch(t, ctx, p.client, "")
	first := w.next(t, 10*time.Second)
	if first.GetSnapshot() == nil {
		t.Fatalf("first watch event = %v, want a snapshot", first)
	}
	if !hasTool(first.GetSnapshot().GetTools(), "push__register_extra") {
		t.Fatalf("initial connect: the catalog lacks push__register_extra: %v", first.GetSnapshot().GetTools())
	}
	if hasTool(first.GetSnapshot().GetTools(), "push__extra_tool") {
		t.Fatal("extra_tool must not exist before the push")
	}
	before := serverStatus(t, ctx, p.client, "push")
	if before.GetState() != toolsvcv1.ServerState_SERVER_STATE_READY || before.GetConnectCount() != 1 {
		t.Fatalf("before the push: state %v connect_count %d, want READY and 1", before.GetState(), before.GetConnectCount())
	}

	// 1. The triggering call returns promptly (the seed allows 10 s).
	start := time.Now()
	callCtx, callCancel := context.WithTimeout(ctx, 10*time.Second)
	res, err := p.client.CallTool(callCtx, &toolsvcv1.CallToolRequest{Name: "push__register_extra"})
	callCancel()
	callTook := time.Since(start)
	if err != nil {
		t.Fatalf("CallTool(push__register_extra) = %v; the triggering call must return", err)
	}
	if got := resultText(res); !strings.Contains(got, "registered") {
		t.Fatalf("CallTool(push__register_extra) = %q, want it to contain \"registered\"", got)
	}

	// 2. The push lands (the seed allows 8 s), on the same session.
	took, ok := waitUpsertWithin(w, "push__extra_tool", 8*time.Second)
	if !ok {
		t.Fatal("the pushed tools/list_changed never brought push__extra_tool to the watch")
	}
	tools, _ := listAll(t, ctx, p.client, 0)
	if !hasTool(tools, "push__extra_tool") {
		t.Fatal("ListTools lacks push__extra_tool after the watch delivered it")
	}
	after := serverStatus(t, ctx, p.client, "push")
	if after.GetConnectCount() != 1 {
		t.Fatalf("connect_count = %d, want 1: the catalog came from a reconnect, not the push", after.GetConnectCount())
	}

	// 3. The new tool dispatches.
	args, _ := structpb.NewStruct(map[string]any{"y": 21})
	res, err = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "push__extra_tool", Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(push__extra_tool) = %v", err)
	}
	if got := resultText(res); !strings.Contains(got, "42") {
		t.Fatalf("CallTool(push__extra_tool, y=21) = %q, want it to contain 42", got)
	}
	t.Logf("seed on mcp 1.30.0 (%s): triggering call %v, pushed tool on the watch %v after the call returned, connect_count %d",
		after.GetProtocolVersion(), callTook.Round(time.Millisecond), took.Round(time.Millisecond), after.GetConnectCount())
}

// TestPyPIServers runs MCP servers users install from PyPI (pinned in
// scripts/python/mcp.txt) as stdio upstreams, both through the venv's
// entry point and through a shell wrapper of the shape `uvx`/`npx` configs
// have (a process that execs the server), and lists and calls their tools.
func TestPyPIServers(t *testing.T) {
	t.Parallel()
	timeBin := venvBin(t, "mcp", "mcp-server-time")
	gitBin := venvBin(t, "mcp", "mcp-server-git")

	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "t@example.invalid"}, {"config", "user.name", "t"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "untracked-marker.txt"), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	wrap := func(bin string, args ...string) upstream {
		line := "exec " + bin
		for _, a := range args {
			line += " '" + a + "'"
		}
		return upstream{Command: "sh", Args: []string{"-c", line}}
	}
	direct := func(bin string, args ...string) upstream {
		return upstream{Command: bin, Args: args}
	}
	// connectTimeout: four Python interpreters start at once, which took
	// over 10 s on a loaded 2-core box.
	p := startToolsvc(t, cfg{ConnectTimeout: "20s", Servers: servers{
		"time": direct(timeBin, "--local-timezone", "UTC"), "timesh": wrap(timeBin, "--local-timezone", "UTC"),
		"git": direct(gitBin, "--repository", repo), "gitsh": wrap(gitBin, "--repository", repo)}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()

	tools, _ := listAll(t, ctx, p.client, 0)
	for _, want := range []string{"time__get_current_time", "time__convert_time", "timesh__get_current_time", "git__git_status", "git__git_log", "gitsh__git_status"} {
		if !hasTool(tools, want) {
			t.Errorf("ListTools lacks %s", want)
		}
	}
	for _, srv := range []string{"time", "timesh"} {
		t.Run(srv, func(t *testing.T) {
			res := callJSON(t, ctx, p.client, srv+"__get_current_time", `{"timezone": "UTC"}`)
			if res.GetIsError() {
				t.Fatalf("get_current_time: tool error %q", resultText(res))
			}
			var got struct {
				Timezone string `json:"timezone"`
				Datetime string `json:"datetime"`
			}
			if err := json.Unmarshal([]byte(resultText(res)), &got); err != nil {
				t.Fatalf("get_current_time text %q: %v", resultText(res), err)
			}
			at, err := time.Parse(time.RFC3339, got.Datetime)
			if got.Timezone != "UTC" || err != nil || time.Since(at).Abs() > time.Minute {
				t.Fatalf("get_current_time = %+v (parse: %v), want UTC and now", got, err)
			}
		})
	}
	for _, srv := range []string{"git", "gitsh"} {
		t.Run(srv, func(t *testing.T) {
			res := callJSON(t, ctx, p.client, srv+"__git_status", fmt.Sprintf(`{"repo_path": %s}`, jsonString(repo)))
			if got := resultText(res); res.GetIsError() || !strings.Contains(got, "untracked-marker.txt") {
				t.Fatalf("git_status = %q (is_error %v), want the untracked file listed", got, res.GetIsError())
			}
		})
	}
	for _, srv := range []string{"time", "timesh", "git", "gitsh"} {
		st := serverStatus(t, ctx, p.client, srv)
		t.Logf("%s: %v, protocol %s, %d tools", srv, st.GetState(), st.GetProtocolVersion(), st.GetToolCount())
	}
}
