package redisstore

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/authtest"
	"github.com/toolsvc/toolsvc/mcpbridge/oauth"
	"github.com/toolsvc/toolsvc/tokenstore"
)

// TestReplicasShareLogins: three replicas of toolsvc's userOAuth mode,
// each with its own connection to one real redis-server, against a real
// authorization server. Alice logs in through replica 0 (a scripted
// browser ending at its callback); replicas 1 and 2 serve her token. When
// it is about to expire, 60 calls spread over the replicas refresh it
// once. With redis-server killed every replica answers ErrUnavailable;
// restarted, alice is served again without logging in: nothing was lost.
func TestReplicasShareLogins(t *testing.T) {
	ctx := context.Background()
	r := startRedis(t)
	as, err := authtest.Start(authtest.Config{AccessTTL: 3 * time.Second, Clients: []authtest.ClientConfig{{ID: "toolsvc",
		Secret: "toolsvc-secret", RedirectURIs: []string{"http://127.0.0.1/oauth/callback"}, Audience: []string{"https://up.example/mcp"}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer as.Close()
	defer http.DefaultClient.CloseIdleConnections()
	key := newKey()
	var replicas []*oauth.UserTokens
	var cb *httptest.Server
	for i := range 3 {
		s := open(t, r, key, &Options{Timeout: 500 * time.Millisecond})
		var u *oauth.UserTokens
		redirect := "http://127.0.0.1:1/oauth/callback"
		if i == 0 {
			cb = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if _, err := u.Complete(req.Context(), req.URL.Query()); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
				}
			}))
			defer cb.Close()
			redirect = cb.URL + "/oauth/callback"
		}
		u, err = oauth.NewUserTokens(oauth.UserOAuthConfig{Server: "up", Issuer: as.URL(), ClientID: "toolsvc", ClientSecret: "toolsvc-secret",
			Scopes: []string{"openid", "offline_access"}, RedirectURL: redirect, ExpiryGuard: time.Second}, s, key)
		if err != nil {
			t.Fatal(err)
		}
		defer u.Close()
		replicas = append(replicas, u)
	}

	link, err := replicas[0].LoginURL(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	back, err := authtest.Authorize(ctx, nil, link, "alice")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(back.String())
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("callback: %v %v", resp, err)
	}
	resp.Body.Close()
	for i, u := range replicas[1:] {
		if _, err := u.Token(ctx, "alice"); err != nil {
			t.Fatalf("replica %d: %v", i+1, err)
		}
	}

	time.Sleep(2100 * time.Millisecond)
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Go(func() {
			if _, err := replicas[i%3].Token(ctx, "alice"); err != nil {
				t.Errorf("Token: %v", err)
			}
		})
	}
	wg.Wait()
	if n := as.Stats().Refreshes["alice"]; n != 1 {
		t.Errorf("alice refreshed %d times by 3 replicas, want 1", n)
	}

	r.signal(syscall.SIGKILL)
	for i, u := range replicas {
		if _, err := u.Token(ctx, "alice"); !errors.Is(err, tokenstore.ErrUnavailable) {
			t.Errorf("replica %d with redis dead: %v, want ErrUnavailable", i, err)
		}
	}
	r.start()
	for i, u := range replicas {
		if _, err := u.Token(ctx, "alice"); err != nil {
			t.Errorf("replica %d after the restart: %v (a token lost?)", i, err)
		}
	}
}
