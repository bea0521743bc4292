package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// State is the supervision state of an upstream.
type State int

const (
	StateConnecting State = iota + 1
	StateReady
	StateDegraded
	StateDown
)

func (s State) String() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateReady:
		return "ready"
	case StateDegraded:
		return "degraded"
	case StateDown:
		return "down"
	}
	return "unknown"
}

// ServerStatus is a point-in-time report on one upstream.
type ServerStatus struct {
	Name            string
	Transport       Transport
	State           State
	ToolCount       int
	ConnectCount    int64
	RefreshCount    int64
	LastRefreshTime time.Time
	// LastRefreshOK is meaningful only when LastRefreshTime is set.
	LastRefreshOK bool
	// LastListOK is when the last successful tools/list finished.
	LastListOK time.Time
	// LastError is the last connect, probe, list or call failure, with
	// configured secrets removed.
	LastError           string
	ProtocolVersion     string
	Warnings            []string
	Breaker             BreakerState
	BreakerRetryTime    time.Time // while open
	ConsecutiveFailures int
	InFlightCalls       int
	ConnectedTime       time.Time // of the current session
	NextConnectTime     time.Time // while down
}

// closeWatchdog bounds how long teardown waits for ClientSession.Close,
// which can block on a stuck notification handler (go-sdk-facts.md §0.3).
const closeWatchdog = 5 * time.Second

// upstream supervises the sessions to one MCP server: connect, list,
// publish, refresh on list_changed, probe liveness, and reconnect with
// backoff when the session dies. One goroutine (run) owns the connection
// lifecycle, so there is never more than one reconnect in flight.
type upstream struct {
	cfg    ServerConfig
	prefix string
	b      *Bridge
	log    *slog.Logger
	http   *http.Client // shared by the upstream's sessions; nil for stdio
	sem    chan struct{}

	authw          *authWatch    // sees 401/403 answers (HTTP upstreams)
	oauth          *oauthHandler // nil without OAuth
	runtimeSecrets secretSet     // OAuth secrets and issued tokens, redacted

	sess     atomic.Pointer[session] // the session calls go to; nil when none
	inflight atomic.Int64
	queued   atomic.Int64

	ctx          context.Context // ends the supervisor: bridge close or removal
	cancel       context.CancelFunc
	done         chan struct{} // closed when run returned
	initial      bool          // part of the start-up set that gates readiness
	reconnectReq chan struct{} // capacity 1: operator asked for a reconnect now

	mu          sync.Mutex // guards the fields below
	status      ServerStatus
	breaker     breaker
	sessChanged chan struct{} // closed and replaced when sess changes
	attempts    int64         // finished connection attempts
	attemptDone chan struct{} // closed and replaced when an attempt finishes

	firstAttempt sync.Once
}

func newUpstream(b *Bridge, cfg ServerConfig) *upstream {
	u := &upstream{
		cfg:          cfg,
		prefix:       cfg.prefix(),
		b:            b,
		log:          b.log.With("server", cfg.Name),
		status:       ServerStatus{Name: cfg.Name, Transport: cfg.Transport, State: StateConnecting},
		breaker:      newBreaker(cfg.Breaker, cfg.Name),
		sessChanged:  make(chan struct{}),
		attemptDone:  make(chan struct{}),
		done:         make(chan struct{}),
		reconnectReq: make(chan struct{}, 1),
	}
	u.ctx, u.cancel = context.WithCancel(b.ctx)
	if cfg.MaxConcurrentCalls > 0 {
		u.sem = make(chan struct{}, cfg.MaxConcurrentCalls)
	}
	if cfg.Transport != TransportStdio && cfg.NewTransport == nil {
		u.http = newHTTPClient(cfg.Headers)
		u.initAuth()
	}
	return u
}

// setSession swaps the session calls go to and wakes calls waiting for one.
func (u *upstream) setSession(old, s *session) {
	if !u.sess.CompareAndSwap(old, s) {
		return
	}
	u.mu.Lock()
	close(u.sessChanged)
	u.sessChanged = make(chan struct{})
	u.mu.Unlock()
}

