package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Tasks at the MCP front door (docs/front-door.md "Tasks"), against the
// real task servers of tasks_test.go (ts: TypeScript SDK over stdio, tsh:
// over HTTP, both 2025-11-25; py: fastmcp-tasks, 2026-07-28), with real SDK
// clients where they can (the TypeScript SDK's experimental tasks client,
// FastMCP's tasks client) and plain JSON-RPC over HTTP for what no SDK
// client sends (another principal, a forged taskId, a wrong Mcp-Name).

// rawFront is a JSON-RPC client of the front door over plain HTTP: a
// 2025-11-25 session (initialize, then Mcp-Session-Id) or 2026-07-28
// stateless requests (_meta and the standard headers on each).
type rawFront struct {
	url, token string
	modern     bool
	sid        string
	id         int
	// init is the initialize result (2025-11-25).
	init map[string]any
}

// rpcErr is a JSON-RPC error.
type rpcErr struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (e *rpcErr) reason() string {
	var d struct {
		Reason string `json:"reason"`
	}
	if e != nil {
		_ = json.Unmarshal(e.Data, &d)
	}
	return d.Reason
}

func newRawFront(t *testing.T, ctx context.Context, addr, token string, modern bool) *rawFront {
	t.Helper()
	c := &rawFront{url: "http://" + addr + "/mcp", token: token, modern: modern}
	if modern {
		return c
	}
	res, e, _, hdr := c.do(t, ctx, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"}}, nil)
	if e != nil {
		t.Fatalf("initialize: %+v", e)
	}
	c.sid = hdr.Get("Mcp-Session-Id")
	if err := json.Unmarshal(res, &c.init); err != nil || c.sid == "" {
		t.Fatalf("initialize: %s, session %q", res, c.sid)
	}
	c.notify(t, ctx, "notifications/initialized")
	return c
}

func (c *rawFront) notify(t *testing.T, ctx context.Context, method string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	c.headers(req, method, "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func (c *rawFront) headers(req *http.Request, method, name string) {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	switch {
	case c.modern:
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
	case c.sid != "":
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
}

// call sends one request; the Mcp-Name header (2026-07-28) is the tool's
// name for tools/call, params.taskId for tasks/*, unless name overrides it
// ("-": none).
func (c *rawFront) call(t *testing.T, ctx context.Context, method string, params map[string]any, name ...string) (json.RawMessage, *rpcErr, int) {
	t.Helper()
	res, e, status, _ := c.do(t, ctx, method, params, name)
	return res, e, status
}

func (c *rawFront) do(t *testing.T, ctx context.Context, method string, params map[string]any, name []string) (json.RawMessage, *rpcErr, int, http.Header) {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	hname := ""
	if c.modern {
		meta, _ := params["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
		meta["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": "raw", "version": "1"}
		if _, ok := meta["io.modelcontextprotocol/clientCapabilities"]; !ok {
			meta["io.modelcontextprotocol/clientCapabilities"] = map[string]any{}
		}
		params["_meta"] = meta
		switch {
		case len(name) > 0 && name[0] != "-":
			hname = name[0]
		case len(name) > 0:
		case method == "tools/call":
			hname, _ = params["name"].(string)
		default:
			hname, _ = params["taskId"].(string)
		}
	}
	c.id++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	c.headers(req, method, hname)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcErr         `json:"error"`
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// The response is the stream's message with a result or error.
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			msg.Result, msg.Error = nil, nil
			if json.Unmarshal([]byte(data), &msg) == nil && (msg.Result != nil || msg.Error != nil) {
				break
			}
		}
	} else {
		raw, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(raw, &msg); err != nil {
			t.Fatalf("%s: HTTP %d, body %q", method, resp.StatusCode, raw)
		}
	}
	return msg.Result, msg.Error, resp.StatusCode, resp.Header
}

// frontTask is a task as both eras' results carry it.
type frontTask struct {
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	TTL            *int64          `json:"ttl"`
	TTLMs          *int64          `json:"ttlMs"`
	PollInterval   int64           `json:"pollInterval"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	ResultType     string          `json:"resultType"`
	Result         json.RawMessage `json:"result"`
	Error          *rpcErr         `json:"error"`
	InputRequests  map[string]any  `json:"inputRequests"`
	Task           *frontTask      `json:"task"` // 2025-11-25 CreateTaskResult
}

func decodeTask(t *testing.T, raw json.RawMessage) *frontTask {
	t.Helper()
	var ft frontTask
	if err := json.Unmarshal(raw, &ft); err != nil {
		t.Fatalf("task %s: %v", raw, err)
	}
	return &ft
}

func rawText(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// tasksOptIn is a 2026-07-28 request's _meta opting in to tasks.
func tasksOptIn() map[string]any {
	return map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{
		"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}}
}

// pollFront polls tasks/get until the task leaves working.
func pollFront(t *testing.T, ctx context.Context, c *rawFront, id string) *frontTask {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, e, _ := c.call(t, ctx, "tasks/get", map[string]any{"taskId": id})
		if e != nil {
			t.Fatalf("tasks/get: %+v", e)
		}
		ft := decodeTask(t, res)
		if ft.Status != "working" || time.Now().After(deadline) {
			return ft
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMCPFrontTasks2025: the TypeScript SDK's client (2025-11-25
// experimental tasks, strict capabilities) sees capabilities.tasks and each
// tool's taskSupport, runs tasks on upstreams of both eras with
// callToolStream, cancels, lists; plain JSON-RPC checks what it cannot:
// another principal's taskId, tasks/update (not a 2025-11-25 method).
func TestMCPFrontTasks2025(t *testing.T) {
	p := startToolsvc(t, cfg{Auth: taskAuth(), Servers: taskServers(t)}, "--mcp-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	base := "http://" + p.mcpAddr
	tools := []string{"ts__slow", "tsh__slow", "py__slow"}
	cmd := exec.CommandContext(ctx, nodePath(t, node22), append([]string{filepath.Join(bin.nodeDir, "tasks_front_client.mjs"), base, annTasks}, append(tools, "ask:py__ask", "ask:ts__ask", "ask:tsh__ask")...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tasks_front_client.mjs: %v\n%s\n%s", err, out, stderr.String())
	}
	t.Logf("TypeScript client: %s", out)
	type streamed struct {
		Types    []string `json:"types"`
		Statuses []string `json:"statuses"`
		TaskID   string   `json:"taskId"`
		Text     string   `json:"text"`
		IsError  bool     `json:"isError"`
		Related  string   `json:"related"`
		Error    string   `json:"error"`
		Created  struct {
			TTL          *int64 `json:"ttl"`
			PollInterval int64  `json:"pollInterval"`
			CreatedAt    string `json:"createdAt"`
		} `json:"created"`
	}
	var r struct {
		Protocol        string             `json:"protocol"`
		TasksCapability map[string]any     `json:"tasksCapability"`
		Tools           map[string]*string `json:"tools"`
		Calls           map[string]struct {
			OK     streamed `json:"ok"`
			Fail   streamed `json:"fail"`
			Cancel struct {
				TaskID    string `json:"taskId"`
				Cancelled string `json:"cancelled"`
				Got       string `json:"got"`
			} `json:"cancel"`
			Error string `json:"error"`
		} `json:"calls"`
		Asked  []string `json:"asked"`
		Listed []string `json:"listed"`
		Forged struct {
			Code int `json:"code"`
		} `json:"forged"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("report %q: %v", out, err)
	}
	var askReport struct {
		Calls map[string]streamed `json:"calls"`
	}
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &askReport)
	// A task that asks for input: the TypeScript client sees
	// input_required, calls tasks/result, and is asked on its stream. The
	// answer goes to a 2026-07-28 upstream with tasks/update, to a
	// 2025-11-25 one as the answer to the request it queued (the front
	// door waits on the upstream's own tasks/result).
	for _, tool := range []string{"py__ask", "ts__ask", "tsh__ask"} {
		ask := askReport.Calls["ask:"+tool]
		delete(r.Calls, "ask:"+tool)
		if ask.Text != "hello Front" || !slices.Contains(ask.Statuses, "input_required") {
			t.Errorf("%s through callToolStream = %+v; want input_required, then hello Front", tool, ask)
		}
	}
	if len(r.Asked) != 3 || r.Asked[0] != "Your name?" || r.Asked[2] != "Your name?" {
		t.Errorf("the client was asked %q; want Your name? three times", r.Asked)
	}
	if r.Protocol != "2025-11-25" {
		t.Errorf("protocol = %q, want 2025-11-25", r.Protocol)
	}
	if fmt.Sprint(r.TasksCapability) != "map[cancel:map[] list:map[] requests:map[tools:map[call:map[]]]]" {
		t.Errorf("capabilities.tasks = %v, want list, cancel, requests.tools.call", r.TasksCapability)
	}
	support := func(name string) string {
		if s := r.Tools[name]; s != nil {
			return *s
		}
		return "-"
	}
	for name, want := range map[string]string{"ts__slow": "optional", "ts__ask": "required", "ts__echo": "-",
		"tsh__slow": "optional", "py__slow": "optional", "py__ask": "optional"} {
		if got := support(name); got != want {
			t.Errorf("tools/list %s execution.taskSupport = %s, want %s", name, got, want)
		}
	}
	listed := strings.Join(r.Listed, " ")
	for _, tool := range tools {
		c := r.Calls[tool]
		if c.Error != "" {
			t.Errorf("%s: %s", tool, c.Error)
			continue
		}
		ok := c.OK
		if len(ok.Types) < 3 || ok.Types[0] != "taskCreated" || ok.Types[len(ok.Types)-1] != "result" || ok.Text != "slept 300" ||
			ok.Related != ok.TaskID || !strings.HasPrefix(ok.TaskID, "t1.") {
			t.Errorf("%s callToolStream = %+v; want taskCreated … result \"slept 300\" with its related-task", tool, ok)
		}
		if ok.Created.TTL == nil || *ok.Created.TTL != 60000 && !strings.HasPrefix(tool, "py") || ok.Created.PollInterval != 100 || ok.Created.CreatedAt == "" {
			t.Errorf("%s created task = %+v; want the upstream's ttl and pollInterval 100", tool, ok.Created)
		}
		// A failing tool: the TypeScript SDK marks the task failed (the
		// client's stream ends with an error); fastmcp-tasks completed
		// with the tool's isError result.
		if strings.HasPrefix(tool, "py") {
			if c.Fail.Types[len(c.Fail.Types)-1] != "result" || !c.Fail.IsError || !strings.Contains(c.Fail.Text, "boom") {
				t.Errorf("%s failing = %+v; want an isError result", tool, c.Fail)
			}
		} else if c.Fail.Types[len(c.Fail.Types)-1] != "error" || !strings.Contains(c.Fail.Error, "failed") {
			t.Errorf("%s failing = %+v; want the stream's failed error", tool, c.Fail)
		}
		if c.Cancel.Cancelled != "cancelled" || c.Cancel.Got != "cancelled" {
			t.Errorf("%s cancel = %+v; want cancelled", tool, c.Cancel)
		}
		for _, id := range []string{ok.TaskID, c.Fail.TaskID, c.Cancel.TaskID} {
			if !strings.Contains(listed, id) {
				t.Errorf("tasks/list %v lacks %s's task %.20s…", r.Listed, tool, id)
			}
		}
	}
	if r.Forged.Code != -32602 {
		t.Errorf("tasks/get of a forged taskId: code %d, want -32602", r.Forged.Code)
	}

	// What no SDK client sends.
	ann := newRawFront(t, ctx, p.mcpAddr, annTasks, false)
	bob := newRawFront(t, ctx, p.mcpAddr, bobTasks, false)
	res, e, _ := ann.call(t, ctx, "tools/call", map[string]any{"name": "py__slow", "arguments": map[string]any{"ms": 100}, "task": map[string]any{}})
	if e != nil {
		t.Fatalf("tools/call with task: %+v", e)
	}
	created := decodeTask(t, res).Task
	if created == nil || created.Status != "working" || created.TTLMs != nil {
		t.Fatalf("CreateTaskResult = %s", res)
	}
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		_, e, _ = bob.call(t, ctx, m, map[string]any{"taskId": created.TaskID})
		if e == nil || e.Code != -32602 || e.reason() != "TASK_NOT_YOURS" {
			t.Errorf("bob's %s of ann's task: %+v; want -32602 TASK_NOT_YOURS", m, e)
		}
	}
	res, e, _ = ann.call(t, ctx, "tasks/result", map[string]any{"taskId": created.TaskID})
	if e != nil || rawText(t, res) != "slept 100" {
		t.Errorf("tasks/result = %s, %+v; want slept 100", res, e)
	}
	_, e, _ = ann.call(t, ctx, "tasks/cancel", map[string]any{"taskId": created.TaskID})
	if e == nil || e.Code != -32602 || e.reason() != "TASK_ENDED" {
		t.Errorf("tasks/cancel of a completed task: %+v; want -32602 TASK_ENDED", e)
	}
	_, e, _ = ann.call(t, ctx, "tasks/update", map[string]any{"taskId": created.TaskID, "inputResponses": map[string]any{}})
	if e == nil || e.Code != -32601 {
		t.Errorf("tasks/update in 2025-11-25: %+v; want -32601", e)
	}
	// A task the upstream no longer has (the TypeScript store drops a task
	// its ttl after it ends): -32602, TASK_NOT_FOUND.
	res, e, _ = ann.call(t, ctx, "tools/call", map[string]any{"name": "ts__slow", "arguments": map[string]any{"ms": 20}, "task": map[string]any{"ttl": 300}})
	lost := decodeTask(t, res).Task
	if e != nil || lost == nil || lost.TTL == nil || *lost.TTL != 300 {
		t.Fatalf("ts__slow with ttl 300: %s, %+v", res, e)
	}
	time.Sleep(time.Second)
	_, e, _ = ann.call(t, ctx, "tasks/get", map[string]any{"taskId": lost.TaskID})
	if e == nil || e.Code != -32602 || e.reason() != "TASK_NOT_FOUND" {
		t.Errorf("tasks/get of an expired task: %+v; want -32602 TASK_NOT_FOUND", e)
	}
	// A call without params.task runs normally, as before.
	res, e, _ = ann.call(t, ctx, "tools/call", map[string]any{"name": "ts__echo", "arguments": map[string]any{"text": "plain"}, "task": map[string]any{}})
	if e != nil || rawText(t, res) != "plain" {
		t.Errorf("echo with task = %s, %+v; want the plain result", res, e)
	}
}

