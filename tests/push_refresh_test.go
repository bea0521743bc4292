package tests

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestPushRefreshNoWedge is the founding scenario (shared/seed): an upstream
// registers a tool inside a tool call and pushes tools/list_changed on the
// live session while that call is in flight. The triggering call must
// return, the new tool must reach ListTools and an open watch through the
// push itself (no reconnect), and it must dispatch.
func TestPushRefreshNoWedge(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"http", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			var server upstream
			switch transport {
			case "http":
				server = goHTTP(startHTTPUpstream(t), upstream{})
			case "stdio":
				server = goStdio(upstream{})
			}
			// The backstop refresh is slowed right down, as the seed slows
			// its health loop: only the push can bring the new tool.
			p := startToolsvc(t, cfg{RefreshInterval: "1h", Servers: servers{"push": server}})
			ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
			defer cancel()

			w := startWatch(t, ctx, p.client, "")
			first := w.next(t, 10*time.Second)
			if first.GetSnapshot() == nil || first.GetSnapshot().GetReset_() {
				t.Fatalf("first watch event = %v, want a snapshot without reset", first)
			}
			if hasTool(first.GetSnapshot().GetTools(), "push__extra_tool") {
				t.Fatal("push__extra_tool exists before the push")
			}
			before := serverStatus(t, ctx, p.client, "push")
			if before.GetState() != toolsvcv1.ServerState_SERVER_STATE_READY || before.GetConnectCount() != 1 {
				t.Fatalf("before the push: state %v connect_count %d, want READY and 1", before.GetState(), before.GetConnectCount())
			}

			start := time.Now()
			callCtx, callCancel := context.WithTimeout(ctx, 10*time.Second)
			res, err := p.client.CallTool(callCtx, &toolsvcv1.CallToolRequest{Name: "push__register_extra"})
			callCancel()
			callTook := time.Since(start)
			if err != nil {
				t.Fatalf("CallTool(push__register_extra) = %v; the triggering call must return", err)
			}
			if got := resultText(res); got != "registered" {
				t.Fatalf("CallTool(push__register_extra) text = %q, want %q", got, "registered")
			}

			tool := w.waitUpsert(t, "push__extra_tool", 10*time.Second)
			seen := time.Since(start)
			if tool.GetOriginalName() != "extra_tool" || tool.GetServer() != "push" || !tool.GetAvailable() {
				t.Errorf("pushed tool = %v, want original_name extra_tool, server push, available", tool)
			}
			tools, _ := listAll(t, ctx, p.client, 0)
			if !hasTool(tools, "push__extra_tool") {
				t.Fatal("ListTools lacks push__extra_tool after the watch delivered it")
			}
			after := serverStatus(t, ctx, p.client, "push")
			if after.GetConnectCount() != before.GetConnectCount() {
				t.Fatalf("connect_count went from %d to %d: the catalog came from a reconnect, not the push",
					before.GetConnectCount(), after.GetConnectCount())
			}
			if after.GetRefreshCount() <= before.GetRefreshCount() {
				t.Errorf("refresh_count %d -> %d, want it to grow", before.GetRefreshCount(), after.GetRefreshCount())
			}

			args, _ := structpb.NewStruct(map[string]any{"y": 21})
			res, err = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "push__extra_tool", Arguments: args})
			if err != nil {
				t.Fatalf("CallTool(push__extra_tool) = %v", err)
			}
			if got := resultText(res); got != "42" {
				t.Fatalf("CallTool(push__extra_tool, y=21) = %q, want 42", got)
			}
			t.Logf("%s: triggering call %v, new tool on the watch %v after the call started, end to end %v",
				transport, callTook.Round(time.Millisecond), seen.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		})
	}
}
