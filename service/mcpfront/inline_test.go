package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inlineServer is a go-sdk server whose tools say where their handler ran,
// behind go-sdk's stateful and stateless streamable handlers, each request
// marked RespondWithJSON when its X-Json header says so (as the front
// door's JSON rule marks a plain call).
type inlineServer struct {
	stateful, stateless *httptest.Server
	runs                atomic.Int32 // tool handlers run
	blocked             chan struct{}
	unblocked           chan error // the block tool's ctx.Err once it ended
}

func newInlineServer(t *testing.T) *inlineServer {
	t.Helper()
	s := &inlineServer{blocked: make(chan struct{}, 1), unblocked: make(chan error, 1)}
	server := mcp.NewServer(&mcp.Implementation{Name: "inline", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "where", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.runs.Add(1)
			buf := make([]byte, 64<<10)
			stack := string(buf[:runtime.Stack(buf, false)])
			// net/http's connection goroutine is the POST's own; go-sdk's
			// handler goroutine starts in jsonrpc2's handleAsync.
			where := fmt.Sprintf("inline=%v http=%v async=%v", mcp.HandledInline(ctx),
				strings.Contains(stack, "net/http.(*conn).serve"), strings.Contains(stack, "handleAsync"))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: where}}}, nil
		})
	server.AddTool(&mcp.Tool{Name: "block", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.runs.Add(1)
			s.blocked <- struct{}{}
			<-ctx.Done()
			s.unblocked <- ctx.Err()
			return nil, ctx.Err()
		})
	mark := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Json") != "" {
				r = r.WithContext(mcp.RespondWithJSON(r.Context()))
			}
			h.ServeHTTP(w, r)
		})
	}
	get := func(*http.Request) *mcp.Server { return server }
	s.stateful = httptest.NewServer(mark(mcp.NewStreamableHTTPHandler(get, nil)))
	s.stateless = httptest.NewServer(mark(mcp.NewStreamableHTTPHandler(get,
		&mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true})))
	t.Cleanup(func() {
		for _, srv := range []*httptest.Server{s.stateful, s.stateless} {
			srv.CloseClientConnections()
			srv.Close()
		}
	})
	return s
}

// markedClient sets X-Json on every request it sends.
func markedClient(json bool) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if json {
			r.Header.Set("X-Json", "1")
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
}

// TestGoSDKHandlesJSONCallInline: a tools/call answered as application/json
// because its request asked for it (RespondWithJSON) runs its handler on
// the POST's own goroutine (the go-sdk patch's HandleInline), in both
// eras, with go-sdk's client; any other call still runs on go-sdk's handler
// goroutine. A cancellation reaches an inline handler as it reached a
// queued one: by ID (2025-11-25's notifications/cancelled) and by the end
// of the HTTP request (2026-07-28, PropagateRequestCancellation).
func TestGoSDKHandlesJSONCallInline(t *testing.T) {
	s := newInlineServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name, version string
		srv           *httptest.Server
	}{
		{"2025-11-25", "2025-11-25", s.stateful},
		{"2026-07-28", "2026-07-28", s.stateless},
	} {
		for _, marked := range []bool{false, true} {
			client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: tc.srv.URL, HTTPClient: markedClient(marked)},
				&mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatalf("%s: connect: %v", tc.name, err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "where"})
			if err != nil || res.IsError || len(res.Content) != 1 {
				t.Fatalf("%s, RespondWithJSON %v: where = %+v, %v", tc.name, marked, res, err)
			}
			want := "inline=false http=false async=true"
			if marked {
				want = "inline=true http=true async=false"
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != want {
				t.Errorf("%s, RespondWithJSON %v: handler ran with %s, want %s", tc.name, marked, got, want)
			}
			if marked {
				callCtx, stop := context.WithCancel(ctx)
				errc := make(chan error, 1)
				go func() {
					_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "block"})
					errc <- err
				}()
				<-s.blocked
				stop()
				select {
				case err := <-s.unblocked:
					if !errors.Is(err, context.Canceled) {
						t.Errorf("%s: the inline handler's context ended with %v, want canceled", tc.name, err)
					}
				case <-ctx.Done():
					t.Fatalf("%s: the client's cancellation never reached the inline handler", tc.name)
				}
				if err := <-errc; err == nil {
					t.Errorf("%s: the cancelled call succeeded", tc.name)
				}
			}
			_ = cs.Close()
		}
	}
}

