package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/service/core"
)

// Tasks at the front door (docs/front-door.md, "Tasks"): a tools/call
// that runs as an upstream task (service/core/tasks.go), answered to the
// client in its own protocol era, whatever the upstream's:
//
//   - 2025-11-25 clients (experimental tasks): initialize declares
//     capabilities.tasks {list, cancel, requests.tools.call} and tools/list
//     each tool's execution.taskSupport, when some upstream runs tasks; a
//     tools/call with params.task answers CreateTaskResult {task}; then
//     tasks/get, tasks/result (blocks until the task ends), tasks/list and
//     tasks/cancel.
//   - 2026-07-28 clients (the io.modelcontextprotocol/tasks extension):
//     server/discover (and initialize) advertise the extension; a tools/call
//     whose _meta clientCapabilities name it may answer resultType "task";
//     then tasks/get (the result, error or input requests inline),
//     tasks/update and tasks/cancel, each naming its task in the Mcp-Name
//     header (checked against params.taskId when present).
//
// The taskId a client gets is the core's sealed, principal-bound handle,
// so any replica with the same --state-key-file serves every tasks/*
// request: there is nothing to route.

// The tasks/* methods the front door serves (both eras; each era refuses
// the others' with MethodNotFound).
var taskMethods = []string{"tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "tasks/update"}

// taskParams are the params of every tasks/* request.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string               `json:"taskId,omitempty"`
	Cursor         string               `json:"cursor,omitempty"`
	InputResponses mcp.InputResponseMap `json:"inputResponses,omitempty"`
}

// jsonResult is a result go-sdk has no type for: v, marshalled as it is.
type jsonResult struct {
	mcp.ResultBase
	v any
}

func (r *jsonResult) MarshalJSON() ([]byte, error) { return json.Marshal(r.v) }

// taskCallHeader carries a 2025-11-25 tools/call's params.task from
// serveStreamable, which reads the body, to the tools/call handler: go-sdk
// drops params.task when it decodes the request (CallToolParamsRaw has no
// such field). Any value a client sends in it is removed first (Handler).
const taskCallHeader = "Toolsvc-Internal-Task"

// mcpNameHeader names a 2026-07-28 request's target: a task's id for
// tasks/*.
const mcpNameHeader = "Mcp-Name"

// codeHeaderMismatch is the 2026-07-28 error of a request whose Mcp-Name
// (or Mcp-Method) header contradicts its body (go-sdk's
// mcp.CodeHeaderMismatch, which it answers with HTTP 400 for the methods
// it checks itself).
const codeHeaderMismatch = mcp.CodeHeaderMismatch

// Reasons of the front door's own task errors (JSON-RPC -32602, with
// data.reason): tasks/result of a task that was cancelled, and (2025-11-25)
// tasks/cancel of a task that had already ended.
const (
	reasonTaskCancelled = "TASK_CANCELLED"
	reasonTaskEnded     = "TASK_ENDED"
)

