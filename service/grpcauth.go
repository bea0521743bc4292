package service

import (
	"context"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/metadata"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// grpcCredentials is what a gRPC caller presented: the bearer credential
// of its "authorization" metadata and the client certificate chains of its
// TLS connection.
func grpcCredentials(ctx context.Context) Credentials {
	var c Credentials
	c.Bearer = BearerOf(metadata.ExtractIncoming(ctx).Get("authorization"))
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			c.VerifiedChains = ti.State.VerifiedChains
		}
	}
	return c
}

// authenticateRPC is Server.authenticate for a gRPC handler: a refusal as
// a gRPC status.
func (s *Server) authenticateRPC(ctx context.Context) (context.Context, Principal, error) {
	ctx, p, e := s.authenticate(ctx)
	if e != nil {
		return ctx, p, grpcStatus(e).Err()
	}
	return ctx, p, nil
}
