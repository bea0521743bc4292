package mcpfront

import (
	"context"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// BenchmarkMCPFrontRevision compares what a new catalog revision of n
// tools costs the front door's tools/list, with every entry new (the worst
// case): the middleware's MCP form built from the snapshot (what the front
// door does, once per revision, on the first tools/list), against
// registering every tool with go-sdk's Server.AddTool (the alternative).
//
//	go test -run XXX -bench MCPFrontRevision -benchmem ./service
func BenchmarkMCPFrontRevision(b *testing.B) {
	const n = 1000
	schema := func(i int) map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{
			"q":     map[string]any{"type": "string", "description": fmt.Sprintf("query %d", i)},
			"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 100},
		}, "required": []any{"q"}}
	}
	snapshot := func() *mcpbridge.Snapshot {
		s := &mcpbridge.Snapshot{Revision: "r"}
		for i := range n {
			s.Tools = append(s.Tools, &mcpbridge.Tool{Name: fmt.Sprintf("srv__tool%04d", i), Server: "srv",
				Description: "a generated tool", InputSchema: schema(i), Available: true})
		}
		return s
	}
	b.Run("middleware", func(b *testing.B) {
		var c listCache
		for b.Loop() {
			b.StopTimer()
			s := snapshot()
			b.StartTimer()
			if got := c.tools(s, true); len(got) != n {
				b.Fatal(len(got))
			}
		}
	})
	b.Run("AddTool", func(b *testing.B) {
		srv := mcp.NewServer(&mcp.Implementation{Name: "b", Version: "1"}, nil)
		h := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		}
		names := make([]string, n)
		for b.Loop() {
			b.StopTimer()
			s := snapshot()
			b.StartTimer()
			for i, t := range s.Tools {
				names[i] = t.Name
				srv.AddTool(toolToMCP(t), h)
			}
			b.StopTimer()
			srv.RemoveTools(names...)
			b.StartTimer()
		}
	})
}
