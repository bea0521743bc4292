package oauth

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	oidcclient "github.com/zitadel/oidc/v3/pkg/client"
	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/toolsvc/toolsvc/internal/authtest"
)

var (
	teAgent   = authtest.ClientConfig{ID: "agent", RedirectURIs: []string{"http://127.0.0.1/callback"}, Audience: []string{"toolsvc"}}
	teToolsvc = authtest.ClientConfig{ID: "toolsvc", Secret: "toolsvc-secret"}
)

const teAudience = "https://up.example/mcp"

func startAuthServer(t *testing.T, cfg authtest.Config) *authtest.Server {
	t.Helper()
	cfg.Clients = []authtest.ClientConfig{teAgent, teToolsvc}
	s, err := authtest.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		http.DefaultClient.CloseIdleConnections()
	})
	return s
}

func login(t *testing.T, s *authtest.Server, user string) string {
	t.Helper()
	tok, err := s.Login(context.Background(), teAgent, user)
	if err != nil {
		t.Fatalf("login %s: %v", user, err)
	}
	return tok.AccessToken
}

func claimsOf(t *testing.T, s *authtest.Server, tok string) *oidc.AccessTokenClaims {
	t.Helper()
	ctx := context.Background()
	disc, err := oidcclient.Discover(ctx, s.URL(), http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	c, err := op.VerifyAccessToken[*oidc.AccessTokenClaims](ctx, tok, op.NewAccessTokenVerifier(s.URL(), rp.NewRemoteKeySet(http.DefaultClient, disc.JwksURI)))
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return c
}

// eventLog records what an Observe hook heard, as "op/outcome" counts.
type eventLog struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *eventLog) observe(op, outcome string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == nil {
		l.n = map[string]int{}
	}
	l.n[op+"/"+outcome]++
}

// want checks the counts heard so far are exactly want.
func (l *eventLog) want(t *testing.T, want map[string]int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !maps.Equal(l.n, want) && !(len(l.n) == 0 && len(want) == 0) {
		t.Errorf("observed %v, want %v", l.n, want)
	}
}

func newTestExchanger(t *testing.T, cfg ExchangeConfig) *Exchanger {
	t.Helper()
	x := NewExchanger(cfg)
	t.Cleanup(x.Close)
	return x
}

// TestExchangerAgainstAuthServer: against a real authorization server,
// alice and bob get tokens with their own subject and the upstream as
// audience; 32 concurrent calls of alice make one exchange, and later
// calls use the cache; a refused subject, an invalid subject token and a
// missing one are refusals; toolsvc's own wrong secret and a dead server
// are not. No error shows a token.
func TestExchangerAgainstAuthServer(t *testing.T) {
	s := startAuthServer(t, authtest.Config{AccessTTL: 5 * time.Minute, RefuseExchange: []string{"mallory"}})
	ctx := context.Background()
	var events eventLog
	x := newTestExchanger(t, ExchangeConfig{Issuer: s.URL(), ClientID: teToolsvc.ID, ClientSecret: teToolsvc.Secret,
		Audience: teAudience, Resource: teAudience, Observe: events.observe})
	subjects := map[string]string{}
	for _, u := range []string{"alice", "bob", "mallory"} {
		subjects[u] = login(t, s, u)
	}

	var wg sync.WaitGroup
	tokens := make([]string, 32)
	for i := range tokens {
		wg.Go(func() {
			tok, err := x.Token(ctx, "alice", subjects["alice"])
			if err != nil {
				t.Errorf("Token(alice): %v", err)
			}
			tokens[i] = tok
		})
	}
	wg.Wait()
	if n := s.Stats().Exchanges["alice"]; n != 1 {
		t.Errorf("32 concurrent calls made %d exchanges for alice, want 1", n)
	}
	for _, tok := range tokens[1:] {
		if tok != tokens[0] {
			t.Fatal("concurrent callers got different tokens")
		}
	}
	if c := claimsOf(t, s, tokens[0]); c.Subject != "alice" || !slices.Equal(c.Audience, []string{teAudience}) {
		t.Errorf("alice's token: sub %q aud %v", c.Subject, c.Audience)
	}
	bobTok, err := x.Token(ctx, "bob", subjects["bob"])
	if err != nil {
		t.Fatal(err)
	}
	if c := claimsOf(t, s, bobTok); c.Subject != "bob" {
		t.Errorf("bob's token has sub %q", c.Subject)
	}
	again, err := x.Token(ctx, "alice", "") // cached: no subject token needed
	if err != nil || again != tokens[0] || s.Stats().Exchanges["alice"] != 1 {
		t.Errorf("cached call: %v, same token %v, exchanges %d", err, again == tokens[0], s.Stats().Exchanges["alice"])
	}

	for _, tc := range []struct {
		name, principal, subject string
		code                     string
	}{
		{"refused subject", "mallory", subjects["mallory"], "access_denied"},
		{"invalid subject token", "eve", "not-a-token-secret", "invalid_request"},
	} {
		_, err := x.Token(ctx, tc.principal, tc.subject)
		var ee *ExchangeError
		if !errors.As(err, &ee) || ee.Code != tc.code || !ee.Refused() {
			t.Errorf("%s: %v, want a refusal %s", tc.name, err, tc.code)
		}
	}
	if _, err := x.Token(ctx, "carol", ""); !errors.Is(err, ErrNoSubjectToken) {
		t.Errorf("no subject token: %v", err)
	}
	// Exchanges made at the server are observed, cached answers are not.
	events.want(t, map[string]int{"exchange/ok": 2, "exchange/refused": 2})

	wrong := newTestExchanger(t, ExchangeConfig{Issuer: s.URL(), ClientID: teToolsvc.ID, ClientSecret: "wrong-secret", Audience: teAudience})
	_, err = wrong.Token(ctx, "bob", subjects["bob"])
	var ee *ExchangeError
	if !errors.As(err, &ee) || ee.Refused() {
		t.Errorf("toolsvc's wrong secret: %v, want an ExchangeError that is not the caller's refusal", err)
	}

	var deadEvents eventLog
	dead := newTestExchanger(t, ExchangeConfig{Issuer: s.URL(), TokenURL: s.TokenURL(), ClientID: teToolsvc.ID,
		ClientSecret: teToolsvc.Secret, Audience: teAudience, Observe: deadEvents.observe})
	s.Close()
	_, derr := dead.Token(ctx, "bob", subjects["bob"])
	if derr == nil || errors.As(derr, &ee) {
		t.Errorf("a dead authorization server: %v, want a plain error", derr)
	}
	deadEvents.want(t, map[string]int{"exchange/error": 1})
	for _, e := range []error{err, derr} {
		for _, tok := range []string{subjects["bob"], "wrong-secret", "toolsvc-secret"} {
			if e != nil && strings.Contains(e.Error(), tok) {
				t.Errorf("an error shows a secret: %v", e)
			}
		}
	}
}