// peekTaskRequest reads what go-sdk would drop or not check in a POST's
// single JSON-RPC request: a tools/call's params.task goes into
// taskCallHeader; a 2026-07-28 tasks/* request's Mcp-Name is checked
// against its params.taskId (a mismatch is answered here, HTTP 400 and
// -32020, as go-sdk answers it for tools/call). It reports whether the
// request goes on.
func peekTaskRequest(w http.ResponseWriter, r *http.Request, body []byte, modern bool) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			TaskID json.RawMessage `json:"taskId"`
			Task   json.RawMessage `json:"task"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil { // a batch, or not JSON: go-sdk's to answer
		return true
	}
	switch {
	case m.Method == "tools/call" && len(m.Params.Task) > 0 && string(m.Params.Task) != "null":
		r.Header.Set(taskCallHeader, string(m.Params.Task))
	case modern && strings.HasPrefix(m.Method, "tasks/"):
		name := r.Header.Get(mcpNameHeader)
		var id string
		if name == "" || json.Unmarshal(m.Params.TaskID, &id) != nil || id == name {
			// No header: accepted (fastmcp's own client sends none, and
			// the taskId opens on any replica); a taskId that is not a
			// string is the handler's to refuse.
			return true
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		e := mcpError(&core.Error{Code: core.InvalidArgument, Reason: core.ReasonHeaderMismatch,
			Message:    fmt.Sprintf("header mismatch: the %s header names another task than params.taskId", mcpNameHeader),
			Violations: []core.FieldViolation{core.Violation(mcpNameHeader, "not params.taskId")}})
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": e})
		return false
	}
	return true
}

// callTaskOptions is what a tools/call asks of tasks: a 2025-11-25
// request's params.task (its ttl in milliseconds), or a 2026-07-28
// request whose _meta clientCapabilities name the tasks extension. nil:
// no task, the call runs normally.
//
// A params.task that is malformed is the *core.Error of the one task.ttl
// rule (core.TaskTTL), for BeginCall to refuse with (CallInput.Invalid),
// as on gRPC. caps is req's ClientCapabilities.
func callTaskOptions(req *mcp.CallToolRequest, caps *mcp.ClientCapabilities) (*core.TaskOptions, *core.Error) {
	if req.ProtocolVersion() >= statelessEra {
		if caps != nil {
			if _, ok := caps.Extensions[core.TasksExtension]; ok {
				return &core.TaskOptions{}, nil
			}
		}
		return nil, nil
	}
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil {
		return nil, nil
	}
	raw := extra.Header.Get(taskCallHeader)
	if raw == "" {
		return nil, nil
	}
	var t struct {
		TTL *float64 `json:"ttl"`
	}
	if err := json.Unmarshal([]byte(raw), &t); err != nil {
		return nil, core.InvalidField("task", "must be an object {ttl?: milliseconds}")
	}
	if t.TTL == nil {
		return &core.TaskOptions{}, nil
	}
	ttl := time.Duration(math.MaxInt64) // saturated: one over the bound stays over it
	if ms := *t.TTL; ms < float64(math.MaxInt64/int64(time.Millisecond)) {
		ttl = time.Duration(ms * float64(time.Millisecond))
	}
	return core.TaskTTL(ttl)
}

// tasksOffered reports whether some upstream's current session runs tasks
// (either era): then the front door declares them.
func (f *Front) tasksOffered() bool {
	for _, s := range f.c.Servers() {
		if s.Tasks != core.TaskEraNone {
			return true
		}
	}
	return false
}

// toolTaskSupport is a tool's execution.taskSupport for a 2025-11-25
// client: its own (optional, required) on a 2025-11-25 upstream; on a
// 2026-07-28 upstream "required" once the bridge learnt the tool refuses a
// plain call, else "optional" (the tool decides when called); ""
// (forbidden) otherwise.
func (f *Front) toolTaskSupport(t *core.Tool) string {
	era, _ := f.c.TaskEra(t.Server)
	switch era {
	case core.TaskEra2025:
		if t.TaskSupport == core.TaskSupportOptional || t.TaskSupport == core.TaskSupportRequired {
			return t.TaskSupport
		}
	case core.TaskEra2026:
		if t.TaskSupport == core.TaskSupportRequired {
			return t.TaskSupport
		}
		return core.TaskSupportOptional
	}
	return ""
}

// tasksReach reports whether the client of req, at protocol version,
// can run tasks through the front door: 2025-11-25 or later, over
// streamable HTTP (the legacy SSE transport's requests carry no headers,
// so params.task could not reach the handler; its clients are 2024-11-05
// ones anyway).
func tasksReach(req mcp.Request, version string) bool {
	extra := req.GetExtra()
	return version >= legacyDefaultVersion && extra != nil && extra.Header != nil
}

// tasksCapability is a 2025-11-25 server's capabilities.tasks.
var tasksCapability = map[string]any{"list": map[string]any{}, "cancel": map[string]any{},
	"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}

// withTasksCapability is initialize's result with the tasks declared in
// the negotiated version's form: capabilities.tasks before 2026-07-28, the
// extension after.
func withTasksCapability(res *mcp.InitializeResult) (mcp.Result, error) {
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	caps, _ := m["capabilities"].(map[string]any)
	if caps == nil {
		caps = map[string]any{}
		m["capabilities"] = caps
	}
	if res.ProtocolVersion >= statelessEra {
		ext, _ := caps["extensions"].(map[string]any)
		if ext == nil {
			ext = map[string]any{}
			caps["extensions"] = ext
		}
		ext[core.TasksExtension] = map[string]any{}
	} else {
		caps["tasks"] = tasksCapability
	}
	return &jsonResult{v: m}, nil
}

// withTasksExtension is server/discover's result with the tasks extension.
func withTasksExtension(res *mcp.DiscoverResult) *mcp.DiscoverResult {
	out := *res
	caps := &mcp.ServerCapabilities{}
	if res.Capabilities != nil {
		*caps = *res.Capabilities
	}
	caps.Extensions = maps.Clone(caps.Extensions)
	caps.AddExtension(core.TasksExtension, map[string]any{})
	out.Capabilities = caps
	return &out
}

// taskTool is a tool of a 2025-11-25 tools/list with its
// execution.taskSupport (go-sdk's Tool has no execution).
type taskTool struct {
	*mcp.Tool
	Execution *toolExecution `json:"execution,omitempty"`
}

type toolExecution struct {
	TaskSupport string `json:"taskSupport"`
}

// tasksToolList is a 2025-11-25 tools/list result with each tool's
// execution.
type tasksToolList struct {
	*mcp.ListToolsResult
	noCacheFields            // no ttlMs and cacheScope in this era (eras.go)
	Tools         []taskTool `json:"tools"`
}

// withTaskSupport is res with each tool's execution.taskSupport (snap is
// the snapshot the page was listed from).
func (f *Front) withTaskSupport(res *mcp.ListToolsResult, snap *core.Snapshot) mcp.Result {
	out := &tasksToolList{ListToolsResult: res, Tools: make([]taskTool, len(res.Tools))}
	for i, t := range res.Tools {
		out.Tools[i] = taskTool{Tool: t}
		if bt, ok := snap.Lookup(t.Name); ok {
			if s := f.toolTaskSupport(bt); s != "" {
				out.Tools[i].Execution = &toolExecution{TaskSupport: s}
			}
		}
	}
	return out
}

// wireTime is a task time as both eras write it (ISO 8601); the zero
// time (the upstream did not say) is now.
func wireTime(t time.Time) string {
	if t.IsZero() {
		t = time.Now()
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func millis(d time.Duration) *int64 {
	if d <= 0 {
		return nil
	}
	ms := d.Milliseconds()
	return &ms
}

// task2025 is a 2025-11-25 Task.
type task2025 struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	// TTL is required and null for "no limit".
	TTL           *int64 `json:"ttl"`
	PollInterval  *int64 `json:"pollInterval,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
}

