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

// Per-principal upstreams (docs/credentials.md, mode tokenExchange): the
// supervisor owns no session of its own but a sessionTable of sessions by
// principal. Each session is today's *session (same transport stack,
// connect, teardown) whose HTTP requests carry the principal's exchanged
// token (sessionAuth). The first session to connect lists the tools and
// publishes them to the shared catalog; the others list nothing.

// CodeNoSubjectToken is CredentialsError.Code for a caller that presented
// no token to exchange (not authenticated by a JWT).
const CodeNoSubjectToken = "no_subject_token"

// ReasonTokenEndpoint: the authorization server of a per-user upstream is
// unreachable or failed (not a refusal of the caller).
const ReasonTokenEndpoint = "token_endpoint"

// CredentialsError: the caller cannot reach a per-user upstream with its
// own credentials: it presented no token to exchange (Code
// CodeNoSubjectToken), or the authorization server refused the exchange
// (Code is the RFC 6749 error code: access_denied, invalid_grant, …). It
// never contains a token.
type CredentialsError struct {
	Server string
	Code   string
}

func (e *CredentialsError) Error() string {
	if e.Code == CodeNoSubjectToken {
		return fmt.Sprintf("server %q uses per-user credentials (tokenExchange): the caller presented no JWT to exchange (a static token or a client certificate has none)", e.Server)
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

// principalSessions is a per-user upstream's state.
type principalSessions struct {
	table *sessionTable[*session]
	exch  *oauth.Exchanger
	// subjects holds the latest subject token of each principal with a
	// session (memory only, dropped with the session): a request the
	// session makes without a caller (connect, the standalone stream, a
	// probe) after the exchanged token expired is exchanged with it.
	subjects sync.Map // principal -> string

	seq        atomic.Int64 // session ids
	listMu     sync.Mutex
	listed     atomic.Bool
	unlistOnce sync.Once // the bridge's count of unlisted per-user upstreams

	// private: the tools are listed per principal (privatetools.go); set
	// by credentials.privateTools or the first listing answered cacheScope
	// "private", and kept for the upstream's life.
	private atomic.Bool
	// relist is signalled (capacity 1) by a session's list_changed
	// (markDirty): the upstream's relister re-lists its dirty sessions.
	relist chan struct{}
}

// newPrincipalSessions sets a per-user upstream up (newUpstream).
func (u *upstream) newPrincipalSessions() {
	c := u.cfg.Credentials
	aud, res := c.Audience, c.Resource
	if aud == "" {
		aud = u.cfg.URL
	}
	if res == "" {
		res = u.cfg.URL
	}
	pu := &principalSessions{exch: oauth.NewExchanger(oauth.ExchangeConfig{Issuer: c.Issuer, TokenURL: c.TokenURL,
		ClientID: c.ClientID, ClientSecret: c.ClientSecret, Audience: aud, Resource: res, Scopes: c.Scopes,
		SubjectTokenType: c.SubjectTokenType, ExpiryGuard: DefaultTokenExpiryGuard, MaxEntries: max(c.MaxSessions, DefaultMaxUserSessions)})}
	maxS, idle := c.MaxSessions, c.SessionIdle
	if maxS <= 0 {
		maxS = DefaultMaxUserSessions
	}
	if idle <= 0 {
		idle = DefaultUserSessionIdle
	}
	pu.table = newSessionTable(maxS, idle, u.createPrincipalSession, u.closePrincipalSession)
	pu.relist = make(chan struct{}, 1)
	u.pu = pu
	u.b.unlistedPerUser.Add(1)
	u.b.perUser.Add(1)
	if c.PrivateTools {
		pu.private.Store(true)
		u.b.privateUps.Add(1)
	}
}

// listedOnce takes the upstream out of the bridge's unlisted count.
func (pu *principalSessions) listedOnce(b *Bridge) {
	pu.unlistOnce.Do(func() { b.unlistedPerUser.Add(-1) })
}

// runPerPrincipal is the supervisor of a per-user upstream: nothing to
// connect until a principal calls; at the end, every session closes.
func (u *upstream) runPerPrincipal() {
	u.setState(StateConnecting, "awaiting_principal: the tools are listed through the first caller's session")
	u.attempted() // readiness does not wait for a caller
	var relister sync.WaitGroup
	relister.Go(u.relister)
	for done := false; !done; {
		select {
		case <-u.ctx.Done():
			done = true
		case <-u.reconnectReq:
			// An operator's reconnect: the sessions without a call in
			// flight close (the next call of each principal opens a new
			// one), the breaker is reset.
			u.operatorReset()
			u.pu.table.closeIdle(0)
			u.attempted()
		}
	}
	relister.Wait() // it stops with u.ctx
	u.pu.table.Close()
	u.pu.exch.Close()
	u.pu.listedOnce(u.b)
	u.b.perUser.Add(-1)
	if u.pu.private.Load() {
		u.b.privateUps.Add(-1)
	}
	u.setState(StateDown, "")
}

// createPrincipalSession connects principal's session (the table's
// creation flight); the first one lists the tools for the catalog.
func (u *upstream) createPrincipalSession(ctx context.Context, principal string) (*session, error) {
	s, err := u.connect(context.WithValue(ctx, sessionPrincipalKey{}, principal))
	if err != nil {
		if u.authw != nil && u.authw.status.Load() != 0 {
			u.pu.exch.Forget(principal) // the upstream refused the exchanged token: the next call exchanges anew
		}
		return nil, err
	}
	if !u.pu.listed.Load() {
		u.pu.listMu.Lock()
		if !u.pu.listed.Load() {
			if err := s.refresh(); err != nil {
				u.pu.listMu.Unlock()
				u.closePrincipalSession(s)
				return nil, err
			}
			u.pu.listed.Store(true)
			u.pu.listedOnce(u.b)
			u.mu.Lock()
			u.status.State, u.status.LastError = StateReady, ""
			u.mu.Unlock()
		}
		u.pu.listMu.Unlock()
	}
	if u.pu.private.Load() && !u.b.private.has(principal, u.cfg.Name) {
		// Tools listed per principal: every session lists its own.
		if err := s.listOwn(); err != nil {
			u.closePrincipalSession(s)
			return nil, err
		}
	}
	u.log.Info("per-principal session opened", "principal", principal, "session", s.id)
	return s, nil
}

// closePrincipalSession ends a session the table evicted, swept, dropped
// or closed: at once for its calls, its Close in the background.
func (u *upstream) closePrincipalSession(s *session) {
	s.counted.Store(true) // eviction is no failure
	s.markDead(nil)
	s.cancel()
	s.wg.Wait()
	// A private listing lives with its session; its 2025-11-25 tasks stay
	// reachable by its id (taskforeign.go).
	u.b.private.drop(s.principal, u.cfg.Name, s.id)
	s.tasks.warnLost(u.log, u.cfg.Transport)
	u.pu.subjects.Delete(s.principal)
	u.log.Info("per-principal session closed", "principal", s.principal, "session", s.id, "sessions", u.pu.table.len())
	u.b.closers.Add(1)
	go func() {
		defer u.b.closers.Done()
		u.closeSession(s)
	}()
}

// principalSession is the caller's session on a per-user upstream, held
// until done is called. The caller's token is exchanged first (or the
// cached exchange used), so a refusal is the caller's error, not a
// session's.
func (u *upstream) principalSession(ctx context.Context) (s *session, done func(), err error) {
	c := callerOf(ctx)
	if c.principal == "" || c.subject == "" {
		// Never served from another caller's cache: every request brings
		// the JWT it is made with.
		return nil, nil, &CredentialsError{Server: u.cfg.Name, Code: CodeNoSubjectToken}
	}
	if _, err := u.pu.exch.Token(ctx, c.principal, c.subject); err != nil {
		return nil, nil, u.exchangeFailure(ctx, err)
	}
	u.pu.subjects.Store(c.principal, c.subject)
	defer func() {
		if err != nil && !u.pu.table.has(c.principal) {
			u.pu.subjects.CompareAndDelete(c.principal, c.subject)
		}
	}()
	for try := 0; ; try++ {
		s, release, err := u.pu.table.acquire(ctx, c.principal)
		switch {
		case err == nil && !s.isDead():
			return s, release, nil
		case err == nil:
			// It died since its last use: the next one is created now.
			release()
			u.pu.table.drop(c.principal, s)
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
		u.recordFailure("per-principal connect", err)
		u.log.Warn("per-principal session failed to connect", "principal", c.principal, "error", u.redact(err.Error()))
		return nil, nil, &UnavailableError{Server: u.cfg.Name, Reason: ReasonNoSession, RetryAfter: u.cfg.BackoffBase}
	}
}

// exchangeFailure maps a failed token exchange: the caller refused is a
// CredentialsError, the authorization server failing (unreachable, or
// refusing toolsvc itself: invalid_client) is UNAVAILABLE.
func (u *upstream) exchangeFailure(ctx context.Context, err error) error {
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

// sessionAuth wraps a session's transport so that each request carries the
// session principal's exchanged token (per-user upstreams only).
func (u *upstream) sessionAuth(s *session, base http.RoundTripper) http.RoundTripper {
	if u.pu == nil || s.principal == "" {
		return base
	}
	return &exchangedRoundTripper{u: u, principal: s.principal, base: base}
}

type exchangedRoundTripper struct {
	u         *upstream
	principal string
	base      http.RoundTripper
}

func (t *exchangedRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	subject := ""
	if c := callerOf(r.Context()); c.principal == t.principal {
		subject = c.subject
	}
	if subject == "" {
		if v, ok := t.u.pu.subjects.Load(t.principal); ok {
			subject = v.(string)
		}
	}
	tok, err := t.u.pu.exch.Token(r.Context(), t.principal, subject)
	if err != nil {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, fmt.Errorf("per-user credentials: %w", t.u.exchangeFailure(r.Context(), err))
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return t.base.RoundTrip(r)
}

// PrimeCaller lists the tools of every per-user upstream that has not
// listed yet, through principal's session (created now, with
// subjectToken): a per-user upstream's tools are unknown until a caller's
// session lists them, and a caller cannot call a tool it cannot name.
// Failures are the call's business (it meets them again); cheap when
// every per-user upstream has listed.
//
// An upstream whose tools are listed per principal (privatetools.go) is
// primed for every principal without a listing of it: the principal's
// session is created (and lists), or, if it has one that has not listed,
// lists now.
func (b *Bridge) PrimeCaller(ctx context.Context, principal, subjectToken string) {
	if b.unlistedPerUser.Load() <= 0 && b.privateUps.Load() <= 0 || principal == "" || subjectToken == "" {
		return
	}
	b.mu.RLock()
	var ups []*upstream
	for _, u := range b.ups {
		if u.pu != nil && (!u.pu.listed.Load() || u.pu.private.Load() && !b.private.has(principal, u.cfg.Name)) {
			ups = append(ups, u)
		}
	}
	b.mu.RUnlock()
	ctx = WithCaller(ctx, principal, subjectToken)
	for _, u := range ups {
		ctx, cancel := context.WithTimeout(ctx, u.cfg.ConnectTimeout+u.cfg.RefreshTimeout)
		if s, done, err := u.principalSession(ctx); err == nil {
			if u.pu.private.Load() && !b.private.has(principal, u.cfg.Name) {
				_ = s.listOwn() // its failure is logged and in the status; a call then meets UNAVAILABLE no_session (ResolveFor)
			}
			done()
		}
		cancel()
	}
}

// PerUserSessions is the number of per-principal sessions of server (0
// for a shared one).
func (b *Bridge) PerUserSessions(server string) int {
	u, err := b.upstream(server)
	if err != nil || u.pu == nil {
		return 0
	}
	return u.pu.table.len()
}
