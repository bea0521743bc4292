package oauth

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/tokenstore"
)

// FuzzOAuthTokenResponse: whatever a token endpoint answers (status,
// content type, body) and whatever WWW-Authenticate challenge the upstream
// sent, the handler never panics, never accepts a token without an access
// token, and its failure never carries more of the body than the RFC 6749
// error fields (an authorization server that echoes secrets must not get
// them into logs).
//
// CI runs the seed corpus (go test); a longer run:
//
//	go test -run '^$' -fuzz FuzzOAuthTokenResponse -fuzztime 5m ./mcpbridge/oauth
func FuzzOAuthTokenResponse(f *testing.F) {
	for _, s := range []struct {
		status      int
		ctype, body string
		challenge   string
	}{
		{200, "application/json", `{"access_token": "at", "token_type": "Bearer", "expires_in": 3600}`, `Bearer resource_metadata="x"`},
		{200, "application/json", `{"access_token": "", "token_type": "Bearer"}`, ``},
		{200, "application/json", `{"access_token": "at", "expires_in": "3600", "refresh_token": "rt", "scope": "a b"}`, `Bearer scope="a b", error="insufficient_scope"`},
		{200, "application/x-www-form-urlencoded", `access_token=at&token_type=bearer&expires_in=60`, `Bearer realm=x, Basic realm="y"`},
		{200, "text/plain", `access_token=`, `Bearer scope="`},
		{400, "application/json", `{"error": "invalid_grant", "error_description": "SECRET-ECHO"}`, `bearer`},
		{401, "application/json", `{"error": 5}`, `,,,`},
		{500, "text/html", `<html>SECRET-ECHO</html>`, `Bearer error="invalid_token", scope=`},
		{200, "application/json", `{"access_token": "at", "expires_in": -5}`, `Bearer scope="a\"b"`},
		{200, "application/json", `[`, ""},
	} {
		f.Add(s.status, s.ctype, s.body, s.challenge)
	}
	var mu sync.Mutex
	var cur struct {
		status      int
		ctype, body string
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		c := cur
		mu.Unlock()
		w.Header().Set("Content-Type", c.ctype)
		w.WriteHeader(c.status)
		_, _ = io.WriteString(w, c.body)
	}))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	f.Fuzz(func(t *testing.T, status int, ctype, body, challenge string) {
		if status < 200 || status > 599 || strings.ContainsAny(ctype, "\r\n\x00") {
			return
		}
		mu.Lock()
		cur.status, cur.ctype, cur.body = status, ctype, body
		mu.Unlock()
		h := newHandler(t.Context(), Config{Grant: ClientCredentials, ClientID: "c", ClientSecret: "s", TokenURL: srv.URL},
			"http://127.0.0.1:1/mcp", client, slog.New(slog.DiscardHandler), 5*time.Second, nil)
		resp := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{"Www-Authenticate": {challenge}},
			Body: io.NopCloser(strings.NewReader(""))}
		err := h.Authorize(t.Context(), &http.Request{}, resp)
		tok, terr := h.Token()
		if err == nil && (terr != nil || tok == nil || tok.AccessToken == "") {
			t.Fatalf("Authorize succeeded but Token = %v, %v", tok, terr)
		}
		if terr == nil && tok.AccessToken == "" {
			t.Fatal("accepted a token response without an access token")
		}
		if err != nil && status >= 300 && strings.Contains(body, "SECRET-ECHO") && !strings.Contains(body, `"error_description"`) &&
			strings.Contains(err.Error(), "SECRET-ECHO") {
			t.Fatalf("a non-RFC-6749 error body reached the error: %v", err)
		}
	})
}

// FuzzLoginState: whatever state and code a browser brings to the login
// callback, Complete never panics and never stores a token without a state
// that toolsvc sealed (a forged, truncated or bit-flipped one), and it
// contacts no authorization server for it (the issuer here does not
// exist).
//
//	go test -run '^$' -fuzz FuzzLoginState -fuzztime 5m ./mcpbridge/oauth
func FuzzLoginState(f *testing.F) {
	key := make([]byte, tokenstore.KeySize)
	store, err := tokenstore.OpenFile(filepath.Join(f.TempDir(), "tokens"), key)
	if err != nil {
		f.Fatal(err)
	}
	defer store.Close()
	u, err := NewUserTokens(UserOAuthConfig{Server: "up", Issuer: "http://127.0.0.1:1", AuthorizationURL: "http://127.0.0.1:1/a",
		TokenURL: "http://127.0.0.1:1/t", ClientID: "c", RedirectURL: "http://127.0.0.1:1/cb"}, store, key)
	if err != nil {
		f.Fatal(err)
	}
	defer u.Close()
	link, err := u.LoginURL(context.Background(), "alice")
	if err != nil {
		f.Fatal(err)
	}
	lu, _ := url.Parse(link)
	valid := lu.Query().Get("state")
	f.Add(valid[:len(valid)-2], "code")
	f.Add(valid+"A", "code")
	f.Add("", "")
	f.Add("not-base64!", "x")
	f.Add(strings.Repeat("A", 200), "code")
	f.Fuzz(func(t *testing.T, state, code string) {
		if state == valid {
			return // the real one would go to the (absent) token endpoint
		}
		if _, err := u.Complete(context.Background(), url.Values{"state": {state}, "code": {code}}); err == nil {
			t.Fatalf("state %q accepted", state)
		}
		if _, err := store.Get(context.Background(), tokenstore.Key{Principal: "alice", Server: "up"}); err == nil {
			t.Fatal("a token was stored")
		}
	})
}
