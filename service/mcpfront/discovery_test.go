package mcpfront

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/service/core"
)

// TestProgressiveDiscovery: tools/list is the core set plus search_tools;
// search_tools returns definitions of tools that were not listed, and they
// can be called by name, in the stateful and the stateless era.
func TestProgressiveDiscovery(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 40, core.AuthConfig{})
	f.upstream.AddTool(&mcp.Tool{Name: "translate_text", Description: "Translate text into another language.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "bonjour"}}}, nil
		})
	ctx, srv := serveFront(t, f.core, Options{ListenAddr: "127.0.0.1:0", Discovery: Discovery{Progressive: true, CoreTools: []string{"mem__echo"}}}, 0)
	for _, version := range []string{"2025-11-25", ""} {
		t.Run("version="+version, func(t *testing.T) {
			cs := connectFront(t, ctx, mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil), srv.URL, "", version)
			deadline := ctxT(t)
			var names []string
			for {
				names = names[:0]
				for tool, err := range cs.Tools(ctx, nil) {
					if err != nil {
						t.Fatal(err)
					}
					names = append(names, tool.Name)
				}
				if _, ok := f.bridge.Catalog().Current().Lookup("mem__translate_text"); ok || deadline.Err() != nil {
					break
				}
			}
			if !slices.Equal(names, []string{SearchToolName, "mem__echo"}) {
				t.Fatalf("tools/list = %v, want search_tools and the core set", names)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: SearchToolName, Arguments: map[string]any{"query": "translation of a sentence", "limit": 3}})
			if err != nil || res.IsError {
				t.Fatalf("search_tools: %v %+v", err, res)
			}
			var found struct {
				Tools    []mcp.Tool `json:"tools"`
				Revision string     `json:"revision"`
			}
			b, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(b, &found); err != nil {
				t.Fatal(err)
			}
			if len(found.Tools) == 0 || found.Tools[0].Name != "mem__translate_text" || found.Tools[0].InputSchema == nil || found.Revision == "" {
				t.Fatalf("search_tools found %+v", found)
			}
			out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: found.Tools[0].Name, Arguments: map[string]any{"text": "hello"}})
			if err != nil || out.IsError {
				t.Fatalf("calling the found tool: %v %+v", err, out)
			}
			// An argument a model can fix is an isError result naming it.
			bad, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: SearchToolName, Arguments: map[string]any{}})
			if err != nil || !bad.IsError {
				t.Fatalf("search_tools without a query: %v %+v", err, bad)
			}
			data, _ := json.Marshal(bad.Meta[ErrorMetaKey])
			var e struct {
				Fields []string `json:"fields"`
			}
			_ = json.Unmarshal(data, &e)
			if !slices.Contains(e.Fields, "arguments.query") {
				t.Errorf("error data %s does not name arguments.query", data)
			}
		})
	}
}
