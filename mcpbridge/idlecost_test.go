package mcpbridge

import (
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bridgeGoroutines counts the live goroutines the bridge started, by the
// function that started them (the "created by" line of a full dump).
func bridgeGoroutines() map[string]int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]int{}
	for _, l := range strings.Split(string(buf), "\n") {
		site, ok := strings.CutPrefix(l, "created by github.com/toolsvc/toolsvc/mcpbridge.")
		if !ok {
			continue
		}
		site, _, _ = strings.Cut(site, " in goroutine ")
		out[site]++
	}
	return out
}

// TestIdleSessionGoroutines: an idle streamable-HTTP upstream costs the
// bridge two goroutines, its supervisor (which is also its refresher and
// its prober: sessionloop.go) and the watcher of go-sdk's Wait; the
// refresher and the prober were two more, parked for the session's whole
// life (with 500 upstreams, 1,000 goroutines). The third counted here is
// the connection's standalone stream reader (streamhttp.go), which was
// go-sdk's before toolsvc had its own streamable-HTTP connection. Real go-sdk servers over
// HTTP, probing on. Not parallel: it counts every goroutine the package
// started, and parallel tests start theirs.
func TestIdleSessionGoroutines(t *testing.T) {
	const n = 4
	before := bridgeGoroutines()
	var servers []ServerConfig
	for i := range n {
		srv := goSDKServer()
		url := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		sc := ServerConfig{Name: string(rune('a' + i)), Transport: TransportStreamableHTTP, URL: url}
		sc.PingInterval, sc.PingTimeout = 50*time.Millisecond, 5*time.Second
		servers = append(servers, sc)
	}
	b := newTestBridge(t, servers...)
	waitFor(t, b, "every upstream's echo", func(s *Snapshot) bool { return len(s.Tools) == n })
	for _, sc := range servers {
		waitStatus(t, b, sc.Name, "ready", func(st ServerStatus) bool { return st.State == StateReady })
	}
	// Probes come and go every 50 ms: wait for a moment between them.
	var last map[string]int
	defer func() {
		if t.Failed() {
			t.Logf("goroutines the bridge started, by starter: %v (before the bridge: %v)", last, before)
		}
	}()
	eventually(t, "three bridge goroutines per idle upstream", func() bool {
		now := bridgeGoroutines()
		total := 0
		for site, c := range now {
			total += c - before[site]
		}
		last = now
		return total == 3*n
	})
	for site, want := range map[string]int{"(*Bridge).startLocked": n, "(*upstream).connected": n, "(*streamConn).openStandalone": n} {
		if got := last[site] - before[site]; got != want {
			t.Errorf("goroutines started by %s: %d, want %d (all: %v)", site, got, want, last)
		}
	}
	// Still probing and refreshing: an operator's refresh is answered.
	if _, err := b.Refresh(t.Context(), "a"); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
}

// TestRawSchemasKeepNoEmptyTable: once a listing's raw schemas are
// attached, the session keeps no table of them: a Go map keeps its
// buckets when emptied, and an idle upstream of 100 tools held about
// 10 KiB of them until its next listing (the fleet benchmark's heap
// profile, docs/benchmarks.md). A real go-sdk server over HTTP.
func TestRawSchemasKeepNoEmptyTable(t *testing.T) {
	t.Parallel()
	srv := exactSchemaServer()
	url := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	b := newTestBridge(t, ServerConfig{Name: "h", Transport: TransportStreamableHTTP, URL: url, PingInterval: -1})
	waitFor(t, b, "h__exact", func(s *Snapshot) bool { _, ok := s.Lookup("h__exact"); return ok })
	u, err := b.upstream("h")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the first listing, then a re-list of the same tools
		s := u.sess.Load()
		s.raw.mu.Lock()
		pending, verified := s.raw.byName, len(s.raw.verified)
		s.raw.mu.Unlock()
		if pending != nil || verified != 2 {
			t.Fatalf("after a listing: %d raw schemas pending (table kept: %v), %d verified; want no table, 2 verified", len(pending), pending != nil, verified)
		}
		if _, err := b.Refresh(t.Context(), "h"); err != nil {
			t.Fatal(err)
		}
	}
}
