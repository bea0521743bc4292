package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// request is the one path of every request to an upstream: tools/call
// (Call), resources/read, prompts/get and resource subscriptions
// (resourcecalls.go). Each goes through the same stages:
//
//  1. the server's callTimeout when ctx has no deadline (withCallTimeout);
//  2. the circuit breaker: an open breaker fails the request fast, a
//     half-open one lets one trial through at a time (admit), and the
//     request's outcome is the breaker's verdict (settle);
//  3. the concurrency limit, maxConcurrentCalls with maxQueuedCalls
//     waiting (acquire);
//  4. the session for this request, from the upstream's source
//     (sessionsource.go: the shared session, or the caller's own on a
//     per-user upstream, whose credential is checked before step 3); the
//     session's death ends the request at once (session.run), and a
//     request the upstream never saw because its session expired (an HTTP
//     404 for its session id) is sent once more on the next session;
//  5. one mapping of failures (failure): *UnavailableError, ErrOverloaded,
//     *ResponseTooLargeError, *UpstreamError, a context error.
//
// label names the request in logs and errors (`call "tool"`,
// "resources/read").
func (b *Bridge) request(ctx context.Context, u *upstream, label requestLabel, do func(context.Context, *session) error) (err error) {
	if b.ctx.Err() != nil {
		return ErrClosed
	}
	var cancel context.CancelFunc
	ownDeadline := false
	base := ctx
	if it := interactionOf(ctx); it != nil && it.Ask != nil {
		ctx, cancel = u.withActiveTimeout(ctx, it)
	} else {
		ctx, cancel, ownDeadline = u.withCallTimeout(ctx)
	}
	defer func() { cancel() }() // the context a retry replaces
	trial, err := u.admit()
	if err != nil {
		return err
	}
	v, s := verdictNone, (*session)(nil)
	defer func() { u.settle(v, trial, s) }()
	// The caller's credential before a concurrency slot: a userOAuth login
	// link may wait for a person (credsource.go), and a refusal should cost
	// no slot. The source's session checks it again (cached).
	if err := u.source.admit(ctx); err != nil {
		return err
	}
	release, err := u.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	var done func()
	if s, done, err = u.source.session(ctx); err != nil {
		return err
	}
	defer func() { done() }() // the held session, which a retry replaces
	u.inflight.Add(1)
	defer u.inflight.Add(-1)
	if ctx.Value(backgroundPollKey{}) == nil {
		b.work.callBegan() // a refresh storm yields to it (refreshwork.go)
		defer b.work.callEnded()
	}
	for try := 0; ; try++ {
		// With its own deadline the request's context is this request's
		// alone: the session's death cancels it directly, with no context
		// of the try's own (one cancelCtx, its Done channel and its place
		// in the parent's children fewer per call). A caller's context, or
		// the active clock's, gets a child as before.
		var owned context.CancelFunc
		if ownDeadline {
			owned = cancel
		}
		var diedMidway bool
		if diedMidway, err = s.run(ctx, owned, do); err == nil {
			v = verdictSuccess
			return nil
		}
		if diedMidway {
			// The session's death cancelled the request's own context: a
			// request sent again, and its again, get a new one with the
			// same deadline, as they would have had before.
			cancel()
			ctx, cancel = withSameDeadline(base, ctx)
		}
		if try == 0 && u.sessionExpired(s, err, label) {
			if ns, nd, werr := u.source.again(ctx, s); werr == nil {
				done()
				s, done = ns, nd
				continue
			}
		}
		err, v = u.failure(ctx, s, err, label, ownDeadline)
		return err
	}
}

// withSameDeadline is a new context of base with old's deadline.
func withSameDeadline(base, old context.Context) (context.Context, context.CancelFunc) {
	dl, _ := old.Deadline()
	return context.WithDeadline(base, dl)
}

// requestLabel names a request in logs and errors: the method, and for a
// tools/call the tool (`call "echo"`). It is formatted only when a log line
// or an error needs it, never for a request that succeeds.
// backgroundPollKey marks a request the replica makes on its own schedule
// (a watched task's poll, PollTask): no caller waits on its answer, so a
// refresh storm's turns do not rest for it (refreshwork.go). A poll every
// 50 ms would otherwise count as calls being made for as long as a task is
// watched, and stretch every storm to its rest budget.
type backgroundPollKey struct{}

