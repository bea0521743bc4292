package tests

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestInteropRuntimeTools runs a TypeScript-SDK server whose tools change at
// runtime (tests/node/runtime_server.mjs) behind toolsvc over stdio and
// streamable HTTP. Its tools/list_changed pushes, sent on the session
// channel (over HTTP: the standalone GET stream) and on the call's own
// response stream, must reach an open WatchCatalog stream; and its
// cancellation-aware sleep tool must see a gRPC caller's deadline.
func TestInteropRuntimeTools(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			var server upstream
			switch transport {
			case "stdio":
				server = upstream{Command: "node", Args: []string{nodePath(t, "runtime_server.mjs"), "stdio"}}
			case "http":
				_, url := startRuntimeHTTP(t)
				server = upstream{URL: url}
			}
			// The backstop refresh is slowed right down: only pushes can
			// bring changes.
			p := startToolsvc(t, cfg{RefreshInterval: "1h", Servers: servers{"rt": server}})
			ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
			defer cancel()

			if transport == "http" {
				// A session-channel push goes to the standalone GET stream,
				// which go-sdk opens in the background after initialize: a
				// push before it is open is lost (docs/upstream-behaviour.md §4). Wait for
				// the server to see it.
				waitRuntimeStats(t, ctx, p.client, "the standalone GET stream", func(s map[string]any) bool {
					return s["get_streams"].(float64) >= 1
				})
			}
			w := startWatch(t, ctx, p.client, "")
			if first := w.next(t, 10*time.Second); first.GetSnapshot() == nil || !hasTool(first.GetSnapshot().GetTools(), "rt__sleep") {
				t.Fatalf("first watch event = %v, want a snapshot with rt__sleep", first)
			}
			connects := serverStatus(t, ctx, p.client, "rt").GetConnectCount()

			for _, via := range []string{"session", "request"} {
				name := "via_" + via
				if got := resultText(callJSON(t, ctx, p.client, "rt__add_tool", fmt.Sprintf(`{"name": %q, "via": %q}`, name, via))); got != "add_tool "+name+" ok" {
					t.Fatalf("add_tool(%s) = %q", name, got)
				}
				tool := w.waitUpsert(t, "rt__"+name, 10*time.Second)
				if !strings.Contains(tool.GetDescription(), via) || !tool.GetAvailable() {
					t.Errorf("pushed tool = %v, want an available tool added via %s", tool, via)
				}
				if got := resultText(callJSON(t, ctx, p.client, "rt__"+name, `{}`)); got != name+" ok" {
					t.Errorf("%s() = %q, want %q", name, got, name+" ok")
				}
				callJSON(t, ctx, p.client, "rt__remove_tool", fmt.Sprintf(`{"name": %q, "via": %q}`, name, via))
				waitRemoved(t, w, "rt__"+name, 10*time.Second)
				if _, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "rt__" + name}); status.Code(err) != codes.NotFound {
					t.Errorf("CallTool(rt__%s) after removal = %v, want NOT_FOUND", name, err)
				}
			}
			if got := serverStatus(t, ctx, p.client, "rt").GetConnectCount(); got != connects {
				t.Errorf("connect_count went from %d to %d: changes must come from pushes, not reconnects", connects, got)
			}

			// The caller's deadline reaches the upstream tool as a
			// cancellation, well before the tool would finish.
			const sleepMS = 60000
			callCtx, callCancel := context.WithTimeout(ctx, time.Second)
			_, err := p.client.CallTool(callCtx, &toolsvcv1.CallToolRequest{Name: "rt__sleep", ArgumentsJson: fmt.Sprintf(`{"ms": %d}`, sleepMS)})
			callCancel()
			if status.Code(err) != codes.DeadlineExceeded {
				t.Fatalf("CallTool(rt__sleep, 60 s) with a 1 s deadline = %v, want DEADLINE_EXCEEDED", err)
			}
			stats := waitRuntimeStats(t, ctx, p.client, "the sleep to be cancelled", func(s map[string]any) bool {
				return slices.ContainsFunc(s["sleeps"].([]any), func(v any) bool { return v.(map[string]any)["cancelled"] == true })
			})
			rec := stats["sleeps"].([]any)[0].(map[string]any)
			// The reason is go-sdk's ctx.Err(): "context deadline exceeded",
			// or "context canceled" when the gRPC client's RST_STREAM at its
			// deadline beats the server's own deadline timer.
			if r := rec["reason"].(string); rec["ms"] != float64(sleepMS) || rec["elapsed_ms"].(float64) >= sleepMS ||
				(r != context.DeadlineExceeded.Error() && r != context.Canceled.Error()) {
				t.Errorf("sleep record = %v, want ms %d cancelled early by a context error", rec, sleepMS)
			}
			t.Logf("%s: the upstream sleep saw the caller's 1 s deadline after %v ms (reason %q)", transport, rec["elapsed_ms"], rec["reason"])
		})
	}
}

// waitRuntimeStats polls runtime_server.mjs's stats tool through toolsvc
// until cond holds.
func waitRuntimeStats(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient, what string, cond func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := callJSON(t, ctx, c, "rt__stats", `{}`).GetStructuredContent().AsMap()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s; stats %v", what, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitRemoved waits for a changes event that removes the named tool.
func waitRemoved(t *testing.T, w *watcher, name string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ev := w.next(t, time.Until(deadline))
		if slices.Contains(ev.GetChanges().GetRemoved(), name) {
			return
		}
	}
}