// TestExchangerCacheTiming (synctest): a token is reused until ExpiryGuard
// before it expires, then exchanged again; one too short-lived to outlive
// the guard is not cached; Forget drops one; the cache stays within
// MaxEntries, dropping expired entries first.
func TestExchangerCacheTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		lifetime := time.Minute
		x := NewExchanger(ExchangeConfig{ExpiryGuard: 30 * time.Second, MaxEntries: 3})
		defer x.Close()
		x.exchange = func(_ context.Context, subject string) (string, time.Duration, error) {
			return fmt.Sprintf("%s-%d", subject, n.Add(1)), lifetime, nil
		}
		ctx := t.Context()
		get := func(p string) string {
			tok, err := x.Token(ctx, p, "sub-"+p)
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}
		first := get("alice")
		time.Sleep(29 * time.Second)
		if get("alice") != first || n.Load() != 1 {
			t.Errorf("within the token's life less the guard: exchanged again (%d)", n.Load())
		}
		time.Sleep(2 * time.Second) // 31 s: within 30 s of expiry
		if get("alice") == first || n.Load() != 2 {
			t.Errorf("within the guard: not exchanged again (%d)", n.Load())
		}
		x.Forget("alice")
		get("alice")
		if n.Load() != 3 {
			t.Errorf("after Forget: %d exchanges, want 3", n.Load())
		}

		lifetime = 20 * time.Second // shorter than the guard: used, not cached
		get("short")
		get("short")
		if n.Load() != 5 {
			t.Errorf("a short-lived token was cached (%d exchanges)", n.Load())
		}

		lifetime = time.Minute
		get("bob")
		get("carol") // alice, bob, carol: full
		time.Sleep(31 * time.Second)
		get("dave") // every entry is stale now: all go, dave stays
		x.mu.Lock()
		size := len(x.cache)
		x.mu.Unlock()
		if size > 3 {
			t.Errorf("cache has %d entries, bound 3", size)
		}
		time.Sleep(time.Second)
		get("erin")
		get("frank")
		get("grace") // full of live entries: the soonest to expire goes
		x.mu.Lock()
		size = len(x.cache)
		_, daveKept := x.cache["dave"]
		x.mu.Unlock()
		if size != 3 || daveKept {
			t.Errorf("cache %d entries, dave kept %v; want 3, dave (the soonest) evicted", size, daveKept)
		}
	})
}

// TestExchangerCallerCancel: a caller whose context ends stops waiting,
// but the shared exchange completes and serves the next caller.
func TestExchangerCallerCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		x := NewExchanger(ExchangeConfig{})
		defer x.Close()
		x.exchange = func(ctx context.Context, subject string) (string, time.Duration, error) {
			n.Add(1)
			select {
			case <-time.After(2 * time.Second): // a slow authorization server
			case <-ctx.Done():
				return "", 0, ctx.Err()
			}
			return "tok", time.Hour, nil
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := x.Token(ctx, "alice", "s"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("impatient caller: %v", err)
		}
		tok, err := x.Token(t.Context(), "alice", "s")
		if err != nil || tok != "tok" || n.Load() != 1 {
			t.Errorf("next caller: %q %v after %d exchanges; want the first exchange's token", tok, err, n.Load())
		}

		// Close cancels a flight and waits for it.
		x.Forget("alice")
		go x.Token(t.Context(), "alice", "s")
		synctest.Wait()
		x.Close()
		if _, err := x.Token(t.Context(), "bob", "s"); err == nil {
			t.Error("Token after Close succeeded")
		}
	})
}
