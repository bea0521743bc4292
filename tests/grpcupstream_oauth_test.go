package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// tokenEndpoint is the token endpoint issuer's discovery document names.
func tokenEndpoint(t *testing.T, ctx context.Context, issuer string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, issuer+"/.well-known/openid-configuration", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || doc.TokenEndpoint == "" {
		t.Fatalf("discovery at %s: %+v, %v", issuer, doc, err)
	}
	return doc.TokenEndpoint
}

// TestGRPCUpstreamOAuth: an upstream that serves the binding behind JWT
// bearer tokens from the test authorization server is listed and called
// by a toolsvc whose oauth object gets tokens by client credentials; the
// token is replaced before it expires (the upstream sees a second one);
// with a wrong client secret the server stays down, the token endpoint's
// refusal its last error, the secret nowhere.
func TestGRPCUpstreamOAuth(t *testing.T) {
	t.Parallel()
	// Tokens live 32 s: the handler replaces one 30 s before it expires,
	// so a call 3 s after the first gets a new token.
	issuer := startAuthServer(t, "-access-ttl", "32s")
	ctx, cancel := context.WithTimeout(t.Context(), 2*defaultTestTimeout)
	defer cancel()
	tokenURL := tokenEndpoint(t, ctx, issuer)
	up := newGRPCUpstream(t, "-auth-issuer", issuer)
	const wrongSecret = "not-the-toolsvc-secret"
	p := startToolsvc(t, cfg{Servers: servers{
		"o":   fastSupervision(upstream{Type: "grpc", URL: up.url(), OAuth: &oauthCfg{ClientID: "toolsvc", ClientSecret: "toolsvc-secret", TokenURL: tokenURL}}),
		"bad": fastSupervision(upstream{Type: "grpc", URL: up.url(), OAuth: &oauthCfg{ClientID: "toolsvc", ClientSecret: wrongSecret, TokenURL: tokenURL}}),
	}})
	c := p.client
	call := func(text string) {
		t.Helper()
		res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "o__echo", ArgumentsJson: `{"text": "` + text + `"}`})
		if err != nil || resultText(res) != text {
			t.Fatalf("CallTool(o__echo %s) = %v, %v", text, res, err)
		}
	}
	tools, _ := listAll(t, ctx, c, 100)
	if !hasTool(tools, "o__echo") || hasTool(tools, "bad__echo") {
		t.Fatalf("ListTools = %v, want o__echo and no bad__echo", tools)
	}
	call("with a token")
	time.Sleep(3 * time.Second) // past the first token's refresh point
	call("with the next token")
	if n := strings.Count(up.p.log.String(), "new bearer token"); n < 2 {
		t.Errorf("the upstream saw %d distinct tokens, want at least 2 (the token was not replaced)", n)
	}

	var last string
	eventually(t, time.Minute, "bad reports the refused token request", func() bool {
		last = serverStatus(t, ctx, c, "bad").GetLastError()
		return strings.Contains(last, "oauth token request failed")
	})
	t.Logf("bad's last error: %s", last)
	if st := serverStatus(t, ctx, c, "bad").GetState(); st == toolsvcv1.ServerState_SERVER_STATE_READY {
		t.Errorf("bad is READY with a wrong client secret")
	}
	if strings.Contains(last, wrongSecret) || strings.Contains(p.log.String(), wrongSecret) || strings.Contains(p.log.String(), "toolsvc-secret") {
		t.Errorf("a client secret leaked: last error %q", last)
	}
}
