package mcpbridge

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRequestTooLargeForUpstreamKeepsSession: a call whose request the
// upstream refuses as too large (HTTP 413: go-sdk's streamable handler
// bounds a body at 4 MiB by default, and toolsvc's request bound lets 4 MiB
// of name and arguments through, before the JSON-RPC envelope) fails that
// call only. It ended the session ("session lost: sending \"tools/call\":
// Request Entity Too Large"): streamConn.check refuses only 500, 502, 503,
// 504 and 429 as the request's alone, so any caller could drop the shared
// session of an upstream, and every call in flight on it, with one large
// call (found by TestMCPFrontOddBodies' "at the request bound"; the
// upstream's refusal is now RequestTooLargeError and the session goes on).
func TestRequestTooLargeForUpstreamKeepsSession(t *testing.T) {
	t.Parallel()
	srv := goSDKServer()
	url := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	b := newTestBridge(t, ServerConfig{Name: "h", Transport: TransportStreamableHTTP, URL: url + "/mcp", ProtocolVersion: "2025-11-25"})
	before, _ := b.Server("h")
	_, err := b.CallTool(t.Context(), "h__echo", map[string]any{"text": strings.Repeat("a", 4<<20)}, nil)
	var big *RequestTooLargeError
	if !errors.As(err, &big) || big.Server != "h" || big.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a call over the upstream's body bound: %v, want *RequestTooLargeError for h, 413", err)
	}
	if st, _ := b.Server("h"); st.State != StateReady || st.ConnectCount != before.ConnectCount || strings.Contains(st.LastError, "session lost") {
		t.Fatalf("after a 413: state %v, connects %d (before %d), last error %q; want the session kept", st.State, st.ConnectCount, before.ConnectCount, st.LastError)
	}
	res, err := b.CallTool(t.Context(), "h__echo", map[string]any{"text": "hi"}, nil)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Fatalf("the next call: %v, %v", res, err)
	}
}