func newTask2025(t *core.Task) task2025 {
	return task2025{TaskID: t.Handle, Status: string(t.Status), StatusMessage: t.StatusMessage, TTL: millis(t.TTL),
		PollInterval: millis(t.PollInterval), CreatedAt: wireTime(t.Created), LastUpdatedAt: wireTime(t.Updated)}
}

// task2026 is a 2026-07-28 task result: a CreateTaskResult (resultType
// "task") or a tasks/get result (resultType "complete", with at most one of
// result, error and inputRequests).
type task2026 struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTLMs is required and null for "no limit".
	TTLMs          *int64              `json:"ttlMs"`
	PollIntervalMs *int64              `json:"pollIntervalMs,omitempty"`
	ResultType     string              `json:"resultType"`
	Result         *mcp.CallToolResult `json:"result,omitempty"`
	Error          *jsonrpc.Error      `json:"error,omitempty"`
	InputRequests  mcp.InputRequestMap `json:"inputRequests,omitempty"`
}

func newTask2026(t *core.Task, resultType string) task2026 {
	out := task2026{TaskID: t.Handle, Status: string(t.Status), StatusMessage: t.StatusMessage, CreatedAt: wireTime(t.Created),
		LastUpdatedAt: wireTime(t.Updated), TTLMs: millis(t.TTL), PollIntervalMs: millis(t.PollInterval), ResultType: resultType}
	if t.Status == core.TaskInputRequired && len(t.InputRequests) > 0 {
		out.InputRequests = t.InputRequests
	}
	return out
}

