package mcpbridge

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// grpcSession is a 2025-11-25 session of a TransportGRPC upstream (over
// go-sdk's in-memory transports: only what nextBackstop reads matters) whose
// last tools/list said ttl.
func grpcSession(t *testing.T, ttl time.Duration) *session {
	ct, st := mcp.NewInMemoryTransports()
	srv := mcp.NewServer(&mcp.Implementation{Name: "g", Version: "1"}, nil)
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: DefaultProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	u := &upstream{cfg: ServerConfig{Transport: TransportGRPC, RefreshInterval: 5 * time.Minute, PushlessRefresh: time.Second}}
	s := &session{u: u, cs: cs, push: newPushChannel()}
	s.push.set(pushNone, "the MCP gRPC binding has no notifications")
	s.ttl.Store(ttl.Milliseconds())
	return s
}

// TestGRPCUpstreamRelistsAtTTL: a gRPC upstream has no push channel, yet
// its lists are re-listed when their ttl runs out (never sooner than 1 s
// after the last), not every PushlessRefresh; without a ttl, every
// RefreshInterval.
func TestGRPCUpstreamRelistsAtTTL(t *testing.T) {
	for _, tc := range []struct {
		ttl, want time.Duration
	}{
		{3 * time.Second, 3 * time.Second},
		{200 * time.Millisecond, time.Second}, // the refresher's minimum
		{0, 5 * time.Minute},                  // no ttl: the backstop, not PushlessRefresh
		{time.Hour, 5 * time.Minute},          // a longer ttl: the backstop still applies
	} {
		synctest.Test(t, func(t *testing.T) {
			s := grpcSession(t, tc.ttl)
			if s.pushless() {
				t.Fatal("a gRPC session counts as pushless: it would re-list every PushlessRefresh")
			}
			start := time.Now()
			<-s.nextBackstop()
			if got := time.Since(start); got != tc.want {
				t.Errorf("ttl %s: re-listed after %s, want %s", tc.ttl, got, tc.want)
			}
		})
	}
}
