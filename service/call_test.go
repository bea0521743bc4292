package service

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestCallToolSchemaEdge: over a real in-memory upstream, a schema
// violation never reaches it, and a tool whose schema cannot be compiled is
// called unchecked.
func TestCallToolSchemaEdge(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	ctx := ctxT(t)
	calls := 0
	f.upstream.AddTool(&mcp.Tool{Name: "old", InputSchema: map[string]any{"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "required": []any{"a"}}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls++
			return &mcp.CallToolResult{}, nil
		})
	waitTool(t, ctx, f, "mem__old")
	if _, err := f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "mem__old"}); err != nil {
		t.Fatalf("a tool with an unsupported schema draft: %v, want the call forwarded", err)
	}
	_, err := f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "mem__echo", ArgumentsJson: `{"text": 3}`})
	wantInvalid(t, err, "arguments_json.text")
	if calls != 1 {
		t.Errorf("upstream calls = %d, want 1", calls)
	}
}

func waitTool(t *testing.T, ctx context.Context, f *fixture, name string) {
	t.Helper()
	sub := f.bridge.Catalog().Subscribe()
	defer sub.Close()
	for {
		if _, ok := f.bridge.Catalog().Current().Lookup(name); ok {
			return
		}
		select {
		case <-sub.C():
		case <-ctx.Done():
			t.Fatalf("%s never reached the catalog", name)
		}
	}
}
