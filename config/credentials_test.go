package config

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// TestParseCredentials: the credentials object becomes the server's
// CredentialsConfig, its client secret joins the redaction set, and no
// object (or "shared") is today's behaviour; every mistake is a problem
// naming the credentials sub-field.
func TestParseCredentials(t *testing.T) {
	t.Setenv("TEST_TE_SECRET", "te-secret-value")
	c, err := Parse("c.json", []byte(`{"tokenStore": {"file": "/var/lib/toolsvc/tokens", "keyFile": "/etc/toolsvc/store.key"}, "mcpServers": {
		"plain": {"url": "https://p.example/mcp"},
		"shared": {"url": "https://s.example/mcp", "credentials": {"mode": "shared"}},
		"te": {"url": "https://t.example/mcp", "credentials": {"mode": "tokenExchange", "issuer": "https://idp.example",
			"clientId": "toolsvc", "clientSecret": "${TEST_TE_SECRET}", "audience": "urn:t", "maxSessions": 50, "sessionIdle": "90s", "privateTools": true}},
		"uo": {"url": "https://u.example/mcp", "credentials": {"mode": "userOAuth", "clientId": "toolsvc", "clientSecret": "literal-uo-secret",
			"scopes": ["repo"], "issuer": "https://idp.example", "requireSameSubject": true}},
		"pt": {"url": "https://x.example/mcp", "credentials": {"mode": "passthrough", "audience": "https://x.example/mcp"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]mcpbridge.ServerConfig{}
	for _, s := range c.Bridge.Servers {
		by[s.Name] = s
	}
	if by["plain"].Credentials.PerPrincipal() || by["shared"].Credentials.PerPrincipal() {
		t.Error("plain or shared is per principal")
	}
	te := by["te"].Credentials
	if te == nil || te.Mode != mcpbridge.CredentialsTokenExchange || te.ClientSecret != "te-secret-value" || te.Audience != "urn:t" ||
		te.MaxSessions != 50 || te.SessionIdle != 90*time.Second || !te.PerPrincipal() || !te.PrivateTools {
		t.Errorf("te credentials %+v", te)
	}
	if uo := by["uo"]; uo.Credentials == nil || !slices.Equal(uo.Credentials.Scopes, []string{"repo"}) || !uo.Credentials.RequireSameSubject ||
		!slices.Contains(uo.Secrets, "literal-uo-secret") {
		t.Errorf("uo %+v, secrets %q: want the scopes, and the literal secret redacted", uo.Credentials, uo.Secrets)
	}
	if pt := by["pt"].Credentials; pt == nil || pt.Mode != mcpbridge.CredentialsPassthrough {
		t.Errorf("pt credentials %+v", pt)
	}

	_, err = Parse("bad.json", []byte(`{"mcpServers": {
		"a": {"url": "https://a.example/mcp", "credentials": {"mode": "tokenexchange"}},
		"b": {"url": "https://a.example/mcp", "credentials": {"mode": "tokenExchange", "clientSecret": "s"}},
		"c": {"command": "srv", "credentials": {"mode": "passthrough", "audience": "x"}},
		"d": {"url": "https://a.example/mcp", "credentials": {"mode": "passthrough"}},
		"e": {"url": "https://a.example/mcp", "credentials": {"mode": "passthrough", "audience": "x", "tokenUrl": "https://idp/t"}},
		"f": {"url": "https://a.example/mcp", "credentials": {"client_id": "x"}},
		"g": {"url": "https://a.example/mcp", "headers": {"authorization": "Bearer t"}, "credentials": {"mode": "passthrough", "audience": "x"}},
		"h": {"url": "https://a.example/mcp", "oauth": {"clientId": "x", "clientSecret": "s"}, "credentials": {"mode": "userOAuth", "clientId": "x"}},
		"i": {"url": "https://a.example/mcp", "credentials": {"mode": "tokenExchange", "clientId": "x", "tokenUrl": "idp/token",
			"subjectTokenType": "saml", "maxSessions": -1}},
		"j": {"url": "https://a.example/mcp", "credentials": {"mode": "userOAuth", "clientId": "x", "authorizationUrl": "https://idp/a"}},
		"k": {"url": "https://a.example/mcp", "credentials": {"audience": "x"}},
		"l": {"url": "https://a.example/mcp", "credentials": {"mode": "userOAuth", "sessionIdle": "soon"}},
		"m": {"url": "https://a.example/mcp", "credentials": {"mode": "userOAuth", "clientId": "x", "requireSameSubject": true}},
		"n": {"url": "https://a.example/mcp", "credentials": {"mode": "tokenExchange", "clientId": "x", "issuer": "https://idp", "requireSameSubject": true}},
		"o": {"url": "https://a.example/mcp", "credentials": {"privateTools": true}},
		"q": {"url": "https://a.example/mcp", "credentials": {"mode": "tokenExchange", "clientId": "x", "issuer": "https://idp", "privateTools": "yes"}}}}`))
	if err == nil {
		t.Fatal("bad credentials accepted")
	}
	for _, want := range []string{
		`server "a": field "credentials.mode": want "shared", "tokenExchange", "userOAuth" or "passthrough", got "tokenexchange"`,
		`server "b": field "credentials.tokenUrl": required (or issuer)`,
		`server "b": field "credentials.clientId": required for mode "tokenExchange"`,
		`server "c": field "credentials.mode": "passthrough" is only for streamable HTTP servers`,
		`server "d": field "credentials.audience": required for mode "passthrough"`,
		`server "e": field "credentials.tokenUrl": not used by mode "passthrough"`,
		`server "f": field "credentials": unknown key "client_id"`,
		`server "g": field "credentials.mode": "passthrough" cannot be combined with an Authorization header`,
		`server "h": field "credentials.mode": "userOAuth" cannot be combined with oauth`,
		`server "i": field "credentials.tokenUrl": want an absolute http:// or https:// URL`,
		`server "i": field "credentials.subjectTokenType": want`,
		`server "i": field "credentials.maxSessions": must not be negative`,
		`server "j": field "credentials.tokenUrl": required with authorizationUrl`,
		`server "k": field "credentials.audience": not used by mode "shared"`,
		`server "l": field "credentials.sessionIdle": `,
		`server "l": field "credentials.clientId": required for mode "userOAuth"`,
		`server "m": field "credentials.issuer": required with requireSameSubject`,
		`server "n": field "credentials.requireSameSubject": not used by mode "tokenExchange"`,
		`server "o": field "credentials.privateTools": not used by mode "shared"`,
		`server "q": field "credentials.privateTools": `,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("problems lack %q:\n%v", want, err)
		}
	}
}

