package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestConfigValidate(t *testing.T) {
	ok := Config{Grant: ClientCredentials, ClientID: "c", ClientSecret: "s"}
	for _, c := range []struct {
		name string
		mod  func(*Config)
		want string // "" = valid
	}{
		{"client credentials", func(*Config) {}, ""},
		{"refresh token, public client", func(c *Config) { c.Grant, c.ClientSecret, c.RefreshToken = RefreshToken, "", "r" }, ""},
		{"unknown grant", func(c *Config) { c.Grant = "password" }, "grant: "},
		{"no client id", func(c *Config) { c.ClientID = "" }, "clientId: "},
		{"client credentials without secret", func(c *Config) { c.ClientSecret = "" }, "clientSecret: "},
		{"refresh token missing", func(c *Config) { c.Grant = RefreshToken }, "refreshToken: "},
		{"refresh token with client credentials", func(c *Config) { c.RefreshToken = "r" }, "refreshToken: "},
		{"bad auth method", func(c *Config) { c.AuthMethod = "tls_client_auth" }, "authMethod: "},
		{"private_key_jwt without key", func(c *Config) { c.AuthMethod, c.ClientSecret = AuthPrivateKey, "" }, "privateKey: required"},
		{"private_key_jwt with a secret", func(c *Config) { c.AuthMethod, c.PrivateKey = AuthPrivateKey, "k" }, "clientSecret: not with"},
		{"garbage key", func(c *Config) { c.ClientSecret, c.PrivateKey = "", "not pem" }, "privateKey: not a PEM"},
		{"key without private_key_jwt", func(c *Config) { c.AuthMethod, c.PrivateKey = AuthBasic, "k" }, "privateKey: only for"},
		{"relative token URL", func(c *Config) { c.TokenURL = "/token" }, "tokenUrl: "},
		{"plain http token URL", func(c *Config) { c.TokenURL = "http://idp.example.com/token" }, "tokenUrl: want https"},
		{"loopback http token URL", func(c *Config) { c.TokenURL = "http://127.0.0.1:9/token" }, ""},
		{"bad resource", func(c *Config) { c.Resource = "mcp" }, "resource: "},
	} {
		cfg := ok
		c.mod(&cfg)
		err := cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", c.name, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error starting %q", c.name, err, c.want)
		}
	}
}

// tokenEndpoint is a token endpoint recording the requests it answers.
type tokenEndpoint struct {
	mu        sync.Mutex
	forms     []map[string]string
	basic     []string // client id from Basic auth, per request
	expiresIn int
	rotate    bool
	n         int
}

