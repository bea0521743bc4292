package mcpbridge

import (
	"strings"
	"testing"
)

// TestUserOAuthNeedsLogins: every per-user mode is served; a userOAuth
// server without the token store (Config.Logins) or without the login
// callback's URL is refused by New naming the field, never run with the
// shared credentials; passthrough and shared need neither.
func TestUserOAuthNeedsLogins(t *testing.T) {
	up := func(c *CredentialsConfig) []ServerConfig {
		return []ServerConfig{{Name: "up", Transport: TransportStreamableHTTP, URL: "http://127.0.0.1:9/mcp", Credentials: c}}
	}
	user := &CredentialsConfig{Mode: CredentialsUserOAuth, ClientID: "toolsvc", Issuer: "http://127.0.0.1:9"}
	for _, tc := range []struct {
		logins *LoginConfig
		want   string
	}{
		{nil, "needs a token store: set the top-level tokenStore"},
		{&LoginConfig{}, "needs a token store"},
	} {
		_, err := New(Config{Servers: up(user), Logins: tc.logins})
		if err == nil || !strings.Contains(err.Error(), `field "credentials.mode"`) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(userOAuth, logins %+v) = %v, want the field named and %q", tc.logins, err, tc.want)
		}
	}
	for _, c := range []*CredentialsConfig{{Mode: CredentialsShared}, {Mode: CredentialsPassthrough, Audience: "urn:x"}} {
		b, err := New(Config{Servers: up(c)})
		if err != nil {
			t.Fatalf("New with mode %s: %v", c.Mode, err)
		}
		b.Close()
	}
}
