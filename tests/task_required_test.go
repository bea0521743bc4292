package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestTaskRequired: a tool that only runs as a task (fastmcp-tasks'
// mode "required" py__ask, a real 2026-07-28 Python server) called
// without one. While the catalog does not know (it lists the tool
// optional), the upstream refuses the plain call with -32021 naming the
// tasks extension: toolsvc reports that as FAILED_PRECONDITION
// TASK_REQUIRED on the field "task" (metadata upstream_code -32021), not
// as an upstream failure. Once the catalog says "required", the core
// refuses a plain call itself before it leaves toolsvc (metadata
// task_support "required", no upstream_code) on every wire: gRPC
// ToolService, MCP over gRPC (the published package's client), and the
// front door with each protocol's own error (2025-11-25: -32601, the
// tasks spec's; 2026-07-28: -32021 naming the tasks extension in
// data.requiredCapabilities). Asked for a task, it runs as one.
func TestTaskRequired(t *testing.T) {
	t.Parallel()
	p := startToolsvc(t, cfg{Auth: taskAuth(), Servers: servers{"py": pyTaskServer(t)}}, "--mcp-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), 2*defaultTestTimeout)
	defer cancel()
	ann := as(ctx, annTasks)

	// The catalog does not know yet: the upstream's own refusal.
	_, err := p.client.CallTool(ann, &toolsvcv1.CallToolRequest{Name: "py__ask", ArgumentsJson: `{}`})
	ei := wantStatus(t, err, codes.FailedPrecondition, "TASK_REQUIRED", "py", "py__ask")
	if got := ei.GetMetadata()["upstream_code"]; got != "-32021" {
		t.Errorf("the upstream's refusal: metadata upstream_code = %q, want -32021 (%v)", got, err)
	}
	if got := fieldViolations(err); !slices.Equal(got, []string{"task"}) {
		t.Errorf("the upstream's refusal names fields %q, want [task]", got)
	}

	eventually(t, 30*time.Second, "ListTools says py__ask requires a task", func() bool {
		return taskSupportOf(t, ann, p.client)["py__ask"] == "required"
	})

	// Known: the core refuses before the call leaves toolsvc.
	_, err = p.client.CallTool(ann, &toolsvcv1.CallToolRequest{Name: "py__ask", ArgumentsJson: `{}`})
	ei = wantStatus(t, err, codes.FailedPrecondition, "TASK_REQUIRED", "py", "py__ask")
	if md := ei.GetMetadata(); md["task_support"] != "required" || md["upstream_code"] != "" {
		t.Errorf("the core's refusal: metadata %v, want task_support required and no upstream_code", md)
	}
	if got := fieldViolations(err); !slices.Equal(got, []string{"task"}) {
		t.Errorf("the core's refusal names fields %q, want [task]", got)
	}

	// MCP over gRPC: the same status.
	out := runMcpGrpcClient(t, ctx, p.addr, annTasks, []mcpStep{{"rpc": "CallTool", "name": "py__ask"}})
	wantMcpError(t, "MCP over gRPC CallTool py__ask", out[0], "FAILED_PRECONDITION", "TASK_REQUIRED", []string{"task"})

	// The front door, each protocol's own error.
	old := newRawFront(t, ctx, p.mcpAddr, annTasks, false)
	res, e, _ := old.call(t, ctx, "tools/call", map[string]any{"name": "py__ask", "arguments": map[string]any{}})
	if e == nil || e.Code != -32601 {
		t.Errorf("2025-11-25 tools/call py__ask without params.task = %s, %+v; want -32601", res, e)
	}
	modern := newRawFront(t, ctx, p.mcpAddr, annTasks, true)
	res, e, _ = modern.call(t, ctx, "tools/call", map[string]any{"name": "py__ask", "arguments": map[string]any{}})
	if e == nil || e.Code != -32021 || e.reason() != "TASK_REQUIRED" {
		t.Fatalf("2026-07-28 tools/call py__ask without the tasks extension = %s, %+v; want -32021 TASK_REQUIRED", res, e)
	}
	var data struct {
		RequiredCapabilities struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"requiredCapabilities"`
		Fields []string `json:"fields"`
	}
	if err := json.Unmarshal(e.Data, &data); err != nil || data.RequiredCapabilities.Extensions["io.modelcontextprotocol/tasks"] == nil {
		t.Errorf("2026-07-28 refusal data %s: want requiredCapabilities.extensions naming io.modelcontextprotocol/tasks (%v)", e.Data, err)
	}

	// Asked for a task, on each wire, it runs as one.
	r, err := p.client.CallTool(ann, &toolsvcv1.CallToolRequest{Name: "py__ask", ArgumentsJson: `{}`,
		Task: &toolsvcv1.TaskOptions{Ttl: durationpb.New(time.Minute)}})
	if err != nil || r.GetTask().GetTaskId() == "" {
		t.Fatalf("CallTool py__ask as a task = %v, %v; want a task", r, err)
	}
	res, e, _ = modern.call(t, ctx, "tools/call", map[string]any{"name": "py__ask", "arguments": map[string]any{}, "_meta": tasksOptIn()})
	if e != nil {
		t.Fatalf("2026-07-28 tools/call py__ask with the tasks extension: %+v", e)
	}
	t.Logf("as a task: %s", fmt.Sprint(string(res)))
}
