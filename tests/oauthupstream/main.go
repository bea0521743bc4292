// Binary oauthupstream is a real OAuth-protected MCP server for toolsvc's
// end-to-end tests: an authorization server (github.com/oauth2-proxy/mockoidc:
// OIDC discovery, JWKS, authorization code with PKCE, refresh_token; JWT
// access tokens) and a go-sdk MCP server behind go-sdk's
// auth.RequireBearerToken, which verifies the JWTs with the authorization
// server's key and serves RFC 9728 protected-resource metadata.
//
// At start it plays the operator's one-time interactive login itself
// (authorization code with PKCE S256 against its own authorization server)
// and prints one JSON line on stdout: the MCP URL, the issuer, the client's
// id and secret, the refresh token, and the admin URL.
//
// With -follow URL it is instead the user's browser for a login test:
// it fetches URL and follows the redirects (the authorization server
// approves at once) to the client's redirect URI.
//
// Admin endpoints (not protected): POST /admin/revoke makes the resource
// server refuse every access token issued so far (it returns once a token
// issued from now on would be accepted); GET /admin/stats returns the
// number of token requests by grant type and of 401 answers.
//
// Tools: whoami returns the request's _meta (so tests can see forwarded
// identities); echo returns its text.
package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/oauth2-proxy/mockoidc"
	"golang.org/x/oauth2"
)

type stats struct {
	mu            sync.Mutex
	TokenRequests map[string]int `json:"tokenRequests"` // by grant_type
	Unauthorized  int            `json:"unauthorized"`
}

func main() {
	accessTTL := flag.Duration("access-ttl", 10*time.Minute, "lifetime of access tokens")
	follow := flag.Bool("follow", false, "act as the user's browser instead: GET the URL argument, follow its redirects, exit")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("oauthupstream: ")
	if *follow {
		// The user who approves at once: the authorization server
		// redirects to the client's loopback redirect URI, which this GET
		// reaches like a browser would.
		resp, err := http.Get(flag.Arg(0))
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		return
	}

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		log.Fatal(err)
	}
	m, err := mockoidc.NewServer(key)
	if err != nil {
		log.Fatal(err)
	}
	m.AccessTTL = *accessTTL
	st := &stats{TokenRequests: map[string]int{}}
	_ = m.AddMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.URL.Path == mockoidc.TokenEndpoint {
				_ = r.ParseForm()
				st.mu.Lock()
				st.TokenRequests[r.PostForm.Get("grant_type")]++
				st.mu.Unlock()
			}
			next.ServeHTTP(w, r)
		})
	})
	asLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	if err := m.Start(asLis, nil); err != nil {
		log.Fatal(err)
	}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	base := "http://" + lis.Addr().String()
	mcpURL := base + "/mcp"
	prmURL := base + "/.well-known/oauth-protected-resource/mcp"

	// Tokens issued before the cutoff (iat, in whole seconds) are refused.
	var cutoff atomic.Int64
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		claims := &jwt.RegisteredClaims{}
		_, err := jwt.ParseWithClaims(tok, claims, func(*jwt.Token) (any, error) { return &key.PublicKey, nil },
			jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(m.Issuer()), jwt.WithExpirationRequired())
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		if claims.IssuedAt == nil || claims.IssuedAt.Unix() < cutoff.Load() {
			return nil, fmt.Errorf("%w: revoked", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{Expiration: claims.ExpiresAt.Time, UserID: claims.Subject}, nil
	}

	srv := mcp.NewServer(&mcp.Implementation{Name: "oauthupstream", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "returns the request's _meta"},
		func(_ context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
			meta, _ := json.Marshal(req.Params.Meta)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(meta)}}}, nil, nil
		})
	type echoArgs struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "returns text"},
		func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	protected := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prmURL})(handler)

	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		protected.ServeHTTP(rec, r)
		if rec.code == http.StatusUnauthorized {
			st.mu.Lock()
			st.Unauthorized++
			st.mu.Unlock()
		}
	}))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: mcpURL, AuthorizationServers: []string{m.Issuer()}, ScopesSupported: []string{"openid"},
		BearerMethodsSupported: []string{"header"},
	}))
	mux.HandleFunc("POST /admin/revoke", func(w http.ResponseWriter, _ *http.Request) {
		next := time.Now().Truncate(time.Second).Add(time.Second)
		cutoff.Store(next.Unix())
		time.Sleep(time.Until(next))
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /admin/stats", func(w http.ResponseWriter, _ *http.Request) {
		st.mu.Lock()
		defer st.mu.Unlock()
		_ = json.NewEncoder(w).Encode(st)
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()

	refresh, err := operatorLogin(m)
	if err != nil {
		log.Fatalf("operator login: %v", err)
	}
	out, _ := json.Marshal(map[string]string{"url": mcpURL, "issuer": m.Issuer(), "clientId": m.ClientID,
		"clientSecret": m.ClientSecret, "refreshToken": refresh, "admin": base + "/admin", "tokenUrl": m.TokenEndpoint()})
	fmt.Println(string(out))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = hs.Shutdown(ctx)
	_ = m.Shutdown()
}

// operatorLogin is the one-time interactive step an operator does to
// provision toolsvc with a refresh token: authorization code with PKCE
// (S256). The authorization server approves at once (mockoidc has no
// login page), so "following the redirect" is reading its Location.
func operatorLogin(m *mockoidc.MockOIDC) (string, error) {
	cfg := &oauth2.Config{ClientID: m.ClientID, ClientSecret: m.ClientSecret, Scopes: []string{"openid"},
		RedirectURL: "http://127.0.0.1/callback",
		Endpoint:    oauth2.Endpoint{AuthURL: m.AuthorizationEndpoint(), TokenURL: m.TokenEndpoint(), AuthStyle: oauth2.AuthStyleInParams}}
	verifier := oauth2.GenerateVerifier()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(cfg.AuthCodeURL("state-1", oauth2.S256ChallengeOption(verifier)))
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		return "", fmt.Errorf("authorize answered %s without a code (Location %q)", resp.Status, resp.Header.Get("Location"))
	}
	tok, err := cfg.Exchange(context.Background(), loc.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		return "", err
	}
	if tok.RefreshToken == "" {
		return "", errors.New("no refresh token issued")
	}
	return tok.RefreshToken, nil
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
