package core

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// Tasks (docs/tasks.md): a call the upstream runs in the background
// (mcpbridge/tasks.go speaks both protocol eras), reached afterwards by a
// handle. The handle is the task's mcpbridge.TaskRef with the exposed tool
// name, the principal and the time it was made, sealed with AES-GCM under a
// key derived from the replicas' shared state key: a caller can neither
// read it (a 2025-11-25 task's ref holds the upstream's session id) nor
// alter it, and any replica with the key can open it, so every replica
// serves every task its upstream still holds. A handle opened for another
// principal is refused (TASK_NOT_YOURS) before the upstream is asked:
// toolsvc reaches every upstream with its own credentials, so the upstream
// cannot tell the principals' tasks apart, and toolsvc must.
//
// Every task operation goes through the operation engine: authenticate,
// open the handle, authorize the principal for the task's tool (rules may
// have changed since the task was created), a rate-limit slot, the bridge,
// one classified error, metrics and an audit line.
//
// Watching polls the upstream (neither era pushes a task's end to a
// client that did not create it on the same session): one poll loop per
// task on a replica, however many watchers it has, at TaskPollInterval,
// stopped when the last watcher leaves. A principal watches at most
// MaxTaskWatchesPerPrincipal tasks at once on a replica (each watch is a
// stream and, for a task nobody else watches, a poll loop): one caller
// cannot fill the replica with poll loops.
//
// ListTasks answers from the ledger: a task not ended is asked again only
// when what the ledger knows of it is older than listFresh, and one
// ListTasks asks about at most maxListRefresh tasks (the stalest first),
// so N ListTasks cost at most N×maxListRefresh upstream requests, not
// N×tasks. A watched task's poll keeps its ledger state fresh.

// TaskOptions ask for a call to run as a task (CallInput.Task).
type TaskOptions struct {
	// TTL is the lifetime asked for (0: the upstream's default).
	TTL time.Duration
}

// Bounds of the lifetime a caller may ask of a task (TaskTTL). The lower
// one is the unit an upstream is sent (MCP's ttl is in milliseconds: less
// would reach it as 0, its own default, and not what was asked); the upper
// one keeps a caller from asking an upstream to keep a task, and this
// replica's ledger to remember it, for longer than a year.
const (
	MinTaskTTL = time.Millisecond
	MaxTaskTTL = 365 * 24 * time.Hour
)

// TaskTTL is the one rule for the lifetime a call asks of its task, on
// every wire: d (a gRPC Duration, or MCP's milliseconds, converted by the
// wire; a value that is not a duration at all is passed as -1) must be
// from MinTaskTTL to MaxTaskTTL, whole milliseconds. The refusal is
// INVALID_ARGUMENT, REQUEST_INVALID, on field "task.ttl", with the same
// message on every wire.
func TaskTTL(d time.Duration) (*TaskOptions, *Error) {
	if d < MinTaskTTL || d > MaxTaskTTL {
		return nil, InvalidField("task.ttl", "must be from 1 ms to 365 days, or unset for the upstream's default")
	}
	return &TaskOptions{TTL: d.Truncate(time.Millisecond)}, nil
}

// Task is an upstream task as a caller sees it.
type Task struct {
	mcpbridge.Task
	// Handle names the task on any replica (sealed, principal-bound).
	Handle string
	// Tool is the exposed name of the tool it runs.
	Tool string
}

// TaskState is a task's state and, once it has ended, how: Result (the
// tool's result, which may be a tool error) or Failure (the upstream's
// protocol error, classified). Both are nil while it runs, and for a
// cancelled task.
type TaskState struct {
	Task    *Task
	Result  *mcp.CallToolResult
	Failure *Error
}

// Ended reports a terminal state.
func (st *TaskState) Ended() bool { return st.Task.Status.Terminal() }

