package service

import (
	"context"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"

	"github.com/toolsvc/toolsvc/service/core"
	"github.com/toolsvc/toolsvc/service/grpcedge"
)

// Authentication on the gRPC edge: the core authenticates (service/core
// auth.go) from the credentials the edge reads off the call.

// grpcCredentials is what a gRPC caller presented (grpcedge.Credentials).
func grpcCredentials(ctx context.Context) core.Credentials { return grpcedge.Credentials(ctx) }

// rpcContext is a handler's context made ready for the core
// (grpcedge.RPCContext): every handler hands the core this, never its bare
// context.
func rpcContext(ctx context.Context) context.Context { return grpcedge.RPCContext(ctx) }

// authFunc is a go-grpc-middleware auth.AuthFunc over a: the call's
// credentials checked, the refusal as a gRPC status.
func authFunc(a *core.Authenticator) auth.AuthFunc {
	return func(ctx context.Context) (context.Context, error) {
		p, e := a.Check(grpcCredentials(ctx))
		if e != nil {
			return nil, grpcStatus(e).Err()
		}
		if p.Method == "jwt" {
			ctx = core.WithSubjectToken(ctx, grpcCredentials(ctx).Bearer) // per-user upstreams exchange it
		}
		return core.WithPrincipal(ctx, p), nil
	}
}

// authenticateRPC is core.Authenticate for a gRPC handler: a refusal as a
// gRPC status. The returned context carries the principal and auth state.
func (s *Server) authenticateRPC(ctx context.Context) (context.Context, core.Principal, error) {
	ctx, p, e := s.core.Authenticate(rpcContext(ctx))
	if e != nil {
		return ctx, p, grpcStatus(e).Err()
	}
	return ctx, p, nil
}

// reauthenticate is core.Reauthenticate for a long-lived gRPC stream.
func (s *Server) reauthenticate(ctx context.Context) (context.Context, error) {
	// The credentials always: the stream's principal is the one to check.
	ctx, e := s.core.Reauthenticate(core.WithCredentials(ctx, grpcCredentials(ctx)))
	if e != nil {
		return ctx, grpcStatus(e).Err()
	}
	return ctx, nil
}

// authOf is the auth state of the request of ctx (core.AuthOf).
func (s *Server) authOf(ctx context.Context) *core.AuthState { return s.core.AuthOf(ctx) }
