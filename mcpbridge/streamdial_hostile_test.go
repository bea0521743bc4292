package mcpbridge

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostileGETs serves a real go-sdk streamable server (stateful: sessions
// open the standalone GET stream) for every POST and DELETE, and hands
// every GET's raw connection to send, which writes what a hostile
// upstream would. Hijacked connections are closed when the test ends.
func hostileGETs(t *testing.T, send func(c net.Conn)) string {
	t.Helper()
	return hostileGETsWith(t, send, nil)
}

// hostileGETsWith is hostileGETs calling seen (if not nil) with every
// other request before the go-sdk server has it.
func hostileGETsWith(t *testing.T, send func(c net.Conn), seen func(*http.Request)) string {
	t.Helper()
	srv := goSDKServer()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			if seen != nil {
				seen(r)
			}
			h.ServeHTTP(w, r)
			return
		}
		c, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		defer c.Close()
		send(c)
	}))
}

// untilClosed reads c until toolsvc hangs up (the request's end).
func untilClosed(c net.Conn) { _, _ = io.Copy(io.Discard, c) }

// drip writes s one byte at a time, every d, until toolsvc hangs up.
func drip(c net.Conn, s string, d time.Duration) {
	for i := 0; ; i++ {
		if _, err := c.Write([]byte{s[i%len(s)]}); err != nil {
			return
		}
		time.Sleep(d)
	}
}

// endless writes head, then chunk for ever, until toolsvc hangs up.
func endless(c net.Conn, head, chunk string) {
	if _, err := c.Write([]byte(head)); err != nil {
		return
	}
	b := []byte(chunk)
	for {
		if _, err := c.Write(b); err != nil {
			return
		}
	}
}

const sseHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"