// Defaults of the task bounds (Options).
const (
	DefaultTaskPollInterval = 50 * time.Millisecond
	// maxLedgerPerPrincipal bounds the tasks a replica remembers for one
	// principal's ListTasks (the oldest are forgotten first).
	maxLedgerPerPrincipal = 1000
	// maxLedgerPrincipals bounds the principals it remembers tasks for.
	maxLedgerPrincipals = 10000
	// DefaultMaxTaskWatchesPerPrincipal bounds one principal's WatchTask
	// streams (and front-door task watches) on a replica. 256, not less: in
	// a rolling restart the watches of the replica going away resume on the
	// others (100 tasks of one principal over three replicas met 64 on one
	// of them in TestTasksRollingRestart), and one poll per task serves all
	// of a task's watchers, so the cost is per task, not per stream.
	DefaultMaxTaskWatchesPerPrincipal = 256
	// listFresh is how old a ledger state may be before ListTasks asks the
	// upstream again; maxListRefresh how many tasks one ListTasks asks
	// about at most.
	listFresh      = 2 * time.Second
	maxListRefresh = 16
	handleVersion  = "t1"
	// maxHandleLen bounds a handle before it is decoded.
	maxHandleLen = 4096
)

// Task reasons (docs/errors.md).
const (
	ReasonTaskHandleInvalid  = "TASK_HANDLE_INVALID"   // INVALID_ARGUMENT: a handle toolsvc did not make, altered, or sealed with another key (field handle)
	ReasonTaskNotYours       = "TASK_NOT_YOURS"        // PERMISSION_DENIED: the handle is another principal's task
	ReasonTaskNotFound       = "TASK_NOT_FOUND"        // NOT_FOUND: the upstream no longer has the task, or the 2025-11-25 session that could reach it ended (metadata "session_ended")
	ReasonTaskNotWaiting     = "TASK_NOT_WAITING"      // FAILED_PRECONDITION: UpdateTask on a task that does not wait for input
	ReasonTasksUnsupported   = "TASKS_UNSUPPORTED"     // FAILED_PRECONDITION: the operation is not one the task's protocol has
	ReasonTaskRequired       = "TASK_REQUIRED"         // FAILED_PRECONDITION: the tool runs only as a task and the call asked none (field task)
	ReasonTooManyTaskWatches = "TOO_MANY_TASK_WATCHES" // RESOURCE_EXHAUSTED: the principal already watches MaxTaskWatchesPerPrincipal tasks on this replica (metadata "limit", "principal")
)

// limitTaskWatchesPerPrincipal names the bound in TOO_MANY_TASK_WATCHES.
const limitTaskWatchesPerPrincipal = "max_task_watches_per_principal"

// Operation kinds of tasks.
var (
	OpTaskGet    = OpKind{method: "tasks/get", audit: "task get"}
	OpTaskWatch  = OpKind{method: "tasks/watch", audit: "task watch"}
	OpTaskCancel = OpKind{method: "tasks/cancel", audit: "task cancel"}
	OpTaskUpdate = OpKind{method: "tasks/update", audit: "task update"}
	OpTaskList   = OpKind{method: "tasks/list", audit: "task list"}
)

// handleBody is what a handle seals.
type handleBody struct {
	Principal string            `json:"p"`
	Tool      string            `json:"t"`
	Ref       mcpbridge.TaskRef `json:"r"`
	Created   int64             `json:"c"` // unix milliseconds
}

// taskCore is the core's task state: the handle cipher, the poll loops and
// the ledger behind ListTasks.
type taskCore struct {
	aead     cipher.AEAD
	interval time.Duration
	polls    taskPolls
	ledger   taskLedger
	watches  taskWatches
}

func newTaskCore(stateKey []byte, interval time.Duration, maxWatches int) *taskCore {
	// The handle key is derived from the state key, so that one secret
	// (serve --state-key-file) serves both and neither use can forge the
	// other's values.
	m := hmac.New(sha256.New, stateKey)
	m.Write([]byte("toolsvc task handle key v1"))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		panic(err) // a 32-byte key always makes a cipher
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return &taskCore{aead: aead, interval: interval, polls: taskPolls{m: map[string]*taskPoll{}},
		ledger: taskLedger{m: map[string][]*ledgerEntry{}}, watches: taskWatches{max: maxWatches, n: map[string]int{}}}
}

