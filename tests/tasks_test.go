package tests

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Tasks over gRPC (docs/tasks.md) against the real task servers:
// tests/node/tasks_server.mjs (TypeScript SDK 1.32.2, 2025-11-25
// experimental tasks) over stdio and streamable HTTP, and
// tests/python/tasks_server.py (fastmcp-tasks on the Python SDK 2.3, the
// 2026-07-28 extension) over streamable HTTP.

const annTasks, bobTasks = "ann-tasks-token-0123456789", "bob-tasks-token-0123456789"

// taskServers are the task upstreams: ts (stdio), tsh (HTTP), py (HTTP,
// 2026-07-28).
func taskServers(t *testing.T) servers {
	t.Helper()
	script := nodePath(t, "tasks_server.mjs")
	p := startProc(t, exec.Command("node", script, "http", "0"))
	tsURL := p.log.waitFor(t, urlLineRE, 30*time.Second)
	py := venvBin(t, "tasks", "python")
	port := freePort(t)
	pp := startProc(t, exec.Command(py, filepath.Join(rootDir(t), "tests", "python", "tasks_server.py"), fmt.Sprint(port)))
	waitTCP(t, fmt.Sprintf("127.0.0.1:%d", port), 60*time.Second, pp)
	return servers{
		"ts":  upstream{Command: "node", Args: []string{script, "stdio"}},
		"tsh": upstream{URL: tsURL},
		"py":  upstream{URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port), ProtocolVersion: "2026-07-28"},
	}
}

func taskAuth() *authCfg {
	return &authCfg{Tokens: map[string]string{"ann": annTasks, "bob": bobTasks},
		Rules: []rule{{Principal: "ann", Allow: []string{"*"}}, {Principal: "bob", Allow: []string{"*"}}}}
}

func as(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// startTask calls tool as a task and wants one.
func startTask(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient, tool, args string) *toolsvcv1.Task {
	t.Helper()
	res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: args,
		Task: &toolsvcv1.TaskOptions{Ttl: durationpb.New(time.Minute)}})
	if err != nil {
		t.Fatalf("CallTool(%s, task): %v", tool, err)
	}
	task := res.GetTask()
	if task == nil || task.GetHandle() == "" || len(res.GetContent()) != 0 {
		t.Fatalf("CallTool(%s, task) = %v, want a task", tool, res)
	}
	return task
}

// watchTask reads a whole watch: its states, and the last message.
func watchTask(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient, handle string) ([]toolsvcv1.TaskStatus, *toolsvcv1.WatchTaskResponse) {
	t.Helper()
	st, err := c.WatchTask(ctx, &toolsvcv1.WatchTaskRequest{Handle: handle})
	if err != nil {
		t.Fatal(err)
	}
	var statuses []toolsvcv1.TaskStatus
	var last *toolsvcv1.WatchTaskResponse
	for {
		m, err := st.Recv()
		if err == io.EOF {
			return statuses, last
		}
		if err != nil {
			t.Fatalf("WatchTask: %v (after %v)", err, statuses)
		}
		statuses = append(statuses, m.GetTask().GetStatus())
		last = m
	}
}

