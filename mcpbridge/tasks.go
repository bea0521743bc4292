package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks: a tool call that the upstream runs in the background and the
// caller polls (MCP tasks). Two protocol eras do it differently, and
// go-sdk v1.8.0 does neither (docs/upstream-behaviour.md §7):
//
//   - 2025-11-25 (experimental tasks; the TypeScript SDK serves them): the
//     server declares capabilities.tasks.requests.tools.call and each
//     tool's execution.taskSupport; the client asks with params.task
//     {ttl} on tools/call and gets {task: {...}}; then tasks/get,
//     tasks/result (the tool's result, once terminal), tasks/list and
//     tasks/cancel. A task is bound to the upstream session that created it
//     (the TypeScript SDK hides it from any other session).
//   - 2026-07-28 (the io.modelcontextprotocol/tasks extension;
//     fastmcp-tasks serves it): the server advertises the extension; the
//     client opts in per request (its clientCapabilities in _meta name the
//     extension) and the tool decides: a result with resultType "task", or
//     a plain result. tasks/get carries the result, the error or the input
//     requests inline; tasks/update answers input requests; tasks/cancel;
//     no tasks/list, no tasks/result. Every tasks/* request names its task
//     in the Mcp-Name header. Tasks are bound to the caller's credentials,
//     not to a session.
//
// The bridge records what go-sdk drops from the raw messages (tasktap.go),
// asks for a task only when the upstream and the tool can run one (else the
// call runs normally and CallTask returns its result), and sends tasks/*
// with go-sdk's custom-method API on the upstream's current session. A
// task is named by a TaskRef: explicit and serializable, so a later layer
// can seal it into a handle and reach the task again from any replica
// (2026-07-28) or from the replica whose session owns it (2025-11-25).
//
// What happens to 2025-11-25 tasks when the bridge's session ends: the
// bridge closes a session it replaces (reconnect, restart, reload, shutdown;
// go-sdk's Close sends DELETE on streamable HTTP, and a stdio child exits),
// and the upstream's tasks bound to that session become unreachable: a
// TaskRef naming it gets a TaskNotFoundError with SessionEnded, at once,
// without asking the upstream. The bridge logs how many tasks it saw
// created on a session and not finished when it tears the session down.

// TaskEra is the kind of tasks an upstream session runs.
type TaskEra string

const (
	// TaskEraNone: the upstream (or this session's protocol) runs no tasks.
	TaskEraNone TaskEra = ""
	// TaskEra2025: 2025-11-25 experimental tasks.
	TaskEra2025 TaskEra = "2025-11-25"
	// TaskEra2026: the 2026-07-28 io.modelcontextprotocol/tasks extension.
	TaskEra2026 TaskEra = "2026-07-28"
)

// TasksExtension is the 2026-07-28 tasks extension's identifier.
const TasksExtension = "io.modelcontextprotocol/tasks"

// Tool.TaskSupport values (2025-11-25 execution.taskSupport).
const (
	TaskSupportOptional  = "optional"
	TaskSupportRequired  = "required"
	TaskSupportForbidden = "forbidden"
)

// TaskStatus is a task's status, as both eras name it.
type TaskStatus string

const (
	TaskWorking       TaskStatus = "working"
	TaskInputRequired TaskStatus = "input_required"
	TaskCompleted     TaskStatus = "completed"
	TaskFailed        TaskStatus = "failed"
	TaskCancelled     TaskStatus = "cancelled"
)

// Terminal reports a status the task never leaves.
func (s TaskStatus) Terminal() bool {
	return s == TaskCompleted || s == TaskFailed || s == TaskCancelled
}

// TaskRef names an upstream task: everything needed to reach it again.
// It holds no secret of its own, but Session is the upstream's session id:
// a handle built from a TaskRef must be sealed (encrypted and
// authenticated) and bound to its principal.
type TaskRef struct {
	// Server is the configured upstream.
	Server string `json:"server"`
	// ID is the upstream's task id, verbatim.
	ID string `json:"id"`
	// Era is how the task is reached.
	Era TaskEra `json:"era"`
	// Session names the upstream session a 2025-11-25 task is bound to:
	// the upstream's Mcp-Session-Id on streamable HTTP, or a token of the
	// bridge's own session elsewhere (a stdio child lives and dies with
	// it). Empty for 2026-07-28 tasks, which any session can reach.
	Session string `json:"session,omitempty"`
}