func (e *tokenEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	f := map[string]string{}
	for k := range r.PostForm {
		f[k] = r.PostForm.Get(k)
	}
	e.forms = append(e.forms, f)
	id, _, _ := r.BasicAuth()
	e.basic = append(e.basic, id)
	resp := map[string]any{"access_token": "access-" + string(rune('a'+e.n)), "token_type": "Bearer", "expires_in": e.expiresIn}
	if e.rotate {
		resp["refresh_token"] = "refresh-" + string(rune('a'+e.n))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func newTestHandler(t *testing.T, cfg Config, e *tokenEndpoint) (*Handler, *learnt) {
	t.Helper()
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	cfg.TokenURL = srv.URL + "/token"
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	secrets := &learnt{}
	return newHandler(t.Context(), cfg, "http://127.0.0.1:1/mcp", client, slog.New(slog.DiscardHandler), 5*time.Second, secrets.add), secrets
}

// TestOAuthTokenCache: a token with an hour left is reused; one that
// expires within refreshEarly is replaced before use. Client
// credentials go in a Basic header with the scopes and the RFC 8707
// resource in the form.
func TestOAuthTokenCache(t *testing.T) {
	e := &tokenEndpoint{expiresIn: 3600}
	h, secrets := newTestHandler(t, Config{Grant: ClientCredentials, ClientID: "cid", ClientSecret: "csecret",
		Scopes: []string{"tools:read", "tools:call"}, Resource: "https://mcp.example.com/mcp"}, e)
	ts, err := h.TokenSource(t.Context())
	if err != nil || ts == nil {
		t.Fatalf("TokenSource with a configured tokenUrl = %v, %v", ts, err)
	}
	for range 3 {
		tok, err := ts.Token()
		if err != nil || tok.AccessToken != "access-b" {
			t.Fatalf("Token = %v, %v", tok, err)
		}
	}
	if e.n != 1 {
		t.Fatalf("token requests for three uses of an hour-long token = %d, want 1", e.n)
	}
	f := e.forms[0]
	if f["grant_type"] != "client_credentials" || f["scope"] != "tools:read tools:call" || f["resource"] != "https://mcp.example.com/mcp" {
		t.Errorf("token request form = %v", f)
	}
	if e.basic[0] != "cid" || f["client_secret"] != "" {
		t.Errorf("client authentication: basic id %q, form secret %q; want Basic only", e.basic[0], f["client_secret"])
	}
	if got := secrets.got(); !slices.Equal(got, []string{"access-b"}) {
		t.Errorf("secrets reported %q, want the issued access token (the bridge redacts it)", got)
	}

	e.mu.Lock()
	e.expiresIn = int(refreshEarly/time.Second) - 5 // already inside the early window
	e.mu.Unlock()
	h.mu.Lock()
	h.tok = nil
	h.mu.Unlock()
	for range 2 {
		if _, err := ts.Token(); err != nil {
			t.Fatal(err)
		}
	}
	if e.n != 3 {
		t.Fatalf("token requests with tokens expiring within %s = %d, want one per use (3 in all)", refreshEarly, e.n)
	}
}

// TestOAuthRefreshRotation: the refresh_token grant uses the provisioned
// token first and the rotated one after; a public client sends its id in
// the form; Authorize (a 401 from the upstream) drops the cached token and
// gets exactly one new one.
func TestOAuthRefreshRotation(t *testing.T) {
	e := &tokenEndpoint{expiresIn: 3600, rotate: true}
	h, secrets := newTestHandler(t, Config{Grant: RefreshToken, ClientID: "public", RefreshToken: "provisioned"}, e)
	first, err := h.Token()
	if err != nil {
		t.Fatal(err)
	}
	resp := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{"Www-Authenticate": {`Bearer error="invalid_token"`}},
		Body: io.NopCloser(strings.NewReader(""))}
	if err := h.Authorize(t.Context(), &http.Request{Header: http.Header{"Authorization": {"Bearer " + first.AccessToken}}}, resp); err != nil {
		t.Fatal(err)
	}
	tok, err := h.Token()
	if err != nil {
		t.Fatal(err)
	}
	if e.n != 2 || tok.AccessToken != "access-c" {
		t.Fatalf("after a 401: %d token requests, token %q; want 2 and access-c", e.n, tok.AccessToken)
	}
	if e.forms[0]["refresh_token"] != "provisioned" || e.forms[1]["refresh_token"] != "refresh-b" {
		t.Errorf("refresh tokens sent = %q, %q; want provisioned then the rotated refresh-b", e.forms[0]["refresh_token"], e.forms[1]["refresh_token"])
	}
	if e.forms[0]["client_id"] != "public" || e.basic[0] != "" {
		t.Errorf("public client: form client_id %q, basic %q", e.forms[0]["client_id"], e.basic[0])
	}
	if got := secrets.got(); !slices.Contains(got, "refresh-b") || slices.Contains(got, "provisioned") {
		// provisioned is a configured secret: the bridge redacts it from
		// Config.Secrets, not from the handler's reports.
		t.Errorf("secrets reported %q, want the rotated refresh token", got)
	}
}

// TestOAuthTokenEndpointRefusal: a refused token request is an error that
// names the grant, the HTTP status and the RFC 6749 error code, and is
// remembered as the handler's failure until a success.
func TestOAuthTokenEndpointRefusal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error": "invalid_client", "error_description": "bad secret"}`)
	}))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	h := newHandler(context.Background(), Config{Grant: ClientCredentials, ClientID: "c", ClientSecret: "s", TokenURL: srv.URL},
		"http://127.0.0.1:1/mcp", client, slog.New(slog.DiscardHandler), 5*time.Second, nil)
	_, err := h.Token()
	if err == nil || !strings.Contains(err.Error(), "client_credentials token request") || !strings.Contains(err.Error(), "HTTP 401: invalid_client (bad secret)") {
		t.Fatalf("Token = %v", err)
	}
	if h.Failure() == "" {
		t.Error("the failure is not remembered")
	}
}

