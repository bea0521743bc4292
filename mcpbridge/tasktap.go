package mcpbridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The wire side of tasks (tasks.go): what go-sdk v1.8.0 drops is read from
// the raw messages, as rawschema.go does for schemas.
//
//   - A 2025-11-25 server's capabilities.tasks is read from the raw
//     initialize result (sessionTasks.recordInit); each tool's
//     execution.taskSupport from the raw tools/list (rawSchemas).
//   - A task-augmented tools/call (CallTask) carries a *taskCall in its
//     context. The session's sending middleware (taskMiddleware) adds
//     params.task (2025-11-25) or the extension to the request's
//     clientCapabilities (2026-07-28), and the raw result is recorded
//     before go-sdk decodes it (as an empty success: gosdk.go,
//     decodesTaskAsEmptySuccess) by the session's task tap (taskTap,
//     fed by the transport: tap.go).
//   - tasks/* go through go-sdk's custom methods (registerTaskMethods);
//     2026-07-28 requests get the Mcp-Name header from the streamable
//     HTTP connection's header hook (taskHeader).

// sessionTasks is a session's task state.
type sessionTasks struct {
	mu sync.Mutex
	// toolsCall: the raw initialize declared
	// capabilities.tasks.requests.tools.call (2025-11-25).
	toolsCall bool
	initSeen  bool
	era       TaskEra
	owner     string                               // see TaskRef.Session
	pending   map[jsonrpc.ID]func(json.RawMessage) // requests whose raw result is wanted (taskTap)
	live      map[string]bool                      // 2025-11-25 tasks created here and not seen ended
}

// recordInit records a raw initialize result's task capability.
func (st *sessionTasks) recordInit(result json.RawMessage) {
	var r struct {
		Capabilities struct {
			Tasks *struct {
				Requests struct {
					Tools struct {
						Call json.RawMessage `json:"call"`
					} `json:"tools"`
				} `json:"requests"`
			} `json:"tasks"`
		} `json:"capabilities"`
	}
	ok := json.Unmarshal(result, &r) == nil
	st.mu.Lock()
	defer st.mu.Unlock()
	st.initSeen = true
	st.toolsCall = ok && r.Capabilities.Tasks != nil && isJSONObject(r.Capabilities.Tasks.Requests.Tools.Call)
}

func (st *sessionTasks) initRecorded() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.initSeen
}

// settle fixes the session's task era once it is connected: 2026-07-28
// from the extension in the initialize (or discover) result, 2025-11-25
// from the raw capability, at a protocol version before 2026-07-28.
func (st *sessionTasks) settle(cs *mcp.ClientSession) {
	ir := cs.InitializeResult()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.initSeen = true // the handshake is over: taskTap stops looking for it
	st.era = TaskEraNone
	switch {
	case ir == nil:
	case ir.ProtocolVersion >= ProtocolStateless:
		if ir.Capabilities != nil {
			if _, ok := ir.Capabilities.Extensions[TasksExtension]; ok {
				st.era = TaskEra2026
			}
		}
	case ir.ProtocolVersion >= string(TaskEra2025) && st.toolsCall:
		st.era = TaskEra2025
		st.owner = cs.ID()
		if st.owner == "" {
			b := make([]byte, 12)
			_, _ = rand.Read(b)
			st.owner = localOwnerPrefix + hex.EncodeToString(b)
		}
	}
}

// current is the session's era and, for 2025-11-25, its TaskRef.Session.
func (st *sessionTasks) current() (TaskEra, string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.era, st.owner
}

// reach says whether a request about ref can go on this session: a
// TaskNotFoundError (SessionEnded) when the session runs another era (or
// none) than the one that created the task (a new session after a reload,
// or an upgraded upstream), or when it is not the 2025-11-25 session that
// owns the task.
func (st *sessionTasks) reach(ref TaskRef) error {
	era, owner := st.current()
	if era != ref.Era || (era == TaskEra2025 && owner != ref.Session) {
		return &TaskNotFoundError{Server: ref.Server, TaskID: ref.ID, SessionEnded: true}
	}
	return nil
}

