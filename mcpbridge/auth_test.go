package mcpbridge

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/mcpbridge/oauth"
)

// TestAuthHold: a failure after a 401/403 from the upstream, or after a
// failed token request (a real token endpoint refusing the client), waits
// AuthRetry and says "authentication failed"; any other failure keeps the
// crash backoff and its message.
func TestAuthHold(t *testing.T) {
	t.Parallel()
	b := &Bridge{}
	u := &upstream{cfg: ServerConfig{Name: "x", AuthRetry: 5 * time.Minute}, b: b, authw: &authWatch{}}
	crash := errors.New("connect: EOF")
	if d, msg := u.authHold(crash, time.Second, "connect: EOF"); d != time.Second || msg != "connect: EOF" {
		t.Errorf("plain failure: %s %q, want the backoff and the message unchanged", d, msg)
	}
	if d, msg := u.authHold(nil, time.Second, ""); d != time.Second || msg != "" {
		t.Errorf("no failure: %s %q", d, msg)
	}
	u.authw.status.Store(http.StatusForbidden)
	d, msg := u.authHold(crash, time.Second, "connect: Forbidden")
	if d != 5*time.Minute || !strings.HasPrefix(msg, "authentication failed (the upstream answered HTTP 403 Forbidden; configure headers or oauth") {
		t.Errorf("403: %s %q", d, msg)
	}
	if d, _ := u.authHold(crash, time.Hour, "x"); d != time.Hour {
		t.Errorf("a backoff longer than authRetry was shortened to %s", d)
	}
	u.authw.status.Store(0)
	idp := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error": "invalid_client"}`)
	}))
	u.oauth = oauth.NewHandler(t.Context(), OAuthConfig{Grant: OAuthClientCredentials, ClientID: "c", ClientSecret: "s", TokenURL: idp + "/token"},
		"http://127.0.0.1:1/mcp", slog.New(slog.DiscardHandler), 5*time.Second, nil)
	if _, err := u.oauth.Token(); err == nil {
		t.Fatal("the refusing token endpoint issued a token")
	}
	d, msg = u.authHold(crash, time.Second, "connect: rejected by transport: "+u.oauth.Failure())
	if d != 5*time.Minute || !strings.HasPrefix(msg, "authentication failed (see below; check the server's oauth settings") {
		t.Errorf("token failure: %s %q", d, msg)
	}
}

// TestOAuthProblemsAreServerFields: the oauth settings' problems are fields
// "oauth.<field>" of their server, beside what concerns the server (its
// transport, an Authorization header).
func TestOAuthProblemsAreServerFields(t *testing.T) {
	t.Parallel()
	sc := ServerConfig{Name: "s", Transport: TransportStdio, Command: "x", Headers: map[string]string{"authorization": "Bearer x"},
		OAuth: &OAuthConfig{Grant: OAuthClientCredentials, ClientSecret: "s"}}
	var fields []string
	for _, p := range sc.Problems() {
		if p.Server != "s" {
			t.Errorf("problem %v names server %q", p, p.Server)
		}
		fields = append(fields, p.Field)
	}
	if got := strings.Join(fields, " "); got != "oauth oauth oauth.clientId" {
		t.Errorf("fields %q, want the transport, the header and oauth.clientId", got)
	}
}

// tokenServer is a token endpoint that issues an hour-long token to anyone.
func tokenServer(t *testing.T) string {
	return serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token": "issued-token", "token_type": "Bearer", "expires_in": 3600}`)
	}))
}