// TestOAuthPrivateKeyJWT: with a private key, each token request carries a
// fresh RFC 7523 assertion (iss = sub = client id, aud = the token endpoint
// when it was configured, a unique jti) signed with the key, and no secret.
func TestOAuthPrivateKeyJWT(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	e := &tokenEndpoint{expiresIn: 10} // inside the early window: every Token() is a request
	h, _ := newTestHandler(t, Config{Grant: ClientCredentials, ClientID: "svc", PrivateKey: pemKey}, e)
	for range 2 {
		if _, err := h.Token(); err != nil {
			t.Fatal(err)
		}
	}
	jtis := map[string]bool{}
	for i, f := range e.forms {
		if f["client_assertion_type"] != clientAssertionType || f["client_id"] != "svc" || f["client_secret"] != "" || e.basic[i] != "" {
			t.Fatalf("request %d form = %v (basic %q)", i, f, e.basic[i])
		}
		claims := &jwt.RegisteredClaims{}
		if _, err := jwt.ParseWithClaims(f["client_assertion"], claims, func(*jwt.Token) (any, error) { return &key.PublicKey, nil },
			jwt.WithValidMethods([]string{"ES256"}), jwt.WithIssuer("svc"), jwt.WithSubject("svc"), jwt.WithAudience(h.tokenURL),
			jwt.WithExpirationRequired()); err != nil {
			t.Fatalf("assertion %d: %v", i, err)
		}
		jtis[claims.ID] = true
	}
	if len(jtis) != 2 {
		t.Errorf("jti values %v: want a fresh one per request", jtis)
	}
}

// TestOAuthRefreshBeforeExpiry: an hour-long token is reused until
// refreshEarly before its expiry, then replaced before it is used.
func TestOAuthRefreshBeforeExpiry(t *testing.T) {
	e := &tokenEndpoint{expiresIn: 3600}
	h, _ := newTestHandler(t, Config{Grant: ClientCredentials, ClientID: "c", ClientSecret: "s"}, e)
	start := time.Now()
	var offset time.Duration
	h.now = func() time.Time { return start.Add(offset) }
	if _, err := h.Token(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at   time.Duration
		want int
	}{
		{time.Minute, 1},
		{time.Hour - refreshEarly - 2*time.Second, 1},
		{time.Hour - refreshEarly + 2*time.Second, 2}, // inside the early window: a new token
		{time.Hour - refreshEarly + 3*time.Second, 3}, // x/oauth2 dates it by the real clock: it too is near its end
	} {
		offset = c.at
		if _, err := h.Token(); err != nil {
			t.Fatal(err)
		}
		if e.n != c.want {
			t.Fatalf("at +%s: %d token requests, want %d", c.at, e.n, c.want)
		}
	}
}

// TestOAuthConcurrentRefusals: requests refused with the same old token
// share one refresh; the others retry with the token it brought.
func TestOAuthConcurrentRefusals(t *testing.T) {
	e := &tokenEndpoint{expiresIn: 3600}
	h, _ := newTestHandler(t, Config{Grant: ClientCredentials, ClientID: "c", ClientSecret: "s"}, e)
	old, err := h.Token()
	if err != nil {
		t.Fatal(err)
	}
	refused := func() error {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+old.AccessToken)
		return h.Authorize(t.Context(), req, &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(""))})
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := refused(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if e.n != 2 {
		t.Fatalf("token requests = %d, want 2 (the first token and one refresh for eight refusals)", e.n)
	}
}

// TestRefreshTokenFile: the refresh token comes from refreshTokenFile
// and a rotated one is written back (0600), so the next process (a
// restart) continues with it.
func TestRefreshTokenFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "refresh")
	if err := os.WriteFile(file, []byte("provisioned\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Grant: RefreshToken, ClientID: "c", RefreshTokenFile: file}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	e := &tokenEndpoint{expiresIn: 3600, rotate: true}
	h, secrets := newTestHandler(t, cfg, e)
	if _, err := h.Token(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(file)
	fi, _ := os.Stat(file)
	if string(b) != "refresh-b\n" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("refreshTokenFile after rotation = %q (mode %v), want refresh-b (0600)", b, fi.Mode().Perm())
	}
	if got := secrets.got(); !slices.Contains(got, "provisioned") || !slices.Contains(got, "refresh-b") {
		t.Errorf("secrets reported %q, want the file's token and the rotated one", got)
	}
	restarted, _ := newTestHandler(t, cfg, e)
	if _, err := restarted.Token(); err != nil {
		t.Fatal(err)
	}
	if e.forms[0]["refresh_token"] != "provisioned" || e.forms[1]["refresh_token"] != "refresh-b" {
		t.Errorf("refresh tokens sent = %q then %q, want provisioned then the rotated refresh-b", e.forms[0]["refresh_token"], e.forms[1]["refresh_token"])
	}
	if err := (&Config{Grant: RefreshToken, ClientID: "c", RefreshTokenFile: file + ".missing"}).Validate(); err == nil ||
		!strings.HasPrefix(err.Error(), "refreshTokenFile: cannot read it") {
		t.Errorf("a missing refreshTokenFile: %v", err)
	}
}

// learnt records the secrets a handler reports (the bridge redacts them:
// secretSet in mcpbridge/auth.go).
type learnt struct {
	mu   sync.Mutex
	vals []string
}

func (l *learnt) add(v string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.vals = append(l.vals, v)
}

func (l *learnt) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.vals)
}
