package tests

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// TestSlowRefreshDoesNotBlockSession: while a refresh waits on a slow
// tools/list (2 s), calls and progress notifications on the same session
// keep flowing. Measured through the bridge against a real stdio upstream.
func TestSlowRefreshDoesNotBlockSession(t *testing.T) {
	const slow = 2 * time.Second
	b, err := mcpbridge.New(mcpbridge.Config{
		RefreshInterval: time.Hour,
		Servers: []mcpbridge.ServerConfig{{
			Name: "up", Transport: mcpbridge.TransportStdio, Command: bin.testserver, Args: []string{"-mode", "stdio"},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	select {
	case <-b.Ready():
	case <-ctx.Done():
		t.Fatal("bridge not ready")
	}
	call := func(name string, args any, opts *mcpbridge.CallOptions) {
		t.Helper()
		res, err := b.CallTool(ctx, name, args, opts)
		if err != nil || res.IsError {
			t.Fatalf("CallTool(%s) = %v, %v", name, res, err)
		}
	}
	call("up__set_slow_list", map[string]any{"ms": slow.Milliseconds()}, nil)
	sub := b.Catalog().Subscribe()
	defer sub.Close()

	refreshStart := time.Now()
	call("up__register_extra", nil, nil) // pushes list_changed: a 2 s refresh begins

	// Calls during the refresh.
	var maxCall time.Duration
	for i := 0; i < 20; i++ {
		s := time.Now()
		call("up__echo", map[string]any{"text": "x"}, nil)
		maxCall = max(maxCall, time.Since(s))
	}
	// Progress during the refresh: 10 steps 50 ms apart; each carries its
	// send time, so the delivery delay is measured directly.
	var mu sync.Mutex
	var maxDelay time.Duration
	got := 0
	call("up__progress", map[string]any{"steps": 10, "step_ms": 50}, &mcpbridge.CallOptions{OnProgress: func(p mcpbridge.Progress) {
		var sent int64
		if _, err := fmt.Sscanf(p.Message, "sent %d", &sent); err == nil {
			d := time.Since(time.UnixMicro(sent))
			mu.Lock()
			maxDelay = max(maxDelay, d)
			got++
			mu.Unlock()
		}
	}})
	duringRefresh := time.Since(refreshStart)
	if _, ok := b.Catalog().Current().Lookup("up__extra_tool"); ok {
		t.Fatalf("the refresh finished after %v, before the calls did; the test cannot tell whether they were blocked (slow list %v)", duringRefresh, slow)
	}
	mu.Lock()
	defer mu.Unlock()
	if got == 0 {
		t.Fatal("no progress notifications arrived during the refresh")
	}
	// The work above finished while the slow list was still in flight, so
	// nothing waited for it; the bounds below only say "not held up by
	// anything like the slow-down".
	if maxCall >= slow || maxDelay >= slow {
		t.Errorf("max call latency %v, max progress delay %v during a %v refresh: held up", maxCall, maxDelay, slow)
	}
	// And the refresh still lands.
	deadline := time.After(10 * time.Second)
	for {
		if _, ok := b.Catalog().Current().Lookup("up__extra_tool"); ok {
			break
		}
		select {
		case <-sub.C():
		case <-deadline:
			t.Fatal("the slow refresh never published up__extra_tool")
		}
	}
	t.Logf("during a %v tools/list: 20 calls max %v, %d progress notifications max delay %v; refresh landed after %v",
		slow, maxCall.Round(time.Microsecond), got, maxDelay.Round(time.Microsecond), time.Since(refreshStart).Round(time.Millisecond))
}
