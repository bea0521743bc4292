package mcpbridge

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tests in this file meet real SDK peers over real loopback transports: a
// go-sdk server behind an httptest server (streamable stateful, stateless,
// legacy SSE), and the TypeScript SDK server of tests/node in a child
// process. Error classification is checked with the errors those peers
// produce, never with hand-written strings.

// goSDKServer is a go-sdk MCP server with an echo tool and a tool that
// blocks until cancelled.
func goSDKServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "peer", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	return s
}

// serveHTTP serves h on a loopback port for the test's lifetime.
func serveHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

// fastProbes are supervision timings short enough for a test to watch
// several probe periods.
func fastProbes(sc ServerConfig) ServerConfig {
	sc.PingInterval = 100 * time.Millisecond
	sc.PingTimeout = 2 * time.Second
	sc.PingFailures = 2
	sc.BackoffBase = 20 * time.Millisecond
	sc.BackoffMax = 100 * time.Millisecond
	return sc
}

// expectSteady checks that an upstream stays ready on its first session for
// a while (several probe periods), and that calls work.
func expectSteady(t *testing.T, b *Bridge, server string, tool string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		st, err := b.Server(server)
		if err != nil {
			t.Fatal(err)
		}
		if st.ConnectCount != 1 || st.State != StateReady {
			t.Fatalf("%s: state %v, connect count %d (want ready on session 1); last error: %s", server, st.State, st.ConnectCount, st.LastError)
		}
		time.Sleep(50 * time.Millisecond)
	}
	res, err := b.CallTool(context.Background(), tool, map[string]any{"text": "hi"}, nil)
	if err != nil {
		t.Fatalf("call after %s: %v", d, err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "hi" {
		t.Fatalf("echo = %q", got)
	}
}

// TestSSEUpstreamStaysUp: a legacy HTTP+SSE upstream keeps its first
// session. go-sdk's SSE client binds its event stream to the context given
// to Connect; a connect-timeout context ended it the moment Connect
// returned, and the next request met EOF (docs/upstream-behaviour.md §2).
func TestSSEUpstreamStaysUp(t *testing.T) {
	t.Parallel()
	srv := goSDKServer()
	url := serveHTTP(t, mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	b := newTestBridge(t, fastProbes(ServerConfig{Name: "sse", Transport: TransportSSE, URL: url}))
	expectSteady(t, b, "sse", "sse__echo", time.Second)
}

// TestStatelessUpstreamStaysUp: a 2026-07-28 stateless upstream is probed
// without being declared dead. go-sdk's stateless handler answers a ping
// without the per-request _meta with HTTP 400 / InvalidParams; the prober
// took that for a failed probe and tore a healthy session down every
// pingInterval × pingFailures (docs/upstream-behaviour.md §3).
func TestStatelessUpstreamStaysUp(t *testing.T) {
	t.Parallel()
	srv := goSDKServer()
	url := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	for _, pv := range []string{ProtocolLatest, DefaultProtocolVersion} {
		t.Run(pv, func(t *testing.T) {
			b := newTestBridge(t, fastProbes(ServerConfig{Name: "sl", Transport: TransportStreamableHTTP, URL: url, ProtocolVersion: pv}))
			expectSteady(t, b, "sl", "sl__echo", time.Second)
		})
	}
}

// TestRealPingRejection classifies the error a real stateless go-sdk server
// gives a ping without the 2026-07-28 _meta: an answer (the session is
// alive, ping is unsupported), not a dead transport.
func TestRealPingRejection(t *testing.T) {
	t.Parallel()
	srv := goSDKServer()
	url := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if pv := cs.InitializeResult().ProtocolVersion; pv < ProtocolStateless {
		t.Fatalf("negotiated %s, want the stateless era", pv)
	}
	err = cs.Ping(ctx, nil)
	if err == nil {
		t.Skip("this go-sdk accepts a ping without _meta; nothing to classify")
	}
	t.Logf("real rejection: %v", err)
	if !pingUnsupported(err) {
		t.Errorf("pingUnsupported(%v) = false: the upstream answered", err)
	}
	if isSessionDead(err) {
		t.Errorf("isSessionDead(%v) = true for an answer from a live upstream", err)
	}
	// With the _meta, go-sdk's stateless server answers MethodNotFound: ping
	// is no method of 2026-07-28. Also an answer.
	err = cs.Ping(ctx, &mcp.PingParams{Meta: mcp.Meta{
		mcp.MetaKeyProtocolVersion:    cs.InitializeResult().ProtocolVersion,
		mcp.MetaKeyClientCapabilities: map[string]any{},
	}})
	t.Logf("real rejection with _meta: %v", err)
	var werr *jsonrpc.Error
	if err != nil && (!errors.As(err, &werr) || !pingUnsupported(err) || isSessionDead(err)) {
		t.Errorf("ping with _meta: %v: want an answered JSON-RPC error", err)
	}
}

// nodeRuntimeServer starts tests/node/runtime_server.mjs (TypeScript SDK)
// over streamable HTTP and returns its URL and process.
func nodeRuntimeServer(t *testing.T) (string, *exec.Cmd) {
	t.Helper()
	dir, err := filepath.Abs("../tests/node")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules/@modelcontextprotocol/sdk")); err != nil {
		t.Fatalf("the TypeScript SDK is not installed in tests/node (scripts/test.sh installs it): %v", err)
	}
	cmd := exec.Command("node", "runtime_server.mjs", "http", "0")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if url, ok := strings.CutPrefix(sc.Text(), "URL "); ok {
			go func() {
				for sc.Scan() {
				}
			}()
			return url, cmd
		}
	}
	t.Fatal("runtime_server.mjs printed no URL")
	return "", nil
}

