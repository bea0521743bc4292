package mcpbridge

import (
	"strings"
	"testing"
)

// TestUnservedCredentialModeRefused: a per-user mode the bridge does not
// serve yet is refused by New (naming the field), never run with the
// shared credentials; shared is accepted as before.
func TestUnservedCredentialModeRefused(t *testing.T) {
	for _, mode := range []string{CredentialsUserOAuth, CredentialsPassthrough} {
		if servedModes[mode] {
			continue
		}
		c := &CredentialsConfig{Mode: mode, Audience: "urn:x", ClientID: "toolsvc"}
		if mode == CredentialsUserOAuth {
			c.Audience = ""
		}
		_, err := New(Config{Servers: []ServerConfig{{Name: "up", Transport: TransportStreamableHTTP,
			URL: "http://127.0.0.1:9/mcp", Credentials: c}}})
		if err == nil || !strings.Contains(err.Error(), `field "credentials.mode": "`+mode+`" is not served`) {
			t.Errorf("New with mode %s: %v", mode, err)
		}
	}
	b, err := New(Config{Servers: []ServerConfig{{Name: "up", Transport: TransportStreamableHTTP,
		URL: "http://127.0.0.1:9/mcp", Credentials: &CredentialsConfig{Mode: CredentialsShared}}}})
	if err != nil {
		t.Fatalf("New with mode shared: %v", err)
	}
	b.Close()
}