// Task is the state of an upstream task, as the upstream reported it.
type Task struct {
	TaskRef
	Status TaskStatus
	// StatusMessage is the upstream's description of the status, if any.
	StatusMessage string
	// TTL is how long the upstream keeps the task after its creation
	// (0: the upstream did not say, or keeps it without limit).
	TTL time.Duration
	// PollInterval is the upstream's suggested interval between polls
	// (0: none suggested).
	PollInterval time.Duration
	// Created and Updated are the upstream's times (zero if unreadable).
	Created, Updated time.Time
	// InputRequests are what a 2026-07-28 task in input_required waits
	// for, by the upstream's keys (answer with UpdateTask). A 2025-11-25
	// task's requests reach the caller through TaskResult's Interaction.
	InputRequests mcp.InputRequestMap
}

// TaskRequest asks for a call to run as a task.
type TaskRequest struct {
	// TTL is the lifetime requested for the task (0: the upstream's
	// default). Only 2025-11-25 upstreams take it, as a hint.
	TTL time.Duration
}

var (
	// ErrTaskNotFound: the upstream does not know the task (it never
	// existed, expired, belongs to other credentials) or can no longer be
	// reached (TaskNotFoundError says which).
	ErrTaskNotFound = errors.New("task not found")
	// ErrTaskNotDone: the task has not reached a terminal status, so it
	// has no result yet (TaskNotDoneError carries its state).
	ErrTaskNotDone = errors.New("task not done")
	// ErrTaskCancelled: the task was cancelled; it has no result.
	ErrTaskCancelled = errors.New("task cancelled")
	// ErrTasksUnsupported: the upstream runs no tasks, or not the
	// operation asked for in the task's era.
	ErrTasksUnsupported = errors.New("operation not supported for this upstream's tasks")
)

// TaskNotFoundError details ErrTaskNotFound.
type TaskNotFoundError struct {
	Server, TaskID string
	// SessionEnded: the upstream session that could reach the task has
	// ended (the upstream was not asked): the 2025-11-25 session that owned
	// it, or one of the era the task was created in (the current session
	// runs another era, or no tasks).
	SessionEnded bool
	// Upstream is the upstream's own answer (InvalidParams), when it gave
	// one.
	Upstream *UpstreamError
}

func (e *TaskNotFoundError) Error() string {
	if e.SessionEnded {
		return fmt.Sprintf("task %q not found on server %q: the upstream session that could reach it has ended", e.TaskID, e.Server)
	}
	return fmt.Sprintf("task %q not found on server %q", e.TaskID, e.Server)
}

// Is makes errors.Is(err, ErrTaskNotFound) true.
func (e *TaskNotFoundError) Is(target error) bool { return target == ErrTaskNotFound }

// Unwrap is the upstream's answer, if any.
func (e *TaskNotFoundError) Unwrap() error {
	if e.Upstream == nil {
		return nil
	}
	return e.Upstream
}

// TaskNotDoneError details ErrTaskNotDone with the task's state.
type TaskNotDoneError struct{ Task *Task }

func (e *TaskNotDoneError) Error() string {
	return fmt.Sprintf("task %q on server %q is %s: no result yet", e.Task.ID, e.Task.Server, e.Task.Status)
}

// Is makes errors.Is(err, ErrTaskNotDone) true.
func (e *TaskNotDoneError) Is(target error) bool { return target == ErrTaskNotDone }

// TaskEra reports the kind of tasks the server's current session runs
// (TaskEraNone without a session).
func (b *Bridge) TaskEra(server string) (TaskEra, error) {
	u, err := b.upstream(server)
	if err != nil {
		return TaskEraNone, err
	}
	s := u.sess.Load()
	if s == nil {
		return TaskEraNone, nil
	}
	era, _ := s.tasks.current()
	return era, nil
}

