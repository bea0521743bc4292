package tests

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// roundRobin is a reverse proxy that sends each HTTP request to the next
// backend in turn: the worst case of a load balancer without affinity.
type roundRobin struct {
	backends []*url.URL
	next     atomic.Uint64
	served   []atomic.Int64
	srv      *http.Server
	addr     string
}

func startRoundRobin(t *testing.T, backends ...string) *roundRobin {
	t.Helper()
	return startRoundRobinVia(t, nil, backends...)
}

// startRoundRobinVia is startRoundRobin whose requests to the backends go
// through transport (nil: http.DefaultTransport).
func startRoundRobinVia(t *testing.T, transport http.RoundTripper, backends ...string) *roundRobin {
	t.Helper()
	rr := &roundRobin{served: make([]atomic.Int64, len(backends))}
	for _, b := range backends {
		u, err := url.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		rr.backends = append(rr.backends, u)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			i := int((rr.next.Add(1) - 1) % uint64(len(rr.backends)))
			rr.served[i].Add(1)
			pr.SetURL(rr.backends[i])
			pr.Out.Host = pr.In.Host // the Host the client used
		},
		FlushInterval: -1, // SSE streams flow as they are written
		Transport:     transport,
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rr.addr = lis.Addr().String()
	rr.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Full duplex, as for any Go HTTP/1 proxy (golang/go#40747): by
		// default, net/http's server drains and closes the request body
		// when the response's headers go out. The proxy's Transport,
		// having sent the body's Content-Length bytes, reads it once more
		// to check it ends (net/http transfer.go, writeBody); when the
		// replica's answer arrives first, that read fails ("invalid Read
		// on closed Body"), the Transport closes the connection to the
		// replica, and the answer being relayed is cut: the client sees
		// "request terminated without response" (TestMCPFrontReplicas's
		// first tools/list, under CPU load, about 1 run in 4).
		_ = http.NewResponseController(w).EnableFullDuplex()
		proxy.ServeHTTP(w, r)
	})}
	go func() { _ = rr.srv.Serve(lis) }()
	t.Cleanup(func() { _ = rr.srv.Close() })
	return rr
}

// TestRoundRobinLateBodyEnd: the round robin relays a backend's answer
// whole when its Transport checks the end of the request body only after
// the answer's first event has reached the client, as a loaded proxy may
// (the Transport reads once more past Content-Length). Without full
// duplex the proxy's server has closed the request body by then: the
// check fails, the Transport closes the connection to the backend, and
// the client gets the first event and no more (TestMCPFrontReplicas:
// "request terminated without response", about 1 run in 4 under load).
func TestRoundRobinLateBodyEnd(t *testing.T) {
	t.Parallel()
	gotFirst, checked := make(chan struct{}), make(chan struct{})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: first\n\n")
		_ = http.NewResponseController(w).Flush()
		select {
		case <-checked:
		case <-r.Context().Done():
			return
		}
		select { // the proxy closing this connection, if it does
		case <-r.Context().Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		_, _ = fmt.Fprintf(w, "data: last %s\n\n", body)
	}))
	defer backend.Close()
	rr := startRoundRobinVia(t, lateBodyEnd{gotFirst: gotFirst, checked: checked}, backend.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+rr.addr+"/mcp", strings.NewReader("0123456789"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, len("data: first\n\n"))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "data: first\n\n" {
		t.Fatalf("first event: %q, %v", first, err)
	}
	close(gotFirst)
	rest, err := io.ReadAll(resp.Body)
	if want := "data: last 0123456789\n\n"; err != nil || string(rest) != want {
		t.Fatalf("rest of the answer through the round robin: %q, %v; want %q", rest, err, want)
	}
}

// lateBodyEnd is a Transport whose request bodies, once read to their
// Content-Length, answer the next read (the Transport's check of their
// end) only after gotFirst is closed; checked is closed after it.
type lateBodyEnd struct{ gotFirst, checked chan struct{} }

func (l lateBodyEnd) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.ContentLength > 0 {
		r = r.Clone(r.Context())
		r.Body = &lateEndBody{ReadCloser: r.Body, left: r.ContentLength, l: l, ctx: r.Context()}
	}
	return http.DefaultTransport.RoundTrip(r)
}

type lateEndBody struct {
	io.ReadCloser
	left int64
	l    lateBodyEnd
	ctx  context.Context
	done bool // checked is closed
}

