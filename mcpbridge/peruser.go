package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsvc/toolsvc/mcpbridge/oauth"
)

// Per-principal upstreams (docs/credentials.md, modes tokenExchange,
// userOAuth and passthrough): the upstream's session source
// (sessionsource.go) is a principalSessions, a sessionTable of sessions by
// principal, and the upstream has no shared session. Each session is a
// *session like any other (same transport stack, connect, teardown) whose
// HTTP requests carry the principal's own bearer token, from the
// upstream's credentialSource (authorize): an exchanged token, the
// principal's stored login, or the caller's own JWT. The first session to
// connect lists the tools and publishes them to the shared catalog; the
// others list nothing (unless the tools are listed per principal:
// privaterelist.go).

// CodeNoSubjectToken is CredentialsError.Code for a caller that presented
// no token to exchange (not authenticated by a JWT).
const CodeNoSubjectToken = "no_subject_token"

// CodeNoPrincipal is CredentialsError.Code for an anonymous caller of a
// userOAuth upstream (toolsvc authenticates nobody): a login is a
// principal's.
const CodeNoPrincipal = "no_principal"

// ReasonTokenEndpoint: the authorization server of a per-user upstream is
// unreachable or failed (not a refusal of the caller).
const ReasonTokenEndpoint = "token_endpoint"

// CredentialsError: the caller cannot reach a per-user upstream with its
// own credentials: it presented no token to exchange or forward (Code
// CodeNoSubjectToken), the authorization server refused the exchange
// (tokenExchange; Code is the RFC 6749 error code: access_denied,
// invalid_grant, …), or its token is not one passthrough may forward
// (Code oauth.PassthroughError's: audience_mismatch, token_expired,
// not_a_jwt). It never contains a token.
type CredentialsError struct {
	Server string
	Mode   string // "" is tokenExchange
	Code   string
}

func (e *CredentialsError) Error() string {
	mode := e.Mode
	if mode == "" {
		mode = CredentialsTokenExchange
	}
	switch {
	case e.Code == CodeNoPrincipal:
		return fmt.Sprintf("server %q uses per-user credentials (%s): the caller is not authenticated (toolsvc has no auth section), so it has no login of its own", e.Server, mode)
	case e.Code == CodeNoSubjectToken:
		return fmt.Sprintf("server %q uses per-user credentials (%s): the caller presented no JWT (a static token or a client certificate has none)", e.Server, mode)
	case mode == CredentialsPassthrough:
		return fmt.Sprintf("server %q uses per-user credentials (passthrough): the caller's token is not forwarded: %s", e.Server, oauth.PassthroughReason(e.Code))
	}
	return fmt.Sprintf("server %q uses per-user credentials (tokenExchange): the authorization server refused to exchange the caller's token (%s)", e.Server, e.Code)
}

// callerKey carries the caller of a request to a per-user upstream.
type callerKey struct{}

type caller struct{ principal, subject string }

// WithCaller is ctx carrying the principal a request is made for and, for
// a caller authenticated by a JWT, that JWT (the subject token of a token
// exchange). Requests to per-user upstreams (tools/call, resources/read,
// prompts/get, completion, resource subscriptions, tasks) go through that
// principal's session; CallOptions.Principal and SubjectToken do the same
// for Call.
func WithCaller(ctx context.Context, principal, subjectToken string) context.Context {
	return context.WithValue(ctx, callerKey{}, caller{principal, subjectToken})
}

func callerOf(ctx context.Context) caller {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c
}

// sessionPrincipalKey names, in connect's context, the principal a session
// is created for (newSession reads it).
type sessionPrincipalKey struct{}

func sessionPrincipalOf(ctx context.Context) string {
	p, _ := ctx.Value(sessionPrincipalKey{}).(string)
	return p
}

// sessionNoStreamKey, in connect's context, opens a per-principal session
// without go-sdk's standalone GET stream (newSession reads it).
type sessionNoStreamKey struct{}