// TestKilledTSUpstreamMidCallIsUnavailable: SIGKILL a TypeScript-SDK
// streamable-HTTP upstream while a call is in flight. go-sdk reports
// "request terminated without response" (no JSON-RPC answer, no EOF); the
// call must fail as a lost session (UNAVAILABLE), not as an internal error,
// and the upstream must be seen down (docs/upstream-behaviour.md §3).
func TestKilledTSUpstreamMidCallIsUnavailable(t *testing.T) {
	t.Parallel()
	url, cmd := nodeRuntimeServer(t)
	sc := fastProbes(ServerConfig{Name: "ts", Transport: TransportStreamableHTTP, URL: url})
	sc.PingInterval = time.Hour // the lost call alone must trigger the check
	b := newTestBridge(t, sc)
	errc := make(chan error, 1)
	go func() {
		_, err := b.CallTool(context.Background(), "ts__sleep", map[string]any{"ms": 10000}, nil)
		errc <- err
	}()
	eventually(t, "the call in flight", func() bool { st, _ := b.Server("ts"); return st.InFlightCalls == 1 })
	time.Sleep(100 * time.Millisecond) // let the request reach the tool
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	var err error
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not return after its upstream was killed")
	}
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Reason != ReasonSessionLost {
		t.Fatalf("call on a killed upstream: %v (%T), want UnavailableError{session_lost}", err, err)
	}
	eventually(t, "the upstream seen down", func() bool {
		st, _ := b.Server("ts")
		return st.State != StateReady || st.ConnectCount > 1
	})
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(defaultTestTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// addEcho registers another echo-like tool on a live go-sdk server (it
// announces the change to its sessions).
func addTool(srv *mcp.Server, name string) {
	mcp.AddTool(srv, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
	})
}

