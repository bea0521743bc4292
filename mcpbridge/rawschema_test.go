package mcpbridge

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawSchemaSent tells 10 from 10.0, holds integers beyond 2^53 and keeps
// its keys unsorted; the catalog keeps it exactly (compacted).
const (
	rawSchemaSent = `{"type": "object", "properties": {"n": {"type": "integer", "maximum": 9007199254740993, "default": 10},
	                 "x": {"type": "number", "minimum": 10.0}}, "additionalProperties": false}`
	rawSchemaKept = `{"type":"object","properties":{"n":{"type":"integer","maximum":9007199254740993,"default":10},"x":{"type":"number","minimum":10.0}},"additionalProperties":false}`
	rawOutputSent = `{"type":"object","properties":{"big":{"const":18446744073709551617}}}`
)

func exactSchemaServer() *mcp.Server {
	s := goSDKServer()
	s.AddTool(&mcp.Tool{Name: "exact", InputSchema: json.RawMessage(rawSchemaSent), OutputSchema: json.RawMessage(rawOutputSent)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	return s
}

// TestRawSchemasOverHTTP: the catalog keeps each schema as the text a real
// go-sdk upstream sent, over streamable HTTP with SSE and with JSON
// responses, stateful and stateless, and over legacy SSE; pushes still
// arrive (the capture must not cost the standalone stream).
func TestRawSchemasOverHTTP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		h    func(*mcp.Server) http.Handler
		tr   Transport
		push bool
	}{
		{"streamable-sse", func(s *mcp.Server) http.Handler {
			return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
		}, TransportStreamableHTTP, true},
		{"streamable-json", func(s *mcp.Server) http.Handler {
			return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: true})
		}, TransportStreamableHTTP, true},
		{"stateless", func(s *mcp.Server) http.Handler {
			return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
		}, TransportStreamableHTTP, false},
		{"legacy-sse", func(s *mcp.Server) http.Handler {
			return mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
		}, TransportSSE, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := exactSchemaServer()
			b := newTestBridge(t, ServerConfig{Name: "h", Transport: tc.tr, URL: serveHTTP(t, tc.h(srv))})
			waitFor(t, b, "h__exact", func(s *Snapshot) bool { _, ok := s.Lookup("h__exact"); return ok })
			tl, _ := b.Catalog().Current().Lookup("h__exact")
			if string(tl.InputSchemaJSON) != rawSchemaKept || string(tl.OutputSchemaJSON) != rawOutputSent {
				t.Fatalf("schemas %s / %s, want exactly %s / %s", tl.InputSchemaJSON, tl.OutputSchemaJSON, rawSchemaKept, rawOutputSent)
			}
			if tl.InputSchema["type"] != "object" {
				t.Fatalf("decoded schema %v", tl.InputSchema)
			}
			echo, _ := b.Catalog().Current().Lookup("h__echo")
			if len(echo.InputSchemaJSON) == 0 || echo.InputSchema == nil {
				t.Fatalf("echo schemas: %s %v", echo.InputSchemaJSON, echo.InputSchema)
			}
			if !tc.push {
				return
			}
			// A pushed change is re-listed, exactly again.
			srv.AddTool(&mcp.Tool{Name: "exact2", InputSchema: json.RawMessage(rawSchemaSent)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{}, nil
				})
			waitFor(t, b, "h__exact2 (pushed)", func(s *Snapshot) bool { _, ok := s.Lookup("h__exact2"); return ok })
			if tl, _ := b.Catalog().Current().Lookup("h__exact2"); string(tl.InputSchemaJSON) != rawSchemaKept {
				t.Fatalf("pushed tool's schema %s", tl.InputSchemaJSON)
			}
		})
	}
}
