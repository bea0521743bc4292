package mcpbridge

import (
	"context"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkClientListTools is go-sdk's client side of one listing of 100
// tools shaped like the fleet benchmark's (a title, a sentence, two typed
// properties), over an in-memory pair: the decode and the tool filter that
// a re-list storm runs 500 times (docs/benchmarks.md, "Calls during a
// refresh storm"). The server's encoding is in it too. schemas=text is
// the listing as the bridge makes it (mcp.WithRawToolSchemas: each schema
// kept as its text), schemas=decoded go-sdk's default (into
// map[string]any), as the bridge listed before.
func BenchmarkClientListTools(b *testing.B) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	for i := range 100 {
		srv.AddTool(&mcp.Tool{
			Name:        fmt.Sprintf("tool_%05d", i),
			Title:       fmt.Sprintf("Tool %d", i),
			Description: fmt.Sprintf("Generated tool %d: looks up a record by id and returns it as text, optionally verbose.", i),
			InputSchema: map[string]any{
				"type":     "object",
				"required": []any{"id"},
				"properties": map[string]any{
					"id":      map[string]any{"type": "string", "description": "record id"},
					"verbose": map[string]any{"type": "boolean"},
				},
			},
		}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(b.Context(), st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(), ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	for _, bc := range []struct {
		name string
		ctx  context.Context
	}{{"schemas=text", mcp.WithRawToolSchemas(b.Context())}, {"schemas=decoded", b.Context()}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cs.ListTools(bc.ctx, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
