package mcpbridge

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// countingTap records what one tap is shown: the calls written (by method)
// and the responses read (by the id of their request). It asks for the
// replies of tools/list only.
type countingTap struct {
	mu      sync.Mutex
	written map[string]int
	ids     map[jsonrpc.ID]string // tools/list requests written, by id
	replies map[jsonrpc.ID]int    // responses read to them
	tools   int                   // tools in the tools/list results read
}

func newCountingTap() *countingTap {
	return &countingTap{written: map[string]int{}, ids: map[jsonrpc.ID]string{}, replies: map[jsonrpc.ID]int{}}
}

func (c *countingTap) wrote(_ context.Context, m jsonrpc.Message) jsonrpc.Message {
	req, ok := m.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.written[req.Method]++
	if req.Method == "tools/list" {
		c.ids[req.ID] = req.Method
	}
	return nil
}

func (c *countingTap) unsent(jsonrpc.Message) {}

func (c *countingTap) read(m jsonrpc.Message, _ *msgOrigin) {
	resp, ok := m.(*jsonrpc.Response)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.ids[resp.ID]; !ok {
		return
	}
	c.replies[resp.ID]++
	var r mcp.ListToolsResult
	if json.Unmarshal(resp.Result, &r) == nil {
		c.tools += len(r.Tools)
	}
}

// TestTapSeesEachMessageOnce: the one tap implementation is fed by the
// connection wrapper on every transport, against a real go-sdk server:
// legacy SSE and toolsvc's own streamable HTTP connection (SSE and JSON
// responses). Each tools/list toolsvc writes reaches the tap once, its
// reply once, before the client returns.
func TestTapSeesEachMessageOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		h    http.Handler
		tr   func(url string, tp tap) mcp.Transport
	}{
		{"connection/legacy-sse", mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return goSDKServer() }, nil),
			func(url string, tp tap) mcp.Transport {
				return withTaps(&mcp.SSEClientTransport{Endpoint: url}, []tap{tp})
			}},
		{"roundtripper/streamable-sse", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return goSDKServer() }, nil),
			func(url string, tp tap) mcp.Transport {
				return withTaps(testStreamable(url), []tap{tp})
			}},
		{"roundtripper/streamable-json", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return goSDKServer() },
			&mcp.StreamableHTTPOptions{JSONResponse: true}),
			func(url string, tp tap) mcp.Transport {
				return withTaps(testStreamable(url), []tap{tp})
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := newCountingTap()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "tap", Version: "1"}, nil).
				Connect(t.Context(), tc.tr(serveHTTP(t, tc.h), tp), sessionOptions(DefaultProtocolVersion))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cs.Close() }()
			const lists = 3
			for range lists {
				if _, err := cs.ListTools(t.Context(), nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := cs.Ping(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			tp.mu.Lock()
			defer tp.mu.Unlock()
			if tp.written["tools/list"] != lists || len(tp.ids) != lists {
				t.Fatalf("the tap saw %d tools/list written (%d ids), want %d", tp.written["tools/list"], len(tp.ids), lists)
			}
			for id := range tp.ids {
				if tp.replies[id] != 1 {
					t.Errorf("reply to %v read by the tap %d times, want once", id, tp.replies[id])
				}
			}
			if tp.tools != lists {
				t.Errorf("the tap read %d tools in the replies, want %d (one echo per listing)", tp.tools, lists)
			}
			if n := tp.written["ping"]; n != 1 {
				t.Errorf("the connection showed the tap %d pings, want 1", n)
			}
		})
	}
}

// testStreamable is toolsvc's streamable HTTP transport to url as the
// bridge configures it, without a session's hooks.
func testStreamable(url string) *streamableTransport {
	return &streamableTransport{endpoint: url, client: &http.Client{}, limit: DefaultMaxMessageBytes,
		log: slog.New(slog.DiscardHandler), maxRetries: 1}
}
