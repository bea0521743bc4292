package tests

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
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
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rr.addr = lis.Addr().String()
	rr.srv = &http.Server{Handler: proxy}
	go func() { _ = rr.srv.Serve(lis) }()
	t.Cleanup(func() { _ = rr.srv.Close() })
	return rr
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