// track and finished keep the set of 2025-11-25 tasks created on the
// session and not seen ended (bounded: it only warns).
func (st *sessionTasks) track(t *Task) {
	if t.Era != TaskEra2025 || t.Status.Terminal() {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.live == nil {
		st.live = map[string]bool{}
	}
	if len(st.live) < 10000 {
		st.live[t.ID] = true
	}
}

func (st *sessionTasks) finished(id string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.live, id)
}

// ownsLive reports 2025-11-25 tasks created on the session and not seen
// finished.
func (st *sessionTasks) ownsLive() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.live) > 0
}

// warnLost logs the 2025-11-25 tasks a closing session takes with it: on
// stdio they are lost with the child; an HTTP session is left open
// upstream instead (its DELETE is not sent), and its tasks stay reachable.
func (st *sessionTasks) warnLost(log *slog.Logger, tr Transport) {
	st.mu.Lock()
	n := len(st.live)
	st.mu.Unlock()
	switch {
	case n == 0:
	case tr == TransportStreamableHTTP:
		log.Info(keptTasksMsg, "tasks", n)
	default:
		log.Warn(lostTasksMsg, "tasks", n)
	}
}

const (
	lostTasksMsg = "closing an upstream session that owns tasks not seen finished; 2025-11-25 tasks are bound to their session and become unreachable"
	keptTasksMsg = "leaving the upstream session open (no DELETE): it owns tasks not seen finished, which stay reachable by its session id"
)

// localOwnerPrefix marks a TaskRef.Session that names a session of this
// bridge (stdio, legacy SSE) rather than an upstream's Mcp-Session-Id.
const localOwnerPrefix = "toolsvc-session:"

// expect registers a request whose raw result goes to f (taskTap).
func (st *sessionTasks) expect(id jsonrpc.ID, f func(json.RawMessage)) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.pending == nil {
		st.pending = map[jsonrpc.ID]func(json.RawMessage){}
	}
	st.pending[id] = f
}

func (st *sessionTasks) take(id jsonrpc.ID) func(json.RawMessage) {
	st.mu.Lock()
	defer st.mu.Unlock()
	f := st.pending[id]
	delete(st.pending, id)
	return f
}

// taskCall is one CallTask in flight: what it asked for and the raw
// answer.
type taskCall struct {
	ttl     time.Duration
	support string // the tool's TaskSupport

	mu    sync.Mutex
	era   TaskEra // the era a task was asked for in; none: not asked
	owner string
	sess  *session // the session it was asked on
	raw   json.RawMessage
	got   bool
	// sent are the requests registered for this call's raw answer
	// (taskTap), forgotten when the call returns: a cancelled call's
	// answer never comes, and its entry must not stay for the session's
	// life.
	sent []sentRequest
}

type sentRequest struct {
	st *sessionTasks
	id jsonrpc.ID
}

// registered notes a request sent for this call (taskTap.wrote).
func (tc *taskCall) registered(st *sessionTasks, id jsonrpc.ID) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	tc.sent = append(tc.sent, sentRequest{st, id})
}

// forget drops what is still registered for this call's answers.
func (tc *taskCall) forget() {
	tc.mu.Lock()
	sent := tc.sent
	tc.sent = nil
	tc.mu.Unlock()
	for _, r := range sent {
		r.st.take(r.id)
	}
}

// asked records that the request about to be sent asks for a task (a
// request sent again on a new session starts over).
func (tc *taskCall) asked(s *session, era TaskEra, owner string) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	tc.sess, tc.era, tc.owner, tc.raw, tc.got = s, era, owner, nil, false
}

func (tc *taskCall) wantsRaw() bool {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.era != TaskEraNone
}

func (tc *taskCall) setRaw(raw json.RawMessage) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	tc.raw, tc.got = append(json.RawMessage(nil), raw...), len(raw) > 0
}

func (tc *taskCall) outcome() (*session, TaskEra, string, json.RawMessage, bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.sess, tc.era, tc.owner, tc.raw, tc.got
}

type (
	taskCallKey  struct{}
	taskNameKey  struct{}
	taskOptInKey struct{}
)

func withTaskCall(ctx context.Context, tc *taskCall) context.Context {
	return context.WithValue(ctx, taskCallKey{}, tc)
}

func taskCallOf(ctx context.Context) *taskCall {
	tc, _ := ctx.Value(taskCallKey{}).(*taskCall)
	return tc
}

