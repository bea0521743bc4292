package oauth

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/authtest"
	"github.com/toolsvc/toolsvc/tokenstore"
)

const upstreamURL = "https://up.example/mcp"

// userFixture is an authorization server, a shared token store and
// replicas of toolsvc's userOAuth mode, each with its login callback
// served over loopback HTTP.
type userFixture struct {
	as       *authtest.Server
	store    *tokenstore.File
	use      tokenstore.Store // the replicas' store, if not store itself
	key      []byte
	replicas []*UserTokens
	events   eventLog // what every replica's Observe heard
}

func newUserFixture(t *testing.T, accessTTL time.Duration, replicas int) *userFixture {
	t.Helper()
	as, err := authtest.Start(authtest.Config{AccessTTL: accessTTL, Clients: []authtest.ClientConfig{{ID: "toolsvc", Secret: "toolsvc-secret",
		RedirectURIs: []string{"http://127.0.0.1/oauth/callback"}, Audience: []string{upstreamURL}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { as.Close(); http.DefaultClient.CloseIdleConnections() })
	key := make([]byte, tokenstore.KeySize)
	_, _ = rand.Read(key)
	store, err := tokenstore.OpenFile(filepath.Join(t.TempDir(), "tokens"), key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	f := &userFixture{as: as, store: store, key: key}
	for range replicas {
		f.replicas = append(f.replicas, f.replica(t, "up", 0))
	}
	return f
}

// replica is one toolsvc's UserTokens for server, its callback served.
func (f *userFixture) replica(t *testing.T, server string, loginTTL time.Duration, opts ...func(*UserOAuthConfig)) *UserTokens {
	t.Helper()
	var u *UserTokens
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := u.Complete(r.Context(), r.URL.Query())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		io.WriteString(w, "logged in as "+p)
	}))
	t.Cleanup(cb.Close)
	cfg := UserOAuthConfig{Server: server, Issuer: f.as.URL(), ClientID: "toolsvc", ClientSecret: "toolsvc-secret",
		Scopes: []string{"openid", "offline_access"}, Resource: upstreamURL, RedirectURL: cb.URL + "/oauth/callback",
		ExpiryGuard: time.Second, LoginTTL: loginTTL, Observe: f.events.observe}
	for _, o := range opts {
		o(&cfg)
	}
	var st tokenstore.Store = f.store
	if f.use != nil {
		st = f.use
	}
	u, err := NewUserTokens(cfg, st, f.key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(u.Close)
	return u
}

// login plays principal's browser: the link from replica, the login form,
// the redirects, and the callback on the replica the redirect names.
func (f *userFixture) login(t *testing.T, u *UserTokens, principal string) (status int, body string) {
	t.Helper()
	return f.loginAs(t, u, principal, principal)
}

// loginAs is login with the link made for principal and the form filled
// in by browserUser (the same person, or someone the link was sent to).
func (f *userFixture) loginAs(t *testing.T, u *UserTokens, principal, browserUser string) (status int, body string) {
	t.Helper()
	ctx := context.Background()
	link, err := u.LoginURL(ctx, principal)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := authtest.Authorize(ctx, nil, link, browserUser)
	if err != nil {
		t.Fatalf("authorize: %v", err)
	}
	resp, err := http.Get(cb.String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestUserLoginEndToEnd: before logging in a principal gets
// ErrLoginRequired; the login link, followed by a scripted browser, ends
// at toolsvc's callback, which stores the principal's own token; alice and
// bob get tokens with their own subjects for the upstream, on every
// replica; the store holds them sealed.
func TestUserLoginEndToEnd(t *testing.T) {
	f := newUserFixture(t, 5*time.Minute, 3)
	ctx := context.Background()
	if _, err := f.replicas[0].Token(ctx, "alice"); !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("before login: %v, want ErrLoginRequired", err)
	}
	for i, p := range []string{"alice", "bob"} {
		if code, body := f.login(t, f.replicas[i], p); code != 200 || body != "logged in as "+p {
			t.Fatalf("callback for %s: %d %s", p, code, body)
		}
	}
	for _, u := range f.replicas {
		for _, p := range []string{"alice", "bob"} {
			tok, err := u.Token(ctx, p)
			if err != nil {
				t.Fatalf("Token(%s): %v", p, err)
			}
			if c := claimsOf(t, f.as, tok); c.Subject != p || !slices.Equal(c.Audience, []string{upstreamURL}) {
				t.Errorf("%s's token: sub %q aud %v", p, c.Subject, c.Audience)
			}
		}
	}
	if n := f.as.Stats().Refreshes; len(n) != 0 {
		t.Errorf("refreshes %v before any token expired", n)
	}
}

// TestUserTokenRefreshOnce: alice's 3-second token is about to expire; 3
// replicas × 20 concurrent calls refresh it exactly once and all get the
// refreshed token.
func TestUserTokenRefreshOnce(t *testing.T) {
	f := newUserFixture(t, 3*time.Second, 3)
	ctx := context.Background()
	f.login(t, f.replicas[0], "alice")
	first, err := f.replicas[1].Token(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond) // within the 1 s guard of expiry
	var wg sync.WaitGroup
	toks := make([]string, 60)
	start := time.Now()
	for i := range toks {
		wg.Go(func() {
			tok, err := f.replicas[i%3].Token(ctx, "alice")
			if err != nil {
				t.Errorf("Token: %v", err)
			}
			toks[i] = tok
		})
	}
	wg.Wait()
	t.Logf("60 calls on 3 replicas, one refresh: %v", time.Since(start))
	if n := f.as.Stats().Refreshes["alice"]; n != 1 {
		t.Errorf("alice refreshed %d times, want 1", n)
	}
	f.events.want(t, map[string]int{"login/ok": 1, "refresh/ok": 1})
	for _, tok := range toks {
		if tok != toks[0] || tok == first {
			t.Fatal("callers got different or unrefreshed tokens")
		}
	}
}

// TestUserLogoutAndRevokedRefresh: logout revokes at the authorization
// server and deletes, so the next call needs a login; a refresh token
// revoked behind toolsvc's back makes the next refresh invalid_grant: the
// token is deleted and the principal must log in; other principals are
// untouched.
func TestUserLogoutAndRevokedRefresh(t *testing.T) {
	f := newUserFixture(t, 2*time.Second, 1)
	u := f.replicas[0]
	ctx := context.Background()
	for _, p := range []string{"alice", "bob", "carol"} {
		f.login(t, u, p)
	}
	if err := u.Logout(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if n := f.as.Stats().Revocations; n != 1 {
		t.Errorf("%d revocations at the authorization server, want 1", n)
	}
	if _, err := u.Token(ctx, "alice"); !errors.Is(err, ErrLoginRequired) {
		t.Errorf("after logout: %v, want ErrLoginRequired", err)
	}
	if err := u.Logout(ctx, "alice"); err != nil {
		t.Errorf("a second logout: %v", err)
	}

	// Revoke bob's refresh token at the server directly.
	e, err := f.store.Get(ctx, tokenstore.Key{Principal: "bob", Server: "up"})
	if err != nil {
		t.Fatal(err)
	}
	form := url.Values{"token": {e.Token.RefreshToken}, "token_type_hint": {"refresh_token"}}
	req, _ := http.NewRequest(http.MethodPost, f.as.URL()+"/revoke", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("toolsvc", "toolsvc-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	time.Sleep(1100 * time.Millisecond) // within the guard: the next call refreshes
	_, err = u.Token(ctx, "bob")
	if !errors.Is(err, ErrLoginRequired) || !strings.Contains(err.Error(), "invalid_grant") {
		t.Errorf("revoked refresh token: %v, want ErrLoginRequired (invalid_grant)", err)
	}
	if err != nil && (strings.Contains(err.Error(), e.Token.RefreshToken) || strings.Contains(err.Error(), e.Token.AccessToken)) {
		t.Error("an error shows a token")
	}
	if _, err := f.store.Get(ctx, tokenstore.Key{Principal: "bob", Server: "up"}); !errors.Is(err, tokenstore.ErrNotFound) {
		t.Errorf("bob's dead token is still stored: %v", err)
	}
	if _, err := u.Token(ctx, "carol"); err != nil {
		t.Errorf("carol after the others' trouble: %v", err)
	}
	f.events.want(t, map[string]int{"login/ok": 3, "logout/ok": 2, "refresh/refused": 1, "refresh/ok": 1})
}

// TestUserLoginStateRefused: a login state that is tampered with, made for
// another server, expired, or answered with an error never stores a token.
func TestUserLoginStateRefused(t *testing.T) {
	f := newUserFixture(t, 5*time.Minute, 1)
	ctx := context.Background()
	u := f.replicas[0]
	other := f.replica(t, "other", 0)
	expiring := f.replica(t, "up", time.Millisecond)

	link, _ := other.LoginURL(ctx, "mallory")
	cb, err := authtest.Authorize(ctx, nil, link, "mallory")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Complete(ctx, cb.Query()); err == nil {
		t.Error("a state made for another server was accepted")
	}
	q := cb.Query()
	st := []byte(q.Get("state"))
	st[len(st)/2] ^= 1
	q.Set("state", string(st))
	if _, err := other.Complete(ctx, q); err == nil {
		t.Error("a tampered state was accepted")
	}
	link, _ = expiring.LoginURL(ctx, "alice")
	time.Sleep(10 * time.Millisecond)
	cb, err = authtest.Authorize(ctx, nil, link, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := expiring.Complete(ctx, cb.Query()); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an expired link: %v", err)
	}
	link, _ = u.LoginURL(ctx, "alice")
	lu, _ := url.Parse(link)
	if _, err := u.Complete(ctx, url.Values{"state": {lu.Query().Get("state")}, "error": {"access_denied"}}); err == nil ||
		!strings.Contains(err.Error(), "access_denied") {
		t.Errorf("an error redirect: %v", err)
	}
	for _, p := range []string{"alice", "mallory"} {
		if _, err := f.store.Get(ctx, tokenstore.Key{Principal: p, Server: "up"}); !errors.Is(err, tokenstore.ErrNotFound) {
			t.Errorf("%s has a token after refused logins: %v", p, err)
		}
	}

	f.store.Close()
	if _, err := u.Token(ctx, "alice"); !errors.Is(err, tokenstore.ErrUnavailable) {
		t.Errorf("the store closed: %v, want ErrUnavailable", err)
	}
	f.events.want(t, map[string]int{"login/invalid": 3, "login/refused": 1, "store/error": 1})
}

// TestUserLoginConfusion: alice's login link, completed by bob's browser,
// stores bob's upstream account under alice (the risk docs/credentials.md
// names) unless RequireSameSubject is set: then the callback refuses it,
// stores nothing, and alice's own login still works.
func TestUserLoginConfusion(t *testing.T) {
	f := newUserFixture(t, 5*time.Minute, 1)
	ctx := context.Background()
	loose := f.replicas[0]
	if code, _ := f.loginAs(t, loose, "alice", "bob"); code != http.StatusOK {
		t.Fatalf("the loose callback: %d", code)
	}
	tok, err := loose.Token(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if c := claimsOf(t, f.as, tok); c.Subject != "bob" {
		t.Fatalf("without the check alice's slot holds %q's token; this test documents that it is bob's", c.Subject)
	}
	if err := loose.Logout(ctx, "alice"); err != nil {
		t.Fatal(err)
	}

	strict := f.replica(t, "up", 0, func(c *UserOAuthConfig) { c.RequireSameSubject = true })
	code, body := f.loginAs(t, strict, "alice", "bob")
	if code != http.StatusBadRequest || !strings.Contains(body, ErrOtherSubject.Error()) {
		t.Errorf("bob completing alice's link: %d %q, want refused", code, body)
	}
	if _, err := strict.Token(ctx, "alice"); !errors.Is(err, ErrLoginRequired) {
		t.Errorf("after the refused login alice has a token: %v", err)
	}
	if code, body := f.login(t, strict, "alice"); code != http.StatusOK {
		t.Fatalf("alice's own login: %d %s", code, body)
	}
	tok, err = strict.Token(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if c := claimsOf(t, f.as, tok); c.Subject != "alice" {
		t.Errorf("alice's token names %q", c.Subject)
	}
}

// corruptEntry is a store whose entry for key does not open (as a Redis
// value sealed under an older key file reads: tokenstore.ErrCorrupt) until
// it is deleted or replaced.
type corruptEntry struct {
	tokenstore.Store
	key     tokenstore.Key
	corrupt atomic.Bool
}

func (c *corruptEntry) Get(ctx context.Context, k tokenstore.Key) (tokenstore.Entry, error) {
	if k == c.key && c.corrupt.Load() {
		return tokenstore.Entry{}, tokenstore.ErrCorrupt
	}
	return c.Store.Get(ctx, k)
}

func (c *corruptEntry) Delete(ctx context.Context, k tokenstore.Key) error {
	if k == c.key {
		c.corrupt.Store(false)
	}
	return c.Store.Delete(ctx, k)
}

// TestUserCorruptEntry: an entry that no longer opens neither blocks a
// new login (it is replaced) nor a logout (it is deleted).
func TestUserCorruptEntry(t *testing.T) {
	f := newUserFixture(t, time.Minute, 0)
	ce := &corruptEntry{Store: f.store, key: tokenstore.Key{Principal: "alice", Server: "up"}}
	f.use = ce
	u := f.replica(t, "up", 0)
	ctx := context.Background()
	if code, body := f.login(t, u, "alice"); code != http.StatusOK {
		t.Fatalf("first login: %d %s", code, body)
	}
	ce.corrupt.Store(true)
	if code, body := f.login(t, u, "alice"); code != http.StatusOK {
		t.Fatalf("login over an entry that does not open: %d %s", code, body)
	}
	if _, err := u.Token(ctx, "alice"); err != nil {
		t.Fatalf("after the new login: %v", err)
	}
	ce.corrupt.Store(true)
	if err := u.Logout(ctx, "alice"); err != nil {
		t.Fatalf("logout of an entry that does not open: %v", err)
	}
	if _, err := f.store.Get(ctx, ce.key); !errors.Is(err, tokenstore.ErrNotFound) {
		t.Errorf("after the logout the entry is still stored: %v", err)
	}
	f.events.want(t, map[string]int{"login/ok": 2, "logout/ok": 1, "store/corrupt": 2})
}
