package oauth

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// serveHTTP serves h on a loopback port for the test's duration.
func serveHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestOAuthTokenRedirectStaysAtItsOrigin: a token endpoint answering 307
// towards another origin does not get the token request (client secret,
// resource indicator) re-sent there, with or without the extra form
// parameters that put the request through formParams.
func TestOAuthTokenRedirectStaysAtItsOrigin(t *testing.T) {
	for _, resource := range []string{"", "https://mcp.example.com/mcp"} {
		other := &tokenEndpoint{expiresIn: 3600}
		otherURL := serveHTTP(t, other)
		redirector := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, otherURL+r.URL.Path, http.StatusTemporaryRedirect)
		}))
		cfg := Config{Grant: ClientCredentials, ClientID: "cid", ClientSecret: "csecret", Resource: resource,
			TokenURL: redirector + "/token"}
		h := newHandler(t.Context(), cfg, "http://127.0.0.1:1/mcp", newClient(), slog.New(slog.DiscardHandler), 5*time.Second, nil)
		if _, err := h.Token(); err == nil || !strings.Contains(err.Error(), "another origin") {
			t.Errorf("resource %q: Token() through a cross-origin 307 = %v, want the redirect refused", resource, err)
		}
		other.mu.Lock()
		if other.n > 0 {
			t.Errorf("resource %q: the other origin received %d token requests (%v)", resource, other.n, other.forms)
		}
		other.mu.Unlock()
	}
}

// TestOAuthDiscoveryKeepsGoSDKRedirectPolicy: discovery requests go
// through go-sdk's own redirect checks (here: no redirect into a loopback
// address), which a client with its own CheckRedirect would switch off.
func TestOAuthDiscoveryKeepsGoSDKRedirectPolicy(t *testing.T) {
	var hit atomic.Bool
	target := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hit.Store(true)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"resource":"http://x/mcp","authorization_servers":["https://as.example.com"]}`))
	}))
	redirector := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+"/prm", http.StatusFound)
	}))
	_, err := oauthex.GetProtectedResourceMetadata(t.Context(), redirector+"/.well-known/oauth-protected-resource", "http://x/mcp", newClient())
	if err == nil || hit.Load() {
		t.Fatalf("discovery through a redirect into loopback: err %v, target reached %v; want go-sdk's refusal", err, hit.Load())
	}
}
