package mcpfront

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPlainCall: which request bodies the JSON rule looks at further (a
// tools/call with an ID, no progress token, no task) and which it leaves
// to the event stream at once.
func TestPlainCall(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","arguments":{"text":"hi"}}}`, true},
		{` {"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"s__echo","_meta":{"progressToken":null}}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","_meta":{"progressToken":"t"}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","_meta":{"progressToken":0}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","task":{"ttl":1000}}}`, false},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"s__echo"}}`, false},           // no ID: a notification
		{`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"s__echo"}}`, false}, // null ID
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, false},                                // no params
		{`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo"}}]`, false},  // a batch
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"tools/call"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`, false}, // cut short
		// Keys as go-sdk matches them, exactly: "ProgressToken" is no
		// progress token to go-sdk's handler, "Method" no method.
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","_meta":{"ProgressToken":"t"}}}`, true},
		{`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"s__echo"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","Task":{"ttl":1000}}}`, true},
		// A repeated key: the last one, as go-sdk keeps it.
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/list","params":{"name":"s__echo"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"s__echo"}}`, true},
	} {
		if got := plainCall([]byte(tc.body)) != nil; got != tc.want {
			t.Errorf("plainCall(%s) = %v, want %v", tc.body, got, tc.want)
		}
	}
}

// TestPlainCallMeta: of a 2026-07-28 request's _meta the rule reads the
// log level, under the key go-sdk reads it from; the other keys (client
// information, capabilities) are not kept.
func TestPlainCallMeta(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"roots":{}},"` + mcp.MetaKeyLogLevel + `":"error"}}}`
	h := plainCall([]byte(body))
	if h == nil || h.Params.Meta == nil || string(h.Params.Meta.LogLevel) != `"error"` {
		t.Fatalf("plainCall(%s) = %+v, want the log level \"error\"", body, h)
	}
	if h := plainCall([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo"}}`)); h == nil || h.Params.Meta != nil {
		t.Fatalf("plainCall without _meta = %+v, want no _meta", h)
	}
}

// TestGoSDKRespondWithJSON pins the go-sdk patch answerJSON relies on: a
// POST whose context carries RespondWithJSON is answered with one
// application/json response (not a JSON array), and a notification its
// handler sends all the same reaches the client on the standalone stream;
// a POST without it is answered with an event stream, as before.
func TestGoSDKRespondWithJSON(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "json", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "progress", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1}); err != nil {
					return nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Json") != "" {
			r = r.WithContext(mcp.RespondWithJSON(r.Context()))
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	defer srv.CloseClientConnections()

	var mu sync.Mutex
	types := map[string]string{} // by X-Json
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		call := false
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return nil, err
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			call = bytes.Contains(body, []byte(`"tools/call"`))
		}
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err == nil && call {
			mu.Lock()
			types[r.Header.Get("X-Json")] = resp.Header.Get("Content-Type")
			mu.Unlock()
		}
		return resp, err
	})
	progress := make(chan float64, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params.Progress },
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, json := range []string{"", "1"} {
		hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if json != "" {
				r.Header.Set("X-Json", json)
			}
			return rt(r)
		})}
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		p := &mcp.CallToolParams{Name: "progress"}
		p.SetProgressToken("tok")
		res, err := cs.CallTool(ctx, p)
		if err != nil || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "done" {
			t.Fatalf("X-Json %q: call = %+v, %v", json, res, err)
		}
		select {
		case <-progress:
		case <-ctx.Done():
			t.Fatalf("X-Json %q: no progress notification", json)
		}
		_ = cs.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if got := types[""]; !strings.HasPrefix(got, "text/event-stream") {
		t.Errorf("without RespondWithJSON: Content-Type %q, want text/event-stream", got)
	}
	if got := types["1"]; !strings.HasPrefix(got, "application/json") {
		t.Errorf("with RespondWithJSON: Content-Type %q, want application/json", got)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// BenchmarkPlainCall is the JSON rule's read of a call's head, for a
// 2025-11-25 call and a 2026-07-28 one (its _meta with the client's
// information and capabilities).
//
//	go test -run XXX -bench PlainCall -benchmem ./service/mcpfront
func BenchmarkPlainCall(b *testing.B) {
	for name, body := range map[string]string{
		"2025-11-25": `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"s__echo","arguments":{"text":"hello"}}}`,
		"2026-07-28": `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"s__echo","arguments":{"text":"hello"},"_meta":{` +
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},` +
			`"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}}}}}`,
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if plainCall([]byte(body)) == nil {
					b.Fatal("not a plain call")
				}
			}
		})
	}
}

// TestPlainCallDeepBody: the head of a tools/call is read before go-sdk
// sees the request, by a recursive decoder with no depth limit: a body
// nested a few million levels deep (within the front door's 4 MiB body
// bound) overflowed the stack, a fatal error that ended the process.
// Past go-sdk's own limit the body is left to go-sdk, which refuses it.
func TestPlainCallDeepBody(t *testing.T) {
	t.Parallel()
	body := []byte(`{"jsonrpc":"2.0","method":"tools/call","id":1,"x":` + strings.Repeat("[", 4<<20) + `}`)
	if h := plainCall(body); h != nil {
		t.Fatalf("plainCall of a body nested 4 Mi levels deep = %+v, want nil (left to go-sdk)", h)
	}
	ok := []byte(`{"jsonrpc":"2.0","method":"tools/call","id":1,"params":{"name":"a","arguments":` + strings.Repeat("[", 900) + strings.Repeat("]", 900) + `}}`)
	if h := plainCall(ok); h == nil {
		t.Error("plainCall of a call nested 900 levels = nil, want its head")
	}
}