// CallTask calls the resolved tool as Call does, asking the upstream to run
// it as a task when the upstream and the tool can: a 2025-11-25 upstream
// that declares task-augmented tools/call, for a tool whose taskSupport is
// optional or required; a 2026-07-28 upstream that offers the tasks
// extension (its tool decides). Exactly one of the result and the task is
// non-nil when err is nil: a task when the upstream created one, else the
// call ran normally (the upstream could not, or chose not to, run a task)
// and its result is returned. Errors are Call's.
func (b *Bridge) CallTask(ctx context.Context, target Target, args any, req TaskRequest, opts *CallOptions) (*mcp.CallToolResult, *Task, error) {
	support := ""
	if target.Tool != nil {
		support = target.Tool.TaskSupport
	}
	tc := &taskCall{ttl: req.TTL, support: support}
	res, err := b.Call(withTaskCall(ctx, tc), target, args, opts)
	tc.forget()
	if err != nil {
		return nil, nil, err
	}
	s, era, owner, raw, got := tc.outcome()
	if era == TaskEraNone {
		return res, nil, nil // not asked: the call ran normally
	}
	server := target.Tool.Server
	if !got {
		// go-sdk decodes a task as an empty success: without the raw
		// answer the bridge cannot tell, and must not guess.
		return nil, nil, &MalformedAnswerError{Server: server, Detail: fmt.Sprintf("the answer to task-augmented call %q could not be read", target.Tool.OriginalName)}
	}
	w, isTask, err := decodeCreated(raw, era)
	if err != nil {
		return nil, nil, &MalformedAnswerError{Server: server, Detail: fmt.Sprintf("call %q: %v", target.Tool.OriginalName, err)}
	}
	if !isTask {
		return res, nil, nil // the upstream ran it normally
	}
	ref := TaskRef{Server: server, ID: w.TaskID, Era: era}
	if era == TaskEra2025 {
		ref.Session = owner
	}
	t, err := w.task(ref)
	if err != nil {
		return nil, nil, &MalformedAnswerError{Server: server, Detail: fmt.Sprintf("call %q: %v", target.Tool.OriginalName, err)}
	}
	s.tasks.track(t)
	return nil, t, nil
}

// GetTask asks the upstream for the task's state (tasks/get).
func (b *Bridge) GetTask(ctx context.Context, ref TaskRef) (*Task, error) {
	t, _, err := b.getTask(ctx, ref)
	return t, err
}

// getTask is tasks/get: the task and its wire form (2026-07-28 carries the
// result or error inline).
func (b *Bridge) getTask(ctx context.Context, ref TaskRef) (*Task, *wireTask, error) {
	raw, err := b.taskRequest(ctx, ref, "tasks/get", &taskParams{TaskID: ref.ID})
	if err != nil {
		return nil, nil, notFound(ref, err)
	}
	var w wireTask
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, nil, &MalformedAnswerError{Server: ref.Server, Detail: "tasks/get: " + err.Error()}
	}
	t, err := w.task(ref)
	if err != nil {
		return nil, nil, &MalformedAnswerError{Server: ref.Server, Detail: "tasks/get: " + err.Error()}
	}
	b.observed(ctx, t)
	return t, &w, nil
}

// TaskResult returns a terminal task's result: the tool's result (a tool
// that failed is a result with IsError set, as from Call), or, for a
// 2026-07-28 task that failed with a protocol error, that error as an
// *UpstreamError. A cancelled task is ErrTaskCancelled; one not terminal
// yet is a *TaskNotDoneError (ErrTaskNotDone) with its state.
//
// With input (2025-11-25), a task that is not terminal is waited for
// instead: tasks/result blocks until the task ends, and the requests the
// upstream queued for it (elicitation, sampling; status input_required)
// reach input.Ask meanwhile, as during an interactive Call. The wait is
// bounded by ctx, or else the server's callTimeout.
func (b *Bridge) TaskResult(ctx context.Context, ref TaskRef, input *Interaction) (*mcp.CallToolResult, error) {
	t, w, err := b.getTask(ctx, ref)
	if err != nil {
		return nil, err
	}
	switch {
	case t.Status == TaskCancelled:
		return nil, fmt.Errorf("%w: task %q on server %q", ErrTaskCancelled, ref.ID, ref.Server)
	case !t.Status.Terminal() && (ref.Era != TaskEra2025 || input == nil):
		return nil, &TaskNotDoneError{Task: t}
	}
	return b.taskOutcome(ctx, ref, t, w, input)
}

// PollTask asks the upstream for the task's state and, once the task has
// ended with a result or an error, for that too: end is nil while the task
// runs and for a cancelled task; else end.Result is the tool's result or
// end.Err the upstream's protocol error (*UpstreamError). err is the poll's
// own failure. A 2026-07-28 task costs one request (tasks/get carries the
// outcome), a 2025-11-25 one a second (tasks/result) once it has ended.
func (b *Bridge) PollTask(ctx context.Context, ref TaskRef) (_ *Task, end *TaskEnd, _ error) {
	ctx = context.WithValue(ctx, backgroundPollKey{}, true) // no storm rests for it (request.go)
	t, w, err := b.getTask(ctx, ref)
	if err != nil || !t.Status.Terminal() || t.Status == TaskCancelled {
		return t, nil, err
	}
	res, err := b.taskOutcome(ctx, ref, t, w, nil)
	var ue *UpstreamError
	switch {
	case err == nil:
		return t, &TaskEnd{Result: res}, nil
	case errors.As(err, &ue) && ref.Era == TaskEra2026:
		return t, &TaskEnd{Err: ue}, nil
	}
	return t, nil, err
}

