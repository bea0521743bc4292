package oauth

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/authtest"
)

// TestPassthroughAllowed: with real tokens from the authorization server,
// only one whose audience names the upstream passes; a token for toolsvc
// alone, an expired one, and something that is not a JWT do not, and no
// error shows the token.
func TestPassthroughAllowed(t *testing.T) {
	forToolsvc := authtest.ClientConfig{ID: "agent", RedirectURIs: []string{"http://127.0.0.1/callback"}, Audience: []string{"toolsvc"}}
	forBoth := authtest.ClientConfig{ID: "agent2", RedirectURIs: []string{"http://127.0.0.1/callback"}, Audience: []string{"toolsvc", upstreamURL}}
	as, err := authtest.Start(authtest.Config{Clients: []authtest.ClientConfig{forToolsvc, forBoth}})
	if err != nil {
		t.Fatal(err)
	}
	defer as.Close()
	defer http.DefaultClient.CloseIdleConnections()
	ctx := context.Background()
	only, err := as.Login(ctx, forToolsvc, "alice")
	if err != nil {
		t.Fatal(err)
	}
	both, err := as.Login(ctx, forBoth, "alice")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := PassthroughAllowed(both.AccessToken, upstreamURL, now); err != nil {
		t.Errorf("a token for toolsvc and the upstream: %v", err)
	}
	for name, tc := range map[string]struct {
		tok  string
		at   time.Time
		code string
	}{
		"toolsvc only": {only.AccessToken, now, PassthroughAudienceMismatch},
		"expired":      {both.AccessToken, now.Add(time.Hour), PassthroughExpired},
		"not a JWT":    {"opaque-secret-token", now, PassthroughNotJWT},
		"none":         {"", now, PassthroughNoToken},
	} {
		err := PassthroughAllowed(tc.tok, upstreamURL, tc.at)
		var pe *PassthroughError
		if !errors.Is(err, ErrNotForUpstream) || !errors.As(err, &pe) || pe.Code != tc.code {
			t.Errorf("%s: %v, want ErrNotForUpstream with code %s", name, err, tc.code)
		} else if tc.tok != "" && strings.Contains(err.Error(), tc.tok) {
			t.Errorf("%s: the error shows the token", name)
		}
	}
}
