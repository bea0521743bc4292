package config

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRedacted: the printed configuration keeps what runs (commands,
// URLs, header and environment names, timeouts, rules) and shows every
// secret as "[redacted]": a referenced value wherever it lands (an
// argument, a URL's query), header and environment values, the auth
// tokens, OAuth and userOAuth client secrets, refresh tokens, a Redis
// password in its URL.
func TestRedacted(t *testing.T) {
	t.Setenv("TEST_REDACT_KEY", "env-secret-4711")
	c, err := Parse("s.json", []byte(`{
		"auth": {"tokens": {"alice": "alice-literal-token"}, "admins": ["alice"]},
		"tokenStore": {"redis": {"url": "redis://user:redis-pass-0042@127.0.0.1:6379/0"}, "keyFile": "/etc/toolsvc/store.key"},
		"mcpServers": {
			"s": {"command": "srv", "args": ["--key=${TEST_REDACT_KEY}", "--port", "7"], "env": {"API_KEY": "env-literal-0099"}, "callTimeout": "42s"},
			"h": {"url": "https://h.example/mcp?k=${TEST_REDACT_KEY}", "headers": {"X-Api-Key": "header-literal-0077"},
				"oauth": {"grant": "refresh_token", "clientId": "cid", "clientSecret": "oauth-secret-0011", "refreshToken": "refresh-0022", "tokenUrl": "https://as.example/token"}},
			"u": {"url": "https://u.example/mcp", "credentials": {"mode": "userOAuth", "issuer": "https://as.example", "clientId": "toolsvc", "clientSecret": "user-secret-0033"}}
		}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c.Redacted([]string{"extra-secret-0055"}))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, sec := range []string{"env-secret-4711", "alice-literal-token", "redis-pass-0042", "env-literal-0099", "header-literal-0077",
		"oauth-secret-0011", "refresh-0022", "user-secret-0033"} {
		if strings.Contains(text, sec) {
			t.Errorf("the printed configuration holds the secret %q:\n%s", sec, text)
		}
	}
	for _, want := range []string{`"--key=[redacted]"`, `"--port"`, `"Command":"srv"`, `"API_KEY":"[redacted]"`, `"X-Api-Key":"[redacted]"`,
		`"alice":"[redacted]"`, `"CallTimeout":"42s"`, `"ClientID":"cid"`, `"ClientSecret":"[redacted]"`, `"RefreshToken":"[redacted]"`,
		`redis://user:[redacted]@127.0.0.1:6379/0`, `https://h.example/mcp?k=[redacted]`, `"Admins":["alice"]`, `"KeyFile":"/etc/toolsvc/store.key"`} {
		if !strings.Contains(text, want) {
			t.Errorf("the printed configuration lacks %s:\n%s", want, text)
		}
	}
}
