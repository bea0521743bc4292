package authtest

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	oidcclient "github.com/zitadel/oidc/v3/pkg/client"
	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/client/tokenexchange"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"go.uber.org/goleak"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	agent   = ClientConfig{ID: "agent", RedirectURIs: []string{"http://127.0.0.1/callback"}, Audience: []string{"toolsvc"}}
	toolsvc = ClientConfig{ID: "toolsvc", Secret: "toolsvc-secret", RedirectURIs: []string{"http://127.0.0.1/oauth/callback"}}
)

func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.Clients == nil {
		cfg.Clients = []ClientConfig{agent, toolsvc}
	}
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		http.DefaultClient.CloseIdleConnections()
	})
	return s
}

// verify checks tok against the server's JWKS, as a resource server would.
func verify(t *testing.T, s *Server, tok string) (*oidc.AccessTokenClaims, error) {
	t.Helper()
	ctx := context.Background()
	disc, err := oidcclient.Discover(ctx, s.URL(), http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	v := op.NewAccessTokenVerifier(s.URL(), rp.NewRemoteKeySet(http.DefaultClient, disc.JwksURI))
	return op.VerifyAccessToken[*oidc.AccessTokenClaims](ctx, tok, v)
}

func exchange(t *testing.T, s *Server, subjectToken string, audience ...string) (*oidc.TokenExchangeResponse, error) {
	t.Helper()
	te, err := tokenexchange.NewTokenExchangerClientCredentials(context.Background(), s.URL(), toolsvc.ID, toolsvc.Secret)
	if err != nil {
		t.Fatal(err)
	}
	return tokenexchange.ExchangeToken(context.Background(), te, subjectToken, oidc.AccessTokenType, "", "",
		[]string{"https://up.example/mcp"}, audience, nil, oidc.AccessTokenType)
}

// TestCodeFlowRefreshRevoke: the scripted login gives alice a JWT for
// "toolsvc"; its refresh token rotates (the old one is dead, exactly one
// refresh counted); revoking the new one kills it.
func TestCodeFlowRefreshRevoke(t *testing.T) {
	s := start(t, Config{})
	ctx := context.Background()
	tok, err := s.Login(ctx, agent, "alice", oidc.ScopeOfflineAccess)
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	claims, err := verify(t, s, tok.AccessToken)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if claims.Subject != "alice" || !slices.Equal(claims.Audience, []string{"toolsvc"}) {
		t.Errorf("claims sub %q aud %v, want alice [toolsvc]", claims.Subject, claims.Audience)
	}
	if tok.RefreshToken == "" {
		t.Fatal("no refresh token with offline_access")
	}

	cfg := &oauth2.Config{ClientID: agent.ID, Endpoint: oauth2.Endpoint{TokenURL: s.TokenURL(), AuthStyle: oauth2.AuthStyleInParams}}
	old := tok.RefreshToken
	tok.Expiry = time.Now().Add(-time.Second)
	fresh, err := cfg.TokenSource(ctx, tok).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if fresh.RefreshToken == "" || fresh.RefreshToken == old || fresh.AccessToken == tok.AccessToken {
		t.Fatalf("refresh did not rotate")
	}
	if _, err := cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: old}).Token(); err == nil {
		t.Fatal("the rotated-out refresh token still works")
	}
	if got := s.Stats().Refreshes["alice"]; got != 1 {
		t.Errorf("refreshes for alice = %d, want 1", got)
	}

	party, err := rp.NewRelyingPartyOIDC(ctx, s.URL(), agent.ID, "", agent.RedirectURIs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rp.RevokeToken(ctx, party, fresh.RefreshToken, "refresh_token"); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	if _, err := cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: fresh.RefreshToken}).Token(); err == nil {
		t.Fatal("a revoked refresh token still works")
	}
	if st := s.Stats(); st.Revocations != 1 || st.LiveRefreshTokens != 0 {
		t.Errorf("stats after revoke: %+v", st)
	}
}

