package mcpbridge

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// openGETs serves h and counts the GET requests open on it: go-sdk's
// standalone streams.
type openGETs struct {
	h    http.Handler
	open atomic.Int64
}

func (g *openGETs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		g.open.Add(1)
		defer g.open.Add(-1)
	}
	g.h.ServeHTTP(w, r)
}

// waitOpen waits until n standalone streams are open on g.
func waitOpen(t *testing.T, g *openGETs, n int64, what string) {
	t.Helper()
	deadline := time.Now().Add(defaultTestTimeout)
	for g.open.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d standalone streams open, want %d", what, g.open.Load(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPerUserStreamOnDemand: on a 2025-11-25 per-user upstream whose
// listing is shared, only one per-principal session (the listener) opens
// go-sdk's standalone stream, and the upstream's list_changed reaches the
// shared catalog through it; the table's eviction passes over the listener
// while another session can go, and when the listener goes the next session
// created takes the role (and re-lists, for what was missed meanwhile). With
// tools listed per principal, or an upstream that takes resource
// subscriptions, every session opens its stream.
func TestPerUserStreamOnDemand(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	users := []string{"alice", "bob", "carol", "dave"}
	as, jwt := startPrivateOP(t, ctx, users...)
	serve := func(opts *mcp.ServerOptions, tools ...string) (*mcp.Server, *openGETs, string) {
		srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, opts)
		for _, n := range tools {
			addTool(srv, n)
		}
		g := &openGETs{h: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
		return srv, g, serveHTTP(t, g)
	}
	bridge := func(url string, maxSessions int, private bool) *Bridge {
		return newTestBridge(t, ServerConfig{Name: "up", Transport: TransportStreamableHTTP, URL: url, PingInterval: time.Hour,
			RefreshDebounce: time.Millisecond, ProtocolVersion: DefaultProtocolVersion,
			Credentials: &CredentialsConfig{Mode: CredentialsTokenExchange, Issuer: as.URL(), ClientID: "toolsvc", ClientSecret: "toolsvc-secret",
				Audience: "urn:test:up", MaxSessions: maxSessions, SessionIdle: time.Hour, PrivateTools: private}})
	}
	call := func(b *Bridge, user string) {
		t.Helper()
		_ = b.PrimeCaller(ctx, user, jwt[user]) // as core does before every call
		if _, err := b.CallTool(ctx, "up__echo", nil, &CallOptions{Principal: user, SubjectToken: jwt[user]}); err != nil {
			t.Fatalf("%s: %v (%s)", user, err, b.Servers()[0].LastError)
		}
	}

	t.Run("shared listing", func(t *testing.T) {
		srv, g, url := serve(nil, "echo")
		b := bridge(url, 3, false)
		defer b.Close()
		for _, u := range users[:3] {
			call(b, u)
		}
		if n := b.PerUserSessions("up"); n != 3 {
			t.Fatalf("%d sessions, want 3", n)
		}
		waitOpen(t, g, 1, "three sessions")
		addTool(srv, "later")
		waitFor(t, b, "up__later through the listener's stream", func(s *Snapshot) bool { _, ok := s.Lookup("up__later"); return ok })
		// alice (the listener) is the least recently used, but eviction
		// passes over the listener: dave's session evicts bob's.
		call(b, "bob")
		call(b, "carol")
		call(b, "dave")
		u, err := b.upstream("up")
		if err != nil {
			t.Fatal(err)
		}
		table := u.source.(*principalSessions).table
		if !table.has("alice") || table.has("bob") {
			t.Errorf("after dave's call: alice's session kept %v (want true), bob's %v (want false)", table.has("alice"), table.has("bob"))
		}
		waitOpen(t, g, 1, "bob's session evicted for dave's")
		// The listener goes (closed idle): the next session created, alice's
		// again, takes the role.
		table.closeIdleOf("alice")
		waitOpen(t, g, 0, "the listener closed")
		call(b, "alice")
		waitOpen(t, g, 1, "a new listener")
		addTool(srv, "latest")
		waitFor(t, b, "up__latest through the new listener's stream", func(s *Snapshot) bool { _, ok := s.Lookup("up__latest"); return ok })
	})

	t.Run("private listings", func(t *testing.T) {
		_, g, url := serve(nil, "echo")
		b := bridge(url, 10, true)
		defer b.Close()
		for _, u := range users[:3] {
			_ = b.PrimeCaller(ctx, u, jwt[u]) // each principal's session lists its own tools
		}
		if n := b.PerUserSessions("up"); n != 3 {
			t.Fatalf("%d sessions, want 3", n)
		}
		waitOpen(t, g, 3, "three sessions with their own listings")
	})

	t.Run("resource subscriptions", func(t *testing.T) {
		srv, g, url := serve(&mcp.ServerOptions{SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error { return nil },
			UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil }}, "echo")
		srv.AddResource(&mcp.Resource{URI: "test://r", Name: "r"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://r", Text: "r"}}}, nil
		})
		b := bridge(url, 10, false)
		defer b.Close()
		for _, u := range users[:3] {
			call(b, u)
		}
		waitOpen(t, g, 3, "three sessions of an upstream that takes subscriptions")
	})
}