// taskWatches counts each principal's task watches on this replica.
type taskWatches struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

// enter counts one more watch of principal, or refuses it at the bound.
func (w *taskWatches) enter(principal string) *Error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n[principal] >= w.max {
		return NewError(ResourceExhausted, ReasonTooManyTaskWatches,
			fmt.Sprintf("principal %q already watches %d tasks on this replica, the most allowed (serve --max-task-watches-per-principal); end a watch first", principal, w.max),
			map[string]string{"limit": limitTaskWatchesPerPrincipal, "principal": principal})
	}
	w.n[principal]++
	return nil
}

func (w *taskWatches) leave(principal string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n[principal]--; w.n[principal] <= 0 {
		delete(w.n, principal)
	}
}

var handleAAD = []byte("toolsvc task handle " + handleVersion)

func (tc *taskCore) seal(b handleBody) string {
	plain, _ := json.Marshal(b)
	nonce := make([]byte, tc.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return handleVersion + "." + base64.RawURLEncoding.EncodeToString(tc.aead.Seal(nonce, nonce, plain, handleAAD))
}

// open checks a handle for principal; field is the wire's name of the
// handle (Fields.TaskHandle).
func (tc *taskCore) open(handle, principal, field string) (handleBody, *Error) {
	bad := func(why string) (handleBody, *Error) {
		hint := "; send Task.handle as CallTool or ListTasks returned it"
		if field == "" {
			field = "handle"
		} else if field != "handle" {
			hint = "; send the " + field + " as tools/call or tasks/list returned it"
		}
		e := InvalidField(field, why+hint)
		e.Reason = ReasonTaskHandleInvalid
		return handleBody{}, e
	}
	if handle == "" {
		return bad("required")
	}
	if len(handle) > maxHandleLen {
		return bad(fmt.Sprintf("is %d bytes, longer than any task handle", len(handle)))
	}
	enc, ok := strings.CutPrefix(handle, handleVersion+".")
	if !ok {
		return bad("not a task handle toolsvc made")
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	ns := tc.aead.NonceSize()
	if err != nil || len(raw) < ns+tc.aead.Overhead() {
		return bad("malformed")
	}
	plain, err := tc.aead.Open(nil, raw[:ns], raw[ns:], handleAAD)
	if err != nil {
		return bad("it does not open (altered, or sealed with another key: replicas must share --state-key-file)")
	}
	var b handleBody
	if json.Unmarshal(plain, &b) != nil || b.Ref.Server == "" || b.Ref.ID == "" {
		return bad("malformed")
	}
	if b.Principal != principal {
		return handleBody{}, NewError(PermissionDenied, ReasonTaskNotYours, "the task belongs to another principal", nil)
	}
	return b, nil
}

// newTask is the caller's view of an upstream task under a handle body.
func (tc *taskCore) newTask(b handleBody, t *mcpbridge.Task, handle string) *Task {
	if handle == "" {
		handle = tc.seal(b)
	}
	return &Task{Task: *t, Handle: handle, Tool: b.Tool}
}

// TaskOp is one operation on a task, moving through the operation engine.
// Used by one goroutine; End must be called exactly once.
type TaskOp struct {
	op     *Operation
	body   handleBody
	handle string
}

// BeginTask authenticates the request of ctx for an operation of kind on
// the task of handle, opens the handle for the principal and authorizes it
// for the task's tool. It always returns the operation (so that End can
// observe a refusal).
func (s *Core) BeginTask(ctx context.Context, kind OpKind, handle string, fields Fields) (*TaskOp, error) {
	op, err := s.Begin(ctx, kind, fields)
	t := &TaskOp{op: op, handle: handle}
	if err != nil {
		return t, err
	}
	b, e := s.tasks.open(handle, op.principal.Name, fields.TaskHandle)
	if e != nil {
		return t, e
	}
	t.body = b
	op.meta["tool"], op.meta["server"], op.meta["task"] = b.Tool, b.Ref.Server, b.Ref.ID
	if _, err := s.bridge.Server(b.Ref.Server); err == nil {
		op.server = b.Ref.Server // a configured name: a bounded label
	}
	if err := op.admit(b.Tool, "use tool", b.Tool); err != nil {
		return t, err
	}
	return t, nil
}

// Context is the request's context with its principal.
func (t *TaskOp) Context() context.Context { return t.op.ctx }

// Fail classifies err once (nil: nil), with the task's metadata.
func (t *TaskOp) Fail(err error) *Error {
	if err == nil {
		return nil
	}
	return t.op.fail(err)
}

// End observes the finished operation once (fail: what the caller got).
func (t *TaskOp) End(fail *Error) {
	t.op.end(fail, false)
}

// Get asks the upstream for the task's state, and its outcome once ended.
func (t *TaskOp) Get(ctx context.Context) (*TaskState, error) {
	s := t.op.s
	task, end, err := s.bridge.PollTask(ctx, t.body.Ref)
	if err != nil {
		t.gone(err)
		return nil, err
	}
	st := s.taskState(t.body, task, end, t.handle)
	s.tasks.ledger.note(t.body, st.Task)
	return st, nil
}

// gone forgets the task from the ledger when err says the upstream no
// longer has it.
func (t *TaskOp) gone(err error) {
	if errors.Is(err, mcpbridge.ErrTaskNotFound) {
		t.op.s.tasks.ledger.forget(t.body)
	}
}

// taskState builds a caller's state from a poll.
func (s *Core) taskState(b handleBody, task *mcpbridge.Task, end *mcpbridge.TaskEnd, handle string) *TaskState {
	st := &TaskState{Task: s.tasks.newTask(b, task, handle)}
	if end != nil {
		st.Result = end.Result
		if end.Err != nil {
			st.Failure = Classify(end.Err, ClassifyOptions{})
			st.Failure.SetMeta("tool", b.Tool)
			st.Failure.SetMeta("task", b.Ref.ID)
		}
	}
	return st
}

// Cancel asks the upstream to cancel the task; it returns the state after.
func (t *TaskOp) Cancel(ctx context.Context) (*Task, error) {
	s := t.op.s
	task, err := s.bridge.CancelTask(ctx, t.body.Ref)
	if err != nil {
		t.gone(err)
		return nil, err
	}
	out := s.tasks.newTask(t.body, task, t.handle)
	s.tasks.ledger.note(t.body, out)
	return out, nil
}

// Update answers the task's input requests (by the ids of
// Task.InputRequests) and returns the state after. The answers are checked
// against what the task asks now: a task that asks nothing is
// TASK_NOT_WAITING; an answer to no request, or of the wrong kind, is
// INPUT_RESPONSES_INVALID.
func (t *TaskOp) Update(ctx context.Context, responses map[string]mcp.InputResponse) (*Task, error) {
	s := t.op.s
	if t.body.Ref.Era != mcpbridge.TaskEra2026 {
		return nil, NewError(FailedPrecondition, ReasonTasksUnsupported,
			fmt.Sprintf("a %s task takes no answers by UpdateTask: its upstream asks within the task's result request, and the server's input policy answers", t.body.Ref.Era), nil)
	}
	if len(responses) == 0 {
		return nil, InvalidField("input_responses", "required: answers to Task.input_required.requests, by id")
	}
	if e := checkAnswerBounds("input_responses", responses); e != nil {
		return nil, e
	}
	cur, err := s.bridge.GetTask(ctx, t.body.Ref)
	if err != nil {
		return nil, err
	}
	if cur.Status != mcpbridge.TaskInputRequired || len(cur.InputRequests) == 0 {
		return nil, NewError(FailedPrecondition, ReasonTaskNotWaiting,
			fmt.Sprintf("the task is %s and asks for no input", cur.Status), nil)
	}
	pending := make(map[string]*ask, len(cur.InputRequests))
	for id, r := range cur.InputRequests {
		pending[id] = &ask{req: r}
	}
	if e := checkAnswers("input_responses", pending, responses, true); e != nil {
		return nil, e
	}
	m := make(mcp.InputResponseMap, len(responses))
	for id, r := range responses {
		m[id] = r
	}
	if err := s.bridge.UpdateTask(ctx, t.body.Ref, m); err != nil {
		return nil, err
	}
	task, err := s.bridge.GetTask(ctx, t.body.Ref)
	if err != nil {
		return nil, err
	}
	out := s.tasks.newTask(t.body, task, t.handle)
	s.tasks.ledger.note(t.body, out)
	return out, nil
}

// Result waits for a 2025-11-25 task to end and returns its result (the
// upstream's tasks/result): the requests the upstream queued for the task
// meanwhile (status input_required) reach input.Ask, as in an interactive
// call, and the server's input policy answers the kinds input does not
// offer. (A 2026-07-28 task's input is answered with Update:
// TASKS_UNSUPPORTED.) The wait is bounded by ctx, or else the server's
// callTimeout; the rate-limit slot is given back first, as for Watch.
func (t *TaskOp) Result(ctx context.Context, input *mcpbridge.Interaction) (*mcp.CallToolResult, error) {
	if t.body.Ref.Era != mcpbridge.TaskEra2025 {
		return nil, NewError(FailedPrecondition, ReasonTasksUnsupported,
			fmt.Sprintf("a %s task has no result request: its input is answered by UpdateTask", t.body.Ref.Era), nil)
	}
	t.op.releaseSlot()
	if input != nil && input.Ask != nil {
		// The caller's answers go straight to the upstream's requests
		// here, not through a request's input_responses: they are
		// bounded the same way (answers.go); a refused one fails the
		// upstream's request instead of reaching it.
		ask, checked := input.Ask, *input
		checked.Ask = func(ctx context.Context, r mcp.InputRequest) (mcp.InputResponse, error) {
			a, err := ask(ctx, r)
			if err != nil {
				return nil, err
			}
			if e := checkAnswerBounds("answer", map[string]mcp.InputResponse{inputKindName(r): a}); e != nil {
				return nil, e
			}
			return a, nil
		}
		input = &checked
	}
	return t.op.s.bridge.TaskResult(ctx, t.body.Ref, input)
}

// Watch sends the task's current state, then every change of its status
// or status message, and last its terminal state with the outcome; it
// returns nil after that, or the first error (the poll's, send's, or ctx's).
// The operation's rate-limit slot is given back once the watch has begun:
// a watch is not a call.
func (t *TaskOp) Watch(ctx context.Context, send func(*TaskState) error) error {
	s := t.op.s
	t.op.releaseSlot()
	if e := s.tasks.watches.enter(t.body.Principal); e != nil {
		return e
	}
	defer s.tasks.watches.leave(t.body.Principal)
	p, w := s.tasks.polls.join(s, t.body, t.op.subject)
	defer s.tasks.polls.leave(p, w)
	var last *pollResult
	for {
		r, changed := p.latest()
		if r != nil && r != last {
			if r.err != nil {
				return r.err
			}
			if last == nil || r.task.Status != last.task.Status || r.task.StatusMessage != last.task.StatusMessage ||
				r.end != nil || !sameInput(r.task.InputRequests, last.task.InputRequests) {
				st := s.taskState(t.body, r.task, r.end, t.handle)
				if err := send(st); err != nil {
					return err
				}
				if st.Ended() {
					s.tasks.ledger.note(t.body, st.Task)
					return nil
				}
			}
			last = r
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func sameInput(a, b mcp.InputRequestMap) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// taskPolls are the poll loops of the watched tasks of this replica.
type taskPolls struct {
	mu sync.Mutex
	m  map[string]*taskPoll
}

// taskPoll polls one task for its watchers and publishes each result.
type taskPoll struct {
	key      string
	watchers int // under taskPolls.mu
	cancel   context.CancelFunc
	done     chan struct{}

	mu      sync.Mutex
	cur     *pollResult
	changed chan struct{} // closed when cur is replaced
	// subjects are the JWTs of the watchers (by watcher number; all of the
	// task's principal, pollKey): a per-user upstream is polled through
	// the principal's session with one of them (subject). Guarded by mu.
	subjects map[int]string
	nextW    int
}

// pollResult is one poll: the task and its end, or the poll's error.
type pollResult struct {
	task *mcpbridge.Task
	end  *mcpbridge.TaskEnd
	err  error
}

func pollKey(b handleBody) string {
	r := b.Ref
	return b.Principal + "\x00" + r.Server + "\x00" + string(r.Era) + "\x00" + r.Session + "\x00" + r.ID
}

// join adds a watcher, with its subject token (its JWT, "" if none), to
// the task's poll loop, starting it if needed; it returns the loop and the
// watcher's number, for leave.
func (ps *taskPolls) join(s *Core, b handleBody, subject string) (*taskPoll, int) {
	key := pollKey(b)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p := ps.m[key]; p != nil {
		p.watchers++
		return p, p.addSubject(subject)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &taskPoll{key: key, watchers: 1, cancel: cancel, done: make(chan struct{}), changed: make(chan struct{})}
	w := p.addSubject(subject)
	ps.m[key] = p
	go p.run(ctx, s, b)
	return p, w
}

func (p *taskPoll) addSubject(subject string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.subjects == nil {
		p.subjects = map[int]string{}
	}
	p.nextW++
	p.subjects[p.nextW] = subject
	return p.nextW
}

// subject is the watchers' JWT the loop polls with: the one that expires
// last (the most recent watcher's, usually; an unreadable expiry counts
// as none), so a watcher whose token expired does not end the others'
// watch while one of them has a valid token. The exchanged token is
// cached per principal, so the subject matters only when it must be
// exchanged again; if every watcher's JWT has expired by then, the
// authorization server refuses the exchange and the watchers get
// PERMISSION_DENIED CREDENTIALS_REFUSED (they watch again with a fresh
// token).
func (p *taskPoll) subject() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	best, bestExp, bestW := "", int64(-1), -1
	for w, s := range p.subjects {
		if s == "" {
			continue
		}
		exp := jwtExpiry(s)
		if exp > bestExp || exp == bestExp && w > bestW {
			best, bestExp, bestW = s, exp, w
		}
	}
	return best
}

// jwtExpiry is the exp claim of a JWT already verified at authentication
// (0 when unreadable).
func jwtExpiry(tok string) int64 {
	var c jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(tok, &c); err != nil || c.ExpiresAt == nil {
		return 0
	}
	return c.ExpiresAt.Unix()
}

// leave removes watcher w; the last one stops the loop and waits for it.
func (ps *taskPolls) leave(p *taskPoll, w int) {
	p.mu.Lock()
	delete(p.subjects, w)
	p.mu.Unlock()
	ps.mu.Lock()
	p.watchers--
	last := p.watchers == 0
	if last {
		delete(ps.m, p.key)
	}
	ps.mu.Unlock()
	if last {
		p.cancel()
		<-p.done
	}
}

// latest is the newest result (nil before the first) and a channel closed
// when a newer one is published.
func (p *taskPoll) latest() (*pollResult, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur, p.changed
}

func (p *taskPoll) publish(r *pollResult) {
	p.mu.Lock()
	p.cur = r
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// run polls until the task ends, a poll fails, or the last watcher leaves,
// at the core's interval (the operator's choice: the upstream's suggested
// pollInterval is reported to callers, not followed, because the watch's
// promise is how soon a task's end reaches its watchers).
//
// The loop runs for no request, so it names the caller itself: the task's
// principal, with a watcher's JWT (subject), so that a task of a per-user
// upstream is polled through its owner's session with the owner's
// credentials.
func (p *taskPoll) run(ctx context.Context, s *Core, b handleBody) {
	defer close(p.done)
	principal, ref := b.Principal, b.Ref
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		ctx := mcpbridge.WithCaller(ctx, principal, p.subject())
		task, end, err := s.bridge.PollTask(ctx, ref)
		if ctx.Err() != nil {
			return
		}
		p.publish(&pollResult{task: task, end: end, err: err})
		if err == nil {
			s.tasks.ledger.refreshed(b, task) // ListTasks need not ask again
		}
		if err != nil || task.Status.Terminal() {
			return
		}
		if ref.Era == mcpbridge.TaskEra2025 && task.Status == mcpbridge.TaskInputRequired {
			// A 2025-11-25 upstream asks only on the response stream of
			// tasks/result: wait on it, so that the server's input policy
			// answers and the task goes on; the next poll sees where it
			// went.
			// An interaction that takes nothing: every request goes to the
			// policy.
			if _, err := s.bridge.TaskResult(ctx, ref, &mcpbridge.Interaction{}); err == nil {
				timer.Reset(0)
				continue
			}
		}
		timer.Reset(s.tasks.interval)
	}
}

// watched is the number of tasks polled for watchers (tests, metrics).
func (ps *taskPolls) watched() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.m)
}

// WatchedTasks is the number of tasks this replica polls for watchers.
func (s *Core) WatchedTasks() int { return s.tasks.polls.watched() }

// taskLedger remembers, per principal, the tasks this replica created or
// served, for ListTasks: the upstreams cannot list a principal's tasks
// (toolsvc reaches them with its own credentials; the 2026-07-28 extension
// has no tasks/list at all).
type taskLedger struct {
	mu sync.Mutex
	m  map[string][]*ledgerEntry // by principal, oldest first
}

type ledgerEntry struct {
	key  string
	body handleBody
	task *Task
	// checked is when task was last learned from the upstream (or a
	// ListTasks claimed it for asking: claimStale).
	checked time.Time
}

// note records the task's latest state for its principal.
func (l *taskLedger) note(b handleBody, t *Task) {
	key := pollKey(b)
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	es := l.m[b.Principal]
	for _, e := range es {
		if e.key == key {
			e.task, e.checked = t, now
			return
		}
	}
	if len(es) >= maxLedgerPerPrincipal {
		es = slices.Delete(es, 0, 1)
	}
	if es == nil && len(l.m) >= maxLedgerPrincipals {
		// A new principal past the bound: another principal's list goes
		// (the ledger is a convenience for ListTasks; handles still work).
		for p := range l.m {
			delete(l.m, p)
			break
		}
	}
	l.m[b.Principal] = append(es, &ledgerEntry{key: key, body: b, task: t, checked: now})
}

// refreshed records a polled state of a task the ledger holds (under its
// handle), and nothing for one it does not.
func (l *taskLedger) refreshed(b handleBody, t *mcpbridge.Task) {
	key := pollKey(b)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.m[b.Principal] {
		if e.key == key {
			e.task, e.checked = &Task{Task: *t, Handle: e.task.Handle, Tool: e.task.Tool}, time.Now()
			return
		}
	}
}

// claimStale picks, of the principal's tasks in keys that have not ended,
// at most n whose state is older than fresh, the stalest first, and marks
// them checked now, so that a concurrent ListTasks does not ask about
// them too.
func (l *taskLedger) claimStale(principal string, keys map[string]bool, fresh time.Duration, n int) map[string]bool {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var stale []*ledgerEntry
	for _, e := range l.m[principal] {
		if keys[e.key] && !e.task.Status.Terminal() && now.Sub(e.checked) >= fresh {
			stale = append(stale, e)
		}
	}
	slices.SortStableFunc(stale, func(a, b *ledgerEntry) int { return a.checked.Compare(b.checked) })
	out := map[string]bool{}
	for _, e := range stale[:min(n, len(stale))] {
		e.checked = now
		out[e.key] = true
	}
	return out
}

// forget drops a task the upstream no longer has.
func (l *taskLedger) forget(b handleBody) {
	key := pollKey(b)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m[b.Principal] = slices.DeleteFunc(l.m[b.Principal], func(e *ledgerEntry) bool { return e.key == key })
	if len(l.m[b.Principal]) == 0 {
		delete(l.m, b.Principal)
	}
}

// entries are copies of the principal's entries (note replaces an entry's
// task under the lock).
func (l *taskLedger) entries(principal string) []ledgerEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]ledgerEntry, len(l.m[principal]))
	for i, e := range l.m[principal] {
		out[i] = *e
	}
	return out
}