// withTaskName names a 2026-07-28 request's task (the Mcp-Name header).
func withTaskName(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, taskNameKey{}, id)
}

// withTasksOptIn marks a tasks/* request: on a 2026-07-28 session the
// middleware opts it in to the extension.
func withTasksOptIn(ctx context.Context) context.Context {
	return context.WithValue(ctx, taskOptInKey{}, true)
}

// taskMiddleware is the session's sending middleware for tasks: a
// CallTask's tools/call asks for a task when the session and the tool can
// run one; a tasks/* request on a 2026-07-28 session opts in.
func (s *session) taskMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		era, owner := s.tasks.current()
		switch {
		case method == "tools/call" && era != TaskEraNone:
			tc := taskCallOf(ctx)
			if tc == nil {
				break
			}
			if era == TaskEra2025 {
				if tc.support != TaskSupportOptional && tc.support != TaskSupportRequired {
					break // forbidden: asking is an error (docs/upstream-behaviour.md §7)
				}
				r, ok := withTaskParam(req, tc.ttl)
				if !ok {
					break
				}
				req = r
			} else if !optInTasks(req.GetParams()) {
				break
			}
			tc.asked(s, era, owner)
		case era == TaskEra2026 && ctx.Value(taskOptInKey{}) != nil:
			optInTasks(req.GetParams())
		}
		return next(ctx, method, req)
	}
}

// taskTap is a session's tap (tap.go) for tasks and raw results: it
// registers the initialize request, a CallTask's tools/call (its context
// carries the taskCall) and, where rawResults is set, a request whose
// caller wants the raw result (rawresult.go), and records the raw result
// when it is read, before go-sdk decodes it.
//
// rawResults is off on streamable HTTP, although recording would cost
// nothing more there now (toolsvc's own connection decodes each message
// once): results from HTTP upstreams are the slow-path reference
// TestMCPFrontPassThrough compares every passed-through result with, and
// turning it on is a change a caller could see if the two paths differed.
// Turning it on needs that test to take its reference elsewhere first.
type taskTap struct {
	st         *sessionTasks
	rawResults bool
}

func (t *taskTap) wrote(ctx context.Context, m jsonrpc.Message) jsonrpc.Message {
	req, ok := m.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return nil
	}
	var f func(json.RawMessage)
	switch req.Method {
	case "initialize":
		if !t.st.initRecorded() {
			f = t.st.recordInit
		}
	case "tools/call":
		if tc := taskCallOf(ctx); tc != nil && tc.wantsRaw() {
			f = tc.setRaw
			tc.registered(t.st, req.ID)
		}
	}
	if f == nil && t.rawResults && rawRecorded(req) {
		// The raw result a caller asked for (rawresult.go).
		if rq := rawRequestOf(ctx); rq != nil {
			f = rq.record
			rq.registered(t.st, req.ID)
		}
	}
	if f != nil {
		t.st.expect(req.ID, f)
	}
	return nil
}

func (t *taskTap) unsent(m jsonrpc.Message) {
	if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
		t.st.take(req.ID)
	}
}

func (t *taskTap) read(m jsonrpc.Message, _ *msgOrigin) {
	if resp, ok := m.(*jsonrpc.Response); ok {
		if f := t.st.take(resp.ID); f != nil && resp.Error == nil {
			f(resultBytes(resp))
		}
	}
}

// resultBytes is resp's result as JSON. A response that carries go-sdk's
// value instead (mcp.DecodedResponse: the gRPC binding's tools/call) is
// encoded here, when a tap asks for its bytes, and only then: its value is
// complete, so its encoding says what the JSON would have.
func resultBytes(resp *jsonrpc.Response) json.RawMessage {
	if resp.Result == nil {
		if v, ok := mcp.DecodedResult(resp); ok {
			if raw, err := json.Marshal(v); err == nil {
				return raw
			}
		}
	}
	return resp.Result
}

// taskHeader is what tasks need of a streamable HTTP request beyond its
// message (a hook of the connection, streamhttp.go): it names a
// 2026-07-28 tasks/* request's task in the Mcp-Name header, which go-sdk
// sets only for tools/call, prompts/get and resources/read.
func taskHeader(ctx context.Context, _ *jsonrpc.Request, h http.Header) {
	if id, ok := ctx.Value(taskNameKey{}).(string); ok {
		h.Set("Mcp-Name", id)
	}
}

