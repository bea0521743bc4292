package tests

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// frontClientReport is what tests/node/front_client.mjs and
// tests/python/front_client.py print.
type frontClientReport struct {
	Protocol       any       `json:"protocol"`
	Names          []string  `json:"names"`
	Echo           string    `json:"echo"`
	ProgressResult string    `json:"progress_result"`
	Progress       []float64 `json:"progress"`
	BadArgsIsError bool      `json:"bad_args_is_error"`
	BadArgsText    string    `json:"bad_args_text"`
	Cancelled      bool      `json:"cancelled"`
	ListChanged    bool      `json:"list_changed"`
	NamesAfter     []string  `json:"names_after"`
}

// TestMCPFrontSDKClients: the TypeScript SDK's client (streamable HTTP and
// legacy SSE) and the Python SDK's client (2026-07-28 stateless and a
// 2025-11-25 session) each list the names ListTools has (paged), call,
// get progress, cancel a call the upstream then sees cancelled, and get
// list_changed after an upstream adds a tool. Their plain calls (echo,
// the bad arguments, the call they cancel, add_tool) are answered as JSON
// and handled on the POST's own goroutine (the go-sdk patch's inline
// path, toolsvc_front_calls_inline_total; add_tool may instead wait
// behind the client's notifications/cancelled), cancellation included; the
// legacy SSE transport never takes it.
func TestMCPFrontSDKClients(t *testing.T) {
	t.Parallel()
	p, base := startFrontFixture(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := nodePath(t, node22)
	py := venvBin(t, "mcp", "python")
	for _, tc := range []struct {
		name string
		cmd  func() *exec.Cmd
	}{
		{"ts-streamable", func() *exec.Cmd {
			return exec.CommandContext(ctx, node, filepath.Join(bin.nodeDir, "front_client.mjs"), base, "streamable", "streamable")
		}},
		{"ts-sse", func() *exec.Cmd {
			return exec.CommandContext(ctx, node, filepath.Join(bin.nodeDir, "front_client.mjs"), base, "sse", "sse")
		}},
		{"py-2026-07-28", func() *exec.Cmd {
			return exec.CommandContext(ctx, py, filepath.Join(rootDir(t), "tests", "python", "front_client.py"), base+"/mcp", "auto", "auto")
		}},
		{"py-2025-11-25", func() *exec.Cmd {
			return exec.CommandContext(ctx, py, filepath.Join(rootDir(t), "tests", "python", "front_client.py"), base+"/mcp", "legacy", "legacy")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := grpcToolNames(t, ctx, p)
			inline := metricValue(t, p, "toolsvc_front_calls_inline_total")
			cmd := tc.cmd()
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", tc.name, err, out, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			var r frontClientReport
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
				t.Fatalf("report %q: %v", out, err)
			}
			t.Logf("protocol %v, progress %v, bad arguments: %q", r.Protocol, r.Progress, r.BadArgsText)
			// echo, the bad arguments, wait_cancel and add_tool (which
			// the Python client may send twice); the progress call streams.
			// add_tool follows the client's notifications/cancelled for
			// wait_cancel, which the front door answers 202 once queued,
			// not once handled: go-sdk handles a notification in order,
			// before anything read after it, so an add_tool arriving while
			// it is still being handled waits behind it (queued, not
			// inline). Nothing else is sent just before a plain call.
			switch n := metricValue(t, p, "toolsvc_front_calls_inline_total") - inline; {
			case tc.name == "ts-sse" && n != 0:
				t.Errorf("legacy SSE: %v calls handled inline, want none", n)
			case tc.name != "ts-sse" && (n < 3 || n > 5):
				t.Errorf("%v calls handled inline, want the 4 plain calls (5 with add_tool sent again; one fewer when add_tool waits behind notifications/cancelled)", n)
			}
			if !slices.Equal(r.Names, want) {
				t.Errorf("tools/list names:\n got %v\nwant %v (ListTools)", r.Names, want)
			}
			if !strings.HasSuffix(r.Echo, tc.name[strings.IndexByte(tc.name, '-')+1:]) && r.Echo == "" {
				t.Errorf("echo = %q", r.Echo)
			}
			// Later steps may race the result at the bridge (see
			// TestMCPFrontGoClient): the first always arrives.
			if r.ProgressResult != "3 steps" || len(r.Progress) < 1 || len(r.Progress) > 3 || !slices.Equal(r.Progress, []float64{1, 2, 3}[:len(r.Progress)]) {
				t.Errorf("progress call: result %q, progress %v; want 3 steps and progress 1[, 2[, 3]]", r.ProgressResult, r.Progress)
			}
			if !r.BadArgsIsError || !strings.Contains(r.BadArgsText, "arguments.text") {
				t.Errorf("bad arguments: isError %v %q, want a tool error naming arguments.text", r.BadArgsIsError, r.BadArgsText)
			}
			if !r.Cancelled {
				t.Error("the aborted call was not cancelled at the client")
			}
			prefix := map[byte]string{'t': "fd-ts-", 'p': "fd-py-"}[tc.name[0]]
			tag := map[string]string{"ts-streamable": "streamable", "ts-sse": "sse", "py-2026-07-28": "auto", "py-2025-11-25": "legacy"}[tc.name]
			rec := waitCancelRecord(t, ctx, p.client, "s", prefix+tag, 10*time.Second)
			if rec.cancelled.IsZero() {
				t.Errorf("upstream record %+v: the call was not cancelled upstream", rec)
			}
			added := map[byte]string{'t': "h__ts_", 'p': "h__py_"}[tc.name[0]] + tag
			if !r.ListChanged {
				t.Error("no notifications/tools/list_changed after the upstream added a tool")
			}
			if !slices.Contains(r.NamesAfter, added) {
				t.Errorf("tools/list after the change lacks %s", added)
			}
		})
	}
}
