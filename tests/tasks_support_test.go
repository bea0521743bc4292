package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// pyTaskServer runs tests/python/tasks_server.py (fastmcp-tasks, the
// 2026-07-28 tasks extension) alone: the py upstream of taskServers.
func pyTaskServer(t *testing.T) upstream {
	t.Helper()
	port := freePort(t)
	pp := startProc(t, exec.Command(venvBin(t, "tasks", "python"), filepath.Join(rootDir(t), "tests", "python", "tasks_server.py"), fmt.Sprint(port)))
	waitTCP(t, fmt.Sprintf("127.0.0.1:%d", port), 60*time.Second, pp)
	return upstream{URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port), ProtocolVersion: "2026-07-28"}
}

// taskSupportOf is each listed tool's task_support over gRPC ("-" for
// none).
func taskSupportOf(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient) map[string]string {
	t.Helper()
	tools, _ := listAll(t, ctx, c, 100)
	out := map[string]string{}
	for _, tl := range tools {
		out[tl.GetName()] = tl.GetTaskSupport()
		if out[tl.GetName()] == "" {
			out[tl.GetName()] = "-"
		}
	}
	return out
}

// frontTaskSupport is each tool's execution.taskSupport in the front
// door's tools/list to a 2025-11-25 client ("-" for none).
func frontTaskSupport(t *testing.T, ctx context.Context, c *rawFront) map[string]string {
	t.Helper()
	res, e, _ := c.call(t, ctx, "tools/list", nil)
	if e != nil {
		t.Fatalf("front door tools/list: %+v", e)
	}
	var list struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(res, &list); err != nil {
		t.Fatalf("front door tools/list %s: %v", res, err)
	}
	out := map[string]string{}
	for _, tl := range list.Tools {
		out[tl.Name] = "-"
		if tl.Execution != nil {
			out[tl.Name] = tl.Execution.TaskSupport
		}
	}
	return out
}

// TestTaskSupport2026: the tools of a 2026-07-28 tasks-extension upstream
// (fastmcp-tasks) can run as tasks, which their listing cannot say (its
// tools/list carries no execution): gRPC ListTools reports each as
// "optional" and the front door's tools/list to a 2025-11-25 client the
// same. A plain call of its mode "required" tool is refused by the
// upstream (-32021, the tasks extension named in its data); the bridge
// takes the refusal as the tool's word and lists again, so both wires
// then report py__ask as "required" (the others stay optional), and a call
// asking for a task creates one.
func TestTaskSupport2026(t *testing.T) {
	t.Parallel()
	p := startToolsvc(t, cfg{Auth: taskAuth(), Servers: servers{"py": pyTaskServer(t)}}, "--mcp-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	ann := as(ctx, annTasks)
	front := newRawFront(t, ctx, p.mcpAddr, annTasks, false)

	want := map[string]string{"py__slow": "optional", "py__ask": "optional", "py__echo": "optional"}
	if got := taskSupportOf(t, ann, p.client); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ListTools task_support = %v, want %v", got, want)
	}
	if got := frontTaskSupport(t, ctx, front); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("front door tools/list execution.taskSupport = %v, want %v", got, want)
	}

	// A plain call of the tool that only runs as a task: the upstream's
	// refusal, as toolsvc reports it.
	_, err := p.client.CallTool(ann, &toolsvcv1.CallToolRequest{Name: "py__ask", ArgumentsJson: `{}`})
	if status.Code(err) == codes.OK {
		t.Fatalf("a plain call of py__ask succeeded; want the upstream's refusal")
	}
	t.Logf("plain call of py__ask: %v", err)

	want["py__ask"] = "required"
	eventually(t, 30*time.Second, "ListTools says py__ask requires a task", func() bool {
		return fmt.Sprint(taskSupportOf(t, ann, p.client)) == fmt.Sprint(want)
	})
	if got := frontTaskSupport(t, ctx, front); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("front door tools/list execution.taskSupport after the refusal = %v, want %v", got, want)
	}

	// Asked for a task, the same tool runs as one.
	res, err := p.client.CallTool(ann, &toolsvcv1.CallToolRequest{Name: "py__ask", ArgumentsJson: `{}`,
		Task: &toolsvcv1.TaskOptions{Ttl: durationpb.New(time.Minute)}})
	if err != nil || res.GetTask().GetTaskId() == "" {
		t.Fatalf("CallTool py__ask as a task = %v, %v; want a task", res, err)
	}
}