// waitSession waits until the upstream has a live session other than old.
func (u *upstream) waitSession(ctx context.Context, old *session) (*session, error) {
	for {
		u.mu.Lock()
		ch := u.sessChanged
		u.mu.Unlock()
		if s := u.sess.Load(); s != nil && s != old && !s.isDead() {
			return s, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-u.ctx.Done():
			return nil, ErrClosed
		}
	}
}

// attempted records the end of a connection attempt (the session is ready,
// or the attempt failed) for readiness and for Reconnect's waiters.
func (u *upstream) attempted() {
	u.firstAttempt.Do(func() { u.b.upstreamAttempted(u) })
	u.mu.Lock()
	u.attempts++
	close(u.attemptDone)
	u.attemptDone = make(chan struct{})
	u.mu.Unlock()
}

// run is the supervisor loop. It returns when the bridge closes or the
// server is removed.
func (u *upstream) run() {
	ctx := u.ctx
	attempt := 0
	for {
		u.setState(StateConnecting, "")
		s, err := u.connect(ctx)
		stable, operator := false, false
		if err == nil {
			var lived time.Duration
			lived, operator, err = u.serve(s)
			stable = lived >= u.cfg.StableAfter
		} else {
			u.attempted()
		}
		if ctx.Err() != nil {
			// Stopped (bridge close or reconfigure): the catalog is the
			// stopper's business, so a removal is one revision.
			u.setState(StateDown, "")
			return
		}
		msg := ""
		if err != nil {
			msg = u.redact(err.Error())
		}
		switch {
		case operator:
			attempt = 0
		case stable:
			attempt = 0
		default:
			attempt++
			if s != nil {
				u.recordDeath(s, "session", err) // once, however many saw it die
			} else {
				u.recordFailure("connect", err)
			}
		}
		delay := backoff(u.cfg.BackoffBase, u.cfg.BackoffMax, attempt)
		delay, msg = u.authHold(err, delay, msg) // 401/403: a long hold, not a crash backoff
		if operator {
			delay = 0
		}
		u.mu.Lock()
		u.status.State = StateDown
		if msg != "" {
			u.status.LastError = msg
		}
		u.status.ConnectedTime = time.Time{}
		u.status.NextConnectTime = time.Now().Add(delay)
		u.mu.Unlock()
		u.b.catalog.setAvailable(u.cfg.Name, false)
		if !operator {
			u.log.Warn("upstream down; reconnecting", "error", msg, "attempt", attempt, "in", delay.Round(time.Millisecond))
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			u.setState(StateDown, "")
			return
		case <-u.reconnectReq:
			t.Stop()
			u.operatorReset()
			attempt = 0
		case <-t.C:
		}
	}
}

// operatorReset clears the breaker and backoff for an operator reconnect.
func (u *upstream) operatorReset() {
	u.mu.Lock()
	u.breaker = newBreaker(u.cfg.Breaker, u.cfg.Name)
	u.status.ConsecutiveFailures = 0
	u.mu.Unlock()
	u.log.Info("operator reconnect")
}

// backoff is full-jitter exponential backoff: uniform in
// [0, min(max, base*2^attempt)].
func backoff(base, max time.Duration, attempt int) time.Duration {
	d := base
	for i := 0; i < attempt && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	if d <= 0 {
		return 0
	}
	return rand.N(d) + 1
}

// recordDeath counts a session's death towards the breaker once.
func (u *upstream) recordDeath(s *session, what string, err error) {
	if s.counted.CompareAndSwap(false, true) {
		u.recordFailure(what, err)
	}
}

// recordFailure counts a failure towards the breaker.
func (u *upstream) recordFailure(what string, err error) {
	u.mu.Lock()
	opened := u.breaker.failure(time.Now())
	until := u.breaker.until
	u.status.ConsecutiveFailures = u.breaker.failures
	u.mu.Unlock()
	if opened {
		msg := ""
		if err != nil {
			msg = u.redact(err.Error())
		}
		u.log.Warn("circuit breaker opened", "after", what, "error", msg, "until", until.Format(time.RFC3339Nano))
	}
}