// ListTasks returns the principal's tasks this replica knows, newest first
// (server: only that server's), from the ledger: a task not ended whose
// state is older than listFresh is asked again, at most maxListRefresh of
// them per call, the stalest first (the others keep their last known
// state until a later ListTasks, a GetTask or a watch asks); a task the
// upstream no longer has is dropped from the list and forgotten; one the
// upstream could not be asked about keeps its last known state. Tasks of
// tools the principal may no longer use are left out.
func (s *Core) ListTasks(ctx context.Context, server string) ([]*Task, *Error) {
	op, err := s.Begin(ctx, OpTaskList, Fields{})
	var out []*Task
	fail := op.fail(err)
	if fail == nil {
		if server != "" {
			op.meta["server"] = server
			if _, err := s.bridge.Server(server); err != nil {
				fail = op.fail(err)
			}
		}
	}
	if fail == nil {
		fail = op.fail(op.admitAll())
	}
	if fail == nil {
		out = s.listTasks(op, server)
	}
	op.end(fail, false)
	return out, fail
}

func (s *Core) listTasks(op *Operation, server string) []*Task {
	es := s.tasks.ledger.entries(op.principal.Name)
	allow := op.auth.authz.Filter(op.ctx)
	var keep []ledgerEntry
	listed := map[string]bool{}
	now := time.Now()
	for _, e := range es {
		if t := e.task; t.Status.Terminal() && t.TTL > 0 && !t.Created.IsZero() && now.After(t.Created.Add(t.TTL)) {
			s.tasks.ledger.forget(e.body) // past the time its upstream keeps it
			continue
		}
		if (server == "" || e.body.Ref.Server == server) && (allow == nil || allow(e.body.Tool)) {
			keep = append(keep, e)
			listed[e.key] = true
		}
	}
	ask := s.tasks.ledger.claimStale(op.principal.Name, listed, listFresh, maxListRefresh)
	out := make([]*Task, len(keep))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, e := range keep {
		out[i] = e.task
		if !ask[e.key] {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t, err := s.bridge.GetTask(op.ctx, e.body.Ref)
			switch {
			case errors.Is(err, mcpbridge.ErrTaskNotFound):
				s.tasks.ledger.forget(e.body)
				out[i] = nil
			case err == nil:
				out[i] = s.tasks.newTask(e.body, t, e.task.Handle)
				s.tasks.ledger.note(e.body, out[i])
			}
		}()
	}
	wg.Wait()
	out = slices.DeleteFunc(out, func(t *Task) bool { return t == nil })
	slices.Reverse(out)
	return out
}

