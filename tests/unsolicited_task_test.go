package tests

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestUnsolicitedTaskRefused: an upstream that answers
// a plain tools/call, which asked no task, with a task — a 2025-11-25
// CreateTaskResult or a 2026-07-28 resultType "task" — is refused with
// INTERNAL / UPSTREAM_MALFORMED naming the server, and a warning naming
// the server and the tool, on gRPC CallTool and on the MCP front door's
// tools/call (2026-07-28 and 2025-11-25 clients). Before, go-sdk decoded
// the task as an empty result and the caller got an empty success. The
// upstream is tests/hostileserver -mode unsolicited-task, spoken to in
// both eras; its session stays up (the next call works on it). A call
// whose caller asked for a task is refused alike: this upstream declares
// no tasks, so toolsvc asked it none.
func TestUnsolicitedTaskRefused(t *testing.T) {
	t.Parallel()
	hostile := upstream{Command: hostileServer(t), Args: []string{"-mode", "unsolicited-task"}}
	hostile26 := hostile
	hostile26.ProtocolVersion = "2026-07-28"
	p := startToolsvc(t, cfg{Servers: servers{"old": hostile, "new": hostile26}}, "--mcp-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	echo, _ := structpb.NewStruct(map[string]any{"text": "still here"})
	for _, server := range []string{"old", "new"} {
		for _, tool := range []string{server + "__task2025", server + "__task2026"} {
			// A caller asking for a task does not change it: this upstream
			// offers no tasks, so toolsvc asks it none either.
			for _, task := range []*toolsvcv1.TaskOptions{nil, {}} {
				res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool, Task: task})
				if err == nil {
					t.Errorf("%s (task %v): a task answering a call that asked none gave %v, want UPSTREAM_MALFORMED", tool, task, res)
					continue
				}
				wantStatus(t, err, codes.Internal, "UPSTREAM_MALFORMED", server, tool)
				if !strings.Contains(err.Error(), `"`+server+`"`) || !strings.Contains(err.Error(), "asked no task") {
					t.Errorf("%s (task %v): %v; want the server and what was wrong named", tool, task, err)
				}
			}
		}
		res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__echo", Arguments: echo})
		if err != nil || resultText(res) != "still here" {
			t.Fatalf("%s: call after the refused task: %v, %v", server, res, err)
		}
		if n := serverStatus(t, ctx, p.client, server).GetConnectCount(); n != 1 {
			t.Errorf("%s: connect count %d, want 1 (the session survives the refused answer)", server, n)
		}
	}
	p.log.waitFor(t, regexp.MustCompile(`answered a call that asked no task with a task.*server=old|server=old.*answered a call that asked no task with a task`), 30*time.Second)
	p.log.waitFor(t, regexp.MustCompile(`answered a call that asked no task with a task.*server=new|server=new.*answered a call that asked no task with a task`), 30*time.Second)

	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		c := connectGoFront(t, ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + p.mcpAddr + "/mcp"}, version)
		for _, tool := range []string{"old__task2025", "new__task2026"} {
			res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) {
				t.Errorf("front door %s, %s: %v, %v; want a JSON-RPC error", version, tool, res, err)
				continue
			}
			var data map[string]any
			_ = json.Unmarshal(werr.Data, &data)
			if data["reason"] != "UPSTREAM_MALFORMED" || !strings.Contains(werr.Message, "asked no task") {
				t.Errorf("front door %s, %s: %v (data %s), want UPSTREAM_MALFORMED saying no task was asked", version, tool, werr, werr.Data)
			}
		}
	}
}