type requestLabel struct {
	method string
	tool   string // quoted after method when set
}

// labelOf is the label of a request named by its method alone.
func labelOf(method string) requestLabel { return requestLabel{method: method} }

func (l requestLabel) String() string {
	if l.tool == "" {
		return l.method
	}
	return l.method + " " + strconv.Quote(l.tool)
}

// withCallTimeout applies the server's callTimeout when ctx has no
// deadline; own reports that it did (only that deadline counts against the
// upstream).
func (u *upstream) withCallTimeout(ctx context.Context) (_ context.Context, _ context.CancelFunc, own bool) {
	if _, has := ctx.Deadline(); has {
		return ctx, func() {}, false
	}
	ctx, cancel := context.WithTimeout(ctx, u.cfg.CallTimeout)
	return ctx, cancel, true
}

// verdict is what a request's outcome tells the circuit breaker.
type verdict int

const (
	verdictNone    verdict = iota // no verdict (the caller gave up, a refused redirect, a lost answer)
	verdictSuccess                // the upstream answered
	verdictFailure                // counted where it was seen (recordDeath, recordFailure)
)

// admit asks the breaker whether a request may go now: an open breaker
// fails it fast with its retry time; a half-open one lets one trial through
// at a time (trial reports whether this request is it).
func (u *upstream) admit() (trial bool, err error) {
	u.mu.Lock()
	ok, retryAfter, trial := u.breaker.allow(time.Now())
	u.mu.Unlock()
	if !ok {
		return false, &UnavailableError{Server: u.cfg.Name, Reason: ReasonCircuitOpen, RetryAfter: retryAfter}
	}
	return trial, nil
}

// settle gives the breaker a request's verdict. Failures were counted where
// they were seen; a trial without a verdict only ends the trial.
func (u *upstream) settle(v verdict, trial bool, s *session) {
	switch {
	case v == verdictSuccess:
		u.recordSuccess(s)
	case v == verdictNone && trial:
		u.mu.Lock()
		u.breaker.neutral()
		u.mu.Unlock()
	}
}

// run runs one request on the session. Its context also ends when the
// session is found dead, so requests in flight fail at once instead of
// waiting for a transport that will never answer: owned, when not nil,
// cancels ctx, which is the request's alone (the session's death cancels
// it directly; diedMidway reports that it did); else ctx gets a child that
// the death cancels.
func (s *session) run(ctx context.Context, owned context.CancelFunc, do func(context.Context, *session) error) (diedMidway bool, err error) {
	cancel := owned
	if cancel == nil {
		var c context.CancelFunc
		ctx, c = context.WithCancel(ctx)
		defer c()
		cancel = c
	}
	defer s.interact.begin(interactionOf(ctx))()
	stop := context.AfterFunc(s.deadCtx, cancel)
	err = do(ctx, s)
	diedMidway = !stop() && owned != nil
	if err != nil && s.isDead() {
		// Keep the request's own error too: a 404 (ErrSessionMissing) must
		// stay recognisable when another goroutine saw the death first.
		return diedMidway, fmt.Errorf("session dead: %w (request: %w)", s.deadErr(), err)
	}
	return diedMidway, err
}

// sessionExpired reports (and marks dead) a session the upstream no longer
// knows: it restarted and never saw this request (HTTP 404 for our session
// id), so the request is safe to send again on the next session, within
// the caller's deadline.
func (u *upstream) sessionExpired(s *session, err error, label requestLabel) bool {
	if u.transportRefusal(err) != nil || !errors.Is(err, mcp.ErrSessionMissing) {
		return false
	}
	s.markDead(err)
	u.log.Info("session expired upstream; sending the request again on a new session", "request", label.String())
	return true
}