// recordSuccess records a good call on session s. On a session younger
// than StableAfter it only closes an open breaker and keeps the failure
// count: a flapping upstream that answers between deaths must still trip.
func (u *upstream) recordSuccess(s *session) {
	u.mu.Lock()
	if s != nil && time.Since(s.started) < u.cfg.StableAfter {
		u.breaker.reconnected()
	} else {
		u.breaker.success()
	}
	u.status.ConsecutiveFailures = u.breaker.failures
	u.mu.Unlock()
}

// session is one live connection to the upstream.
type session struct {
	u       *upstream
	id      int64 // connect number, 1-based
	cs      *mcp.ClientSession
	cmd     *exec.Cmd // stdio only
	started time.Time

	ctx    context.Context // cancelled at teardown
	cancel context.CancelFunc

	dirty chan struct{} // capacity 1: "the tool list may have changed"

	// deadCtx is cancelled once the session is known dead: in-flight calls
	// on it fail at once, and nothing new is routed to it.
	deadCtx    context.Context
	deadCancel context.CancelCauseFunc
	// counted is set once the session's death was counted towards the
	// breaker (or declared not a failure: our own teardown), so one death
	// seen by the prober, the supervisor and every in-flight call counts
	// once.
	counted atomic.Bool

	refreshReq chan chan error // operator refreshes, answered by the refresher

	progress sync.Map // token string -> *progressSink
	seq      atomic.Uint64

	ttl atomic.Int64 // ttlMs from the last list (2026-07-28), 0 if none

	wg       sync.WaitGroup // refresher and prober
	waitDone chan struct{}  // closed when the Wait watcher returns
}

// markDirty is the whole of the list_changed handler: a non-blocking send.
// go-sdk runs notification handlers one at a time per session, and Close
// waits for a running one, so a handler must never block or do I/O.
func (s *session) markDirty() {
	select {
	case s.dirty <- struct{}{}:
	default:
	}
}

func (s *session) markDead(err error) {
	if err == nil {
		err = errors.New("session closed")
	}
	s.deadCancel(err)
}

func (s *session) isDead() bool { return s.deadCtx.Err() != nil }

func (s *session) deadErr() error { return context.Cause(s.deadCtx) }

// Progress is one progress notification for a call.
type Progress struct {
	Progress float64
	Total    float64
	Message  string
}

func (s *session) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	tok, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	if p, ok := s.progress.Load(tok); ok {
		p.(*progressSink).deliver(Progress{Progress: req.Params.Progress, Total: req.Params.Total, Message: req.Params.Message})
	}
}

func (u *upstream) connect(ctx context.Context) (*session, error) {
	u.mu.Lock()
	id := u.status.ConnectCount + 1
	u.mu.Unlock()
	s := &session{u: u, id: id, dirty: make(chan struct{}, 1), waitDone: make(chan struct{}), refreshReq: make(chan chan error)}
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.deadCtx, s.deadCancel = context.WithCancelCause(context.Background())
	// One client per session: the handlers close over this session, so a
	// notification that arrives before Connect returns still finds it.
	copts := &mcp.ClientOptions{
		Capabilities:                &mcp.ClientCapabilities{},
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { s.markDirty() },
		ProgressNotificationHandler: s.onProgress,
		MultiRoundTrip:              &mcp.MultiRoundTripOptions{Disabled: true},
	}
	if u.cfg.Elicitation != "" {
		copts.ElicitationHandler = u.elicit
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolsvc", Version: Version}, copts)
	fail := func(err error) (*session, error) {
		s.killGroup()
		s.cancel()
		s.deadCancel(err)
		return nil, err
	}
	t, err := u.newTransport(s)
	if err != nil {
		return fail(err)
	}
	cctx, cancel := context.WithTimeout(ctx, u.cfg.ConnectTimeout)
	defer cancel()
	var opts *mcp.ClientSessionOptions
	if u.cfg.ProtocolVersion != ProtocolLatest {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: u.cfg.ProtocolVersion}
	}
	cs, err := client.Connect(cctx, t, opts)
	if err != nil {
		if ctx.Err() == nil && cctx.Err() != nil {
			err = fmt.Errorf("connect: timed out after %s", u.cfg.ConnectTimeout)
		} else {
			err = fmt.Errorf("connect: %w", err)
		}
		return fail(err)
	}
	s.cs = cs
	s.started = time.Now()
	go func() {
		// Owned by the session: it ends when Close (closeSession) closes
		// the connection. closeSession waits for it up to a second; past
		// that it is abandoned together with a hung Close (it then only
		// marks an already-dead session dead).
		defer close(s.waitDone)
		err := cs.Wait()
		if err == nil {
			err = errors.New("session closed by the upstream")
		}
		s.markDead(err)
	}()
	u.mu.Lock()
	u.status.ConnectCount = id
	u.status.ConnectedTime = s.started
	u.status.NextConnectTime = time.Time{}
	if ir := cs.InitializeResult(); ir != nil {
		u.status.ProtocolVersion = ir.ProtocolVersion
	}
	u.breaker.reconnected()
	u.mu.Unlock()
	u.log.Info("upstream connected", "session", id, "protocol", u.status.ProtocolVersion)
	return s, nil
}