// TestHostileStandaloneStream: an upstream that answers toolsvc's
// standalone GET stream (on its own connection, streamdial.go) with
// something hostile, while its POSTs are a real go-sdk server's. Each case
// must end in a bounded, specific failure of that stream (the session ends
// and is reconnected, docs/http-transport.md), never a connect that waits
// for ever, unbounded memory or a goroutine left behind (goleak, TestMain);
// the bridge closes promptly.
func TestHostileStandaloneStream(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		send func(c net.Conn)
		want string // in the server's LastError
	}{
		// Headers that never come, or come one byte at a time: the GET is
		// opened inside the connect (before notifications/initialized), so
		// the connect timeout must end it.
		{"no answer", untilClosed, "connect: timed out"},
		{"headers dripped", func(c net.Conn) {
			drip(c, sseHead+"X-Drip: "+strings.Repeat("a", 1<<20), 20*time.Millisecond)
		}, "connect: timed out"},
		{"status line dripped", func(c net.Conn) { drip(c, "HTTP/1.1 200 OK", 50*time.Millisecond) }, "connect: timed out"},
		// Malformed framing: a specific error for the stream, at once.
		{"malformed chunk size", func(c net.Conn) {
			_, _ = c.Write([]byte(sseHead + "Transfer-Encoding: chunked\r\n\r\nzz\r\n"))
			untilClosed(c)
		}, "standalone SSE stream"},
		{"chunk size overflow", func(c net.Conn) {
			_, _ = c.Write([]byte(sseHead + "Transfer-Encoding: chunked\r\n\r\n1ffffffffffffffff\r\n"))
			untilClosed(c)
		}, "standalone SSE stream"},
		{"chunk size line never ends", func(c net.Conn) {
			endless(c, sseHead+"Transfer-Encoding: chunked\r\n\r\n1", "0")
		}, "standalone SSE stream"},
		{"transfer-encoding gzip", func(c net.Conn) {
			_, _ = c.Write([]byte(sseHead + "Transfer-Encoding: gzip, chunked\r\n\r\n"))
			untilClosed(c)
		}, "standalone SSE request failed"},
		{"transfer-encoding twice", func(c net.Conn) {
			_, _ = c.Write([]byte(sseHead + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"))
			untilClosed(c)
		}, "standalone SSE request failed"},
		{"not http", func(c net.Conn) {
			_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n"))
			untilClosed(c)
		}, "standalone SSE request failed"},
		{"1xx flood", func(c net.Conn) { endless(c, "", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n") },
			"more than 16 informational (1xx) responses"},
		{"101 switching protocols", func(c net.Conn) {
			_, _ = c.Write([]byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n"))
			untilClosed(c)
		}, "standalone SSE stream: Switching Protocols"},
		// An answer meant for another request: an empty JSON body, a 200
		// event stream that ends at once (no event, no id: nothing to
		// resume), an event stream cut in the middle of an event.
		{"empty 200", func(c net.Conn) {
			_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 0\r\n\r\n"))
			untilClosed(c)
		}, "retries without progress"},
		{"closed mid-event", func(c net.Conn) {
			_, _ = c.Write([]byte(sseHead + "\r\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_"))
		}, "standalone SSE stream: failed to decode event"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := hostileGETs(t, tc.send)
			sc := fastProbes(ServerConfig{Name: "h", Transport: TransportStreamableHTTP, URL: url + "/mcp",
				ProtocolVersion: "2025-11-25", ConnectTimeout: 5 * time.Second})
			b, err := New(Config{Servers: []ServerConfig{sc}})
			if err != nil {
				t.Fatal(err)
			}
			closed := make(chan struct{})
			t.Cleanup(func() {
				go func() { b.Close(); close(closed) }()
				select {
				case <-closed:
				case <-time.After(defaultTestTimeout):
					t.Error("the bridge did not close: a session is wedged on the hostile stream")
				}
			})
			var last string
			deadline := time.Now().Add(defaultTestTimeout)
			for {
				st, err := b.Server("h")
				if err == nil && strings.Contains(st.LastError, tc.want) {
					break
				}
				if err == nil && st.LastError != last {
					last = st.LastError
					t.Logf("state %v, last error %q", st.State, last)
				}
				if time.Now().After(deadline) {
					t.Fatalf("timed out waiting for the stream's failure (%q); last error %q", tc.want, last)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}

// TestHostileStandaloneStreamBodyIsBounded: an upstream whose standalone
// stream sends one endless event (a data line that never ends, in chunks of
// a huge declared size) costs toolsvc the message limit, not the stream:
// the session stays and calls work meanwhile.
func TestHostileStandaloneStreamBodyIsBounded(t *testing.T) {
	t.Parallel()
	url := hostileGETs(t, func(c net.Conn) {
		endless(c, sseHead+"Transfer-Encoding: chunked\r\n\r\n7fffffffffffffff\r\ndata: ", strings.Repeat("x", 64<<10))
	})
	b := newTestBridge(t, ServerConfig{Name: "h", Transport: TransportStreamableHTTP, URL: url + "/mcp",
		ProtocolVersion: "2025-11-25"})
	for range 3 {
		res, err := b.CallTool(t.Context(), "h__echo", map[string]any{"text": "hi"}, nil)
		if err != nil || res.Content[0].(*mcp.TextContent).Text != "hi" {
			t.Fatalf("a call while the stream floods: %v, %v", res, err)
		}
	}
}

// TestHostileStandaloneResumeNeverAnswers: an upstream whose standalone
// stream breaks after an event with an id, then never answers the GET that
// resumes it (Last-Event-ID), holds neither the session nor its calls: the
// push channel is reported down (the bridge re-lists every PushlessRefresh
// meanwhile), calls are answered, and the bridge closes promptly (the
// resumption's wait ends with the connection). The first GET is bounded by
// the connect; a resumption is the stream's own goroutine's, bounded by the
// session's life.
func TestHostileStandaloneResumeNeverAnswers(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	gets := 0
	url := hostileGETs(t, func(c net.Conn) {
		mu.Lock()
		gets++
		first := gets == 1
		mu.Unlock()
		if first {
			_, _ = c.Write([]byte(sseHead + "\r\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"))
			return // the stream breaks: resumed from id 1
		}
		untilClosed(c)
	})
	b, err := New(Config{Servers: []ServerConfig{{Name: "h", Transport: TransportStreamableHTTP, URL: url + "/mcp",
		ProtocolVersion: "2025-11-25"}}})
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	t.Cleanup(func() {
		go func() { b.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(defaultTestTimeout):
			t.Error("the bridge did not close: a session is wedged on the resumption")
		}
	})
	waitStatus(t, b, "h", "the resumption asked for and the push channel down", func(st ServerStatus) bool {
		mu.Lock()
		defer mu.Unlock()
		return gets >= 2 && st.State == StateReady && st.PushChannel == "down"
	})
	res, err := b.CallTool(t.Context(), "h__echo", map[string]any{"text": "hi"}, nil)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Fatalf("a call while the resumption waits: %v, %v", res, err)
	}
}
