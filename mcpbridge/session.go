package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge/catalog"
)

// session is one live connection to the upstream.
type session struct {
	u  *upstream
	id int64 // connect number, 1-based
	// principal is the caller a per-user upstream's session is for
	// (peruser.go); "" for a shared session.
	principal string
	// noStream: a per-principal session opened without go-sdk's standalone
	// GET stream (streamFor, peruser.go).
	noStream bool
	cs       *mcp.ClientSession
	cmd      *exec.Cmd // stdio only
	started  time.Time

	ctx    context.Context // cancelled at teardown
	cancel context.CancelFunc

	dirty chan struct{} // capacity 1: "the tool list may have changed"
	// debouncing is set while the refresher waits for marks to go quiet
	// (debounce): a re-list follows. Meanwhile the stdio connection hands
	// plain list_changed notifications to absorbListChanged instead of
	// go-sdk; lastMark is when the latest was read (markClock).
	debouncing atomic.Bool
	// listsCached: the session is of the stateless era, where go-sdk keeps
	// list answers for their ttlMs until a list_changed reaches it, so
	// none is absorbed (absorbListChanged). Set before the refresher
	// starts.
	listsCached bool
	lastMark    atomic.Int64
	markBase    time.Time

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

	progress sync.Map     // token string -> *progressSink
	interact interactions // requests in flight, for 2025-era input requests and log messages (interact.go)
	logs     logCount     // log messages read and handled (logging.go)
	seq      atomic.Uint64

	ttl atomic.Int64 // ttlMs from the last list (2026-07-28), 0 if none
	// listedPrivate: the last tools/list answered cacheScope "private"
	// (2026-07-28); listMu serialises the listings of a per-principal
	// session (its creation, priming, the upstream's relister).
	listedPrivate atomic.Bool
	listMu        sync.Mutex

	raw rawSchemas // schemas as the upstream sent them (rawschema.go)

	wg       sync.WaitGroup // refresher jobs, probes, resource resubscribes (sessionloop.go)
	waitDone chan struct{}  // closed when the Wait watcher returns
	endSeen  atomic.Int32   // connected, and reading ended: the Wait watcher starts at 2 (watchEnd)

	probeNow chan struct{} // capacity 1: "probe now" (a call lost its answer)

	rsubs resourceSubs // resource subscriptions (resourcecalls.go)

	tasks sessionTasks // what the session can do with tasks (tasktap.go)

	push      *pushChannel           // how list_changed reaches this session (push.go)
	listenSeq atomic.Int64           // re-opened subscriptions/listen streams
	listenURI atomic.Pointer[string] // the sentinel URI of the current re-opened stream
}

// markDirty is the whole of the list_changed handler: a non-blocking send.
// go-sdk runs notification handlers one at a time per session, and Close
// waits for a running one, so a handler must never block or do I/O.
func (s *session) markDirty() {
	select {
	case s.dirty <- struct{}{}:
	default:
	}
	s.u.source.listChanged(s)
}

// absorbListChanged notes a plain list_changed notification read while
// the refresher is debouncing, and reports whether it did: then the
// notification need not reach go-sdk (stdioConn.absorb). It is what
// markDirty would have done then (extend the quiet period), without
// go-sdk's dispatch or a wake-up of the refresher: debounce reads lastMark
// when its quiet timer fires. Never blocks. A notification absorbed as
// debounce returns was read before the re-list that follows asks the
// upstream, so that re-list covers it.
//
// Not on a session of the stateless era (2026-07-28 or later): there
// go-sdk keeps its list answers for their ttlMs, and only a list_changed
// that reaches it clears that cache; absorbed, the re-list would be
// served the stale answer.
func (s *session) absorbListChanged() bool {
	if !s.debouncing.Load() || s.listsCached {
		return false
	}
	s.lastMark.Store(int64(s.markClock()))
	return true
}

// markClock is the session's monotonic clock for lastMark.
func (s *session) markClock() time.Duration { return time.Since(s.markBase) }

// transport is the session's transport kind.
func (s *session) transport() Transport { return s.u.cfg.Transport }

// pushless reports a session whose upstream means to push list_changed but
// whose push channel is down or missing: the refresher then re-lists on a
// short interval.
//
// A lost channel always counts. A missing one counts before 2026-07-28
// (an HTTP upstream that is stateless: list_changed is part of every era,
// and the Python SDK sends it while declaring listChanged false); from
// 2026-07-28 on, go-sdk opens no listen stream only when the upstream
// declares no list_changed, so there is nothing to wait for.
func (s *session) pushless() bool {
	switch s.push.get() {
	case pushDown:
		return true
	case pushNone:
		// A gRPC upstream never pushes: its ttl, not PushlessRefresh,
		// says when its lists go stale.
		return !s.newProtocol() && s.transport() != TransportGRPC
	}
	return false
}