// principalSessions is a per-user upstream's session source
// (sessionsource.go): a session per principal.
type principalSessions struct {
	u     *upstream
	table *sessionTable[*session]
	src   credentialSource
	// subjects holds the latest subject token of each principal with a
	// session (memory only, dropped with the session): a request the
	// session makes without a caller (connect, the standalone stream, a
	// probe) after the exchanged token expired is exchanged with it
	// (passthrough: forwarded, while it is valid).
	subjects sync.Map // principal -> string

	seq        atomic.Int64 // session ids
	listMu     sync.Mutex
	listed     atomic.Bool
	unlistOnce sync.Once // the bridge's count of unlisted per-user upstreams

	// private: the tools are listed per principal (catalog/private.go); set
	// by credentials.privateTools or the first listing answered cacheScope
	// "private", and kept for the upstream's life.
	private atomic.Bool
	// relist is signalled (capacity 1) by a session's list_changed
	// (markDirty): the upstream's relister re-lists its dirty sessions.
	relist chan struct{}

	// The standalone stream (2025-11-25 streamable HTTP: go-sdk's GET
	// stream, which carries what the upstream sends outside any request)
	// costs an idle session most of its memory (an HTTP connection, two
	// goroutines, go-sdk's reader). streamFor gives it to the sessions
	// that need it; go-sdk decides at Connect and cannot open it later.
	streamMu      sync.Mutex
	streamClaimed bool     // a session holds (or is connecting to hold) the listener's stream
	streamHolder  *session // that session, once connected
	// subscribe: the upstream declared resources.subscribe (its updates
	// come on the stream of the session that subscribed).
	subscribe atomic.Bool
}

// streamFor decides whether a session about to connect opens the
// standalone stream: every session does when the tools are listed per
// principal (each listens for its own list_changed) or the upstream takes
// resource subscriptions; otherwise one session at a time does, the
// listener, whose list_changed the relister follows for the shared
// listing (listener reports that this one is it). A listener that died or
// closed hands the role to the next session created.
func (pu *principalSessions) streamFor() (stream, listener bool) {
	if pu.private.Load() || pu.subscribe.Load() {
		return true, false
	}
	pu.streamMu.Lock()
	defer pu.streamMu.Unlock()
	if pu.streamClaimed && (pu.streamHolder == nil || !pu.streamHolder.isDead()) {
		return false, false
	}
	pu.streamClaimed, pu.streamHolder = true, nil
	return true, true
}

// isListener reports whether s holds the listener's stream.
func (pu *principalSessions) isListener(s *session) bool {
	pu.streamMu.Lock()
	defer pu.streamMu.Unlock()
	return pu.streamHolder == s
}

// listening records the outcome of a listener's connect (s nil: failed).
func (pu *principalSessions) listening(s *session) {
	pu.streamMu.Lock()
	defer pu.streamMu.Unlock()
	pu.streamHolder, pu.streamClaimed = s, s != nil
}

// stopListening releases the listener's role when s holds it.
func (pu *principalSessions) stopListening(s *session) {
	pu.streamMu.Lock()
	defer pu.streamMu.Unlock()
	if pu.streamHolder == s {
		pu.streamHolder, pu.streamClaimed = nil, false
	}
}

// newPrincipalSessions is a per-user upstream's source (newUpstream).
func (u *upstream) newPrincipalSessions() *principalSessions {
	c := u.cfg.Credentials
	pu := &principalSessions{u: u, src: u.newCredentialSource()}
	maxS, idle := c.MaxSessions, c.SessionIdle
	if maxS <= 0 {
		maxS = DefaultMaxUserSessions
	}
	if idle <= 0 {
		idle = DefaultUserSessionIdle
	}
	pu.table = newSessionTable(maxS, idle, pu.create, pu.closeSession)
	pu.table.keep = pu.isListener // set before any session exists
	pu.relist = make(chan struct{}, 1)
	u.b.unlistedPerUser.Add(1)
	u.b.perUser.Add(1)
	if c.PrivateTools {
		pu.private.Store(true)
		u.b.privateUps.Add(1)
	}
	return pu
}

// listedOnce takes the upstream out of the bridge's unlisted count.
func (pu *principalSessions) listedOnce(b *Bridge) {
	pu.unlistOnce.Do(func() { b.unlistedPerUser.Add(-1) })
}

