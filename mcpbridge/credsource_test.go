package mcpbridge

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge/oauth"
	"github.com/toolsvc/toolsvc/tokenstore"
)

// testUserSource is a userOAuth source over a file store, with fixed
// endpoints (no discovery, no network: LoginURL and a stored fresh
// token's Token are local).
func testUserSource(t *testing.T) (*userSource, tokenstore.Store) {
	t.Helper()
	key := make([]byte, tokenstore.KeySize)
	_, _ = rand.Read(key)
	st, err := tokenstore.OpenFile(filepath.Join(t.TempDir(), "tokens"), key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ut, err := oauth.NewUserTokens(oauth.UserOAuthConfig{Server: "up", AuthorizationURL: "https://as.example/authorize",
		TokenURL: "https://as.example/token", ClientID: "toolsvc", RedirectURL: "https://toolsvc.example" + LoginCallbackPath}, st, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ut.Close)
	u := &upstream{cfg: ServerConfig{Name: "up"}, log: slog.New(slog.DiscardHandler)}
	return &userSource{u: u, ut: ut}, st
}

// asker is an Interaction.Ask that records the request and answers
// action after the test's hook ran.
func asker(action string, seen *[]*mcp.ElicitParams, then func()) func(context.Context, mcp.InputRequest) (mcp.InputResponse, error) {
	return func(_ context.Context, r mcp.InputRequest) (mcp.InputResponse, error) {
		*seen = append(*seen, r.(*mcp.ElicitParams))
		if then != nil {
			then()
		}
		return &mcp.ElicitResult{Action: action}, nil
	}
}

// TestUserSourceLoginLink: a principal with no token gets a
// LoginRequiredError naming the server and carrying an authorization link
// (PKCE S256, a sealed state), unless the caller takes URL elicitations:
// then it is asked with that link; declining is the same error.
func TestUserSourceLoginLink(t *testing.T) {
	s, _ := testUserSource(t)
	ctx := t.Context()
	err := s.admit(ctx, caller{principal: "alice"})
	var le *LoginRequiredError
	if !errors.As(err, &le) || le.Server != "up" || le.Principal != "alice" {
		t.Fatalf("admit(no token) = %v, want *LoginRequiredError for alice on up", err)
	}
	if !strings.HasPrefix(le.URL, "https://as.example/authorize?") || !strings.Contains(le.URL, "code_challenge_method=S256") {
		t.Errorf("login link = %q, want the authorization endpoint with PKCE S256", le.URL)
	}
	if strings.Contains(le.Error(), le.URL) {
		t.Error("the error's message holds the link (it belongs in metadata only)")
	}
	var ce *CredentialsError
	if err := s.admit(ctx, caller{}); !errors.As(err, &ce) || ce.Code != CodeNoPrincipal || !strings.Contains(err.Error(), "not authenticated") {
		t.Errorf("admit(no principal) = %v, want CredentialsError %s", err, CodeNoPrincipal)
	}
	var seen []*mcp.ElicitParams
	it := &Interaction{Kinds: InputKinds{URL: true}, Ask: asker("decline", &seen, nil)}
	err = s.admit(withInteraction(ctx, it), caller{principal: "alice"})
	if !errors.As(err, &le) {
		t.Fatalf("admit, declined = %v, want *LoginRequiredError", err)
	}
	if len(seen) != 1 || seen[0].Mode != "url" || !strings.HasPrefix(seen[0].URL, "https://as.example/authorize?") || seen[0].ElicitationID == "" {
		t.Fatalf("asked %+v, want one URL elicitation with the link and an id", seen)
	}
	// A caller that takes forms only is not asked.
	seen = nil
	it = &Interaction{Kinds: InputKinds{Form: true}, Ask: asker("accept", &seen, nil)}
	if err := s.admit(withInteraction(ctx, it), caller{principal: "alice"}); !errors.As(err, &le) || len(seen) != 0 {
		t.Errorf("admit, forms only = %v after %d asks, want *LoginRequiredError and none", err, len(seen))
	}
}

// TestUserSourceLoginWait: after the caller accepts the link, the call
// waits for the login to reach the store (polled), and goes on once it
// does; if it never does, the call ends with the link again after
// DefaultLoginWait. Fake time (synctest).
func TestUserSourceLoginWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, st := testUserSource(t)
		ctx := t.Context()
		var seen []*mcp.ElicitParams
		stored := make(chan struct{})
		it := &Interaction{Kinds: InputKinds{URL: true}, Ask: asker("accept", &seen, func() {
			go func() {
				// The browser's login lands at the callback 3 s later.
				time.Sleep(3 * time.Second)
				k := tokenstore.Key{Principal: "alice", Server: "up"}
				if _, err := st.Put(context.Background(), k, 0, tokenstore.Token{AccessToken: "at", Expiry: time.Now().Add(time.Hour)}); err != nil {
					t.Error(err)
				}
				close(stored)
			}()
		})}
		start := time.Now()
		if err := s.admit(withInteraction(ctx, it), caller{principal: "alice"}); err != nil {
			t.Fatalf("admit after the login = %v", err)
		}
		<-stored
		if waited := time.Since(start); waited < 3*time.Second || waited > 3*time.Second+loginPoll {
			t.Errorf("the call went on after %v, want within one poll (%v) of the login at 3s", waited, loginPoll)
		}
		tok, err := s.token(ctx, "alice", "")
		if err != nil || tok != "at" {
			t.Errorf("token = %q, %v", tok, err)
		}

		// bob accepts but never logs in.
		start = time.Now()
		it = &Interaction{Kinds: InputKinds{URL: true}, Ask: asker("accept", &seen, nil)}
		err = s.admit(withInteraction(ctx, it), caller{principal: "bob"})
		var le *LoginRequiredError
		if !errors.As(err, &le) || le.Principal != "bob" {
			t.Fatalf("admit, never logged in = %v, want *LoginRequiredError for bob", err)
		}
		if waited := time.Since(start); waited != DefaultLoginWait {
			t.Errorf("gave up after %v, want DefaultLoginWait %v", waited, DefaultLoginWait)
		}
	})
}

// TestPassthroughSourceRefusals: the caller's JWT is forwarded only when
// its audience names the upstream; each refusal is a CredentialsError
// with its code, which never holds the token.
func TestPassthroughSourceRefusals(t *testing.T) {
	p := &passthroughSource{u: &upstream{cfg: ServerConfig{Name: "pt"}}, audience: "urn:up"}
	for _, tc := range []struct {
		name, subject, code string
	}{
		{"none", "", oauth.PassthroughNoToken},
		{"opaque", "opaque-secret-token", oauth.PassthroughNotJWT},
	} {
		err := p.admit(t.Context(), caller{principal: "alice", subject: tc.subject})
		var ce *CredentialsError
		if !errors.As(err, &ce) || ce.Code != tc.code || ce.Mode != CredentialsPassthrough {
			t.Errorf("%s: admit = %v, want CredentialsError %s", tc.name, err, tc.code)
			continue
		}
		if tc.subject != "" && strings.Contains(err.Error(), tc.subject) {
			t.Errorf("%s: the error holds the token", tc.name)
		}
	}
	if err := p.admit(t.Context(), caller{subject: "x"}); err == nil {
		t.Error("admit without a principal = nil")
	}
}