// createdTask is tools/call's answer when the upstream made a task.
func createdTask(t *core.Task, modern bool) mcp.Result {
	if modern {
		return &jsonResult{v: newTask2026(t, "task")}
	}
	return &jsonResult{v: map[string]any{"task": newTask2025(t)}}
}

// taskMethod answers tasks/*: one operation of the core's engine on the
// task its taskId (the handle) names, for the request's principal.
func (f *Front) taskMethod(ctx context.Context, method string, req *mcp.ServerRequest[*taskParams]) (mcp.Result, error) {
	modern := taskRequestVersion(req) >= statelessEra
	if (modern && (method == "tasks/list" || method == "tasks/result")) || (!modern && method == "tasks/update") {
		era := legacyDefaultVersion
		if modern {
			era = statelessEra + " tasks extension"
		}
		return nil, mcpError(core.NewError(core.Unimplemented, core.ReasonMethodNotFound, fmt.Sprintf("%s is not a method of %s", method, era), nil))
	}
	p := req.Params
	if p == nil {
		p = &taskParams{}
	}
	pctx := principalContext(ctx, req.GetExtra())
	if method == "tasks/list" {
		ts, fail := f.c.ListTasks(pctx, "")
		if fail != nil {
			return nil, mcpError(fail)
		}
		list := make([]task2025, len(ts))
		for i, t := range ts {
			list[i] = newTask2025(t)
		}
		// One page: the replica's ledger of the principal's tasks is
		// bounded (service/core/tasks.go).
		return &jsonResult{v: map[string]any{"tasks": list}}, nil
	}
	kind := map[string]core.OpKind{"tasks/get": core.OpTaskGet, "tasks/result": core.OpTaskWatch,
		"tasks/cancel": core.OpTaskCancel, "tasks/update": core.OpTaskUpdate}[method]
	t, err := f.c.BeginTask(pctx, kind, p.TaskID, mcpFields)
	var res mcp.Result
	if err == nil {
		switch method {
		case "tasks/get":
			res, err = f.getTask(t, modern)
		case "tasks/result":
			ask := &taskAsker{f: f, hctx: ctx, pctx: pctx, handle: p.TaskID, ss: req.Session}
			if req.Session != nil && req.Session.InitializeParams() != nil {
				ask.kinds = clientInput(req.Session.InitializeParams().Capabilities)
			}
			res, err = f.taskResult(ctx, t, ask)
		case "tasks/cancel":
			res, err = f.cancelTask(t, modern)
		case "tasks/update":
			res, err = f.updateTask(t, p.InputResponses)
		}
	}
	fail := t.Fail(err)
	t.End(fail)
	if fail != nil {
		return nil, mcpError(fail)
	}
	return res, nil
}

func (f *Front) getTask(t *core.TaskOp, modern bool) (mcp.Result, error) {
	st, err := t.Get(t.Context())
	if err != nil {
		return nil, err
	}
	if !modern {
		return &jsonResult{v: newTask2025(st.Task)}, nil
	}
	out := newTask2026(st.Task, "complete")
	switch {
	case st.Failure != nil:
		out.Error = mcpError(st.Failure)
	case st.Result != nil:
		out.Result = st.Result
		// In the extension a tool's own failure is a completed task with
		// an isError result, and "failed" a protocol error (error); a
		// 2025-11-25 upstream marks the former failed.
		out.Status = string(core.TaskCompleted)
	}
	return f.checked(&jsonResult{v: out})
}