// TestStatelessUpstreamPushes: a runtime tool of a 2026-07-28 stateless
// server reaches the catalog within 2 s under the default protocol setting
// (docs/interop.md). Under "auto" the stateless server is recognised (it
// refuses the standalone GET stream) and the session moves to 2026-07-28,
// where pushes ride subscriptions/listen; pinned to 2025-11-25, where no
// push can arrive, the upstream is re-listed every pushlessRefresh and its
// status says so.
func TestStatelessUpstreamPushes(t *testing.T) {
	for _, tc := range []struct {
		pin      string
		protocol string
		push     string
	}{
		{"", "2026-07-28", "up"},
		{DefaultProtocolVersion, DefaultProtocolVersion, "none"},
	} {
		t.Run("pin="+tc.pin, func(t *testing.T) {
			srv := goSDKServer()
			url := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
				&mcp.StreamableHTTPOptions{Stateless: true}))
			b := newTestBridge(t, fastProbes(ServerConfig{Name: "sl", Transport: TransportStreamableHTTP, URL: url, ProtocolVersion: tc.pin}))
			st, _ := b.Server("sl")
			if st.ProtocolVersion != tc.protocol || st.PushChannel != tc.push || st.ConnectCount != 1 {
				t.Fatalf("status: protocol %q push %q connects %d; want %q, %q, 1", st.ProtocolVersion, st.PushChannel, st.ConnectCount, tc.protocol, tc.push)
			}
			if pushless := slicesContainsSubstr(st.Warnings, "no push channel"); pushless != (tc.push != "up") {
				t.Errorf("warnings %q: want a push-channel warning: %v", st.Warnings, tc.push != "up")
			}
			began := time.Now()
			addTool(srv, "late")
			waitFor(t, b, "sl__late", func(s *Snapshot) bool { _, ok := s.Lookup("sl__late"); return ok })
			took := time.Since(began)
			t.Logf("runtime tool reached the catalog after %s (protocol %s, push %s)", took.Round(time.Millisecond), tc.protocol, tc.push)
			if took > 2*time.Second {
				t.Errorf("runtime tool took %s, want ≤ 2 s", took)
			}
		})
	}
}

func slicesContainsSubstr(ss []string, sub string) bool {
	for _, s := range ss {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// TestListenStreamCutIsReopened: the upstream ends a 2026-07-28 session's
// subscriptions/listen stream. go-sdk neither notices nor re-opens it; the
// bridge must see it (status, short re-listing) and re-open it, after
// which a runtime tool arrives by push again (docs/interop.md).
func TestListenStreamCutIsReopened(t *testing.T) {
	srv := goSDKServer()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	var listens atomic.Int32
	cut := func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"subscriptions/listen"`)) && listens.Add(1) == 1 {
				// The first listen stream ends after 300 ms, as a proxy
				// with a stream timeout or a restarting worker would end it.
				ctx, cancel := context.WithTimeout(r.Context(), 300*time.Millisecond)
				defer cancel()
				r = r.WithContext(ctx)
			}
		}
		h.ServeHTTP(w, r)
	}
	url := serveHTTP(t, http.HandlerFunc(cut))
	sc := fastProbes(ServerConfig{Name: "sl", Transport: TransportStreamableHTTP, URL: url, ProtocolVersion: ProtocolLatest})
	sc.BackoffBase = 500 * time.Millisecond // long enough to observe the gap
	sc.BackoffMax = 500 * time.Millisecond
	b := newTestBridge(t, sc)
	eventually(t, "the cut seen", func() bool {
		st, _ := b.Server("sl")
		return st.PushChannel == "down" && slicesContainsSubstr(st.Warnings, "no push channel")
	})
	eventually(t, "the stream re-opened", func() bool {
		st, _ := b.Server("sl")
		return st.PushChannel == "up" && listens.Load() >= 2
	})
	st, _ := b.Server("sl")
	if st.ConnectCount != 1 || slicesContainsSubstr(st.Warnings, "no push channel") {
		t.Fatalf("after re-open: connects %d, warnings %q", st.ConnectCount, st.Warnings)
	}
	// Re-listing is back to the 5-minute backstop: only a push can bring
	// this tool in time.
	addTool(srv, "late")
	began := time.Now()
	waitFor(t, b, "sl__late", func(s *Snapshot) bool { _, ok := s.Lookup("sl__late"); return ok })
	t.Logf("runtime tool after re-open arrived in %s", time.Since(began).Round(time.Millisecond))
}
