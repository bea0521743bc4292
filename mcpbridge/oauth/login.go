package oauth

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// LoginOptions configure Login.
type LoginOptions struct {
	// URL is the MCP server's streamable HTTP endpoint.
	URL string
	// ClientID (and ClientSecret for a confidential client) of a client
	// registered with the authorization server beforehand. Without it:
	// ClientMetadataURL (a Client ID Metadata Document) if the server
	// supports those, else dynamic client registration (RFC 7591).
	ClientID          string
	ClientSecret      string
	ClientMetadataURL string
	// RedirectPort is the loopback port of the redirect URI
	// (http://127.0.0.1:PORT/callback); 0 picks a free one (fine with
	// dynamic registration; a pre-registered client needs the port it was
	// registered with).
	RedirectPort int
	// Open shows the authorization URL to the user (prints it, starts a
	// browser). The user's browser then lands on the redirect URI.
	Open func(authURL string) error
	// HTTPClient for discovery, registration and token requests (nil:
	// http.DefaultClient).
	HTTPClient *http.Client
	// Version is reported to the server as the client's version.
	Version string
}

// LoginResult is what an operator provisions for a server's "oauth".
type LoginResult struct {
	// OAuth has grant refresh_token, the client (as registered), and the
	// refresh token; RefreshToken is empty if the server issued none.
	OAuth Config
	// Tools is how many tools the server listed with the new token.
	Tools int
}

// Login runs the interactive OAuth 2.1 authorization-code flow once, as an
// operator does to provision toolsvc with a refresh token: go-sdk's
// AuthorizationCodeHandler discovers the authorization server (RFC 9728,
// RFC 8414), registers or identifies the client, sends the user to the
// authorization URL with PKCE (S256) and the RFC 8707 resource, takes the
// code at a loopback redirect URI, exchanges it, and asks for
// offline_access where offered. Login then lists the server's tools with
// the token to prove it works.
func Login(ctx context.Context, o LoginOptions) (*LoginResult, error) {
	if o.Open == nil {
		return nil, errors.New("login: no way to show the authorization URL")
	}
	cb, err := startCallback(o.RedirectPort)
	if err != nil {
		return nil, err
	}
	defer cb.close()
	var got issued
	h, err := auth.NewAuthorizationCodeHandler(o.handlerConfig(cb, &got))
	if err != nil {
		return nil, fmt.Errorf("login: %w", err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolsvc-login", Version: o.Version}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: o.URL, HTTPClient: o.HTTPClient, OAuthHandler: h, MaxRetries: 1}, nil)
	if err != nil {
		return nil, fmt.Errorf("login: connect: %w", err)
	}
	defer cs.Close()
	n := 0
	for _, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("login: tools/list with the new token: %w", err)
		}
		n++
	}
	return got.result(n)
}

// callback is the loopback redirect URI's server: it hands the first
// authorization response it receives to results.
type callback struct {
	redirect string
	results  chan *auth.AuthorizationResult
	srv      *http.Server
	served   chan struct{}
}

func startCallback(port int) (*callback, error) {
	lis, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, fmt.Errorf("login: redirect listener: %w", err)
	}
	cb := &callback{redirect: fmt.Sprintf("http://%s/callback", lis.Addr()),
		results: make(chan *auth.AuthorizationResult, 1), served: make(chan struct{})}
	cb.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(cb.serve)}
	go func() {
		defer close(cb.served)
		_ = cb.srv.Serve(lis)
	}()
	return cb, nil
}

func (cb *callback) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/callback" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		fmt.Fprintf(w, "toolsvc: the authorization server refused: %s", html.EscapeString(e))
	} else {
		fmt.Fprint(w, "toolsvc: authorization received; you can close this window.")
	}
	select {
	case cb.results <- &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}:
	default:
	}
}

func (cb *callback) close() {
	_ = cb.srv.Close()
	<-cb.served
}

// fetchCode shows the authorization URL and waits for the redirect.
func (o *LoginOptions) fetchCode(cb *callback) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		if err := o.Open(args.URL); err != nil {
			return nil, err
		}
		select {
		case r := <-cb.results:
			if r.Code == "" {
				return nil, errors.New("login: the redirect carried no authorization code")
			}
			return r, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// handlerConfig configures go-sdk's authorization code handler: the client
// as given (or registered), refresh tokens asked for, and the tokens it
// gets recorded in got.
func (o *LoginOptions) handlerConfig(cb *callback, got *issued) *auth.AuthorizationCodeHandlerConfig {
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              cb.redirect,
		AuthorizationCodeFetcher: o.fetchCode(cb),
		RequestRefreshToken:      true,
		Client:                   o.HTTPClient,
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			got.set(c, t)
			return c.TokenSource(ctx, t), nil
		},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "toolsvc", RedirectURIs: []string{cb.redirect},
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		}},
	}
	if o.ClientID != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: o.ClientID}
		if o.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
		}
	}
	if o.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientMetadataURL}
	}
	return cfg
}

// issued is the client configuration and token the login obtained.
type issued struct {
	mu  sync.Mutex
	cfg *oauth2.Config
	tok *oauth2.Token
}

func (g *issued) set(c *oauth2.Config, t *oauth2.Token) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cfg, g.tok = c, t
}

// result is the "oauth" configuration to provision.
func (g *issued) result(tools int) (*LoginResult, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cfg == nil || g.tok == nil {
		return nil, errors.New("login: the server let toolsvc in without authorization")
	}
	res := &LoginResult{Tools: tools, OAuth: Config{Grant: RefreshToken, ClientID: g.cfg.ClientID,
		ClientSecret: g.cfg.ClientSecret, RefreshToken: g.tok.RefreshToken, Scopes: g.cfg.Scopes}}
	switch {
	case g.cfg.ClientSecret == "":
		res.OAuth.AuthMethod = AuthNone
	case g.cfg.Endpoint.AuthStyle == oauth2.AuthStyleInParams:
		res.OAuth.AuthMethod = AuthPost
	case g.cfg.Endpoint.AuthStyle == oauth2.AuthStyleInHeader:
		res.OAuth.AuthMethod = AuthBasic
	}
	return res, nil
}