// checked applies the response limit to a result that carries a tool's
// result (measured in JSON, as tools/call's).
func (f *Front) checked(res mcp.Result) (mcp.Result, error) {
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	if e := f.c.CheckResponse(len(raw)); e != nil {
		return nil, e
	}
	return res, nil
}

// taskResult is 2025-11-25 tasks/result: it waits for the task to end (the
// core's watch: one shared poll of the upstream per task on this replica)
// and answers its result, with _meta's related-task naming it. A task that
// failed with the upstream's protocol error answers that error; a cancelled
// one has no result. A task that waits for input meanwhile (a 2026-07-28
// upstream's inputRequests) is answered as a 2025-11-25 task's requests
// reach its client: on the tasks/result stream (ask).
func (f *Front) taskResult(ctx context.Context, t *core.TaskOp, ask *taskAsker) (mcp.Result, error) {
	var last *core.TaskState
	wctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stop := context.AfterFunc(ctx, cancel) // the handler's context: the client's cancellation
	defer stop()
	err := t.Watch(wctx, func(st *core.TaskState) error {
		last = st
		switch {
		case st.Task.Status != core.TaskInputRequired:
		case len(st.Task.InputRequests) > 0:
			return ask.answer(ctx, st.Task)
		case st.Task.Era == core.TaskEra2025:
			return errAskUpstream
		}
		return nil
	})
	if errors.Is(err, errAskUpstream) {
		// A 2025-11-25 upstream's task asks on the stream of the
		// upstream's own tasks/result: wait on it, with the client's
		// interaction.
		res, err := t.Result(wctx, ask.interaction())
		switch {
		case errors.Is(err, core.ErrTaskCancelled):
			return nil, core.NewError(core.InvalidArgument, reasonTaskCancelled, "the task was cancelled: it has no result", nil)
		case err != nil:
			return nil, err
		}
		last = &core.TaskState{Task: last.Task, Result: res}
	} else if err != nil {
		return nil, err
	}
	switch {
	case last == nil || last.Task.Status == core.TaskCancelled:
		return nil, core.NewError(core.InvalidArgument, reasonTaskCancelled, "the task was cancelled: it has no result", nil)
	case last.Failure != nil:
		return nil, last.Failure
	}
	res := *last.Result
	res.Meta = maps.Clone(res.Meta)
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	res.Meta[relatedTaskMetaKey] = map[string]any{"taskId": last.Task.Handle}
	return f.checked(&res)
}

// taskAsker answers a task's input requests during tasks/result: each
// request of a kind the client declared (at initialize) is sent to the
// client on its session, the others get the server's input policy's
// answer (as in an interactive call); the answers go to the upstream with
// tasks/update, one more operation of the engine. A request is answered
// once.
type taskAsker struct {
	f        *Front
	hctx     context.Context // the handler's
	pctx     context.Context // the request's, with its principal
	handle   string
	ss       *mcp.ServerSession
	kinds    *core.InputOptions
	answered map[string]bool
}

// errAskUpstream stops a tasks/result's watch when a 2025-11-25
// upstream's task waits for input (its requests come with the upstream's
// tasks/result).
var errAskUpstream = errors.New("the task asks on its result stream")

// interaction is the bridge's view of the client for a 2025-11-25
// upstream's requests: the kinds it declared, each asked on its session.
func (a *taskAsker) interaction() *core.Interaction {
	it := &core.Interaction{}
	if a.kinds == nil || a.ss == nil {
		return it // the server's input policy answers
	}
	it.Kinds = a.kinds.Kinds
	it.Ask = func(ctx context.Context, r mcp.InputRequest) (mcp.InputResponse, error) {
		// Asked in the handler's context, so that go-sdk sends the
		// request on the stream of the client's tasks/result; ended as
		// well when the upstream gives up on its own request.
		hctx, cancel := context.WithCancel(a.hctx)
		defer cancel()
		defer context.AfterFunc(ctx, cancel)()
		got, err := askClient(hctx, a.ss, mcp.InputRequestMap{"q": r})
		if err != nil {
			return nil, err
		}
		return got["q"], nil
	}
	return it
}

