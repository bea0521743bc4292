package tests

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/zitadel/oidc/v3/pkg/client/tokenexchange"
	"github.com/zitadel/oidc/v3/pkg/oidc"

	"github.com/toolsvc/toolsvc/internal/authtest"
)

// The clients tests/authserver registers without -clients.
var (
	authAgent   = authtest.ClientConfig{ID: "agent", RedirectURIs: []string{"http://127.0.0.1/callback"}, Audience: []string{"toolsvc"}}
	authToolsvc = authtest.ClientConfig{ID: "toolsvc", Secret: "toolsvc-secret", RedirectURIs: []string{"http://127.0.0.1/oauth/callback"}}
)

// startAuthServer runs tests/authserver with args and returns its issuer.
func startAuthServer(t *testing.T, args ...string) string {
	t.Helper()
	p := startProcWith(t, exec.Command(helperBinary(t, "authserver"), args...), procOpts{checkExit: true})
	return p.log.waitFor(t, urlLineRE, 30*time.Second)
}

// startBearerUpstream runs the go-sdk test server behind bearer tokens
// from issuer with audience aud; its URL is also the audience.
func startBearerUpstream(t *testing.T, issuer, aud string) string {
	t.Helper()
	p := startProc(t, exec.Command(bin.testserver, "-mode", "http", "-auth-issuer", issuer, "-auth-audience", aud))
	return p.log.waitFor(t, urlLineRE, 30*time.Second)
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// whoami calls the upstream's whoami with token as the bearer token.
func whoami(ctx context.Context, url, token string) (map[string]any, error) {
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token}}}, nil)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		return nil, err
	}
	out, _ := res.StructuredContent.(map[string]any)
	if out == nil {
		return nil, errors.New("whoami: no structured content")
	}
	return out, nil
}

// TestAuthServerFixtures: the authorization server and the bearer-protected
// upstream as real processes. Two principals log in (the scripted browser
// step), exchange their toolsvc tokens (RFC 8693) for tokens with the
// upstream as audience, and the upstream sees each one's own subject with
// toolsvc as the actor. A token meant for toolsvc is refused by the
// upstream; a refused subject's exchange is access_denied.
func TestAuthServerFixtures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	issuer := startAuthServer(t, "-access-ttl", "1m", "-refuse-exchange", "mallory")
	up := startBearerUpstream(t, issuer, "urn:test:upstream")
	te, err := tokenexchange.NewTokenExchangerClientCredentials(ctx, issuer, authToolsvc.ID, authToolsvc.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer http.DefaultClient.CloseIdleConnections()
	for _, user := range []string{"alice", "bob", "mallory"} {
		tok, err := authtest.Login(ctx, issuer, authAgent, user)
		if err != nil {
			t.Fatalf("login %s: %v", user, err)
		}
		if _, err := whoami(ctx, up, tok.AccessToken); err == nil {
			t.Errorf("%s's token for toolsvc was accepted by the upstream", user)
		}
		res, err := tokenexchange.ExchangeToken(ctx, te, tok.AccessToken, oidc.AccessTokenType, "", "",
			[]string{up}, []string{"urn:test:upstream"}, nil, oidc.AccessTokenType)
		if user == "mallory" {
			var oe *oidc.Error
			if !errors.As(err, &oe) || oe.ErrorType != oidc.AccessDenied {
				t.Errorf("mallory's exchange: %v, want access_denied", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("exchange for %s: %v", user, err)
		}
		who, err := whoami(ctx, up, res.AccessToken)
		if err != nil {
			t.Fatalf("whoami as %s: %v", user, err)
		}
		act, _ := who["act"].(map[string]any)
		aud, _ := json.Marshal(who["aud"])
		if who["sub"] != user || act["sub"] != "toolsvc" || !slices.Contains([]string{`["urn:test:upstream"]`}, string(aud)) {
			t.Errorf("the upstream saw %v for %s", who, user)
		}
	}
}
