package mcpgrpcup

import (
	"context"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/mcpbridge/oauth"
)

// oauthCreds is a server's oauth object as grpc-go per-RPC credentials:
// each RPC carries "authorization: Bearer <token>" from the bridge's OAuth
// handler (mcpbridge/oauth), which caches the token and fetches a new one
// before it expires. Transport security is required unless the target is
// loopback (config refuses oauth on a plaintext non-loopback target
// already; grpc-go enforces it again at each RPC).
type oauthCreds struct {
	h          *oauth.Handler
	loopbackOK bool
}

var _ credentials.PerRPCCredentials = oauthCreds{}

// newOAuthCreds builds the handler of sc's oauth object: its token
// endpoint is the configured one (the binding has no challenge to discover
// one from), each token request bounded by the connect timeout.
func newOAuthCreds(sc mcpbridge.ServerConfig, loopback bool) oauthCreds {
	log := slog.Default().With("server", sc.Name)
	h := oauth.NewHandler(context.Background(), *sc.OAuth, sc.URL, log, sc.ConnectTimeout, nil)
	return oauthCreds{h: h, loopbackOK: loopback}
}

// GetRequestMetadata fetches (or reuses) the token. A failed token request
// fails the RPC UNAUTHENTICATED with the handler's reason (which names the
// token endpoint's answer, never the client secret).
func (c oauthCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	tok, err := c.h.Token()
	if err != nil {
		return nil, status.Errorf(codes.Unauthenticated, "oauth token request failed: %v", err)
	}
	return map[string]string{"authorization": "Bearer " + tok.AccessToken}, nil
}

func (c oauthCreds) RequireTransportSecurity() bool { return !c.loopbackOK }