// newProtocol reports a session in the stateless era (2026-07-28 or later).
func (s *session) newProtocol() bool {
	ir := s.cs.InitializeResult()
	return ir != nil && ir.ProtocolVersion >= ProtocolStateless
}

// requestProbe asks the prober for a liveness probe now (non-blocking).
func (s *session) requestProbe() {
	select {
	case s.probeNow <- struct{}{}:
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

// connect opens a session to the upstream, in stages: a new session and
// its client (newSession), the transport, the protocol version
// (protocolVersion), the bounded Connect (connectBounded, gosdk.go), the
// push channel's first state (pushAtConnect), then the session's watcher
// and status (connected). An upstream that turns out to be stateless under
// ProtocolAuto is connected again once, in the newest protocol.
func (u *upstream) connect(ctx context.Context) (*session, error) {
	for {
		s, again, err := u.connectOnce(ctx)
		if !again {
			return s, err
		}
	}
}

// connectOnce is one connection attempt; again asks for another in the
// newest protocol (preferLatest is set: it happens once).
func (u *upstream) connectOnce(ctx context.Context) (_ *session, again bool, _ error) {
	s, client := u.newSession(ctx, u.source.nextID())
	fail := func(err error) (*session, bool, error) {
		s.killGroup()
		s.cancel()
		s.deadCancel(err)
		return nil, false, err
	}
	t, err := u.newTransport(s)
	if err != nil {
		return fail(err)
	}
	t = withTaps(t, s.sessionTaps(t)) // schema text, tasks, listen rewrite, call links (tap.go)
	pv := u.protocolVersion()
	cs, timedOut, err := connectBounded(s.ctx, client, t, sessionOptions(pv), u.cfg.ConnectTimeout, s.cancel)
	if err != nil {
		if ctx.Err() == nil && timedOut {
			return fail(fmt.Errorf("connect: timed out after %s", u.cfg.ConnectTimeout))
		}
		return fail(fmt.Errorf("connect: %w", err))
	}
	s.cs = cs
	s.started = time.Now()
	s.tasks.settle(cs)
	if u.pushAtConnect(s, pv) {
		u.log.Info("upstream offers no standalone GET stream (stateless); connecting again with the newest protocol so list_changed can reach toolsvc")
		s.cancel()
		s.deadCancel(errors.New("replaced by a newer-protocol session"))
		_ = cs.Close()
		return nil, true, nil
	}
	u.setLogLevel(s) // logging.go
	u.connected(s)
	return s, false, nil
}

// newSession makes the session and its client. One client per session:
// the handlers close over this session, so a notification that arrives
// before Connect returns still finds it.
func (u *upstream) newSession(ctx context.Context, id int64) (*session, *mcp.Client) {
	s := &session{u: u, id: id, dirty: make(chan struct{}, 1), markBase: time.Now(), waitDone: make(chan struct{}), refreshReq: make(chan chan error), probeNow: make(chan struct{}, 1), push: newPushChannel()}
	s.principal = sessionPrincipalOf(ctx)
	s.noStream, _ = ctx.Value(sessionNoStreamKey{}).(bool)
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.deadCtx, s.deadCancel = context.WithCancelCause(context.Background())
	s.push.subStream = s.onSubscriptionStream
	copts := &mcp.ClientOptions{
		Capabilities:           &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { s.markDirty() },
		// Resources and prompts are re-listed by the same refresher, so
		// their list_changed is the same non-blocking mark.
		ResourceListChangedHandler:  func(context.Context, *mcp.ResourceListChangedRequest) { s.markDirty() },
		PromptListChangedHandler:    func(context.Context, *mcp.PromptListChangedRequest) { s.markDirty() },
		ResourceUpdatedHandler:      s.onResourceUpdated,
		ProgressNotificationHandler: s.onProgress,
		LoggingMessageHandler:       s.onLog,
		MultiRoundTrip:              &mcp.MultiRoundTripOptions{Disabled: true},
	}
	switch {
	case u.relayInput():
		// Requests during a call reach its caller when it can answer
		// (interact.go); the policy answers the rest.
		copts.Capabilities = relayCapabilities()
		copts.ElicitationHandler = s.onElicit
		copts.CreateMessageWithToolsHandler = s.onSample
	case u.cfg.Elicitation != "":
		copts.ElicitationHandler = u.elicit
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolsvc", Version: Version}, copts)
	if u.relayInput() {
		client.AddReceivingMiddleware(s.rootsMiddleware, s.elicitMiddleware)
	}
	registerTaskMethods(client)
	client.AddSendingMiddleware(s.taskMiddleware)
	return s, client
}

// protocolVersion is the version the next session asks for.
func (u *upstream) protocolVersion() string {
	pv := u.cfg.ProtocolVersion
	if pv != ProtocolAuto {
		return pv
	}
	if u.preferLatest.Load() {
		return ProtocolStateless
	}
	return DefaultProtocolVersion
}

// pushAtConnect records how list_changed can reach the new session, and
// reports a stateless upstream that should be connected again in the
// newest protocol (it then sets preferLatest).
func (u *upstream) pushAtConnect(s *session, pv string) (again bool) {
	auto := pv == DefaultProtocolVersion && u.cfg.ProtocolVersion == ProtocolAuto && !u.preferLatest.Load()
	switch {
	case s.newProtocol():
		if s.push.get() == pushUnknown {
			// go-sdk opens subscriptions/listen in Connect only for an
			// upstream that declares tools.listChanged (gosdk.go).
			s.push.set(pushNone, "the upstream declares no tools/list_changed")
		}
	case s.transport() == TransportGRPC:
		// The binding has no notifications: the refresher re-lists when a
		// list's ttl runs out (refresh.go), and every RefreshInterval.
		s.push.set(pushNone, "the MCP gRPC binding has no notifications: lists are refreshed when their ttl runs out")
	case s.transport() != TransportStreamableHTTP:
		s.push.set(pushUp, "") // the session's own stream carries pushes
	case s.cs.ID() == "" && s.push.get() != pushNone && !auto:
		// Stateless, and staying in this protocol: whatever GET stream it
		// keeps open belongs to no session, so nothing pushed reaches it.
		s.push.set(pushNone, "a stateless server (no Mcp-Session-Id): no push channel before 2026-07-28")
	case (s.push.get() == pushNone || s.cs.ID() == "") && auto:
		// A stateless server: it refused the standalone GET stream (go-sdk,
		// TypeScript) or gave no Mcp-Session-Id (the Python SDK holds an
		// empty GET stream open). Under 2025-11-25 its pushes have no way
		// to reach us: connect again in the newest protocol, where they
		// ride subscriptions/listen (once: preferLatest sticks).
		u.preferLatest.Store(true)
		return true
	}
	return false
}

// connected records the connection, and arms the session's end watch.
func (u *upstream) connected(s *session) {
	s.watchEnd()
	u.mu.Lock()
	u.status.ConnectCount = max(u.status.ConnectCount, s.id) // per-user sessions connect concurrently
	u.status.ConnectedTime = s.started
	u.status.NextConnectTime = time.Time{}
	if ir := s.cs.InitializeResult(); ir != nil {
		u.status.ProtocolVersion = ir.ProtocolVersion
	}
	u.status.Tasks, _ = s.tasks.current()
	u.breaker.reconnected()
	u.breaker.noteOK(time.Now())
	pv := u.status.ProtocolVersion
	u.mu.Unlock()
	u.log.Info("upstream connected", "session", s.id, "protocol", pv)
}

// endWatch is the tap that tells the session its connection's reading
// ended (tapConn.Read's first error).
type endWatch struct {
	noTap
	s *session
}

func (w endWatch) readEnded() { w.s.watchEnd() }

// watchEnd is called once when the session is connected and once when its
// connection's reading ends; the second call starts the watcher of go-sdk's
// ClientSession.Wait, which marks the session dead with Wait's error. The
// watcher used to start with the session and sit in Wait for its whole
// life: one goroutine per idle upstream (500 with the fleet). Wait cannot
// return before go-sdk's reader has had its last Read (its connection is
// done only once the reader has stopped), so starting the watcher then
// notices the end exactly when the idle watcher did, with the same error.
// The watcher is owned by the session: it ends when Close (closeSession)
// closes the connection; closeSession waits for it up to a second, past
// which it is abandoned together with a hung Close (it then only marks an
// already-dead session dead). A connection that ends before the session
// is connected starts no watcher: that connect fails.
func (s *session) watchEnd() {
	if s.endSeen.Add(1) != 2 {
		return
	}
	go func() {
		defer close(s.waitDone)
		err := s.cs.Wait()
		if err == nil {
			err = errors.New("session closed by the upstream")
		}
		s.markDead(err)
	}()
}

// elicit answers elicitation/create by the server's policy: never by asking
// anyone (it runs on the session's request path and must not block).
func (u *upstream) elicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if u.cfg.Elicitation != ElicitDefaults || req.Params == nil || req.Params.Mode == "url" {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	schema, _ := catalog.AsObject(req.Params.RequestedSchema)
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