func (b *lateEndBody) Read(p []byte) (int, error) {
	if b.left > 0 {
		n, err := b.ReadCloser.Read(p)
		b.left -= int64(n)
		return n, err
	}
	if !b.done {
		b.done = true
		select {
		case <-b.l.gotFirst:
		case <-b.ctx.Done():
		}
		defer close(b.l.checked)
	}
	return b.ReadCloser.Read(p)
}

// callsServed is a replica's count of ok calls of tool, from /metrics.
func callsServed(t *testing.T, p *toolsvcProc, tool string) int {
	t.Helper()
	resp, err := http.Get("http://" + p.adminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	n := 0
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "toolsvc_calls_total{") && strings.Contains(line, `tool="`+tool+`"`) && strings.Contains(line, `outcome="ok"`) {
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			n += int(v)
		}
	}
	return n
}

// TestMCPFrontReplicas: two toolsvc replicas behind a proxy that
// alternates backends on every HTTP request. A go-sdk client of each era
// keeps working while its requests move between replicas: every call
// succeeds, both replicas serve calls, and the 2025-11-25 session (minted
// by one replica, adopted by the other) still gets list_changed.
func TestMCPFrontReplicas(t *testing.T) {
	t.Parallel()
	up := startHTTPUpstream(t)
	c := cfg{Servers: servers{"h": goHTTP(up, upstream{})}}
	var reps []*toolsvcProc
	var backends []string
	for range 2 {
		p := startToolsvc(t, c, "--mcp-listen", "127.0.0.1:0")
		reps = append(reps, p)
		backends = append(backends, "http://"+p.mcpAddr)
	}
	rr := startRoundRobin(t, backends...)
	base := "http://" + rr.addr
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	for _, tc := range []struct{ name, version string }{{"session-2025-11-25", "2025-11-25"}, {"stateless-2026-07-28", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			before := []int{callsServed(t, reps[0], "h__echo"), callsServed(t, reps[1], "h__echo")}
			c := connectGoFront(t, ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, tc.version)
			want := grpcToolNames(t, ctx, reps[0])
			for i := range 3 {
				if got := c.names(t, ctx); !slices.Equal(got, want) {
					t.Fatalf("tools/list %d: %v, want %v", i, got, want)
				}
			}
			const calls = 10
			for i := range calls {
				text := fmt.Sprintf("%s %d", tc.name, i)
				res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "h__echo", Arguments: map[string]any{"text": text}})
				if err != nil || res.IsError || callText(t, res) != text {
					t.Fatalf("call %d through the round robin: %v %+v", i, err, res)
				}
			}
			served := []int{callsServed(t, reps[0], "h__echo") - before[0], callsServed(t, reps[1], "h__echo") - before[1]}
			t.Logf("session %q: calls served by replica 0 and 1: %v", c.cs.ID(), served)
			if served[0]+served[1] != calls || served[0] == 0 || served[1] == 0 {
				t.Errorf("calls served per replica = %v, want %d in all, some on each", served, calls)
			}

			// list_changed still arrives (the client's stream is on one
			// replica; both see the upstream's new tool).
			added := "rr_" + strings.ReplaceAll(tc.name, "-", "_")
			for attempt := 1; ; attempt++ {
				for len(c.changed) > 0 {
					<-c.changed
				}
				if _, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "h__add_tool", Arguments: map[string]any{"name": fmt.Sprint(added, attempt)}}); err != nil {
					t.Fatal(err)
				}
				select {
				case <-c.changed:
				case <-time.After(5 * time.Second):
					if tc.version == "" && attempt == 1 {
						// Measured: about 1 in 30 go-sdk (v1.8.0) clients
						// behind net/http/httputil.ReverseProxy see their
						// subscriptions/listen end within milliseconds of
						// opening (the proxy's request to the replica is
						// cancelled; 0 in 30 without the proxy), and the
						// client never re-opens it. A new client is a new
						// listen; the second must work.
						t.Logf("no list_changed: the client's subscriptions/listen was lost behind the proxy; connecting again")
						c = connectGoFront(t, ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, tc.version)
						continue
					}
					t.Fatal("no list_changed within 5s behind the round robin")
				}
				added = fmt.Sprint(added, attempt)
				break
			}
			eventually(t, 10*time.Second, "both replicas list h__"+added, func() bool {
				for range 2 { // one tools/list per replica
					if !slices.Contains(c.names(t, ctx), "h__"+added) {
						return false
					}
				}
				return true
			})
		})
	}
	t.Logf("proxy requests per replica: %d %d", rr.served[0].Load(), rr.served[1].Load())
}