// TestMCPFrontTasks2026: a 2026-07-28 client of the front door: the
// extension in server/discover; tools/call with the opt-in answers a task
// (resultType "task") on upstreams of both eras, and without it the
// result; tasks/get inlines the result or the input requests; tasks/update
// answers them; tasks/cancel; the Mcp-Name header checked; the errors.
// Then FastMCP's own tasks client against the front door.
func TestMCPFrontTasks2026(t *testing.T) {
	p := startToolsvc(t, cfg{Auth: taskAuth(), Servers: taskServers(t)}, "--mcp-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	c := newRawFront(t, ctx, p.mcpAddr, annTasks, true)
	bob := newRawFront(t, ctx, p.mcpAddr, bobTasks, true)
	res, e, _ := c.call(t, ctx, "server/discover", nil)
	if e != nil || !strings.Contains(string(res), `"io.modelcontextprotocol/tasks":{}`) {
		t.Fatalf("server/discover = %s, %+v; want the tasks extension", res, e)
	}
	for _, tool := range []string{"py__slow", "tsh__slow"} {
		res, e, _ = c.call(t, ctx, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"ms": 300}, "_meta": tasksOptIn()})
		if e != nil {
			t.Fatalf("%s with the opt-in: %+v", tool, e)
		}
		created := decodeTask(t, res)
		if created.ResultType != "task" || created.Status != "working" || !strings.HasPrefix(created.TaskID, "t1.") ||
			created.TTLMs == nil || created.PollIntervalMs != 100 || created.CreatedAt == "" {
			t.Fatalf("%s created = %s; want resultType task, ttlMs, pollIntervalMs 100", tool, res)
		}
		// Mcp-Name must name the task when it is sent.
		_, e, status := c.call(t, ctx, "tasks/get", map[string]any{"taskId": created.TaskID}, "t1.another")
		if e == nil || e.Code != -32020 || status != http.StatusBadRequest || e.reason() != "HEADER_MISMATCH" || !strings.Contains(string(e.Data), `"fields":["Mcp-Name"]`) {
			t.Errorf("tasks/get with another Mcp-Name: HTTP %d, %+v; want 400 and -32020 with data reason HEADER_MISMATCH, fields [Mcp-Name]", status, e)
		}
		if _, e, _ = c.call(t, ctx, "tasks/get", map[string]any{"taskId": created.TaskID}, "-"); e != nil {
			t.Errorf("tasks/get without Mcp-Name: %+v; want it served", e)
		}
		done := pollFront(t, ctx, c, created.TaskID)
		if done.Status != "completed" || done.ResultType != "complete" || rawText(t, done.Result) != "slept 300" {
			t.Errorf("%s tasks/get at the end = %+v; want completed with the result inline", tool, done)
		}
		_, e, _ = bob.call(t, ctx, "tasks/get", map[string]any{"taskId": created.TaskID})
		if e == nil || e.Code != -32602 || e.reason() != "TASK_NOT_YOURS" {
			t.Errorf("bob's tasks/get: %+v; want -32602 TASK_NOT_YOURS", e)
		}
		// Cancel: acknowledged; the task stays cancelled.
		res, e, _ = c.call(t, ctx, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"ms": 30000}, "_meta": tasksOptIn()})
		long := decodeTask(t, res)
		if e != nil || long.TaskID == "" {
			t.Fatalf("long task: %s, %+v", res, e)
		}
		res, e, _ = c.call(t, ctx, "tasks/cancel", map[string]any{"taskId": long.TaskID})
		if e != nil || !strings.Contains(string(res), `"resultType":"complete"`) {
			t.Errorf("tasks/cancel = %s, %+v", res, e)
		}
		if got := pollFront(t, ctx, c, long.TaskID); got.Status != "cancelled" {
			t.Errorf("after tasks/cancel: %+v", got)
		}
	}
	// Without the opt-in: the result.
	res, e, _ = c.call(t, ctx, "tools/call", map[string]any{"name": "py__slow", "arguments": map[string]any{"ms": 10}})
	if e != nil || rawText(t, res) != "slept 10" || strings.Contains(string(res), `"taskId"`) {
		t.Errorf("py__slow without the opt-in = %s, %+v; want the result", res, e)
	}
	// Input: inputRequests inline, answered with tasks/update.
	res, e, _ = c.call(t, ctx, "tools/call", map[string]any{"name": "py__ask", "arguments": map[string]any{}, "_meta": tasksOptIn()})
	ask := decodeTask(t, res)
	if e != nil || ask.ResultType != "task" {
		t.Fatalf("py__ask: %s, %+v", res, e)
	}
	waiting := pollFront(t, ctx, c, ask.TaskID)
	if waiting.Status != "input_required" || len(waiting.InputRequests) != 1 {
		t.Fatalf("py__ask tasks/get = %+v; want input_required with one request", waiting)
	}
	answers := map[string]any{}
	for k := range waiting.InputRequests {
		answers[k] = map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
	}
	res, e, _ = c.call(t, ctx, "tasks/update", map[string]any{"taskId": ask.TaskID, "inputResponses": answers})
	if e != nil || !strings.Contains(string(res), `"resultType":"complete"`) {
		t.Fatalf("tasks/update = %s, %+v", res, e)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := pollFront(t, ctx, c, ask.TaskID)
		if got.Status == "completed" {
			if rawText(t, got.Result) != "hello Ada" {
				t.Errorf("after tasks/update: %+v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after tasks/update the task stays %s", got.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, e, _ = c.call(t, ctx, "tasks/update", map[string]any{"taskId": ask.TaskID, "inputResponses": answers})
	if e == nil || e.reason() != "TASK_NOT_WAITING" {
		t.Errorf("tasks/update of an ended task: %+v; want TASK_NOT_WAITING", e)
	}
	// Forged and unknown; the methods the extension does not have.
	_, e, _ = c.call(t, ctx, "tasks/get", map[string]any{"taskId": "t1.forged"})
	if e == nil || e.Code != -32602 || e.reason() != "TASK_HANDLE_INVALID" || !strings.Contains(string(e.Data), `"taskId"`) {
		t.Errorf("forged taskId: %+v; want -32602 TASK_HANDLE_INVALID on field taskId", e)
	}
	for _, m := range []string{"tasks/list", "tasks/result"} {
		_, e, _ = c.call(t, ctx, m, map[string]any{"taskId": ask.TaskID})
		if e == nil || e.Code != -32601 {
			t.Errorf("%s in 2026-07-28: %+v; want -32601", m, e)
		}
	}

	// FastMCP's client, with fastmcp-tasks' client extension.
	py := venvBin(t, "tasks", "python")
	cmd := exec.CommandContext(ctx, py, filepath.Join(rootDir(t), "tests", "python", "tasks_front_client.py"),
		"http://"+p.mcpAddr+"/mcp", annTasks, "py__slow", "ts__slow", "ask:py__ask")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tasks_front_client.py: %v\n%s\n%s", err, out, stderr.String())
	}
	t.Logf("FastMCP client: %s", out)
	var r struct {
		Calls map[string]map[string]string `json:"calls"`
		Asked []string                     `json:"asked"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("report %q: %v", out, err)
	}
	// The client answers the task's inputRequests with tasks/update.
	if got := r.Calls["ask:py__ask"]; got["result"] != "hello Py" || len(r.Asked) != 1 || r.Asked[0] != "Your name?" {
		t.Errorf("FastMCP client on py__ask: %v, asked %v; want hello Py after one question", got, r.Asked)
	}
	for _, tool := range []string{"py__slow", "ts__slow"} {
		got := r.Calls[tool]
		if got["error"] != "" || got["created"] != "working" || got["result"] != "slept 300" || got["status"] != "completed" ||
			got["transparent"] != "slept 100" || got["cancelled"] != "cancelled" || !strings.Contains(got["fail"], "boom") {
			t.Errorf("FastMCP client on %s: %v", tool, got)
		}
	}
}

// TestMCPFrontTasksReplicas: two replicas sharing --state-key-file: a task
// created through one front door is polled, waited for and cancelled
// through the other, for a 2026-07-28 client (stateless) and a 2025-11-25
// one (its session adopted by the other replica). The upstream's era
// decides what another replica reaches: a 2026-07-28 upstream's tasks from
// any session; a 2025-11-25 HTTP upstream's through the upstream session
// that created them, which the other replica reaches by its id
// (mcpbridge/taskforeign.go).
func TestMCPFrontTasksReplicas(t *testing.T) {
	all := taskServers(t)
	key := filepath.Join(t.TempDir(), "state.key")
	if err := os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := cfg{Auth: taskAuth(), Servers: servers{"py": all["py"], "tsh": all["tsh"]}}
	a := startToolsvc(t, conf, "--state-key-file", key, "--mcp-listen", "127.0.0.1:0")
	b := startToolsvc(t, conf, "--state-key-file", key, "--mcp-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()

	ma, mb := newRawFront(t, ctx, a.mcpAddr, annTasks, true), newRawFront(t, ctx, b.mcpAddr, annTasks, true)
	for _, tool := range []string{"py__slow", "tsh__slow"} {
		res, e, _ := ma.call(t, ctx, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"ms": 300}, "_meta": tasksOptIn()})
		created := decodeTask(t, res)
		if e != nil || created.ResultType != "task" {
			t.Fatalf("%s on a: %s, %+v", tool, res, e)
		}
		if got := pollFront(t, ctx, mb, created.TaskID); got.Status != "completed" || rawText(t, got.Result) != "slept 300" {
			t.Errorf("2026-07-28: %s created on a, polled on b: %+v", tool, got)
		}
	}

	la := newRawFront(t, ctx, a.mcpAddr, annTasks, false)
	lb := &rawFront{url: "http://" + b.mcpAddr + "/mcp", token: annTasks, sid: la.sid} // the same session, on b
	for _, tool := range []string{"py__slow", "tsh__slow"} {
		res, e, _ := la.call(t, ctx, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"ms": 300}, "task": map[string]any{"ttl": 60000}})
		created := decodeTask(t, res).Task
		if e != nil || created == nil {
			t.Fatalf("%s on a: %s, %+v", tool, res, e)
		}
		res, e, _ = lb.call(t, ctx, "tasks/get", map[string]any{"taskId": created.TaskID})
		if e != nil || decodeTask(t, res).TaskID != created.TaskID {
			t.Errorf("2025-11-25: %s tasks/get on b: %s, %+v", tool, res, e)
		}
		res, e, _ = lb.call(t, ctx, "tasks/result", map[string]any{"taskId": created.TaskID})
		if e != nil || rawText(t, res) != "slept 300" {
			t.Errorf("2025-11-25: %s tasks/result on b: %s, %+v", tool, res, e)
		}
		res, e, _ = la.call(t, ctx, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"ms": 30000}, "task": map[string]any{}})
		long := decodeTask(t, res).Task
		if e != nil || long == nil {
			t.Fatalf("%s long on a: %s, %+v", tool, res, e)
		}
		res, e, _ = lb.call(t, ctx, "tasks/cancel", map[string]any{"taskId": long.TaskID})
		if e != nil || decodeTask(t, res).Status != "cancelled" {
			t.Errorf("2025-11-25: %s tasks/cancel on b: %s, %+v", tool, res, e)
		}
	}
}

// TestMCPFrontTasksChained: toolsvc's own bridge (a go-sdk client with its
// task layer) as a client of another toolsvc's front door, in both eras:
// it sees the tasks the front door declares (capabilities.tasks and
// execution.taskSupport; the extension in server/discover), runs a task
// through it, and watches it to the result, the task handle of one
// toolsvc wrapping the other's.
func TestMCPFrontTasksChained(t *testing.T) {
	all := taskServers(t)
	a := startToolsvc(t, cfg{Auth: taskAuth(), Servers: servers{"py": all["py"], "tsh": all["tsh"]}}, "--mcp-listen", "127.0.0.1:0")
	front := upstream{URL: "http://" + a.mcpAddr + "/mcp", Headers: map[string]string{"Authorization": "Bearer " + annTasks}}
	front26 := front
	front26.ProtocolVersion = "2026-07-28"
	b := startToolsvc(t, cfg{Servers: servers{"a25": front, "a26": front26}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	for server, era := range map[string]string{"a25": "2025-11-25", "a26": "2026-07-28"} {
		for _, tool := range []string{server + "__py__slow", server + "__tsh__slow"} {
			task := startTask(t, ctx, b.client, tool, `{"ms": 300}`)
			if task.GetProtocolVersion() != era {
				t.Errorf("%s: task of %s, want %s", tool, task.GetProtocolVersion(), era)
			}
			_, last := watchTask(t, ctx, b.client, task.GetHandle())
			if resultText(last.GetResult()) != "slept 300" {
				t.Errorf("%s through the front door: %v", tool, last)
			}
		}
	}
}