func (a *taskAsker) answer(ctx context.Context, task *core.Task) error {
	if a.answered == nil {
		a.answered = map[string]bool{}
	}
	ask, policy := mcp.InputRequestMap{}, map[string]mcp.InputResponse{}
	for id, r := range task.InputRequests {
		switch {
		case a.answered[id]:
		case a.kinds != nil && a.ss != nil && a.kinds.Kinds.Allows(r):
			ask[id] = r
		default:
			policy[id] = a.f.c.PolicyAnswer(task.Server, r)
		}
	}
	if len(ask) > 0 {
		got, err := askClient(ctx, a.ss, ask)
		if err != nil {
			return err
		}
		maps.Copy(policy, got)
	}
	if len(policy) == 0 {
		return nil
	}
	u, err := a.f.c.BeginTask(a.pctx, core.OpTaskUpdate, a.handle, mcpFields)
	if err == nil {
		_, err = u.Update(u.Context(), policy)
	}
	fail := u.Fail(err)
	u.End(fail)
	if fail != nil {
		return fail
	}
	for id := range policy {
		a.answered[id] = true
	}
	return nil
}

// relatedTaskMetaKey links a 2025-11-25 result to its task.
const relatedTaskMetaKey = "io.modelcontextprotocol/related-task"

func (f *Front) cancelTask(t *core.TaskOp, modern bool) (mcp.Result, error) {
	task, err := t.Cancel(t.Context())
	if err != nil {
		return nil, err
	}
	if modern {
		// The extension's acknowledgement: empty (a task that had ended
		// stays as it was).
		return &jsonResult{v: map[string]any{"resultType": "complete"}}, nil
	}
	if task.Status == core.TaskCompleted || task.Status == core.TaskFailed {
		// 2025-11-25: a task in a terminal status cannot be cancelled
		// (-32602, as the TypeScript SDK answers).
		return nil, core.NewError(core.InvalidArgument, reasonTaskEnded,
			"cannot cancel a task in terminal status "+strconv.Quote(string(task.Status)), nil)
	}
	return &jsonResult{v: newTask2025(task)}, nil
}

func (f *Front) updateTask(t *core.TaskOp, responses mcp.InputResponseMap) (mcp.Result, error) {
	if _, err := t.Update(t.Context(), responses); err != nil {
		return nil, err
	}
	return &jsonResult{v: map[string]any{"resultType": "complete"}}, nil
}

// taskRequestVersion is the protocol version of a tasks/* request:
// go-sdk's ServerRequest.ProtocolVersion panics on a custom method's
// request without params (tasks/list has none: the promoted isNil of the
// embedded ParamsBase dereferences the nil params; gosdk_test.go pins
// it), and such a request can only be a session's (a 2026-07-28 request
// carries its version in params._meta).
func taskRequestVersion(req *mcp.ServerRequest[*taskParams]) string {
	if req.Params != nil {
		return req.ProtocolVersion()
	}
	if req.Session != nil {
		if ip := req.Session.InitializeParams(); ip != nil {
			return ip.ProtocolVersion
		}
	}
	return ""
}

// notReached is the handler go-sdk holds for each tasks/* method, so that
// it accepts them; the middleware answers them first.
func notReached(context.Context, *mcp.ServerSession, *taskParams) (*jsonResult, error) {
	return nil, mcpError(core.InternalFailure())
}

// registerTaskMethods makes go-sdk accept the tasks/* methods (it refuses
// methods it does not know before any middleware runs).
func registerTaskMethods(s *mcp.Server) {
	for _, m := range taskMethods {
		if err := mcp.AddReceivingCustomMethod(s, m, notReached); err != nil {
			panic(err) // only a standard method's name fails
		}
	}
}
