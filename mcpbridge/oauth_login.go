package mcpbridge

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
}

// LoginResult is what an operator provisions for a server's "oauth".
type LoginResult struct {
	// OAuth has grant refresh_token, the client (as registered), and the
	// refresh token; RefreshToken is empty if the server issued none.
	OAuth OAuthConfig
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
	lis, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", o.RedirectPort))
	if err != nil {
		return nil, fmt.Errorf("login: redirect listener: %w", err)
	}
	redirect := fmt.Sprintf("http://%s/callback", lis.Addr())
	results := make(chan *auth.AuthorizationResult, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
		case results <- &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}:
		default:
		}
	})}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(lis)
	}()
	defer func() {
		_ = srv.Close()
		<-served
	}()

	var mu sync.Mutex
	var gotCfg *oauth2.Config
	var gotTok *oauth2.Token
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: redirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			if err := o.Open(args.URL); err != nil {
				return nil, err
			}
			select {
			case r := <-results:
				if r.Code == "" {
					return nil, errors.New("login: the redirect carried no authorization code")
				}
				return r, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		RequestRefreshToken: true,
		Client:              o.HTTPClient,
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			mu.Lock()
			gotCfg, gotTok = c, t
			mu.Unlock()
			return c.TokenSource(ctx, t), nil
		},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "toolsvc", RedirectURIs: []string{redirect},
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
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("login: %w", err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolsvc-login", Version: Version}, nil)
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
	mu.Lock()
	defer mu.Unlock()
	if gotCfg == nil || gotTok == nil {
		return nil, errors.New("login: the server let toolsvc in without authorization")
	}
	res := &LoginResult{Tools: n, OAuth: OAuthConfig{Grant: OAuthRefreshToken, ClientID: gotCfg.ClientID,
		ClientSecret: gotCfg.ClientSecret, RefreshToken: gotTok.RefreshToken, Scopes: gotCfg.Scopes}}
	switch {
	case gotCfg.ClientSecret == "":
		res.OAuth.AuthMethod = OAuthAuthNone
	case gotCfg.Endpoint.AuthStyle == oauth2.AuthStyleInParams:
		res.OAuth.AuthMethod = OAuthAuthPost
	case gotCfg.Endpoint.AuthStyle == oauth2.AuthStyleInHeader:
		res.OAuth.AuthMethod = OAuthAuthBasic
	}
	return res, nil
}
