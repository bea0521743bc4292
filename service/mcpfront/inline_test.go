package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
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