// run is the supervisor of a per-user upstream: nothing to connect until
// a principal calls; at the end, every session closes.
func (pu *principalSessions) run() {
	u := pu.u
	u.setState(StateConnecting, "awaiting_principal: the tools are listed through the first caller's session")
	u.attempted() // readiness does not wait for a caller
	var relister sync.WaitGroup
	relister.Go(pu.relister)
	for done := false; !done; {
		select {
		case <-u.ctx.Done():
			done = true
		case <-u.reconnectReq:
			// An operator's reconnect: the sessions without a call in
			// flight close (the next call of each principal opens a new
			// one), the breaker is reset.
			u.operatorReset()
			pu.table.closeIdle(0)
			u.attempted()
		}
	}
	relister.Wait() // it stops with u.ctx
	pu.table.Close()
	pu.src.close()
	pu.listedOnce(u.b)
	u.b.perUser.Add(-1)
	if pu.private.Load() {
		u.b.privateUps.Add(-1)
	}
	u.setState(StateDown, "")
}

// create connects principal's session (the table's creation flight); the
// first one lists the tools for the catalog.
func (pu *principalSessions) create(ctx context.Context, principal string) (*session, error) {
	u := pu.u
	began := time.Now()
	stream, listener := pu.streamFor()
	ctx = context.WithValue(ctx, sessionNoStreamKey{}, !stream)
	s, err := u.connect(context.WithValue(ctx, sessionPrincipalKey{}, principal))
	if err != nil {
		if listener {
			pu.listening(nil)
		}
		if u.authw != nil && u.authw.status.Load() != 0 {
			pu.src.forget(principal) // the upstream refused the token: the next call gets a new one
		}
		return nil, &connectError{began: began, err: err}
	}
	if ir := s.cs.InitializeResult(); ir != nil && ir.Capabilities != nil && ir.Capabilities.Resources != nil && ir.Capabilities.Resources.Subscribe {
		pu.subscribe.Store(true)
	}
	if listener {
		pu.listening(s)
		if pu.listed.Load() {
			// A new listener: what the last one may have missed since it
			// went is re-listed (by the relister, as a list_changed).
			s.markDirty()
		}
	}
	if !pu.listed.Load() {
		pu.listMu.Lock()
		if !pu.listed.Load() {
			if err := s.refresh(); err != nil {
				pu.listMu.Unlock()
				pu.closeSession(s)
				return nil, err
			}
			pu.listed.Store(true)
			pu.listedOnce(u.b)
			u.mu.Lock()
			u.status.State, u.status.LastError = StateReady, ""
			u.mu.Unlock()
		}
		pu.listMu.Unlock()
	}
	if pu.private.Load() && !u.b.private.Has(principal, u.cfg.Name) {
		// Tools listed per principal: every session lists its own.
		if err := s.listOwn(); err != nil {
			pu.closeSession(s)
			return nil, err
		}
	}
	u.log.Info("per-principal session opened", "principal", principal, "session", s.id)
	return s, nil
}

// connectError is a per-principal session's failed connect, with when it
// began: every caller that waited on it gets it, however late it joined.
type connectError struct {
	began time.Time
	err   error
}

func (e *connectError) Error() string { return e.err.Error() }
func (e *connectError) Unwrap() error { return e.err }

// closeSession ends a session the table evicted, swept, dropped or
// closed: at once for its calls, its Close in the background.
func (pu *principalSessions) closeSession(s *session) {
	u := pu.u
	s.counted.Store(true) // eviction is no failure
	s.markDead(nil)
	s.cancel()
	s.wg.Wait()
	pu.stopListening(s)
	// A private listing lives with its session; its 2025-11-25 tasks stay
	// reachable by its id (taskforeign.go).
	u.b.private.Drop(s.principal, u.cfg.Name, s.id)
	s.tasks.warnLost(u.log, u.cfg.Transport)
	pu.subjects.Delete(s.principal)
	u.log.Info("per-principal session closed", "principal", s.principal, "session", s.id, "sessions", pu.table.len())
	u.b.closers.Add(1)
	go func() {
		defer u.b.closers.Done()
		u.closeSession(s)
	}()
}

// admit obtains the caller's credential (cached after the first time).
func (pu *principalSessions) admit(ctx context.Context) error {
	return pu.src.admit(ctx, callerOf(ctx))
}

