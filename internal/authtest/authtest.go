// Package authtest is a real OAuth 2.0 authorization server (an OpenID
// Provider) for toolsvc's tests, built on github.com/zitadel/oidc/v3's
// pkg/op with an in-memory storage of its own. The library speaks the
// protocols; this package only decides (clients, users, lifetimes, which
// exchanges are refused) and counts.
//
// It supports:
//
//   - OpenID discovery, JWKS, RS256 JWT access tokens;
//   - authorization code with PKCE (S256, required of every client), with a login step a test
//     scripts over HTTP: /authorize redirects to GET /login?authRequestID=ID,
//     an HTML form; a POST /login of id=ID&username=NAME (any name, no
//     password) logs NAME in and redirects back to the library's callback,
//     which redirects to the client with the code (Authorize does it all);
//   - refresh tokens with rotation (a used refresh token is dead);
//   - RFC 8693 token exchange: the subject token is an access token this
//     server issued, the audience (required) becomes the new token's aud,
//     the client becomes its "act"; subjects in Config.RefuseExchange are
//     refused with access_denied, audiences outside Config.ExchangeAudiences
//     (when set) with invalid_target;
//   - RFC 7009 revocation and RFC 7662 introspection;
//   - lifetimes from Config (seconds are fine).
//
// GET /admin/stats answers Stats as JSON (not protected: a fixture).
// tests/authserver runs it as a process.
package authtest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/zitadel/oidc/v3/pkg/op"
)

const loginPath = "/login"

// Config configures a Server. Zero values are defaults.
type Config struct {
	// Addr is the listen address; default 127.0.0.1:0.
	Addr string
	// AccessTTL is the lifetime of access and ID tokens; default 5m.
	AccessTTL time.Duration
	// RefreshTTL is the lifetime of a refresh token (renewed on every
	// rotation); default 1h.
	RefreshTTL time.Duration
	// Clients are the registered clients; none is an error.
	Clients []ClientConfig
	// RefuseExchange lists subjects whose tokens are never exchanged
	// (access_denied).
	RefuseExchange []string
	// ExchangeAudiences, when set, are the only audiences and resources a
	// token exchange may ask for (others: invalid_target).
	ExchangeAudiences []string
}

// ClientConfig is one registered client.
type ClientConfig struct {
	ID string `json:"id"`
	// Secret authenticates the client (client_secret_basic); empty is a
	// public client (PKCE only), which cannot exchange tokens.
	Secret string `json:"secret,omitempty"`
	// RedirectURIs for the code flow; a loopback one matches any port.
	RedirectURIs []string `json:"redirectURIs,omitempty"`
	// Audience of the access tokens the code flow issues to this client;
	// default its ID.
	Audience []string `json:"audience,omitempty"`
}

// Stats counts what the server did, for tests that assert "exactly one".
type Stats struct {
	AccessTokens      int            `json:"accessTokens"`
	Refreshes         map[string]int `json:"refreshes"`        // by subject
	Exchanges         map[string]int `json:"exchanges"`        // accepted, by subject
	ExchangesRefused  map[string]int `json:"exchangesRefused"` // by subject
	Revocations       int            `json:"revocations"`
	LiveRefreshTokens int            `json:"liveRefreshTokens"`
}

// Server is a running authorization server.
type Server struct {
	store *storage
	op    *op.Provider
	hs    *http.Server
	lis   net.Listener
	url   string
	done  chan struct{}

	closeOnce sync.Once
	err       error
}

// Start listens and serves until Close.
func Start(cfg Config) (*Server, error) {
	if len(cfg.Clients) == 0 {
		return nil, errors.New("authtest: no clients")
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.AccessTTL <= 0 {
		cfg.AccessTTL = 5 * time.Minute
	}
	if cfg.RefreshTTL <= 0 {
		cfg.RefreshTTL = time.Hour
	}
	st, err := newStorage(cfg)
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	issuer := "http://" + lis.Addr().String()
	var cryptoKey [32]byte
	_, _ = rand.Read(cryptoKey[:])
	provider, err := op.NewProvider(&op.Config{
		CryptoKey: cryptoKey, CodeMethodS256: true, AuthMethodPost: true, GrantTypeRefreshToken: true,
	}, st, op.StaticIssuer(issuer), op.WithAllowInsecure())
	if err != nil {
		lis.Close()
		return nil, err
	}
	s := &Server{store: st, op: provider, lis: lis, url: issuer, done: make(chan struct{})}
	mux := http.NewServeMux()
	intercept := op.NewIssuerInterceptor(provider.IssuerFromRequest)
	mux.HandleFunc("GET "+loginPath, s.loginPage)
	mux.Handle("POST "+loginPath, intercept.HandlerFunc(s.login))
	mux.HandleFunc("GET /admin/stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st.snapshot())
	})
	mux.Handle("/", provider)
	s.hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		if err := s.hs.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.err = err
		}
	}()
	return s, nil
}

// URL is the issuer (discovery at URL/.well-known/openid-configuration).
func (s *Server) URL() string { return s.url }

// TokenURL is the token endpoint.
func (s *Server) TokenURL() string { return s.url + s.op.TokenEndpoint().Relative() }

// Stats returns a copy of the counters.
func (s *Server) Stats() Stats { return s.store.snapshot() }

// Close stops serving (in-flight requests get up to 2 s) and waits.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := s.hs.Shutdown(ctx); err != nil {
			_ = s.hs.Close()
		}
		<-s.done
	})
	return s.err
}

var loginForm = template.Must(template.New("login").Parse(`<!doctype html>
<title>Log in</title>
<form method="post" action="/login">
<input type="hidden" name="id" value="{{.ID}}">
<label>Username <input name="username" autofocus></label>
{{if .Error}}<p>{{.Error}}</p>{{end}}
<button type="submit">Log in</button>
</form>
`))

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = loginForm.Execute(w, struct{ ID, Error string }{r.URL.Query().Get("authRequestID"), ""})
}

var usernameRE = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,64}$`)

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	id, user := r.PostFormValue("id"), r.PostFormValue("username")
	if !usernameRE.MatchString(user) {
		w.WriteHeader(http.StatusBadRequest)
		_ = loginForm.Execute(w, struct{ ID, Error string }{id, "username: 1-64 of [A-Za-z0-9._@-]"})
		return
	}
	if err := s.store.completeLogin(id, user); err != nil {
		http.Error(w, fmt.Sprintf("login: %v", err), http.StatusBadRequest)
		return
	}
	http.Redirect(w, r, op.AuthCallbackURL(s.op)(r.Context(), id), http.StatusFound)
}
