package mcpbridge

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsvc/toolsvc/mcpbridge/oauth"
)

// closeWatchdog bounds how long teardown waits for ClientSession.Close,
// which can block on a stuck notification handler
// (docs/upstream-behaviour.md §1).
const closeWatchdog = 5 * time.Second

// upstream supervises the sessions to one MCP server: connect, list,
// publish, refresh on list_changed, probe liveness, and reconnect with
// backoff when the session dies. One goroutine (run) owns the connection
// lifecycle, so there is never more than one reconnect in flight.
type upstream struct {
	cfg    ServerConfig
	prefix string // server prefix (resource authorisation name)
	names  string // prefix of exposed tool and prompt names ("" for bareNames)
	b      *Bridge
	log    *slog.Logger
	http   *http.Client // shared by the upstream's sessions; nil for stdio
	sem    chan struct{}

	authw          *authWatch                   // sees 401/403 answers (HTTP upstreams)
	authRep        atomic.Pointer[authReporter] // the latest session's transport, if it reports refusals (gRPC)
	oauth          *oauth.Handler               // nil without OAuth (mcpbridge/oauth)
	runtimeSecrets secretSet                    // OAuth secrets and issued tokens, redacted

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
	// listWarnings name the tools the last listing skipped (usableTools).
	listWarnings []string

	firstAttempt sync.Once

	// source gives each request its session (sessionsource.go): the
	// supervisor's shared one (sess), or, for per-user credentials, the
	// caller's own (peruser.go). Set once, by newUpstream.
	source sessionSource

	// preferLatest: under ProtocolAuto, the upstream turned out stateless,
	// so its sessions use the newest protocol.
	preferLatest atomic.Bool
}

func newUpstream(b *Bridge, cfg ServerConfig) *upstream {
	u := &upstream{
		cfg:          cfg,
		prefix:       cfg.prefix(),
		names:        cfg.namesPrefix(),
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
	if cfg.Transport != TransportStdio && cfg.Transport != TransportGRPC && cfg.NewTransport == nil {
		u.http = newHTTPClient(cfg.Headers, cfg.URL)
		u.initAuth()
	}
	if cfg.Credentials.PerPrincipal() {
		u.source = u.newPrincipalSessions()
	} else {
		u.source = sharedSession{u}
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

// run is the supervisor loop, its source's. It returns when the bridge
// closes or the server is removed.
func (u *upstream) run() { u.source.run() }

// runShared is the supervisor of an upstream with shared credentials: one
// session at a time, reconnected with backoff when it dies.
func (u *upstream) runShared() {
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
			if u.authRejected(err) != "" {
				break // refused credentials say nothing of the upstream's health: not a breaker failure (authHold below)
			}
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
		u.b.catalog.SetAvailable(u.cfg.Name, false)
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
	u.recordFailureOf(what, err, time.Time{})
}

// answeredSince reports whether the upstream answered (or connected) after
// began.
func (u *upstream) answeredSince(began time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.breaker.stale(began)
}

// recordFailureOf counts the failure of an attempt that began at began
// (zero: unknown), unless the upstream has answered since it began.
func (u *upstream) recordFailureOf(what string, err error, began time.Time) {
	u.mu.Lock()
	if u.breaker.stale(began) {
		u.mu.Unlock()
		return
	}
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
	u.breaker.noteOK(time.Now())
	if s != nil && time.Since(s.started) < u.cfg.StableAfter {
		u.breaker.reconnected()
	} else {
		u.breaker.success()
	}
	u.status.ConsecutiveFailures = u.breaker.failures
	u.mu.Unlock()
}

// serve lists the tools of a new session, publishes them, and keeps them
// fresh and probed until the session dies, an operator asks for a
// reconnect, or the supervisor stops. It tears the session down before
// returning, and reports how long the session was ready: 0 if its first
// listing failed. A session that connects but never lists is a failed
// attempt however long the listing hung (RefreshTimeout can exceed
// StableAfter); counting its connected time made its backoff restart at
// attempt 0 on every reconnect.
func (u *upstream) serve(s *session) (lived time.Duration, operator bool, err error) {
	defer u.teardown(s)
	// Calls may use the session while it lists: it is live.
	u.setSession(nil, s)
	if err := s.refresh(); err != nil {
		if s.ctx.Err() == nil && u.authRejected(err) == "" {
			// A failure for the breaker too; counted before teardown, which
			// takes a session it closes itself for no failure.
			u.recordDeath(s, "first tools/list", err)
		}
		u.attempted()
		return 0, false, err
	}
	readyAt := time.Now()
	s.listsCached = s.newProtocol()
	u.setState(StateReady, "")
	u.attempted()
	// The refresher and the prober run on this goroutine (keep).
	operator = s.keep(u.reconnectReq)
	switch {
	case operator:
		u.operatorReset()
		return time.Since(readyAt), true, nil
	case s.isDead():
		return time.Since(readyAt), false, fmt.Errorf("session lost: %w", s.deadErr())
	}
	return time.Since(readyAt), false, nil
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
	s.rsubs.mu.Lock()
	s.rsubs.closed = true // no resubscribe starts from now on (resourcecalls.go)
	s.rsubs.mu.Unlock()
	s.wg.Wait()                              // refresher jobs, probes and resubscribes end with s.ctx
	s.tasks.warnLost(u.log, u.cfg.Transport) // closing the session loses its 2025-11-25 tasks (tasks.go)
	u.b.closers.Add(1)
	go func() {
		defer u.b.closers.Done()
		u.closeSession(s)
	}()
}

// closeSession closes the session under a watchdog: ClientSession.Close can
// block on a stuck handler or a frozen HTTP peer (docs/upstream-behaviour.md
// §1, §2).
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
