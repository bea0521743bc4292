package service

import (
	"context"
	"errors"
	"log/slog"

	"github.com/toolsvc/toolsvc/service/core"
)

// Auth on a running server. The authenticator, authorizer, rate limits and
// audit settings form one immutable authState; the Server holds the current
// one in an atomic pointer, and SetAuth replaces it whole. A request reads
// the pointer once, when it is authenticated (the gRPC interceptor, the MCP
// front door's HTTP handler, or Server.authenticate), and carries that
// state in its context to every later decision (authorization, rate limit,
// audit): a request never mixes two generations, and a request in flight
// at a swap finishes under the state, and with the principal, it began
// with. Watch streams are long-lived: at a swap they are authenticated
// again with the new state (a credential it no longer accepts ends the
// stream with UNAUTHENTICATED) and move to the view the new rules give
// them, sending the difference as their next event (watch.go).

// authState is one generation of the auth configuration. Never modified
// after SetAuth (or New) publishes it.
type authState struct {
	gen       uint64
	authn     *Authenticator // nil: no authenticator (see Server.authenticate)
	authz     *Authorizer    // nil: every tool, and AdminService for local callers
	limits    *rateLimiter   // nil: no rate limits
	audit     *slog.Logger   // nil: no audit lines
	auditArgs bool
	// changed is closed when a newer state replaces this one.
	changed chan struct{}
}

// configured reports whether the state authenticates callers.
func (st *authState) configured() bool { return st.authn != nil || st.authz != nil }

type authStateKey struct{}

// withAuthState pins st as the auth state of the request of ctx.
func withAuthState(ctx context.Context, st *authState) context.Context {
	return context.WithValue(ctx, authStateKey{}, st)
}

func authStateFrom(ctx context.Context) *authState {
	st, _ := ctx.Value(authStateKey{}).(*authState)
	return st
}

// currentAuth is the newest auth state.
func (s *Server) currentAuth() *authState { return s.auth.Load() }

// authOf is the auth state of the request of ctx: the one pinned when it
// was authenticated, else (a request not authenticated yet) the current.
func (s *Server) authOf(ctx context.Context) *authState {
	if st := authStateFrom(ctx); st != nil {
		return st
	}
	return s.currentAuth()
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
func (s *Server) SetAuth(c AuthConfig) error {
	s.authMu.Lock()
	defer s.authMu.Unlock()
	old := s.currentAuth()
	st := s.newAuthState(c, old)
	if st.configured() != old.configured() {
		return ErrAuthOnOff
	}
	if m := s.opts.Metrics; m != nil {
		m.limits.Store(st.limits) // nil: no limits any more
	}
	s.auth.Store(st)
	close(old.changed)
	return nil
}

// newAuthState builds the state after prev (nil: the first).
func (s *Server) newAuthState(c AuthConfig, prev *authState) *authState {
	st := &authState{authn: c.Authenticator, authz: c.Authorizer, audit: c.AuditLog, auditArgs: c.AuditArguments,
		changed: make(chan struct{})}
	var prevLimits *rateLimiter
	if prev != nil {
		st.gen, prevLimits = prev.gen+1, prev.limits
	}
	st.limits = newRateLimiter(c.RateLimits, s.opts.Metrics, prevLimits)
	return st
}

// reauthenticate authenticates the caller of a long-lived stream (ctx,
// authenticated before) again under the current auth state, for a stream
// that outlives a SetAuth. The returned context carries the new principal
// and state.
func (s *Server) reauthenticate(ctx context.Context) (context.Context, error) {
	old, _ := PrincipalFrom(ctx)
	nctx, p, e := s.authenticate(unpinned(ctx))
	if e != nil {
		return ctx, grpcStatus(e).Err()
	}
	if p.Name != old.Name {
		// The same credential now names another principal: the stream
		// was opened by someone else, so it ends (as the front door's
		// long-lived requests do, endWhenRevoked).
		return ctx, plainError(core.Unauthenticated, ReasonUnauthenticated,
			"the credential now names another principal; open a new watch", nil)
	}
	return nctx, nil
}

// unpinned is ctx without the principal and auth state an authentication
// put there, keeping the credentials it was made from: authenticate then
// authenticates it again, under the state current then. For contexts that
// outlive their request (a watch stream's; a legacy SSE session's, whose
// requests all run in its GET stream's context).
func unpinned(ctx context.Context) context.Context {
	ctx = context.WithValue(ctx, principalKey{}, nil)
	return withAuthState(ctx, nil) // authStateFrom: nil, so authenticate reads the current
}

// endWhenRevoked returns a context of ctx (a long-lived request of the MCP
// front door, authenticated under its pinned state) that is cancelled when
// a newer auth state no longer authenticates its credentials as the same
// principal, and stop, which must be called when the request ends (it
// cancels the context and waits for the goroutine that watches).
func (s *Server) endWhenRevoked(ctx context.Context) (context.Context, func()) {
	p, _ := PrincipalFrom(ctx)
	st := s.authOf(ctx)
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
			actx, np, err := s.authenticate(unpinned(ctx))
			if err != nil || np.Name != p.Name {
				cancel()
				return
			}
			st = s.authOf(actx)
		}
	}()
	return ctx, func() { cancel(); <-done }
}