// elicit answers elicitation/create by the server's policy: never by asking
// anyone (it runs on the session's request path and must not block).
func (u *upstream) elicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if u.cfg.Elicitation != ElicitDefaults || req.Params == nil || req.Params.Mode == "url" {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	schema, _ := asObject(req.Params.RequestedSchema)
	props, _ := schema["properties"].(map[string]any)
	content := map[string]any{}
	for name, p := range props {
		if pm, ok := p.(map[string]any); ok {
			if d, ok := pm["default"]; ok {
				content[name] = d
			}
		}
	}
	u.log.Info("elicitation answered with schema defaults", "fields", len(content))
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// serve lists the tools of a new session, publishes them, and keeps them
// fresh and probed until the session dies, an operator asks for a
// reconnect, or the supervisor stops. It tears the session down before
// returning, and reports how long the session lived.
func (u *upstream) serve(s *session) (lived time.Duration, operator bool, err error) {
	defer u.teardown(s)
	// Calls may use the session while it lists: it is live.
	u.setSession(nil, s)
	if err := s.refresh(); err != nil {
		u.attempted()
		return time.Since(s.started), false, err
	}
	u.setState(StateReady, "")
	u.attempted()
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.refresher()
	}()
	go func() {
		defer s.wg.Done()
		s.prober()
	}()
	select {
	case <-s.deadCtx.Done():
		return time.Since(s.started), false, fmt.Errorf("session lost: %w", s.deadErr())
	case <-u.reconnectReq:
		u.operatorReset()
		return time.Since(s.started), true, nil
	case <-s.ctx.Done():
		return time.Since(s.started), false, nil
	}
}

// teardown evicts the session at once (in-flight calls on it fail now) and
// closes it in the background, so that reconnecting does not wait for a
// Close that a frozen upstream can hold up for seconds.
func (u *upstream) teardown(s *session) {
	u.setSession(s, nil)
	dead := s.isDead()
	if !dead {
		s.counted.Store(true) // our own close (shutdown, removal, reconnect) is no failure
	}
	s.markDead(nil) // fail in-flight calls now
	s.cancel()
	if dead {
		// A dead or wedged child cannot close gracefully; do not wait for it.
		s.killGroup()
	}
	s.wg.Wait() // refresher and prober end with s.ctx
	u.b.closers.Add(1)
	go func() {
		defer u.b.closers.Done()
		u.closeSession(s)
	}()
}

// closeSession closes the session under a watchdog: ClientSession.Close can
// block on a stuck handler or a frozen HTTP peer (go-sdk-facts.md §0.3, §6).
func (u *upstream) closeSession(s *session) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.cs.Close()
	}()
	t := time.NewTimer(closeWatchdog)
	select {
	case <-done:
		t.Stop()
	case <-t.C:
		// This Close goroutine is abandoned: it holds only this session and
		// ends once the killed process's pipes or the HTTP requests close.
		u.log.Warn("upstream session close timed out; abandoning it", "after", closeWatchdog)
	}
	s.killGroup()
	select {
	case <-s.waitDone:
	case <-time.After(time.Second):
	}
}