// TestLoginForm: the login step is an HTML form an HTTP client can fill;
// a bad username is refused on the form, and an authorization request
// without PKCE for a public client is refused by the library.
func TestLoginForm(t *testing.T) {
	s := start(t, Config{})
	resp, err := http.PostForm(s.URL()+loginPath, url.Values{"id": {"x"}, "username": {"bad name"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bad username: %s, want 400", resp.Status)
	}
	authURL := s.URL() + "/authorize?" + url.Values{"client_id": {agent.ID}, "response_type": {"code"},
		"scope": {"openid"}, "redirect_uri": {"http://127.0.0.1:9/callback"}, "state": {"s"}}.Encode()
	loc, err := Authorize(context.Background(), nil, authURL, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if loc.Query().Get("error") == "" || loc.Query().Get("code") != "" {
		t.Errorf("a public client without PKCE got %s, want an error redirect", loc)
	}
}

// TestTokenExchange: two principals' tokens exchange to tokens for the
// requested audience with their own subjects and toolsvc as the actor; a
// refused subject gets access_denied; no audience, or one not allowed, is
// invalid_target; an expired subject token is refused.
func TestTokenExchange(t *testing.T) {
	s := start(t, Config{AccessTTL: 2 * time.Second, RefuseExchange: []string{"mallory"},
		ExchangeAudiences: []string{"https://up.example/mcp"}})
	ctx := context.Background()
	for _, user := range []string{"alice", "bob"} {
		tok, err := s.Login(ctx, agent, user)
		if err != nil {
			t.Fatal(err)
		}
		res, err := exchange(t, s, tok.AccessToken, "https://up.example/mcp")
		if err != nil {
			t.Fatalf("exchange for %s: %v", user, err)
		}
		if res.IssuedTokenType != oidc.AccessTokenType || res.TokenType != oidc.BearerToken || res.ExpiresIn == 0 || res.ExpiresIn > 2 {
			t.Errorf("exchange response %+v", res)
		}
		claims, err := verify(t, s, res.AccessToken)
		if err != nil {
			t.Fatal(err)
		}
		act, _ := claims.Claims["act"].(map[string]any)
		if claims.Subject != user || !slices.Equal(claims.Audience, []string{"https://up.example/mcp"}) || act["sub"] != "toolsvc" {
			t.Errorf("exchanged token for %s: sub %q aud %v act %v", user, claims.Subject, claims.Audience, claims.Claims["act"])
		}
	}

	mallory, err := s.Login(ctx, agent, "mallory")
	if err != nil {
		t.Fatal(err)
	}
	alice, err := s.Login(ctx, agent, "alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, token, aud, want string
	}{
		{"refused subject", mallory.AccessToken, "https://up.example/mcp", "access_denied"},
		{"no audience", alice.AccessToken, "", "invalid_target"},
		{"audience not allowed", alice.AccessToken, "https://elsewhere.example/mcp", "invalid_target"},
		{"not a token", "garbage", "https://up.example/mcp", "invalid_request"},
	} {
		var aud []string
		if tc.aud != "" {
			aud = []string{tc.aud}
		}
		_, err := exchange(t, s, tc.token, aud...)
		var oe *oidc.Error
		if !errors.As(err, &oe) || string(oe.ErrorType) != tc.want {
			t.Errorf("%s: err %v, want %s", tc.name, err, tc.want)
		}
	}
	if got := s.Stats().ExchangesRefused["mallory"]; got != 1 {
		t.Errorf("refused exchanges for mallory = %d, want 1", got)
	}

	time.Sleep(3 * time.Second) // alice's access token (2 s) expires
	if _, err := exchange(t, s, alice.AccessToken, "https://up.example/mcp"); err == nil || !strings.Contains(err.Error(), "invalid") {
		t.Errorf("an expired subject token: err %v, want invalid_request", err)
	}
}

// TestClientCredentials: a client with a secret gets a JWT for itself (the
// subject and audience are the client); a
// wrong secret gets no token.
func TestClientCredentials(t *testing.T) {
	t.Parallel()
	s := start(t, Config{})
	ctx := context.Background()
	cc := clientcredentials.Config{ClientID: toolsvc.ID, ClientSecret: toolsvc.Secret, TokenURL: s.TokenURL()}
	tok, err := cc.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := verify(t, s, tok.AccessToken)
	if err != nil || claims.Subject != toolsvc.ID || !slices.Contains(claims.Audience, toolsvc.ID) {
		t.Fatalf("claims = %+v, %v", claims, err)
	}
	cc.ClientSecret = "wrong"
	if tok, err := cc.Token(ctx); err == nil {
		t.Fatalf("a wrong secret got a token: %v", tok)
	}
	http.DefaultClient.CloseIdleConnections()
}