// session is the caller's session, held until done is called. The
// caller's credential is obtained first (the token exchanged or its cached
// exchange, the stored login, the JWT's audience checked), so a refusal,
// or a login to make, is the caller's error, not a session's.
func (pu *principalSessions) session(ctx context.Context) (s *session, done func(), err error) {
	u := pu.u
	c := callerOf(ctx)
	if err := pu.src.admit(ctx, c); err != nil {
		return nil, nil, err
	}
	if c.subject != "" {
		pu.subjects.Store(c.principal, c.subject)
		defer func() {
			if err != nil && !pu.table.has(c.principal) {
				pu.subjects.CompareAndDelete(c.principal, c.subject)
			}
		}()
	}
	for try := 0; ; try++ {
		s, release, err := pu.table.acquire(ctx, c.principal)
		switch {
		case err == nil && !s.isDead():
			return s, release, nil
		case err == nil:
			// It died since its last use: the next one is created now.
			release()
			pu.table.drop(c.principal, s)
			if try == 0 {
				continue
			}
			return nil, nil, &UnavailableError{Server: u.cfg.Name, Reason: ReasonSessionLost, RetryAfter: u.cfg.BackoffBase}
		case errors.Is(err, ErrSessionsFull), errors.Is(err, ErrClosed), ctx.Err() != nil:
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			return nil, nil, err
		}
		// A connect begun during an outage may fail after the upstream came
		// back (its retry reaching the new process, which never knew the
		// session): it does not re-open the breaker then.
		var ce *connectError
		began := time.Now()
		if errors.As(err, &ce) {
			began = ce.began
		}
		if try == 0 && u.answeredSince(began) {
			// The connect this call waited on began during an outage that
			// has ended since (another session got an answer): one more,
			// new connect, rather than the stale failure.
			continue
		}
		u.recordFailureOf("per-principal connect", err, began)
		u.log.Warn("per-principal session failed to connect", "principal", c.principal, "error", u.redact(err.Error()))
		return nil, nil, &UnavailableError{Server: u.cfg.Name, Reason: ReasonNoSession, RetryAfter: u.cfg.BackoffBase}
	}
}

// exchangeFailure maps a failed token exchange: the caller refused is a
// CredentialsError, the authorization server failing (unreachable, or
// refusing toolsvc itself: invalid_client) is UNAVAILABLE. Errors already
// mapped (a credentialSource's) pass through.
func (u *upstream) exchangeFailure(ctx context.Context, err error) error {
	var (
		ce *CredentialsError
		le *LoginRequiredError
		ue *UnavailableError
	)
	if errors.As(err, &ce) || errors.As(err, &le) || errors.As(err, &ue) {
		return err
	}
	var xe *oauth.ExchangeError
	switch {
	case errors.Is(err, oauth.ErrNoSubjectToken):
		return &CredentialsError{Server: u.cfg.Name, Code: CodeNoSubjectToken}
	case errors.As(err, &xe) && xe.Refused():
		return &CredentialsError{Server: u.cfg.Name, Code: xe.Code}
	case ctx.Err() != nil:
		return ctx.Err()
	}
	// The Exchanger's errors never hold a token.
	u.log.Warn("token exchange failed", "error", u.redact(err.Error()))
	return &UnavailableError{Server: u.cfg.Name, Reason: ReasonTokenEndpoint, RetryAfter: time.Second}
}

// again drops the session that expired upstream and gives the caller a
// new one.
func (pu *principalSessions) again(ctx context.Context, old *session) (*session, func(), error) {
	pu.table.drop(old.principal, old)
	return pu.session(ctx)
}

// current is the caller's live session, if it has one.
func (pu *principalSessions) current(ctx context.Context) *session {
	if s, ok := pu.table.peek(callerOf(ctx).principal); ok && !s.isDead() {
		return s
	}
	return nil
}

// nextID: per-user sessions connect concurrently, so ids come from one
// counter.
func (pu *principalSessions) nextID() int64 { return pu.seq.Add(1) }

// authorize makes each request carry principal's own token.
func (pu *principalSessions) authorize(principal string, base http.RoundTripper) http.RoundTripper {
	if principal == "" {
		return base
	}
	return &bearerRoundTripper{pu: pu, principal: principal, base: base}
}