// TaskEnd is how a task ended: with the tool's result, or with the
// upstream's protocol error.
type TaskEnd struct {
	Result *mcp.CallToolResult
	Err    *UpstreamError
}

// taskOutcome reads a terminal task's result (tasks/get's inline one, or
// tasks/result), or waits for it with input (2025-11-25).
func (b *Bridge) taskOutcome(ctx context.Context, ref TaskRef, t *Task, w *wireTask, input *Interaction) (*mcp.CallToolResult, error) {
	var raw json.RawMessage
	var err error
	switch ref.Era {
	case TaskEra2026:
		if w.Error != nil {
			return nil, &UpstreamError{Server: ref.Server, Code: w.Error.Code, Message: w.Error.Message}
		}
		if len(w.Result) == 0 {
			return nil, &MalformedAnswerError{Server: ref.Server, Detail: fmt.Sprintf("tasks/get: task %q is %s without a result", ref.ID, t.Status)}
		}
		raw = w.Result
	default:
		if input != nil && !t.Status.Terminal() {
			ctx = withInteraction(ctx, input)
		}
		raw, err = b.taskRequest(ctx, ref, "tasks/result", &taskParams{TaskID: ref.ID})
		if err != nil {
			return nil, notFound(ref, err)
		}
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, &MalformedAnswerError{Server: ref.Server, Detail: fmt.Sprintf("the result of task %q: %v", ref.ID, err)}
	}
	if res.Meta != nil {
		delete(res.Meta, relatedTaskMetaKey) // the protocol's link, not the tool's
		if len(res.Meta) == 0 {
			res.Meta = nil
		}
	}
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	if ref.Era == TaskEra2025 {
		b.observed(ctx, &Task{TaskRef: ref, Status: TaskCompleted}) // tasks/result answers once the task has ended
	}
	return &res, nil
}

// relatedTaskMetaKey links a 2025-11-25 message to its task.
const relatedTaskMetaKey = "io.modelcontextprotocol/related-task"

// CancelTask asks the upstream to cancel the task (tasks/cancel) and
// returns its state after. Cancelling a task that already ended changes
// nothing and is no error (the 2026-07-28 extension's rule; a 2025-11-25
// upstream refuses it with InvalidParams, which is told from an unknown task
// by asking for the task).
func (b *Bridge) CancelTask(ctx context.Context, ref TaskRef) (*Task, error) {
	raw, err := b.taskRequest(ctx, ref, "tasks/cancel", &taskParams{TaskID: ref.ID})
	if err != nil {
		if !isInvalidParams(err) {
			return nil, err
		}
		t, gerr := b.GetTask(ctx, ref)
		if gerr != nil {
			return nil, gerr
		}
		if !t.Status.Terminal() {
			return nil, err // refused for another reason: the upstream's answer
		}
		return t, nil
	}
	if ref.Era == TaskEra2025 {
		var w wireTask
		if json.Unmarshal(raw, &w) == nil && w.TaskID != "" {
			if t, err := w.task(ref); err == nil {
				b.observed(ctx, t)
				return t, nil
			}
		}
	}
	return b.GetTask(ctx, ref) // 2026-07-28 answers an empty acknowledgement
}