// TestTasksGRPC: on each era's servers, a task is created, watched to its
// result, read again with GetTask, listed; a failing tool's task ends with
// its is_error result; a cancelled one stays cancelled; a tool that cannot
// run as a task runs normally; another principal and a forged handle are
// refused.
func TestTasksGRPC(t *testing.T) {
	p := startToolsvc(t, cfg{Auth: taskAuth(), Servers: taskServers(t)})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	ann, bob := as(ctx, annTasks), as(ctx, bobTasks)
	c := p.client
	for _, server := range []string{"ts", "tsh", "py"} {
		t.Run(server, func(t *testing.T) {
			era := map[string]string{"ts": "2025-11-25", "tsh": "2025-11-25", "py": "2026-07-28"}[server]
			tool := server + "__slow"
			task := startTask(t, ann, c, tool, `{"ms": 300}`)
			if task.GetTool() != tool || task.GetServer() != server || task.GetProtocolVersion() != era || task.GetTaskId() == "" {
				t.Errorf("task = %v, want tool %s on %s (%s)", task, tool, server, era)
			}
			if s := task.GetStatus(); s != toolsvcv1.TaskStatus_TASK_STATUS_WORKING {
				t.Errorf("new task status = %v, want WORKING", s)
			}
			statuses, last := watchTask(t, ann, c, task.GetHandle())
			if statuses[0] != toolsvcv1.TaskStatus_TASK_STATUS_WORKING || last.GetTask().GetStatus() != toolsvcv1.TaskStatus_TASK_STATUS_COMPLETED {
				t.Errorf("watch statuses = %v, want WORKING … COMPLETED", statuses)
			}
			if got := resultText(last.GetResult()); got != "slept 300" {
				t.Errorf("watched result = %q, want slept 300", got)
			}
			got, err := c.GetTask(ann, &toolsvcv1.GetTaskRequest{Handle: task.GetHandle()})
			if err != nil || got.GetTask().GetStatus() != toolsvcv1.TaskStatus_TASK_STATUS_COMPLETED || resultText(got.GetResult()) != "slept 300" {
				t.Errorf("GetTask after the end = %v, %v", got, err)
			}

			// Another principal cannot see it; a forged or altered
			// handle is refused before any upstream is asked.
			_, err = c.GetTask(bob, &toolsvcv1.GetTaskRequest{Handle: task.GetHandle()})
			wantStatus(t, err, codes.PermissionDenied, "TASK_NOT_YOURS", "", "")
			_, err = c.CancelTask(bob, &toolsvcv1.CancelTaskRequest{Handle: task.GetHandle()})
			wantStatus(t, err, codes.PermissionDenied, "TASK_NOT_YOURS", "", "")
			h := task.GetHandle()
			altered := h[:len(h)-3] + map[bool]string{true: "AAA", false: "BBB"}[!strings.HasSuffix(h, "AAA")]
			for _, bad := range []string{"", "t1.not-base64!", "t1." + strings.Repeat("A", 60), altered, "s1.x.y"} {
				_, err = c.GetTask(ann, &toolsvcv1.GetTaskRequest{Handle: bad})
				wantStatus(t, err, codes.InvalidArgument, "TASK_HANDLE_INVALID", "", "")
				if f := fieldViolations(err); len(f) != 1 || f[0] != "handle" {
					t.Errorf("GetTask(%q) violations = %v, want handle", bad, f)
				}
			}

			// A tool's own failure ends the task with its is_error result:
			// the TypeScript SDK marks the task failed, fastmcp-tasks
			// completed (measured; both carry the tool's error result).
			fail := startTask(t, ann, c, tool, `{"ms": 50, "fail": true}`)
			_, last = watchTask(t, ann, c, fail.GetHandle())
			wantEnd := map[string]toolsvcv1.TaskStatus{"2025-11-25": toolsvcv1.TaskStatus_TASK_STATUS_FAILED,
				"2026-07-28": toolsvcv1.TaskStatus_TASK_STATUS_COMPLETED}[era]
			if last.GetTask().GetStatus() != wantEnd || !last.GetResult().GetIsError() || !strings.Contains(resultText(last.GetResult()), "boom") {
				t.Errorf("failing task ended %v with %v, %v; want %v with an is_error result \"boom\"", last.GetTask().GetStatus(), last.GetResult(), last.GetError(), wantEnd)
			}

			// Cancel: the task stays cancelled; a second cancel is no error.
			long := startTask(t, ann, c, tool, `{"ms": 30000}`)
			cres, err := c.CancelTask(ann, &toolsvcv1.CancelTaskRequest{Handle: long.GetHandle()})
			if err != nil || cres.GetTask().GetStatus() != toolsvcv1.TaskStatus_TASK_STATUS_CANCELLED {
				t.Fatalf("CancelTask = %v, %v; want CANCELLED", cres, err)
			}
			if _, err := c.CancelTask(ann, &toolsvcv1.CancelTaskRequest{Handle: long.GetHandle()}); err != nil {
				t.Errorf("second CancelTask: %v", err)
			}
			statuses, last = watchTask(t, ann, c, long.GetHandle())
			if len(statuses) != 1 || last.GetTask().GetStatus() != toolsvcv1.TaskStatus_TASK_STATUS_CANCELLED || last.GetResult() != nil {
				t.Errorf("watch of a cancelled task = %v, %v", statuses, last)
			}

			// A tool that cannot run as a task runs normally: a result,
			// no task.
			res, err := c.CallTool(ann, &toolsvcv1.CallToolRequest{Name: server + "__echo", ArgumentsJson: `{"text":"plain"}`,
				Task: &toolsvcv1.TaskOptions{}})
			if err != nil || res.GetTask() != nil || resultText(res) != "plain" {
				t.Errorf("echo with task = %v, %v; want the plain result", res, err)
			}

			// Expiry: a 2025-11-25 upstream keeps a task for the ttl asked;
			// after it the task is TASK_NOT_FOUND. (fastmcp-tasks keeps
			// every task 15 min, whatever is asked.)
			if era == "2025-11-25" {
				res, err := c.CallTool(ann, &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: `{"ms": 50}`,
					Task: &toolsvcv1.TaskOptions{Ttl: durationpb.New(time.Second)}})
				if err != nil || res.GetTask().GetTtl().AsDuration() != time.Second {
					t.Fatalf("task with a 1 s ttl: %v, %v", res, err)
				}
				deadline := time.Now().Add(30 * time.Second)
				for {
					_, err = c.GetTask(ann, &toolsvcv1.GetTaskRequest{Handle: res.GetTask().GetHandle()})
					if err != nil || time.Now().After(deadline) {
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
				wantStatus(t, err, codes.NotFound, "TASK_NOT_FOUND", server, tool)
			}

			// ListTasks: ann's tasks of this server, newest first; none of
			// them for bob.
			lst, err := c.ListTasks(ann, &toolsvcv1.ListTasksRequest{Server: server})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, x := range lst.GetTasks() {
				ids = append(ids, x.GetTaskId())
			}
			want := []string{long.GetTaskId(), fail.GetTaskId(), task.GetTaskId()}
			if strings.Join(ids, ",") != strings.Join(want, ",") {
				t.Errorf("ListTasks(%s) = %v, want %v", server, ids, want)
			}
			lst, err = c.ListTasks(bob, &toolsvcv1.ListTasksRequest{Server: server})
			if err != nil || len(lst.GetTasks()) != 0 {
				t.Errorf("bob's ListTasks = %v, %v; want none", lst, err)
			}
		})
	}
	_, err := c.ListTasks(ann, &toolsvcv1.ListTasksRequest{Server: "nope"})
	wantStatus(t, err, codes.NotFound, "SERVER_NOT_FOUND", "", "")
}

// TestTasksInputGRPC: a 2026-07-28 task that needs input shows it as
// input_required on the task (the interactive-call contract's requests),
// UpdateTask answers it, and the task completes with the answer; a wrong
// answer and an answer to a task that does not wait are refused.
func TestTasksInputGRPC(t *testing.T) {
	all := taskServers(t)
	p := startToolsvc(t, cfg{Servers: servers{"py": all["py"]}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	c := p.client
	task := startTask(t, ctx, c, "py__ask", `{}`)
	var ir *toolsvcv1.InputRequired
	deadline := time.Now().Add(30 * time.Second)
	for ir == nil {
		got, err := c.GetTask(ctx, &toolsvcv1.GetTaskRequest{Handle: task.GetHandle()})
		if err != nil {
			t.Fatal(err)
		}
		if got.GetTask().GetStatus() == toolsvcv1.TaskStatus_TASK_STATUS_INPUT_REQUIRED {
			ir = got.GetTask().GetInputRequired()
		}
		if time.Now().After(deadline) {
			t.Fatalf("task never asked for input: %v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(ir.GetRequests()) != 1 || inputKind(ir.GetRequests()[0]) != "elicitation" || ir.GetRequestState() != "" {
		t.Fatalf("input_required = %v, want one elicitation and no request_state", ir)
	}
	// An answer of the wrong kind, or to a request not asked.
	_, err := c.UpdateTask(ctx, &toolsvcv1.UpdateTaskRequest{Handle: task.GetHandle(), InputResponses: []*toolsvcv1.InputResponse{
		{Id: ir.GetRequests()[0].GetId(), Response: &toolsvcv1.InputResponse_Roots{Roots: &toolsvcv1.RootsResponse{}}}}})
	wantStatus(t, err, codes.InvalidArgument, "INPUT_RESPONSES_INVALID", "", "")
	_, err = c.UpdateTask(ctx, &toolsvcv1.UpdateTaskRequest{Handle: task.GetHandle(), InputResponses: []*toolsvcv1.InputResponse{
		{Id: "nope", Response: &toolsvcv1.InputResponse_Elicitation{Elicitation: &toolsvcv1.ElicitationResponse{Action: "decline"}}}}})
	wantStatus(t, err, codes.InvalidArgument, "INPUT_RESPONSES_INVALID", "", "")

	up, err := c.UpdateTask(ctx, &toolsvcv1.UpdateTaskRequest{Handle: task.GetHandle(), InputResponses: answer(t, ir.GetRequests(), "Ada")})
	if err != nil {
		t.Fatalf("UpdateTask: %v", err)
	}
	_ = up
	_, last := watchTask(t, ctx, c, task.GetHandle())
	if last.GetTask().GetStatus() != toolsvcv1.TaskStatus_TASK_STATUS_COMPLETED || resultText(last.GetResult()) != "hello Ada" {
		t.Fatalf("after the answer: %v", last)
	}
	_, err = c.UpdateTask(ctx, &toolsvcv1.UpdateTaskRequest{Handle: task.GetHandle(), InputResponses: answer(t, ir.GetRequests(), "Bob")})
	wantStatus(t, err, codes.FailedPrecondition, "TASK_NOT_WAITING", "py", "py__ask")
}

// TestTasksAnyReplica: two replicas sharing the state key: a task created
// on one is watched, read and cancelled on the other. A replica without
// the key refuses the handle. A replica killed under open watches: they
// resume on the other.
func TestTasksAnyReplica(t *testing.T) {
	all := taskServers(t)
	key := filepath.Join(t.TempDir(), "state.key")
	if err := os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := cfg{Servers: servers{"py": all["py"], "tsh": all["tsh"]}}
	a := startToolsvc(t, conf, "--state-key-file", key)
	b := startToolsvc(t, conf, "--state-key-file", key)
	other := startToolsvc(t, conf)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	task := startTask(t, ctx, a.client, "py__slow", `{"ms": 400}`)
	_, last := watchTask(t, ctx, b.client, task.GetHandle())
	if resultText(last.GetResult()) != "slept 400" {
		t.Errorf("watched on the other replica: %v", last)
	}
	long := startTask(t, ctx, b.client, "py__slow", `{"ms": 30000}`)
	if res, err := a.client.CancelTask(ctx, &toolsvcv1.CancelTaskRequest{Handle: long.GetHandle()}); err != nil ||
		res.GetTask().GetStatus() != toolsvcv1.TaskStatus_TASK_STATUS_CANCELLED {
		t.Errorf("cancel on the other replica: %v, %v", res, err)
	}
	_, err := other.client.GetTask(ctx, &toolsvcv1.GetTaskRequest{Handle: task.GetHandle()})
	wantStatus(t, err, codes.InvalidArgument, "TASK_HANDLE_INVALID", "", "")

	// A replica killed (SIGKILL) while watches are open on it: each watch
	// breaks with UNAVAILABLE and, called again on the other replica with
	// the same handle, gets the result; for the 2025-11-25 upstream too,
	// whose task lives on the killed replica's upstream session.
	var handles []string
	for _, tool := range []string{"py__slow", "tsh__slow"} {
		handles = append(handles, startTask(t, ctx, b.client, tool, `{"ms": 1500}`).GetHandle())
	}
	broke := make(chan error, len(handles))
	for _, h := range handles {
		st, err := b.client.WatchTask(ctx, &toolsvcv1.WatchTaskRequest{Handle: h})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); err != nil {
			t.Fatalf("first state on b: %v", err)
		}
		go func() {
			for {
				if _, err := st.Recv(); err != nil {
					broke <- err
					return
				}
			}
		}()
	}
	b.proc.kill()
	b.proc.stop = func() {} // killed on purpose: no exit status to check
	for range handles {
		if err := <-broke; status.Code(err) != codes.Unavailable {
			t.Errorf("watch on the killed replica ended with %v, want UNAVAILABLE", err)
		}
	}
	for _, h := range handles {
		_, last := watchTask(t, ctx, a.client, h)
		if resultText(last.GetResult()) != "slept 1500" {
			t.Errorf("resumed on the other replica: %v", last)
		}
	}
}

// TestTasksRollingRestart: three replicas sharing the state key, 100 tasks
// running on a 2025-11-25 (TypeScript, HTTP) and a 2026-07-28 (Python)
// upstream, each followed by a watcher; the replicas are restarted one by
// one meanwhile. A watch broken by its replica's restart resumes on
// another replica with the same handle, and every task ends with its
// result: none is lost, whichever replica created it.
func TestTasksRollingRestart(t *testing.T) {
	all := taskServers(t)
	key := filepath.Join(t.TempDir(), "state.key")
	if err := os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &fleet{t: t, config: cfg{Servers: servers{"tsh": all["tsh"], "py": all["py"]}},
		procs: make([]*toolsvcProc, 3), addrs: make([]string, 3)}
	start := func(i int) {
		args := []string{"--shutdown-timeout", fleetShutdownTimeout.String(), "--state-key-file", key}
		if f.addrs[i] != "" {
			args = append(args, "--listen", f.addrs[i])
		}
		p := startToolsvcWith(t, f.config, startOpts{args: args})
		f.procs[i], f.addrs[i] = p, p.addr
	}
	for i := range 3 {
		start(i)
	}
	clients := make([]toolsvcv1.ToolServiceClient, 3)
	for i, a := range f.addrs {
		conn, err := grpc.NewClient(a, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		clients[i] = toolsvcv1.NewToolServiceClient(conn)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	const n = 100
	var resumes, created atomic.Int64
	results := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			server := []string{"tsh", "py"}[i%2]
			ms := 3000 + 50*i
			r := i % 3 // the replica this task's client tries first
			var task *toolsvcv1.Task
			for task == nil {
				res, err := clients[r].CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__slow",
					ArgumentsJson: fmt.Sprintf(`{"ms": %d}`, ms), Task: &toolsvcv1.TaskOptions{}})
				switch {
				case err == nil && res.GetTask() != nil:
					task = res.GetTask()
				case err == nil:
					errs[i] = fmt.Errorf("no task: %v", res)
					return
				case status.Code(err) == codes.Unavailable && ctx.Err() == nil:
					r = (r + 1) % 3
					time.Sleep(100 * time.Millisecond)
				default:
					errs[i] = fmt.Errorf("create: %w", err)
					return
				}
			}
			created.Add(1)
			for {
				st, err := clients[r].WatchTask(ctx, &toolsvcv1.WatchTaskRequest{Handle: task.GetHandle()})
				for err == nil {
					var m *toolsvcv1.WatchTaskResponse
					if m, err = st.Recv(); err == nil && m.GetResult() != nil {
						results[i] = resultText(m.GetResult())
						return
					}
				}
				if status.Code(err) != codes.Unavailable || ctx.Err() != nil {
					errs[i] = fmt.Errorf("watch of %s on replica %d: %w", task.GetTaskId(), r, err)
					return
				}
				resumes.Add(1)
				r = (r + 1) % 3
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	// The rolling restart, once every task runs.
	for created.Load() < n && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	for i := range 3 {
		f.stop(i)
		start(i)
	}
	wg.Wait()
	lost := 0
	for i := range n {
		want := fmt.Sprintf("slept %d", 3000+50*i)
		if errs[i] != nil || results[i] != want {
			lost++
			if lost <= 5 {
				t.Errorf("task %d: %q, %v; want %q", i, results[i], errs[i], want)
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d tasks lost across the rolling restart", lost, n)
	}
	if resumes.Load() == 0 {
		t.Error("no watch was resumed: the restarts broke none (the test proves nothing)")
	}
	t.Logf("%d tasks, %d watch resumes across 3 restarts", n, resumes.Load())
}

// TestTasksInputPolicy2025: a 2025-11-25 task that asks (its request
// reaches a client only on the response stream of tasks/result) is
// answered by the server's input policy once it is watched: the TypeScript
// ask task ends with the policy's decline.
func TestTasksInputPolicy2025(t *testing.T) {
	script := nodePath(t, "tasks_server.mjs")
	p := startToolsvc(t, cfg{Servers: servers{"ts": upstream{Command: "node", Args: []string{script, "stdio"}}}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	task := startTask(t, ctx, p.client, "ts__ask", `{}`)
	statuses, last := watchTask(t, ctx, p.client, task.GetHandle())
	if last.GetTask().GetStatus() != toolsvcv1.TaskStatus_TASK_STATUS_COMPLETED || resultText(last.GetResult()) != "no name (decline)" {
		t.Fatalf("watched ask task: %v ending %v; want COMPLETED with the policy's decline", statuses, last)
	}
}
