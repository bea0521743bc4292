package mcpbridge

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostilePages answers tools/list, once hostile is set, with what page
// returns for the cursor it was asked for: the listings an upstream can
// put on the wire. Until then the server's own tools are listed.
func hostilePages(hostile *atomic.Bool, page func(cursor string) *mcp.ListToolsResult) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" && hostile.Load() {
				return page(req.GetParams().(*mcp.ListToolsParams).Cursor), nil
			}
			return next(ctx, method, req)
		}
	}
}

func echoAnd(tools ...*mcp.Tool) []*mcp.Tool {
	return append([]*mcp.Tool{{Name: "echo", InputSchema: map[string]any{"type": "object"}}}, tools...)
}

// TestHostileListingIsBounded: a real go-sdk upstream over HTTP that,
// after a first honest listing, answers its list_changed re-list with
// pagination meant to exhaust toolsvc: cursors without end, a cursor of
// megabytes, a cursor loop, more tools than any catalog holds. Each re-list
// fails soon with an error that names the bound (not at the refresh
// timeout, having kept every page until then), and the upstream keeps its
// last good tools and its session: calls go on.
func TestHostileListingIsBounded(t *testing.T) {
	t.Parallel()
	obj := map[string]any{"type": "object"}
	cases := []struct {
		name string
		page func(cursor string) *mcp.ListToolsResult
		want string
	}{
		{"endless cursors", func(cur string) *mcp.ListToolsResult {
			n, _ := strconv.Atoi(strings.TrimPrefix(cur, "p"))
			return &mcp.ListToolsResult{Tools: []*mcp.Tool{{Name: fmt.Sprintf("t%d", n), InputSchema: obj}},
				NextCursor: fmt.Sprintf("p%d", n+1)}
		}, "tools/list: more than 1000 pages"},
		{"huge cursor", func(cur string) *mcp.ListToolsResult {
			return &mcp.ListToolsResult{Tools: echoAnd(), NextCursor: cur + strings.Repeat("c", 1<<20)}
		}, "tools/list: a cursor of more than 65536 bytes"},
		{"cursor loop", func(cur string) *mcp.ListToolsResult {
			next := map[string]string{"": "a", "a": "b", "b": "a"}[cur]
			return &mcp.ListToolsResult{Tools: echoAnd(), NextCursor: next}
		}, `tools/list returned cursor "a" twice`},
		{"more tools than a listing holds", func(cur string) *mcp.ListToolsResult {
			n, _ := strconv.Atoi(cur)
			tools := make([]*mcp.Tool, 40_000)
			for i := range tools {
				tools[i] = &mcp.Tool{Name: fmt.Sprintf("t%d_%d", n, i), InputSchema: obj}
			}
			return &mcp.ListToolsResult{Tools: tools, NextCursor: strconv.Itoa(n + 1)}
		}, "tools/list: more than 100000 entries"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var hostile atomic.Bool
			srv := goSDKServer()
			srv.AddReceivingMiddleware(hostilePages(&hostile, tc.page))
			url := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
			b := newTestBridge(t, ServerConfig{Name: "h", Transport: TransportStreamableHTTP, URL: url + "/mcp",
				ProtocolVersion: "2025-11-25", RefreshTimeout: 10 * time.Minute})
			waitFor(t, b, "h__echo", func(s *Snapshot) bool { _, ok := s.Lookup("h__echo"); return ok })
			hostile.Store(true)
			// A new tool: go-sdk's server announces list_changed.
			mcp.AddTool(srv, &mcp.Tool{Name: "other"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
			// A thousand pages, or 100,000 tools decoded, under -race on a
			// loaded machine: a generous bound.
			for deadline := time.Now().Add(6 * defaultTestTimeout); ; time.Sleep(10 * time.Millisecond) {
				st, _ := b.Server("h")
				if strings.Contains(st.LastError, tc.want) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("timed out waiting for the re-list refused: %s; last error %q", tc.want, st.LastError)
				}
			}
			snap := b.Catalog().Current()
			if _, ok := snap.Lookup("h__echo"); !ok || len(toolNames(snap, "h")) != 1 {
				t.Fatalf("catalog %v after the refused re-list, want the last good one (h__echo)", toolNames(snap, "h"))
			}
			res, err := b.CallTool(t.Context(), "h__echo", map[string]any{"text": "hi"}, nil)
			if err != nil || res.Content[0].(*mcp.TextContent).Text != "hi" {
				t.Fatalf("a call after the refused re-list: %v, %v", res, err)
			}
		})
	}
}
