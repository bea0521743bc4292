package config

import (
	"strings"
	"testing"
)

// TestParseTokenStore: the tokenStore section becomes Config.TokenStore
// (a Redis URL's ${ENV} reference resolved and redacted); each mistake is
// a problem naming the field, and a userOAuth server without the section
// names "tokenStore".
func TestParseTokenStore(t *testing.T) {
	t.Setenv("TEST_REDIS_URL", "redis://:hunter2-secret@127.0.0.1:6379/0")
	c, err := Parse("c.json", []byte(`{"tokenStore": {"redis": {"url": "${TEST_REDIS_URL}", "prefix": "t:", "lease": "10s"}, "keyFile": "/k"},
		"mcpServers": {"a": {"url": "https://a.example/mcp"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ts := c.TokenStore
	if ts == nil || ts.Redis == nil || ts.Redis.URL != "redis://:hunter2-secret@127.0.0.1:6379/0" || ts.Redis.Prefix != "t:" ||
		ts.Redis.Lease.D.Seconds() != 10 || ts.KeyFile != "/k" || ts.File != "" {
		t.Fatalf("TokenStore = %+v", ts)
	}
	if ts.String() != "redis" {
		t.Errorf("String() = %q, want redis (never the URL)", ts.String())
	}
	for _, tc := range []struct{ doc, field, want string }{
		{`{"tokenStore": {"keyFile": "/k"}}`, "tokenStore.file", "set one of file"},
		{`{"tokenStore": {"file": "/f", "redis": {"url": "redis://h:1/0"}, "keyFile": "/k"}}`, "tokenStore.redis", "not both"},
		{`{"tokenStore": {"file": "/f"}}`, "tokenStore.keyFile", "required"},
		{`{"tokenStore": {"redis": {}, "keyFile": "/k"}}`, "tokenStore.redis.url", "required"},
		{`{"tokenStore": {"redis": {"url": "http://h:1/"}, "keyFile": "/k"}}`, "tokenStore.redis.url", "want redis://"},
		{`{"tokenStore": {"file": "/f", "keyFile": "/k", "extra": 1}}`, "tokenStore", "unknown field"},
		{`{"tokenStore": "file"}`, "tokenStore", "want an object"},
		{`{"mcpServers": {"u": {"url": "https://u.example/mcp", "credentials": {"mode": "userOAuth", "clientId": "c", "issuer": "https://idp.example"}}}}`,
			"tokenStore", `server "u" uses credentials mode "userOAuth"`},
	} {
		doc := tc.doc
		if !strings.Contains(doc, "mcpServers") {
			doc = strings.TrimSuffix(doc, "}") + `, "mcpServers": {"a": {"url": "https://a.example/mcp"}}}`
		}
		_, err := Parse("c.json", []byte(doc))
		if err == nil || !strings.Contains(err.Error(), `field "`+tc.field+`"`) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s) = %v, want field %q: %q", tc.doc, err, tc.field, tc.want)
		}
	}
}