// TestGoSDKInlineKeepsChecks: what a hostile client could try against the
// inline path is refused before any handler runs, as on the queued path:
// a call on a session that does not exist or has ended (404), a call
// before the session is initialized (go-sdk's session refuses it), a
// 2026-07-28 call whose Mcp-Name or MCP-Protocol-Version header
// contradicts its body (400, -32020 / -32602). Every request is marked
// RespondWithJSON.
func TestGoSDKInlineKeepsChecks(t *testing.T) {
	s := newInlineServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	post := func(url, sid, pv string, headers map[string]string, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Json", "1")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		if pv != "" {
			req.Header.Set("Mcp-Protocol-Version", pv)
		}
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const call25 = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"where"}}`

	// A live session, then ended.
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.stateful.URL, HTTPClient: markedClient(true)},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	sid := cs.ID()
	if code, body := post(s.stateful.URL, sid, "2025-11-25", nil, call25); code != http.StatusOK || !strings.Contains(body, "inline=true") {
		t.Fatalf("a call in the live session: %d %s, want 200 and an inline handler", code, body)
	}
	_ = cs.Close() // DELETE
	runs := s.runs.Load()

	meta26 := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	call26 := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"where",` + meta26 + `}}`
	for _, tc := range []struct {
		name, url, sid, pv string
		headers            map[string]string
		body               string
		code               int
		in                 string // in the answer
	}{
		{"unknown session", s.stateful.URL, "no-such-session", "2025-11-25", nil, call25, http.StatusNotFound, "session not found"},
		{"ended session", s.stateful.URL, sid, "2025-11-25", nil, call25, http.StatusNotFound, "session not found"},
		{"before initialize", s.stateful.URL, "", "2025-11-25", nil, call25, http.StatusOK, "invalid during session initialization"},
		{"Mcp-Name mismatch", s.stateless.URL, "", "2026-07-28", map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "block"}, call26, http.StatusBadRequest, "-32020"},
		{"protocol version mismatch", s.stateless.URL, "", "2026-07-28", nil,
			strings.Replace(call26, `protocolVersion":"2026-07-28"`, `protocolVersion":"2025-11-25"`, 1), http.StatusBadRequest, "does not match"},
	} {
		code, body := post(tc.url, tc.sid, tc.pv, tc.headers, tc.body)
		if code != tc.code || !strings.Contains(body, tc.in) {
			t.Errorf("%s: HTTP %d %s; want %d and %q", tc.name, code, strings.TrimSpace(body), tc.code, tc.in)
		}
		if tc.code == http.StatusOK {
			var m map[string]any
			if err := json.Unmarshal([]byte(body), &m); err != nil || m["error"] == nil {
				t.Errorf("%s: answer %s, want a JSON-RPC error", tc.name, body)
			}
		}
	}
	if n := s.runs.Load(); n != runs {
		t.Errorf("a refused request ran a tool handler (%d runs, want %d)", n, runs)
	}
	// The stateless handler still serves a well-formed call inline.
	if code, body := post(s.stateless.URL, "", "2026-07-28", map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "where"}, call26); code != http.StatusOK || !strings.Contains(body, "inline=true") {
		t.Errorf("a well-formed 2026-07-28 call: %d %s, want 200 and an inline handler", code, body)
	}
}

// raceServer is a go-sdk server whose every request is marked
// RespondWithJSON, with its net/http error log kept (a panic net/http
// recovers is logged there).
func raceServer(t *testing.T, tools func(*mcp.Server)) (*httptest.Server, *strings.Builder, *sync.Mutex) {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "race", Version: "1"}, nil)
	tools(server)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(mcp.RespondWithJSON(r.Context())))
	}))
	var mu sync.Mutex
	var logged strings.Builder
	srv.Config.ErrorLog = log.New(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logged.Write(p)
	}), "", 0)
	srv.Start()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv, &logged, &mu
}

// TestGoSDKInlineRacesSessionClose: calls handled inline while their
// session is closed (DELETE) at the same moment. A call that reached
// HandleInline after the session's connection was completely done was
// counted in flight on it: jsonrpc2 panicked ("transitioned to non-idle
// when already done"), and so did the session's Close after it, leaving
// the session never removed (found by review; 300 rounds of eight calls and a DELETE: three panics before).
// Now such a call is treated as one arriving after the close; no panic is
// logged, and every close returns.
func TestGoSDKInlineRacesSessionClose(t *testing.T) {
	srv, logged, mu := raceServer(t, func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	send := func(method, sid, body string) {
		req, err := http.NewRequestWithContext(ctx, method, srv.URL, strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err == nil { // a dropped connection (a recovered panic) is in the log
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	}
	for round := range 300 {
		client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("round %d: connect: %v", round, err)
		}
		sid := cs.ID()
		// Raw requests, all let go at once: eight calls and the DELETE.
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				<-start
				send(http.MethodPost, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo"}}`, 100+i))
			})
		}
		wg.Go(func() {
			<-start
			send(http.MethodDelete, sid, "")
		})
		close(start)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: the calls or the session's close never returned", round)
		}
		_ = cs.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logged.String(), "panic") {
		t.Fatalf("the server panicked:\n%s", logged.String())
	}
}

// TestGoSDKInlineHandlerPanic: a handler that panics on the inline path
// (net/http recovers it there, where on go-sdk's handler goroutine it
// ended the process) leaves the session usable: the request is answered
// and counted out before the panic goes on, so its ID is free, the next
// call is served and the session closes. Before, the ID stayed in use for
// good and the session's close never returned.
func TestGoSDKInlineHandlerPanic(t *testing.T) {
	srv, _, _ := raceServer(t, func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "panic", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { panic("tool bug") })
		s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "panic"}); err == nil {
		t.Fatal("the panicking call succeeded")
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo"})
	if err != nil || res.IsError {
		t.Fatalf("the call after the panic: %+v, %v", res, err)
	}
	closed := make(chan error, 1)
	go func() { closed <- cs.Close() }()
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("the session's close never returned after a handler panicked")
	}
}
