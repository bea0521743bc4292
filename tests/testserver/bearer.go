package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	oidcclient "github.com/zitadel/oidc/v3/pkg/client"
	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// unauthorized counts the requests refused for their bearer token
// (reported by whoami as "refused").
var unauthorized atomic.Int64

// requireBearer (-auth-issuer) puts h behind go-sdk's
// auth.RequireBearerToken: every request needs a JWT access token that
// issuer signed (verified with zitadel/oidc against issuer's JWKS, found by
// discovery) and, with audience set, whose aud contains it. The tool
// whoami answers who the token says the caller is.
func requireBearer(ctx context.Context, s *mcp.Server, h http.Handler, issuer, audience string) (http.Handler, error) {
	disc, err := oidcclient.Discover(ctx, issuer, http.DefaultClient)
	if err != nil {
		return nil, fmt.Errorf("discovery at %s: %w", issuer, err)
	}
	v := op.NewAccessTokenVerifier(issuer, rp.NewRemoteKeySet(http.DefaultClient, disc.JwksURI))
	verify := func(ctx context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		claims, err := op.VerifyAccessToken[*oidc.AccessTokenClaims](ctx, tok, v)
		if err == nil && audience != "" && !slices.Contains(claims.Audience, audience) {
			err = fmt.Errorf("audience %v lacks %q", claims.Audience, audience)
		}
		if err != nil {
			unauthorized.Add(1)
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		return &auth.TokenInfo{UserID: claims.Subject, Expiration: claims.Expiration.AsTime(), Scopes: claims.Scopes,
			Extra: map[string]any{"aud": []string(claims.Audience), "act": claims.Claims["act"], "client_id": claims.ClientID}}, nil
	}
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "Who the bearer token says the caller is: {sub, aud, act, client_id, refused}."},
		func(_ context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
			ti := req.Extra.TokenInfo
			out := map[string]any{"sub": ti.UserID, "aud": ti.Extra["aud"], "act": ti.Extra["act"],
				"client_id": ti.Extra["client_id"], "refused": unauthorized.Load()}
			b, _ := json.Marshal(out)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: out}, nil, nil
		})
	return auth.RequireBearerToken(verify, nil)(h), nil
}