// ListTasks lists the tasks of the server's current session (tasks/list,
// 2025-11-25 only; cursor "" is the first page, and an empty next cursor
// the last). The 2026-07-28 extension has no tasks/list: its upstreams get
// ErrTasksUnsupported, as do upstreams without tasks.
func (b *Bridge) ListTasks(ctx context.Context, server, cursor string) (_ []*Task, next string, _ error) {
	u, err := b.upstream(server)
	if err != nil {
		return nil, "", err
	}
	var raw json.RawMessage
	var owner string
	var pre error
	err = b.request(ctx, u, labelOf("tasks/list"), func(ctx context.Context, s *session) error {
		era, own := s.tasks.current()
		switch era {
		case TaskEra2025:
		case TaskEra2026:
			pre = fmt.Errorf("%w: tasks/list on server %q: the 2026-07-28 tasks extension has no tasks/list (tasks are reached one by one, by id)", ErrTasksUnsupported, server)
			return nil
		default:
			pre = fmt.Errorf("%w: server %q runs no tasks", ErrTasksUnsupported, server)
			return nil
		}
		owner = own
		r, err := mcp.CallCustomMethod[*taskParams, *rawResult](ctx, s.cs, "tasks/list", &taskParams{Cursor: cursor})
		if err == nil {
			raw = r.raw
		}
		return err
	})
	if err == nil {
		err = pre
	}
	if err != nil {
		return nil, "", err
	}
	var page struct {
		Tasks      []wireTask `json:"tasks"`
		NextCursor string     `json:"nextCursor"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, "", &MalformedAnswerError{Server: server, Detail: "tasks/list: " + err.Error()}
	}
	out := make([]*Task, 0, len(page.Tasks))
	for _, w := range page.Tasks {
		t, err := w.task(TaskRef{Server: server, ID: w.TaskID, Era: TaskEra2025, Session: owner})
		if err != nil {
			return nil, "", &MalformedAnswerError{Server: server, Detail: "tasks/list: " + err.Error()}
		}
		out = append(out, t)
	}
	return out, page.NextCursor, nil
}

// UpdateTask answers a 2026-07-28 task's input requests (tasks/update),
// by the keys of Task.InputRequests; answers to unknown or already
// answered keys are ignored by the upstream, and a partial answer is
// allowed. A 2025-11-25 task takes its input through TaskResult's
// Interaction instead: ErrTasksUnsupported.
func (b *Bridge) UpdateTask(ctx context.Context, ref TaskRef, responses mcp.InputResponseMap) error {
	if ref.Era != TaskEra2026 {
		return fmt.Errorf("%w: tasks/update is a 2026-07-28 request; a %s task takes its input through tasks/result", ErrTasksUnsupported, ref.Era)
	}
	data, err := json.Marshal(responses)
	if err != nil {
		return fmt.Errorf("tasks/update: %w", err)
	}
	_, err = b.taskRequest(ctx, ref, "tasks/update", &taskParams{TaskID: ref.ID, InputResponses: data})
	return notFound(ref, err)
}

// taskRequest sends one tasks/* request about ref on the server's current
// session, through the one request path (breaker, limits, timeouts), and
// returns the raw result. A 2025-11-25 task whose session has ended is a
// TaskNotFoundError without a request.
func (b *Bridge) taskRequest(ctx context.Context, ref TaskRef, method string, p *taskParams) (json.RawMessage, error) {
	u, err := b.upstream(ref.Server)
	if err != nil {
		return nil, err
	}
	if u.foreignSession(ctx, ref) {
		return b.foreignTaskRequest(ctx, u, ref, method, p)
	}
	// Decided without a request where the session tells: no request, no
	// verdict for the breaker. (Checked again on the session the request
	// gets, which may be a newer one.)
	if s := u.source.current(ctx); s != nil {
		if err := s.tasks.reach(ref); err != nil {
			return nil, err
		}
	}
	var raw json.RawMessage
	var pre error // decided without a request (not an upstream failure)
	err = b.request(ctx, u, requestLabel{method: method}, func(ctx context.Context, s *session) error {
		if pre = s.tasks.reach(ref); pre != nil {
			return nil
		}
		if ref.Era == TaskEra2026 {
			ctx = withTaskName(ctx, ref.ID) // the Mcp-Name header (tasktap.go)
		}
		r, err := mcp.CallCustomMethod[*taskParams, *rawResult](withTasksOptIn(ctx), s.cs, method, p)
		if err == nil {
			raw = r.raw
		}
		return err
	})
	if err == nil {
		err = pre
	}
	if err != nil {
		return nil, err
	}
	return raw, nil
}

// notFound maps the upstream's InvalidParams answer to a request about one
// task to a TaskNotFoundError: the task id is the request's only parameter
// (both SDKs answer -32602 for an unknown or expired task; measured in
// tasks_test.go). Other errors are returned as they are.
func notFound(ref TaskRef, err error) error {
	var ue *UpstreamError
	if errors.As(err, &ue) && ue.Code == jsonrpc.CodeInvalidParams {
		return &TaskNotFoundError{Server: ref.Server, TaskID: ref.ID, Upstream: ue}
	}
	return err
}

// isInvalidParams reports the upstream's InvalidParams answer.
func isInvalidParams(err error) bool {
	var ue *UpstreamError
	return errors.As(err, &ue) && ue.Code == jsonrpc.CodeInvalidParams
}

// observed notes a task state seen from the upstream on the session of
// ctx's request (its count of live tasks: a session that owns none is
// deleted upstream when it closes, tasktap.go).
func (b *Bridge) observed(ctx context.Context, t *Task) {
	if t.Era != TaskEra2025 || !t.Status.Terminal() {
		return
	}
	if u, err := b.upstream(t.Server); err == nil {
		if s := u.source.current(ctx); s != nil {
			s.tasks.finished(t.ID)
		}
	}
}