// listChanged: per-principal sessions have no refresher; the upstream's
// relister re-lists the marked ones.
func (pu *principalSessions) listChanged(s *session) {
	if s.principal != "" {
		pu.kickRelist()
	}
}

// listsResources: tools listed per principal keep the resources their
// first listing published (shared: docs/credentials.md).
func (pu *principalSessions) listsResources() bool {
	return !pu.private.Load() || !pu.listed.Load()
}

func (pu *principalSessions) status(st *ServerStatus) {
	st.PerUser, st.UserSessions = true, pu.table.len()
}

// unprimed: nobody has listed the tools yet, or they are listed per
// principal and principal has no listing.
func (pu *principalSessions) unprimed(principal string) bool {
	return !pu.listed.Load() || pu.privateFor(principal)
}

func (pu *principalSessions) privateFor(principal string) bool {
	return pu.private.Load() && !pu.u.b.private.Has(principal, pu.u.cfg.Name)
}

// prime creates the caller's session, which lists (create), or lists
// through the one it has when its principal has no listing of its own.
func (pu *principalSessions) prime(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pu.u.cfg.ConnectTimeout+pu.u.cfg.RefreshTimeout)
	defer cancel()
	s, done, err := pu.session(ctx)
	if err != nil {
		return err
	}
	if pu.privateFor(callerOf(ctx).principal) {
		_ = s.listOwn() // its failure is logged and in the status; a call then meets UNAVAILABLE no_session (ResolveFor)
	}
	done()
	return nil
}

func (pu *principalSessions) credentials() credentialSource { return pu.src }

// loggedOut closes principal's session once it has no call in flight:
// nothing more is sent with the old token.
func (pu *principalSessions) loggedOut(principal string) { pu.table.closeIdleOf(principal) }

type bearerRoundTripper struct {
	pu        *principalSessions
	principal string
	base      http.RoundTripper
}

func (t *bearerRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	subject := ""
	if c := callerOf(r.Context()); c.principal == t.principal {
		subject = c.subject
	}
	if subject == "" {
		if v, ok := t.pu.subjects.Load(t.principal); ok {
			subject = v.(string)
		}
	}
	tok, err := t.pu.src.token(r.Context(), t.principal, subject)
	if err != nil {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, fmt.Errorf("per-user credentials: %w", t.pu.u.exchangeFailure(r.Context(), err))
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return t.base.RoundTrip(r)
}

// PrimeCaller lists the tools of every per-user upstream that has not
// listed yet, through principal's session (created now, with
// subjectToken): a per-user upstream's tools are unknown until a caller's
// session lists them, and a caller cannot call a tool it cannot name.
// Other failures are the call's business (it meets them again); the one
// returned is a *LoginRequiredError of a userOAuth upstream the principal
// has not logged in to, so that a call to a tool nobody could list yet
// gets the login link rather than TOOL_NOT_FOUND. Cheap when every
// per-user upstream has listed.
//
// An upstream whose tools are listed per principal (catalog/private.go) is
// primed for every principal without a listing of it: the principal's
// session is created (and lists), or, if it has one that has not listed,
// lists now.
func (b *Bridge) PrimeCaller(ctx context.Context, principal, subjectToken string) error {
	if b.unlistedPerUser.Load() <= 0 && b.privateUps.Load() <= 0 || principal == "" {
		return nil
	}
	b.mu.RLock()
	var ups []*upstream
	for _, u := range b.ups {
		if u.source.unprimed(principal) {
			ups = append(ups, u)
		}
	}
	b.mu.RUnlock()
	ctx = WithCaller(ctx, principal, subjectToken)
	var login error
	for _, u := range ups {
		var le *LoginRequiredError
		if err := u.source.prime(ctx); login == nil && errors.As(err, &le) {
			login = err
		}
	}
	return login
}

// PerUserSessions is the number of per-principal sessions of server (0
// for a shared one).
func (b *Bridge) PerUserSessions(server string) int {
	u, err := b.upstream(server)
	if err != nil {
		return 0
	}
	var st ServerStatus
	u.source.status(&st)
	return st.UserSessions
}