// failure maps a failed request's error, and says what it tells the
// breaker.
func (u *upstream) failure(ctx context.Context, s *session, err error, rl requestLabel, ownDeadline bool) (error, verdict) {
	label := rl.String()
	server := u.cfg.Name
	var werr *jsonrpc.Error
	if lerr := u.transportRefusal(err); lerr != nil {
		// The session is fine. An oversized answer is an answer (a success
		// for the breaker); a refused redirect is neither.
		var (
			tl  *ResponseTooLargeError
			big *RequestTooLargeError
		)
		if errors.As(lerr, &big) && big.Status != http.StatusRequestEntityTooLarge {
			// The URL or headers are toolsvc's: the operator's to see.
			u.log.Warn("the upstream refused a request's URL or headers as too large", "request", label, "status", big.Status)
		}
		if errors.As(lerr, &tl) || big != nil {
			return lerr, verdictSuccess
		}
		return lerr, verdictNone
	}
	switch {
	case s.isDead() || isSessionDead(err):
		s.markDead(err)
		u.recordDeath(s, label, err)
		u.log.Warn("request failed: session lost", "request", label, "error", u.redact(err.Error()))
		return &UnavailableError{Server: server, Reason: ReasonSessionLost, RetryAfter: u.nextConnectIn()}, verdictFailure
	case activeTimedOut(ctx):
		u.recordFailure(label+" timeout", err)
		return ErrCallTimeout, verdictFailure
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		// Only the server's own callTimeout counts against the upstream: a
		// caller's short deadline on a slow request is the caller's choice,
		// and a wedged upstream is caught by the prober.
		if ownDeadline {
			u.recordFailure(label+" timeout", err)
			return ctx.Err(), verdictFailure
		}
		return ctx.Err(), verdictNone
	case ctx.Err() != nil:
		return ctx.Err(), verdictNone
	case isMalformed(err):
		detail, _ := malformedDetail(err)
		u.log.Warn("request failed: the upstream's answer is not valid MCP", "request", label, "error", u.redact(detail))
		return &MalformedAnswerError{Server: server, Detail: u.redact(detail)}, verdictSuccess
	case errors.As(err, &werr) && werr.Code != codeRejectedByTransport:
		return &UpstreamError{Server: server, Code: werr.Code, Message: u.redact(werr.Message)}, verdictSuccess // the upstream answered
	case undecodable(err):
		u.log.Warn("request failed: the upstream's answer is not valid MCP", "request", label, "error", u.redact(err.Error()))
		return &MalformedAnswerError{Server: server, Detail: u.redact(err.Error())}, verdictSuccess
	case lostWithoutAnswer(err):
		// The transport gave up on the request without an answer (a killed
		// streamable-HTTP upstream's response stream closed): the request is
		// lost like one on a dead session, and a probe decides now whether
		// the session is (and counts its death).
		s.requestProbe()
		u.log.Warn("request failed: no answer from the upstream", "request", label, "error", u.redact(err.Error()))
		return &UnavailableError{Server: server, Reason: ReasonSessionLost, RetryAfter: u.nextConnectIn()}, verdictNone
	}
	u.log.Warn("request failed", "request", label, "error", u.redact(err.Error()))
	return fmt.Errorf("%s on server %q failed", label, server), verdictNone
}

// acquire takes a slot under MaxConcurrentCalls, waiting within ctx; it
// fails with ErrOverloaded when MaxQueuedCalls callers already wait.
func (u *upstream) acquire(ctx context.Context) (func(), error) {
	if u.sem == nil {
		return func() {}, nil
	}
	select {
	case u.sem <- struct{}{}:
		return func() { <-u.sem }, nil
	default:
	}
	if u.queued.Add(1) > int64(u.cfg.MaxQueuedCalls) {
		u.queued.Add(-1)
		return nil, fmt.Errorf("%w: server %q: %d calls in flight and %d waiting", ErrOverloaded, u.cfg.Name, u.cfg.MaxConcurrentCalls, u.cfg.MaxQueuedCalls)
	}
	defer u.queued.Add(-1)
	select {
	case u.sem <- struct{}{}:
		return func() { <-u.sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// nextConnectIn is the retry hint while the upstream has no session.
func (u *upstream) nextConnectIn() time.Duration {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.status.NextConnectTime.IsZero() {
		return u.cfg.BackoffBase
	}
	return max(time.Until(u.status.NextConnectTime), 0) + u.cfg.ConnectTimeout/10
}
