package mcpbridge

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// idleGoroutines counts the live goroutines an idle upstream can own, by
// the function that started them (the "created by" line of a full dump):
// the bridge's, go-sdk's session reader, and net/http's client connection
// loops. The test's own servers' goroutines (net/http.(*Server).Serve,
// httptest) are not counted.
func idleGoroutines() map[string]int {
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
	for _, g := range strings.Split(string(buf), "\n\n") {
		_, site, ok := strings.Cut(g, "\ncreated by ")
		if !ok {
			continue
		}
		site, _, _ = strings.Cut(site, " in goroutine ")
		switch {
		case strings.HasPrefix(site, "github.com/toolsvc/toolsvc/mcpbridge."):
			site = strings.TrimPrefix(site, "github.com/toolsvc/toolsvc/mcpbridge.")
		case strings.HasPrefix(site, "github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2."):
			if !strings.Contains(g, "mcpbridge.(*tapConn).Read") {
				continue // a test server's session
			}
			site = "jsonrpc2 reader"
		case site == "net/http.(*Transport).dialConn":
			site = "net/http client connection"
		default:
			continue
		}
		out[site]++
	}
	return out
}

// TestIdleSessionGoroutines: an idle streamable-HTTP upstream costs three
// goroutines: the bridge's supervisor (which is also its refresher and its
// prober: sessionloop.go), the connection's standalone stream reader
// (streamhttp.go) and go-sdk's session reader. Gone: the refresher and the
// prober (two more, parked for the session's whole life), the watcher of
// go-sdk's Wait (it starts when the connection's reading ends: watchEnd,
// session.go), and net/http's read and write loops of the standalone
// stream's connection (the stream has a connection of its own, read by the
// stream reader: streamdial.go). With 500 upstreams, 3,000 goroutines were
// 5,000 at least; a probe or a listing no longer leaves the calls'
// connection open with its two loops for net/http's 90 s idle timeout
// (connClosing, streamhttp.go): probed every 50 ms, it never closed. Real
// go-sdk servers over HTTP, half of them probed, half not. Not parallel:
// it counts every goroutine the package started, and parallel tests start
// theirs.
func TestIdleSessionGoroutines(t *testing.T) {
	const n = 4
	before := idleGoroutines()
	var servers []ServerConfig
	for i := range n {
		srv := goSDKServer()
		url := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		sc := ServerConfig{Name: string(rune('a' + i)), Transport: TransportStreamableHTTP, URL: url}
		sc.PingInterval, sc.PingTimeout = 50*time.Millisecond, 5*time.Second
		if i%2 == 1 {
			// Not probed: what its listing left is all it keeps.
			sc.PingInterval = -1
		}
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
			t.Logf("goroutines by starter: %v (before the bridge: %v)", last, before)
		}
	}()
	eventually(t, "three goroutines per idle upstream", func() bool {
		now := idleGoroutines()
		total := 0
		for site, c := range now {
			total += c - before[site]
		}
		last = now
		return total == 3*n
	})
	for site, want := range map[string]int{"(*Bridge).startLocked": n, "(*streamConn).openStandalone": n, "jsonrpc2 reader": n} {
		if got := last[site] - before[site]; got != want {
			t.Errorf("goroutines started by %s: %d, want %d (all: %v)", site, got, want, last)
		}
	}
	// Still probing and refreshing: an operator's refresh is answered.
	if _, err := b.Refresh(t.Context(), "a"); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
}

// TestHelperStdioServer is not a test: run as a child of
// TestSessionEndNoticedWithoutProbes (MCPBRIDGE_HELPER=stdioserver), it
// serves a go-sdk MCP server on stdin and stdout until killed.
func TestHelperStdioServer(t *testing.T) {
	if os.Getenv("MCPBRIDGE_HELPER") != "stdioserver" {
		return
	}
	_ = goSDKServer().Run(context.Background(), &mcp.StdioTransport{})
	os.Exit(0)
}

// TestSessionEndNoticedWithoutProbes: with no prober, what tells the
// bridge that an idle session ended is the session's end watch (the Wait
// watcher, started when the connection's reading ends: watchEnd): the
// upstream process is killed with SIGKILL, and the bridge reconnects (stdio:
// a new process) or leaves ready (HTTP: the server is gone; its standalone
// stream, on a connection of its own, gives up after its one reconnect).
// The stdio case fails when the end is not passed on (no endWatch tap); the
// HTTP case pins that the stream's own connection reports the kill.
func TestSessionEndNoticedWithoutProbes(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		sc := ServerConfig{Name: "s", Transport: TransportStdio, Command: os.Args[0], Args: []string{"-test.run=^TestHelperStdioServer$"},
			Env: map[string]string{"MCPBRIDGE_HELPER": "stdioserver"}, PingInterval: -1}
		b := newTestBridge(t, sc)
		waitStatus(t, b, "s", "ready", func(st ServerStatus) bool { return st.State == StateReady })
		u, err := b.upstream("s")
		if err != nil {
			t.Fatal(err)
		}
		if err := u.sess.Load().cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, b, "s", "reconnected after the kill", func(st ServerStatus) bool {
			return st.ConnectCount >= 2 && st.State == StateReady
		})
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperMCPServer$")
		cmd.Env = append(os.Environ(), "MCPBRIDGE_HELPER=mcpserver")
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		sc := bufio.NewScanner(out)
		var url string
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "URL "); ok {
				url = u
				break
			}
		}
		if url == "" {
			t.Fatal("helper printed no URL")
		}
		b := newTestBridge(t, ServerConfig{Name: "h", Transport: TransportStreamableHTTP, URL: url, PingInterval: -1})
		waitStatus(t, b, "h", "ready", func(st ServerStatus) bool { return st.State == StateReady })
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, b, "h", "the session lost", func(st ServerStatus) bool { return st.State != StateReady })
		if u, err := b.upstream("h"); err != nil || u.sess.Load() != nil {
			t.Errorf("after the upstream was killed: upstream %v, a session still routed to (%v)", u, err)
		}
	})
}

// TestRawSchemasKeepNoEmptyTable: a session keeps one checked entry per
// listed tool and no table of schemas pending between a listing and its
// attach (go-sdk hands the schemas over as text; before, a Go map of them
// kept its buckets when emptied: about 10 KiB per idle upstream of 100
// tools, the fleet benchmark's heap profile, docs/benchmarks.md), nor a
// task-support table for tools without one. A real go-sdk server over
// HTTP.
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
		support, verified := s.raw.support, len(s.raw.verified)
		s.raw.mu.Unlock()
		if support != nil || verified != 2 {
			t.Fatalf("after a listing: task support table %v, %d verified; want none, 2 verified", support, verified)
		}
		if _, err := b.Refresh(t.Context(), "h"); err != nil {
			t.Fatal(err)
		}
	}
}
