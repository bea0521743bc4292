package tests

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// cutProxy forwards loopback TCP connections to an upstream and can cut
// every open connection at once: a real network fault that ends the
// long-lived push channel (the 2026-07-28 subscriptions/listen stream, the
// streamable HTTP GET stream, the SSE event stream) while the server stays
// up and new connections still get through.
type cutProxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	cuts   int
	wg     sync.WaitGroup
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{l: l, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		l.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) addr() string { return p.l.Addr().String() }

func (p *cutProxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.l.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns[in], p.conns[out] = struct{}{}, struct{}{}
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			defer p.wg.Done()
			_, _ = io.Copy(dst, src)
			in.Close()
			out.Close()
			p.mu.Lock()
			delete(p.conns, in)
			delete(p.conns, out)
			p.mu.Unlock()
		}
		p.wg.Add(2)
		go pipe(in, out)
		go pipe(out, in)
	}
}

// cut closes every connection open now; it returns how many it closed.
func (p *cutProxy) cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.conns)
	for c := range p.conns {
		c.Close()
	}
	p.cuts++
	return n
}

// cutBound: after its push channel is cut, an upstream's runtime tool
// change reaches an open watch within this (the channel is
// re-opened with backoff, and while it is down the upstream re-lists on a
// short interval; "seconds, not minutes").
const cutBound = 5 * time.Second

// TestMatrixPushChannelCut: a push channel that closes must not silently
// stale the catalog. For each HTTP transport of each SDK,
// every connection between toolsvc and the upstream is cut once the session
// is up, and then the upstream adds a tool and announces it: the tool must
// reach an open watch within cutBound. pingInterval and refreshInterval are
// long, so neither the prober nor the backstop can bring it.
//
// Serial: the tool must arrive within cutBound.
func TestMatrixPushChannelCut(t *testing.T) {
	cells := []struct{ sdk, transport, protocol string }{
		{sdkGo, trStateless, proto0728}, // subscriptions/listen
		{sdkGo, trHTTP, proto1125},      // standalone GET stream
		{sdkGo, trSSE, proto1125},       // SSE event stream
		{sdkPython, trStateless, proto0728},
		{sdkPython, trHTTP, proto0728}, // stateful, but listen at 2026-07-28
		{sdkPython, trHTTP, proto1125}, // GET stream; MCPServer declares no tools.listChanged before 2026-07-28
		{sdkPython, trSSE, proto1125},
		{sdkTS, trHTTP, proto1125},
		{sdkTS, trSSE, proto1125},
	}
	var names []string
	for _, cell := range cells {
		names = append(names, cell.sdk+"/"+cell.transport+"/"+cell.protocol)
	}
	runConcurrently(t, names, func(t *testing.T, i int) {
		cell := cells[i]
		u := startMatrixUpstream(t, cell.sdk, cell.transport)
		proxy := startCutProxy(t, fmt.Sprintf("127.0.0.1:%d", u.port))
		server := u.server(upstream{ProtocolVersion: cell.protocol, ConnectTimeout: "20s",
			PingInterval: "1h", RefreshInterval: "1h", Backoff: &backoff{Base: "50ms", Max: "500ms"}})
		server.URL = strings.Replace(server.URL, fmt.Sprintf("127.0.0.1:%d", u.port), proxy.addr(), 1)
		p := startToolsvc(t, cfg{Servers: servers{"up": server}})
		ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
		defer cancel()
		c := p.client
		w := startWatch(t, ctx, c, "")
		if first := w.next(t, 10*time.Second); !hasTool(first.GetSnapshot().GetTools(), "up__add_tool") {
			t.Fatalf("first watch event = %v, want a snapshot with up__add_tool", first)
		}
		// The push channel works before the cut.
		callJSON(t, ctx, c, "up__add_tool", `{"name": "before_cut"}`)
		if _, ok := waitUpsertWithin(w, "up__before_cut", pushBound); !ok {
			t.Fatalf("before the cut: up__before_cut did not reach the watch within %v", pushBound)
		}
		before := serverStatus(t, ctx, c, "up")
		n := proxy.cut()
		// Let the client see the cut (and re-open what it re-opens).
		time.Sleep(300 * time.Millisecond)
		var res string
		deadline := time.Now().Add(10 * time.Second)
		for {
			// The first call after the cut may meet a dead pooled
			// connection or a reconnecting session; retry it.
			r, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__add_tool", ArgumentsJson: `{"name": "after_cut"}`})
			if err == nil {
				res = resultText(r)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("add_tool after the cut kept failing: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		took, ok := waitUpsertWithin(w, "up__after_cut", cutBound)
		after := serverStatus(t, ctx, c, "up")
		if !ok {
			t.Fatalf("after cutting %d connections, up__after_cut (add_tool said %q) did not reach the watch within %v: the lost push channel went unnoticed (state %v, connect_count %d -> %d, warnings %q)",
				n, res, cutBound, after.GetState(), before.GetConnectCount(), after.GetConnectCount(), after.GetWarnings())
		}
		t.Logf("%s %s %s (negotiated %s): cut %d connections; the tool added after the cut reached the watch in %v; connect_count %d -> %d",
			cell.sdk, cell.transport, cell.protocol, after.GetProtocolVersion(), n, took.Round(time.Millisecond),
			before.GetConnectCount(), after.GetConnectCount())
	})
}
