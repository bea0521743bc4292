package config

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// FuzzAuthConfig feeds arbitrary "auth" sections and server "oauth" objects
// through Parse. Never a panic; every failure is a list of problems naming
// the file; on success every bearer token and OAuth secret is in the
// redaction set, and every OAuth setting passes mcpbridge's own rules.
//
// CI runs the seed corpus (go test); a longer run:
//
//	go test -run '^$' -fuzz FuzzAuthConfig -fuzztime 5m ./config
func FuzzAuthConfig(f *testing.F) {
	for _, s := range []struct{ auth, oauth string }{
		{`{"tokens": {"a": "0123456789abcdefXYZ"}}`, `{"clientId": "c", "clientSecret": "secret-1"}`},
		{`{"mtls": true, "admins": ["ops-*"], "rules": [{"principal": "a", "allow": ["x__*"], "deny": ["x__rm"]}]}`,
			`{"grant": "refresh_token", "clientId": "c", "refreshToken": "rt-123", "scopes": ["a", "b"], "resource": "https://r.example/mcp"}`},
		{`{"jwt": {"jwksFile": "/dev/null", "issuer": "i", "audience": "a"}, "audit": {"enabled": false, "arguments": true}}`,
			`{"clientId": "c", "authMethod": "private_key_jwt", "privateKey": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"}`},
		{`{"tokens": {"a": "short"}, "rules": [{"principal": "["}]}`, `{"clientId": "", "grant": "password", "tokenUrl": "http://idp.example/t"}`},
		{`{"unknown": 1}`, `{"clientSecrett": "x"}`},
		{`[]`, `[]`}, {`null`, `null`}, {`{"tokens": {"a": "${NOPE}"}}`, `{"clientId": "${file:/nonexistent}"}`},
		{`{"tokensFile": "/x", "tokens": {"": "0123456789abcdef0"}}`, `{"clientId": "c", "clientSecret": "s", "scopes": ["a b", ""]}`},
	} {
		f.Add(s.auth, s.oauth)
	}
	f.Fuzz(func(t *testing.T, auth, oauth string) {
		if !json.Valid([]byte(auth)) || !json.Valid([]byte(oauth)) {
			return // not JSON at all is a different (covered) failure
		}
		file := `{"auth": ` + auth + `, "mcpServers": {"up": {"url": "https://mcp.example.com/mcp", "oauth": ` + oauth + `}}}`
		c, err := Parse("fuzz.json", []byte(file))
		if err != nil {
			var ps Problems
			if !errors.As(err, &ps) || len(ps) == 0 {
				t.Fatalf("error %v is not a Problems list", err)
			}
			for _, p := range ps {
				if p.File != "fuzz.json" || !strings.HasPrefix(p.Error(), "fuzz.json") {
					t.Fatalf("problem %q does not name the file", p.Error())
				}
			}
			return
		}
		if c.Auth != nil {
			for name, tok := range c.Auth.Tokens {
				if !slices.Contains(c.Auth.Secrets, tok) {
					t.Fatalf("token of %q is not in the redaction set", name)
				}
			}
		}
		for _, sc := range c.Bridge.Servers {
			if sc.OAuth == nil {
				continue
			}
			if err := sc.OAuth.Validate(); err != nil {
				t.Fatalf("accepted an oauth setting mcpbridge rejects: %v", err)
			}
			for _, s := range []string{sc.OAuth.ClientSecret, sc.OAuth.RefreshToken, sc.OAuth.PrivateKey} {
				if len(s) >= 4 && !slices.Contains(sc.Secrets, s) {
					t.Fatalf("oauth secret %q is not in the redaction set", s)
				}
			}
		}
	})
}
