package config

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// TestParseOAuth: the oauth object becomes the server's OAuthConfig (grant
// defaulted from what is given), its secrets join the redaction set, and
// authRetry / forwardPrincipal are read; mistakes are problems naming the
// oauth sub-field.
func TestParseOAuth(t *testing.T) {
	t.Setenv("TEST_OAUTH_SECRET", "cc-secret-value")
	c, err := Parse("o.json", []byte(`{"mcpServers": {
		"cc": {"url": "https://a.example/mcp", "authRetry": "2m", "forwardPrincipal": true,
			"oauth": {"clientId": "id", "clientSecret": "${TEST_OAUTH_SECRET}", "scopes": ["x", "y"], "resource": "https://a.example/mcp"}},
		"rt": {"url": "https://b.example/mcp", "oauth": {"clientId": "id", "refreshToken": "literal-refresh-token"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]mcpbridge.ServerConfig{}
	for _, s := range c.Bridge.Servers {
		by[s.Name] = s
	}
	cc, rt := by["cc"], by["rt"]
	if cc.OAuth == nil || cc.OAuth.Grant != mcpbridge.OAuthClientCredentials || cc.OAuth.ClientSecret != "cc-secret-value" ||
		!slices.Equal(cc.OAuth.Scopes, []string{"x", "y"}) || cc.AuthRetry != 2*time.Minute || !cc.ForwardPrincipal {
		t.Errorf("cc = %+v, oauth %+v", cc, cc.OAuth)
	}
	if rt.OAuth == nil || rt.OAuth.Grant != mcpbridge.OAuthRefreshToken || !slices.Contains(rt.Secrets, "literal-refresh-token") {
		t.Errorf("rt oauth %+v, secrets %q: want the refresh_token grant and the literal token redacted", rt.OAuth, rt.Secrets)
	}
	if !slices.Contains(cc.Secrets, "cc-secret-value") {
		t.Errorf("cc secrets %q lack the client secret", cc.Secrets)
	}

	_, err = Parse("bad.json", []byte(`{"mcpServers": {
		"a": {"url": "https://a.example/mcp", "oauth": {"client_id": "x"}},
		"b": {"url": "https://a.example/mcp", "oauth": {"grant": "client_credentials", "clientId": "x"}},
		"c": {"url": "https://a.example/mcp", "type": "sse", "oauth": {"clientId": "x", "clientSecret": "s"}},
		"d": {"url": "https://a.example/mcp", "headers": {"Authorization": "Bearer t"}, "oauth": {"clientId": "x", "clientSecret": "s"}},
		"e": {"url": "https://a.example/mcp", "oauth": {"clientId": "x", "clientSecret": "s", "tokenUrl": "http://idp.example/token"}},
		"f": {"command": "srv", "oauth": {"clientId": "x", "clientSecret": "s"}}}}`))
	if err == nil {
		t.Fatal("bad oauth settings accepted")
	}
	for _, want := range []string{
		`server "a": field "oauth": unknown key "client_id"`,
		`server "b": field "oauth.clientSecret": required`,
		`server "c": field "oauth": only for streamable HTTP`,
		`server "d": field "oauth": set either oauth or an Authorization header`,
		`server "e": field "oauth.tokenUrl": want https`,
		`server "f": field "oauth": only for streamable HTTP`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("problems lack %q:\n%v", want, err)
		}
	}
}
