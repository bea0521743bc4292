package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
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
	addWhoami(s)
	return auth.RequireBearerToken(verify, nil)(h), nil
}

// addWhoami adds the tool whoami: who the verified bearer token says the
// caller is.
func addWhoami(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "Who the bearer token says the caller is: {sub, aud, act, client_id, refused}."},
		func(_ context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
			ti := req.Extra.TokenInfo
			out := map[string]any{"sub": ti.UserID, "aud": ti.Extra["aud"], "act": ti.Extra["act"],
				"client_id": ti.Extra["client_id"], "refused": unauthorized.Load()}
			b, _ := json.Marshal(out)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: out}, nil, nil
		})
}

// perCaller (-per-caller, with -auth-issuer) serves each verified subject
// its own server, so the tool list depends on the caller: whoami, mine_<sub>
// and grow, which adds grown_<sub>_<n> to the caller's server only (a
// tools/list_changed reaches that subject's sessions only). With
// cacheScope set, tools/list results say it ("private": the list is the
// caller's). Every server also counts its tools/list (listCalls).
type perCaller struct {
	mu         sync.Mutex
	servers    map[string]*mcp.Server
	cacheScope string
}

func (p *perCaller) server(r *http.Request) *mcp.Server {
	ti := auth.TokenInfoFromContext(r.Context())
	if ti == nil || ti.UserID == "" {
		return nil
	}
	sub := ti.UserID
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.servers[sub]; s != nil {
		return s
	}
	opts := &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}}
	if scope := p.cacheScope; scope != "" {
		opts.SetCacheable = func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
			if _, ok := req.(*mcp.ListToolsRequest); ok {
				c.CacheScope = scope
			}
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "per-caller", Version: "1.0.0"}, opts)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				listCalls.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	addWhoami(s)
	mcp.AddTool(s, &mcp.Tool{Name: "mine_" + sub, Description: "A tool only " + sub + " has."},
		func(_ context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "mine, " + req.Extra.TokenInfo.UserID}}}, nil, nil
		})
	var grown atomic.Int64
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Add a tool to the caller's own list."},
		func(_ context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
			name := fmt.Sprintf("grown_%s_%d", req.Extra.TokenInfo.UserID, grown.Add(1))
			mcp.AddTool(s, &mcp.Tool{Name: name, Description: "Grown for " + sub + "."},
				func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
				})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
		})
	if p.servers == nil {
		p.servers = map[string]*mcp.Server{}
	}
	p.servers[sub] = s
	return s
}
