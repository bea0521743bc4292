package mcpbridge

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestListChangedSpamStarvesNobody: an upstream that sends list_changed
// without pause on its standalone stream (a real go-sdk server for its
// POSTs, its GET answered by a hostile writer) is re-listed at the
// debounce's pace, not once per notification, and starves neither another
// upstream's re-list nor the calls: both upstreams answer, and the other's
// new tool is published while the spam goes on.
func TestListChangedSpamStarvesNobody(t *testing.T) {
	t.Parallel()
	var spammed, listed atomic.Int64
	event := []byte("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
	spamURL := hostileGETsWith(t, func(c net.Conn) {
		if _, err := c.Write([]byte(sseHead + "\r\n")); err != nil {
			return
		}
		for {
			if _, err := c.Write(event); err != nil {
				return
			}
			spammed.Add(1)
		}
	}, func(r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"method":"tools/list"`)) {
			listed.Add(1)
		}
	})
	other := goSDKServer()
	otherURL := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return other }, nil))
	b := newTestBridge(t,
		ServerConfig{Name: "spam", Transport: TransportStreamableHTTP, URL: spamURL + "/mcp", ProtocolVersion: "2025-11-25"},
		ServerConfig{Name: "calm", Transport: TransportStreamableHTTP, URL: otherURL + "/mcp", ProtocolVersion: "2025-11-25"})
	waitStatus(t, b, "spam", "the spam to begin", func(ServerStatus) bool { return spammed.Load() > 1000 && listed.Load() > 1 })
	mcp.AddTool(other, &mcp.Tool{Name: "added"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	waitFor(t, b, "calm__added during the spam", func(s *Snapshot) bool { _, ok := s.Lookup("calm__added"); return ok })
	for _, tool := range []string{"spam__echo", "calm__echo"} {
		res, err := b.CallTool(t.Context(), tool, map[string]any{"text": "hi"}, nil)
		if err != nil || res.Content[0].(*mcp.TextContent).Text != "hi" {
			t.Fatalf("%s during the spam: %v, %v", tool, res, err)
		}
	}
	n, l := spammed.Load(), listed.Load()
	t.Logf("%d list_changed written, %d re-lists", n, l)
	if l*100 > n {
		t.Errorf("%d re-lists for %d list_changed: want them coalesced (the debounce)", l, n)
	}
}