// refresher re-lists the session's tools after list_changed marks (after a
// trailing debounce), periodically as a backstop for lost pushes, and when
// the upstream's ttlMs expires.
func (s *session) refresher() {
	interval := s.u.cfg.RefreshInterval
	next := func() <-chan time.Time {
		d := interval
		if ttl := time.Duration(s.ttl.Load()) * time.Millisecond; ttl > 0 && (d <= 0 || ttl < d) {
			d = max(ttl, time.Second)
		}
		if d <= 0 {
			return nil
		}
		return time.After(d)
	}
	backstop := next()
	var retry <-chan time.Time
	failures := 0
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.deadCtx.Done():
			return
		case <-s.dirty:
			if !s.debounce() {
				return
			}
		case <-backstop:
		case <-retry:
		case reply := <-s.refreshReq:
			err := s.refresh()
			reply <- err
			backstop = next()
			if err == nil {
				retry, failures = nil, 0
			}
			continue
		}
		retry = nil
		err := s.refresh()
		backstop = next()
		if err != nil {
			if s.ctx.Err() != nil || s.isDead() {
				return
			}
			failures++
			retry = time.After(backoff(s.u.cfg.BackoffBase, s.u.cfg.BackoffMax, failures))
			continue
		}
		failures = 0
	}
}

// debounce waits until marks have been quiet for RefreshDebounce, but no
// longer than RefreshMaxDelay after the first one. It consumes the marks.
func (s *session) debounce() bool {
	quiet := time.NewTimer(s.u.cfg.RefreshDebounce)
	defer quiet.Stop()
	deadline := time.NewTimer(s.u.cfg.RefreshMaxDelay)
	defer deadline.Stop()
	for {
		select {
		case <-s.dirty:
			quiet.Reset(s.u.cfg.RefreshDebounce)
		case <-quiet.C:
			return true
		case <-deadline.C:
			return true
		case <-s.ctx.Done():
			return false
		case <-s.deadCtx.Done():
			return false
		}
	}
}

// listAll lists every page of tools, guarding against a cursor loop.
func (s *session) listAll(ctx context.Context) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	seen := map[string]bool{}
	params := &mcp.ListToolsParams{}
	for {
		res, err := s.cs.ListTools(ctx, params)
		var werr *jsonrpc.Error
		if errors.As(err, &werr) && werr.Code == jsonrpc.CodeMethodNotFound && params.Cursor == "" {
			// An upstream without tools. It is still listed every time: a
			// server that had no tools at connect (go-sdk then omits the
			// capability) may add some later.
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		tools = append(tools, res.Tools...)
		s.ttl.Store(int64(res.TTLMs))
		if res.NextCursor == "" {
			return tools, nil
		}
		if seen[res.NextCursor] {
			return nil, fmt.Errorf("tools/list returned cursor %q twice", res.NextCursor)
		}
		seen[res.NextCursor] = true
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// refresh lists every page of tools and publishes them. The dirty mark is
// drained first, so a push that lands during the listing causes exactly one
// more pass.
func (s *session) refresh() error {
	select {
	case <-s.dirty:
	default:
	}
	u := s.u
	ctx, cancel := context.WithTimeout(s.ctx, u.cfg.RefreshTimeout)
	defer cancel()
	began := time.Now()
	tools, err := s.listAll(ctx)
	if len(u.cfg.ToolsAllow)+len(u.cfg.ToolsDeny) > 0 {
		tools = slices.DeleteFunc(tools, func(t *mcp.Tool) bool { return t == nil || !u.cfg.exposes(t.Name) })
	}
	n := 0
	if err == nil {
		n, err = u.b.catalog.setServer(u.cfg.Name, u.prefix, tools, true)
	}
	now := time.Now()
	u.mu.Lock()
	u.status.LastRefreshTime = now
	u.status.LastRefreshOK = err == nil
	if err == nil {
		u.status.RefreshCount++
		u.status.ToolCount = n
		u.status.LastListOK = now
	} else {
		if ctx.Err() != nil && s.ctx.Err() == nil {
			err = fmt.Errorf("tools/list timed out after %s", u.cfg.RefreshTimeout)
		}
		u.status.LastError = u.redact(err.Error())
	}
	u.mu.Unlock()
	if o := u.b.cfg.Observer; o != nil && s.ctx.Err() == nil {
		o.RefreshDone(u.cfg.Name, time.Since(began), err)
	}
	if err != nil {
		if isSessionDead(err) {
			s.markDead(err)
		}
		msg := u.redact(err.Error())
		u.log.Warn("tools/list failed", "error", msg)
		return fmt.Errorf("tools/list: %s", msg) // redacted: it reaches operators through Refresh
	}
	u.log.Debug("tools listed", "tools", n)
	return nil
}

// prober checks liveness every PingInterval with its own deadline: ping, or
// a one-page tools/list for upstreams that reject ping. A transport failure
// marks the session dead at once; a timeout marks it degraded, and
// PingFailures timeouts in a row mark it dead. Wait() alone is not enough:
// it can take seconds or never return (go-sdk-facts.md §6).
func (s *session) prober() {
	u := s.u
	if u.cfg.PingInterval <= 0 {
		return
	}
	t := time.NewTicker(u.cfg.PingInterval)
	defer t.Stop()
	useList := false
	slow := 0
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.deadCtx.Done():
			return
		case <-t.C:
		}
		err := s.probe(useList)
		if err != nil && !useList && pingUnsupported(err) {
			u.log.Info("upstream rejects ping; probing with tools/list instead")
			useList = true
			err = s.probe(true)
		}
		if o := u.b.cfg.Observer; o != nil && err != nil && s.ctx.Err() == nil {
			o.ProbeFailed(u.cfg.Name)
		}
		switch {
		case err == nil:
			if slow > 0 {
				slow = 0
				u.setState(StateReady, "")
			}
		case s.ctx.Err() != nil:
			return
		case isSessionDead(err):
			u.recordDeath(s, "probe", err)
			s.markDead(fmt.Errorf("probe: %w", err))
			return
		default:
			slow++
			msg := fmt.Sprintf("probe %d/%d failed: %s", slow, u.cfg.PingFailures, u.redact(err.Error()))
			if slow >= u.cfg.PingFailures {
				u.recordDeath(s, "probe", err)
				s.markDead(errors.New(msg))
				return
			}
			u.setState(StateDegraded, msg)
		}
	}
}

