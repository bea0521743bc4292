package mcpbridge

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPerUserSubscribeUnsupported: a resource subscription to a per-user
// upstream that does not declare resources.subscribe (a real go-sdk
// server with no resources) is ErrSubscriptionsUnsupported for the
// caller's first request, which creates its session, as for the next,
// which finds it: the source's session is asked, whichever it is.
func TestPerUserSubscribeUnsupported(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	as, jwt := startPrivateOP(t, ctx, "alice")
	up := &perCallerUpstream{}
	b := newTestBridge(t, ServerConfig{Name: "up", Transport: TransportStreamableHTTP, URL: serveHTTP(t, up.handler()), PingInterval: time.Hour,
		Credentials: &CredentialsConfig{Mode: CredentialsTokenExchange, Issuer: as.URL(), ClientID: "toolsvc", ClientSecret: "toolsvc-secret",
			Audience: "urn:test:up", MaxSessions: 10}})
	defer b.Close()
	ctx = WithCaller(ctx, "alice", jwt["alice"])
	for _, round := range []string{"first (no session yet)", "second (alice's session open)"} {
		sub, err := b.SubscribeResource(ctx, "up", "file:///x")
		if sub != nil {
			sub.Close()
		}
		if !errors.Is(err, ErrSubscriptionsUnsupported) {
			t.Errorf("%s subscription = %v, want ErrSubscriptionsUnsupported", round, err)
		}
		if n := b.PerUserSessions("up"); n != 1 {
			t.Errorf("after the %s subscription: %d sessions of alice's, want 1", round, n)
		}
	}
}