// TestCredentialsEveryProblem: config check prints every problem inside a
// credentials object, not the first: each unknown key,
// each value that does not decode, and mcpbridge's rules on what did.
// A resource indicator is any absolute URI without a fragment (RFC 8707).
func TestCredentialsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := Parse("bad.json", []byte(`{"tokenStore": {"file": "/var/lib/toolsvc/tokens", "keyFile": "/etc/toolsvc/store.key"}, "mcpServers": {
		"a": {"url": "https://a.example/mcp", "credentials": {"mode": "userOAuth", "client_id": "x", "scope": "repo",
			"maxSessions": "ten", "sessionIdle": "soon", "scopes": "repo", "tokenUrl": "idp/token", "resource": "relative/path"}},
		"b": {"url": "https://a.example/mcp", "credentials": {"mode": "tokenExchange", "clientId": "x", "issuer": "https://idp", "resource": "https://api.example/#frag"}},
		"c": {"url": "https://a.example/mcp", "credentials": ["mode"]}}}`))
	if err == nil {
		t.Fatal("bad credentials accepted")
	}
	for _, want := range []string{
		`server "a": field "credentials": unknown key "client_id"`,
		`server "a": field "credentials": unknown key "scope"`,
		`server "a": field "credentials.maxSessions": `,
		`server "a": field "credentials.sessionIdle": `,
		`server "a": field "credentials.scopes": `,
		`server "a": field "credentials.clientId": required for mode "userOAuth"`,
		`server "a": field "credentials.tokenUrl": want an absolute http:// or https:// URL`,
		`server "a": field "credentials.resource": want an absolute URI without a fragment (RFC 8707)`,
		`server "b": field "credentials.resource": want an absolute URI without a fragment`,
		`server "c": field "credentials": want an object`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("problems lack %q:\n%v", want, err)
		}
	}
	for _, res := range []string{"urn:example:api", "https://api.example/v1", "api+custom://tenant-1/x", "urn:ietf:params:oauth:token-type:jwt"} {
		c, err := Parse("ok.json", []byte(`{"tokenStore": {"file": "/var/lib/toolsvc/tokens", "keyFile": "/etc/toolsvc/store.key"}, "mcpServers": {
			"u": {"url": "https://u.example/mcp", "credentials": {"mode": "userOAuth", "clientId": "x", "issuer": "https://idp.example", "resource": "`+res+`"}},
			"t": {"url": "https://t.example/mcp", "credentials": {"mode": "tokenExchange", "clientId": "x", "issuer": "https://idp.example", "resource": "`+res+`"}}}}`))
		if err != nil {
			t.Errorf("resource %q refused: %v", res, err)
			continue
		}
		for _, s := range c.Bridge.Servers {
			if s.Credentials.Resource != res {
				t.Errorf("server %s: resource %q, want %q", s.Name, s.Credentials.Resource, res)
			}
		}
	}
}