func (s *session) probe(useList bool) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.u.cfg.PingTimeout)
	defer cancel()
	var err error
	if useList {
		_, err = s.cs.ListTools(ctx, &mcp.ListToolsParams{})
	} else {
		err = s.cs.Ping(ctx, &mcp.PingParams{})
	}
	if err != nil && ctx.Err() != nil && s.ctx.Err() == nil {
		return fmt.Errorf("%w within %s", errProbeTimeout, s.u.cfg.PingTimeout)
	}
	return err
}

// errProbeTimeout is a probe that got no answer in time (slow, not dead).
var errProbeTimeout = errors.New("no answer")

// pingUnsupported reports an upstream that rejects ping itself (rather than
// failing to answer): MethodNotFound, or HTTP 400 from 2026-07-28 stateless
// servers.
func pingUnsupported(err error) bool {
	if errors.Is(err, errProbeTimeout) {
		return false
	}
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return werr.Code == jsonrpc.CodeMethodNotFound
	}
	return strings.Contains(err.Error(), "Bad Request")
}

func (u *upstream) setState(st State, lastError string) {
	u.mu.Lock()
	u.status.State = st
	if lastError != "" {
		u.status.LastError = lastError
	}
	u.mu.Unlock()
}

func (u *upstream) statusSnapshot() ServerStatus {
	now := time.Now()
	u.mu.Lock()
	st := u.status
	st.Breaker = u.breaker.state(now)
	if st.Breaker == BreakerOpen {
		st.BreakerRetryTime = u.breaker.until
	}
	u.mu.Unlock()
	st.InFlightCalls = int(u.inflight.Load())
	st.Warnings = u.b.catalog.Warnings(u.cfg.Name)
	return st
}