// keepSession is the connection's DELETE rule for tasks: closing a session
// that owns tasks must not end it upstream; they stay reachable by its id
// from any replica (taskforeign.go).
func (st *sessionTasks) keepSession() bool { return st.ownsLive() }

// registerTaskMethods lets the session's client send tasks/* (go-sdk's
// custom methods: gosdk.go).
func registerTaskMethods(c *mcp.Client) {
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel", "tasks/list", "tasks/update"} {
		if err := mcp.AddSendingCustomMethod[*taskParams, *rawResult](c, m); err != nil {
			panic(fmt.Sprintf("mcpbridge: %v", err)) // only a standard method's name is refused
		}
	}
}

// taskParams are the params of every tasks/* request.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string          `json:"taskId,omitempty"`
	Cursor         string          `json:"cursor,omitempty"`
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
}

// rawResult keeps a result as the upstream sent it.
type rawResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *rawResult) UnmarshalJSON(b []byte) error {
	r.raw = append(json.RawMessage(nil), b...)
	return nil
}

// wireTask is a task as either era sends it: 2025-11-25 (ttl,
// pollInterval; ttl null for unlimited) and 2026-07-28 (ttlMs,
// pollIntervalMs, and on tasks/get the result, the error or the input
// requests inline).
type wireTask struct {
	TaskID         string          `json:"taskId"`
	Status         TaskStatus      `json:"status"`
	StatusMessage  string          `json:"statusMessage"`
	TTL            *float64        `json:"ttl"`
	TTLMs          *float64        `json:"ttlMs"`
	PollInterval   *float64        `json:"pollInterval"`
	PollIntervalMs *float64        `json:"pollIntervalMs"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	ResultType     string          `json:"resultType"`
	Result         json.RawMessage `json:"result"`
	Error          *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	InputRequests json.RawMessage `json:"inputRequests"`
}

// task is w as a Task named by ref.
func (w *wireTask) task(ref TaskRef) (*Task, error) {
	if w.TaskID == "" || w.TaskID != ref.ID {
		return nil, fmt.Errorf("the upstream answered task %q for task %q", w.TaskID, ref.ID)
	}
	if w.Status == "" {
		return nil, fmt.Errorf("the upstream answered task %q without a status", w.TaskID)
	}
	t := &Task{TaskRef: ref, Status: w.Status, StatusMessage: w.StatusMessage,
		TTL: millis(w.TTL, w.TTLMs), PollInterval: millis(w.PollInterval, w.PollIntervalMs),
		Created: parseTime(w.CreatedAt), Updated: parseTime(w.LastUpdatedAt)}
	if len(w.InputRequests) > 0 && string(w.InputRequests) != "null" {
		if err := json.Unmarshal(w.InputRequests, &t.InputRequests); err != nil {
			return nil, fmt.Errorf("task %q: unreadable inputRequests: %w", w.TaskID, err)
		}
	}
	return t, nil
}

// decodeCreated reads the raw answer to a task-augmented tools/call: a
// task (2025-11-25 {task: {...}}, 2026-07-28 resultType "task"), or not
// (an ordinary result: the call ran normally).
func decodeCreated(raw json.RawMessage, era TaskEra) (*wireTask, bool, error) {
	if era == TaskEra2025 {
		var r struct {
			Task *wireTask `json:"task"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, false, fmt.Errorf("unreadable answer: %w", err)
		}
		if r.Task == nil {
			return nil, false, nil
		}
		if r.Task.TaskID == "" {
			return nil, false, fmt.Errorf("the upstream answered a task without an id")
		}
		return r.Task, true, nil
	}
	var w wireTask
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, false, fmt.Errorf("unreadable answer: %w", err)
	}
	if w.ResultType != "task" {
		return nil, false, nil
	}
	if w.TaskID == "" {
		return nil, false, fmt.Errorf("the upstream answered a task without an id")
	}
	return &w, true, nil
}

// millis is the first of the values that is set, as milliseconds (0 for
// none, null or not positive).
func millis(vs ...*float64) time.Duration {
	for _, v := range vs {
		if v != nil && *v > 0 {
			return time.Duration(*v * float64(time.Millisecond))
		}
	}
	return 0
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}
