package core

import (
	"context"
	"errors"
	"log/slog"
)

// Auth on a running server. The authenticator, authorizer, rate limits and
// audit settings form one immutable AuthState; the Server holds the current
// one in an atomic pointer, and SetAuth replaces it whole. A request reads
// the pointer once, when it is authenticated (the gRPC interceptor, the MCP
// front door's HTTP handler, or Core.Authenticate), and carries that
// state in its context to every later decision (authorization, rate limit,
// audit): a request never mixes two generations, and a request in flight
// at a swap finishes under the state, and with the principal, it began
// with. Watch streams are long-lived: at a swap they are authenticated
// again with the new state (a credential it no longer accepts ends the
// stream with UNAUTHENTICATED) and move to the view the new rules give
// them, sending the difference as their next event (watch.go).

// AuthState is one generation of the auth configuration. Never modified
// after SetAuth (or New) publishes it.
type AuthState struct {
	gen       uint64
	authn     *Authenticator // nil: no authenticator (see Core.Authenticate)
	authz     *Authorizer    // nil: every tool, and AdminService for local callers
	limits    *rateLimiter   // nil: no rate limits
	audit     *slog.Logger   // nil: no audit lines
	auditArgs bool
	// changed is closed when a newer state replaces this one.
	changed chan struct{}
}

// configured reports whether the state authenticates callers.
func (st *AuthState) configured() bool { return st.authn != nil || st.authz != nil }

// Configured reports whether the state authenticates callers (an
// Authenticator or an Authorizer).
func (st *AuthState) Configured() bool { return st.configured() }

// Gen is the state's generation: 0 for the first, one more per SetAuth.
func (st *AuthState) Gen() uint64 { return st.gen }

// Authenticator and Authorizer are the state's (nil: none).
func (st *AuthState) Authenticator() *Authenticator { return st.authn }
func (st *AuthState) Authorizer() *Authorizer       { return st.authz }

// Filter is the state's authorization of the caller of ctx over exposed
// names (tools, prompts, a server's resources), or nil when it allows
// every name (the fast path).
func (st *AuthState) Filter(ctx context.Context) func(name string) bool { return st.authz.Filter(ctx) }

// Changed is closed when a newer state replaces this one.
func (st *AuthState) Changed() <-chan struct{} { return st.changed }

type authStateKey struct{}

// withAuthState pins st as the auth state of the request of ctx.
func WithAuthState(ctx context.Context, st *AuthState) context.Context {
	return context.WithValue(ctx, authStateKey{}, st)
}

func AuthStateFrom(ctx context.Context) *AuthState {
	st, _ := ctx.Value(authStateKey{}).(*AuthState)
	return st
}

// currentAuth is the newest auth state.
func (s *Core) CurrentAuth() *AuthState { return s.auth.Load() }

// authOf is the auth state of the request of ctx: the one pinned when it
// was authenticated, else (a request not authenticated yet) the current.
func (s *Core) AuthOf(ctx context.Context) *AuthState {
	if st := AuthStateFrom(ctx); st != nil {
		return st
	}
	return s.CurrentAuth()
}

// AuthConfig is one complete auth configuration of a Server: the fields of
// Options of the same names, applied together.
type AuthConfig struct {
	Authenticator  *Authenticator
	Authorizer     *Authorizer
	RateLimits     []RateLimit
	AuditLog       *slog.Logger
	AuditArguments bool
}

// ErrAuthOnOff is SetAuth's refusal to turn authentication on or off: the
// listeners were set up for the one or the other (a TLS handshake that
// requires a client certificate only without auth, the loopback-only
// AdminService without it), so that needs a restart.
var ErrAuthOnOff = errors.New("auth cannot be turned on or off while serving (the listeners' TLS and the loopback-only AdminService depend on it): restart toolsvc")

// SetAuth replaces the server's auth configuration atomically: every
// request authenticated after it returns uses c's authenticator,
// authorizer, rate limits and audit settings together, on gRPC and the MCP
// front door alike; requests in flight finish under the state they began
// with. A rate limit rule that is unchanged keeps its principals' buckets
// and in-flight counts. It refuses (ErrAuthOnOff, nothing changed) a c that
// turns authentication on or off.
func (s *Core) SetAuth(c AuthConfig) error {
	s.authMu.Lock()
	defer s.authMu.Unlock()
	old := s.CurrentAuth()
	st := s.newAuthState(c, old)
	if st.configured() != old.configured() {
		return ErrAuthOnOff
	}
	s.auth.Store(st)
	close(old.changed)
	return nil
}

// newAuthState builds the state after prev (nil: the first).
func (s *Core) newAuthState(c AuthConfig, prev *AuthState) *AuthState {
	st := &AuthState{authn: c.Authenticator, authz: c.Authorizer, audit: c.AuditLog, auditArgs: c.AuditArguments,
		changed: make(chan struct{})}
	var prevLimits *rateLimiter
	if prev != nil {
		st.gen, prevLimits = prev.gen+1, prev.limits
	}
	st.limits = newRateLimiter(c.RateLimits, s.opts.Observer, prevLimits)
	return st
}

// Reauthenticate authenticates the caller of a long-lived stream (ctx,
// authenticated before) again under the current auth state, for a stream
// that outlives a SetAuth. The returned context carries the new principal
// and state.
func (s *Core) Reauthenticate(ctx context.Context) (context.Context, *Error) {
	old, _ := PrincipalFrom(ctx)
	nctx, p, e := s.Authenticate(Unpinned(ctx))
	if e != nil {
		return ctx, e
	}
	if p.Name != old.Name {
		// The same credential now names another principal: the stream
		// was opened by someone else, so it ends (as the front door's
		// long-lived requests do, endWhenRevoked).
		return ctx, unauthenticated("the credential now names another principal; open a new stream")
	}
	return nctx, nil
}

// Unpinned is ctx without the principal and auth state an authentication
// put there, keeping the credentials it was made from: authenticate then
// authenticates it again, under the state current then. For contexts that
// outlive their request (a watch stream's; a legacy SSE session's, whose
// requests all run in its GET stream's context).
func Unpinned(ctx context.Context) context.Context {
	ctx = context.WithValue(ctx, principalKey{}, nil)
	return WithAuthState(ctx, nil) // authStateFrom: nil, so authenticate reads the current
}

// endWhenRevoked returns a context of ctx (a long-lived request of the MCP
// front door, authenticated under its pinned state) that is cancelled when
// a newer auth state no longer authenticates its credentials as the same
// principal, and stop, which must be called when the request ends (it
// cancels the context and waits for the goroutine that watches).
func (s *Core) EndWhenRevoked(ctx context.Context) (context.Context, func()) {
	p, _ := PrincipalFrom(ctx)
	st := s.AuthOf(ctx)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-st.changed:
			}
			actx, np, err := s.Authenticate(Unpinned(ctx))
			if err != nil || np.Name != p.Name {
				cancel()
				return
			}
			st = s.AuthOf(actx)
		}
	}()
	return ctx, func() { cancel(); <-done }
}