// redact removes configured secrets (URL, header and env values) from a
// message before it is logged or reported.
func (u *upstream) redact(msg string) string {
	if u.cfg.URL != "" {
		msg = strings.ReplaceAll(msg, u.cfg.URL, "<upstream-url>")
	}
	for _, v := range u.cfg.Headers {
		if len(v) >= 4 {
			msg = strings.ReplaceAll(msg, v, "<redacted>")
		}
	}
	for _, v := range u.cfg.Env {
		if len(v) >= 4 {
			msg = strings.ReplaceAll(msg, v, "<redacted>")
		}
	}
	for _, v := range u.cfg.Secrets {
		msg = strings.ReplaceAll(msg, v, "<redacted>")
	}
	msg = u.runtimeSecrets.redact(msg)
	const maxErrLen = 512
	if len(msg) > maxErrLen {
		msg = msg[:maxErrLen] + "…"
	}
	return msg
}

// isSessionDead reports whether err means the session's transport is gone
// (as opposed to a protocol error on a live session).
func isSessionDead(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	switch {
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, mcp.ErrSessionMissing),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE):
		return true
	}
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		// -32005 is go-sdk's "rejected by transport": the request never
		// reached a live upstream (the HTTP POST failed). Any other code is
		// an answer from a live upstream.
		return werr.Code == codeRejectedByTransport
	}
	msg := err.Error()
	return strings.Contains(msg, "connection closed") || strings.Contains(msg, "EOF") ||
		strings.Contains(msg, "connection reset") || strings.Contains(msg, "connection refused") ||
		strings.Contains(msg, "broken pipe")
}

// codeRejectedByTransport is go-sdk's internal jsonrpc2.ErrRejected code.
const codeRejectedByTransport = -32005

// secretEnv matches names of environment variables that look like
// credentials; toolsvc does not hand its own such variables to stdio
// children unless a server lists them in envPassthrough.
var secretEnv = regexp.MustCompile(`(?i)(TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|AUTH|COOKIE|SESSION|_KEY$|^KEY$)`)

// childEnv is toolsvc's environment without secret-looking variables (unless
// passed through), plus the server's configured env.
func childEnv(environ []string, passthrough []string, extra map[string]string) []string {
	out := make([]string, 0, len(environ)+len(extra))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if _, overridden := extra[name]; overridden {
			continue
		}
		if secretEnv.MatchString(name) && !slices.Contains(passthrough, name) {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range extra {
		out = append(out, k+"="+v)
	}
	return out
}

func (u *upstream) newTransport(s *session) (mcp.Transport, error) {
	if u.cfg.NewTransport != nil {
		return u.cfg.NewTransport()
	}
	switch u.cfg.Transport {
	case TransportStdio:
		cmd := exec.Command(u.cfg.Command, u.cfg.Args...)
		cmd.Dir = u.cfg.Dir
		cmd.Env = childEnv(os.Environ(), u.cfg.EnvPassthrough, u.cfg.Env)
		// Own process group, so teardown can kill wrappers' grandchildren
		// (npx, uvx, sh -c); die with toolsvc.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		cmd.Stderr = newStderrLogger(u.log, u.redact)
		cmd.WaitDelay = 2 * time.Second
		s.cmd = cmd
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: DefaultTerminateGrace}, nil
	case TransportSSE:
		return &mcp.SSEClientTransport{Endpoint: u.cfg.URL, HTTPClient: u.http}, nil
	case TransportStreamableHTTP:
		// MaxRetries 1: a dead upstream's standalone SSE stream gives up in
		// about 1.5 s (go-sdk-facts.md §6); the bridge reconnects itself.
		return &mcp.StreamableClientTransport{Endpoint: u.cfg.URL, HTTPClient: u.http, MaxRetries: 1, OAuthHandler: u.oauthHandler()}, nil
	}
	return nil, fmt.Errorf("unknown transport %v", u.cfg.Transport)
}

// killGroup SIGKILLs the stdio child's process group, if it was started.
func (s *session) killGroup() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
}

// headerTransport adds configured headers to every request (go-sdk's
// streamable client has no header option).
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}

func newHTTPClient(headers map[string]string) *http.Client {
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        512,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	// No Client.Timeout or ResponseHeaderTimeout: the streamable server sends
	// headers with its first event, so they would cut off silent long calls
	// (go-sdk-facts.md §6). Every request carries a context deadline instead.
	return &http.Client{Transport: &headerTransport{base: tr, headers: headers}}
}