// startTask records a task a call created and returns the caller's view.
func (c *Call) startTask(t *mcpbridge.Task) *Task {
	s := c.op.s
	b := handleBody{Principal: c.op.principal.Name, Tool: c.in.Name, Ref: t.TaskRef, Created: time.Now().UnixMilli()}
	out := s.tasks.newTask(b, t, "")
	s.tasks.ledger.note(b, out)
	return out
}

// TaskRequired is the refusal of a call that asked no task of a tool that
// runs only as one: FAILED_PRECONDITION, TASK_REQUIRED, on the field
// "task" (the field the caller sets to run it as a task, on every wire:
// gRPC's CallToolRequest.task, the front door's params.task or its
// 2026-07-28 tasks extension). BeginCall makes it when the catalog says
// the tool's task support is "required" (metadata task_support), so the
// call never leaves toolsvc; Classify makes it of an upstream's own
// refusal when the catalog did not know yet (metadata upstream_code).
func TaskRequired(tool string, meta map[string]string) *Error {
	return &Error{Code: FailedPrecondition, Reason: ReasonTaskRequired, Meta: meta,
		Message:    fmt.Sprintf("tool %q runs only as a task: set task to call it as one", Clip(tool)),
		Violations: []FieldViolation{Violation("task", "required: the tool runs only as a task")}}
}
