package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestIsSessionDead: transport failures evict; answers from a live
// upstream (even ones whose text mentions sessions) and the caller's own
// deadline do not (docs/upstream-behaviour.md §3).
func TestIsSessionDead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		dead bool
	}{
		{io.EOF, true},
		{fmt.Errorf("calling %q: %w", "tools/call", io.EOF), true},
		{mcp.ErrConnectionClosed, true},
		{fmt.Errorf("x: %w", mcp.ErrSessionMissing), true},
		{syscall.ECONNRESET, true},
		{syscall.ECONNREFUSED, true},
		{&jsonrpc.Error{Code: codeRejectedByTransport, Message: "rejected by transport"}, true},
		{&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Session terminated"}, false},
		{&jsonrpc.Error{Code: -32000, Message: "session not found"}, false},
		{context.DeadlineExceeded, false},
		{context.Canceled, false},
		{errors.New("tool said no"), false},
	}
	for _, tt := range tests {
		if got := isSessionDead(tt.err); got != tt.dead {
			t.Errorf("isSessionDead(%v) = %v, want %v", tt.err, got, tt.dead)
		}
	}
}

// TestBackoffBounds: full jitter within [0, min(max, base·2ⁿ)], no overflow
// for huge attempt counts (docs/upstream-behaviour.md §3).
func TestBackoffBounds(t *testing.T) {
	t.Parallel()
	base, maxD := 100*time.Millisecond, 2*time.Second
	for attempt := 0; attempt < 200; attempt++ {
		cap := min(maxD, base<<min(attempt, 20))
		for i := 0; i < 20; i++ {
			if d := backoff(base, maxD, attempt); d <= 0 || d > cap {
				t.Fatalf("backoff(attempt %d) = %v, want in (0, %v]", attempt, d, cap)
			}
		}
	}
}

// TestFailedAddLeavesNoTools: a server added by Reconfigure that cannot
// connect publishes nothing callable (docs/upstream-behaviour.md §3).
func TestFailedAddLeavesNoTools(t *testing.T) {
	t.Parallel()
	up := newMemUpstream(t)
	defer up.killSessions()
	b := newTestBridge(t, up.config("mem"))
	bad := ServerConfig{Name: "bad", Transport: TransportStdio, Command: "/nonexistent/toolsvc-no-such-server",
		BackoffBase: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond}
	if _, err := b.Reconfigure(Config{Servers: []ServerConfig{up.config("mem"), bad}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(defaultTestTimeout)
	for {
		st, err := b.Server("bad")
		if err == nil && st.LastError != "" && st.State != StateReady {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bad server never reported its failure: %+v %v", st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, tl := range b.Catalog().Current().Tools {
		if tl.Server == "bad" {
			t.Fatalf("a failed add left tool %s in the catalog", tl.Name)
		}
	}
}

// TestUnknownToolBeforeReady: before the first discovery round finished,
// an unknown name is UNAVAILABLE (it may exist in a moment), not NOT_FOUND.
func TestUnknownToolBeforeReady(t *testing.T) {
	t.Parallel()
	up := newMemUpstream(t)
	defer up.killSessions()
	release := make(chan struct{})
	cfg := up.config("mem")
	inner := cfg.NewTransport
	cfg.NewTransport = func() (mcp.Transport, error) {
		<-release
		return inner()
	}
	b, err := New(Config{Servers: []ServerConfig{cfg}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var ue *UnavailableError
	if _, err := b.CallTool(t.Context(), "mem__echo", nil, nil); !errors.As(err, &ue) || ue.Reason != ReasonStarting {
		t.Fatalf("CallTool before ready = %v, want UnavailableError(starting)", err)
	}
	close(release)
	<-b.Ready()
	if _, err := b.CallTool(t.Context(), "mem__nope", nil, nil); !errors.Is(err, ErrToolNotFound) {
		t.Fatalf("CallTool(unknown) after ready = %v, want ErrToolNotFound", err)
	}
}

// waitStatus polls a server's status (state changes need not change the
// catalog, so a catalog subscription cannot be waited on for them).
func waitStatus(t *testing.T, b *Bridge, server, what string, cond func(ServerStatus) bool) {
	t.Helper()
	deadline := time.Now().Add(defaultTestTimeout)
	for {
		if st, err := b.Server(server); err == nil && cond(st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
