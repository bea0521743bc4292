// Binary manytools is an MCP server (stdio) with a large tool list, for
// the end-to-end tests of large catalogs: -tools N tools named tool00000...,
// optionally one tool with a huge description (-huge BYTES), and a tool
// "bump" that changes tool00000's description (tools/list_changed follows),
// so a test can make one tool of a large catalog change many times.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	n := flag.Int("tools", 1000, "number of generated tools")
	huge := flag.Int("huge", 0, "if > 0, add a tool \"huge\" whose description is this many bytes")
	schemaBytes := flag.Int("schema-bytes", 0, "if > 0, tool00000's input schema has a description of about this many bytes")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	s := mcp.NewServer(&mcp.Implementation{Name: "manytools", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string"}}}
	for i := range *n {
		s.AddTool(&mcp.Tool{Name: fmt.Sprintf("tool%05d", i), Description: fmt.Sprintf("generated tool number %d", i), InputSchema: schema}, noop)
	}
	if *huge > 0 {
		s.AddTool(&mcp.Tool{Name: "huge", Description: strings.Repeat("h", *huge), InputSchema: schema}, noop)
	}
	var version atomic.Int64
	bumped := func(v int64) *mcp.Tool {
		in := map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string"}}}
		if *schemaBytes > 0 {
			in["description"] = fmt.Sprintf("v%d %s", v, strings.Repeat("s", *schemaBytes))
		}
		return &mcp.Tool{Name: "tool00000", Description: fmt.Sprintf("generated tool number 0, version %d", v), InputSchema: in}
	}
	if *n > 0 {
		s.AddTool(bumped(0), noop)
	}
	s.AddTool(&mcp.Tool{Name: "bump", Description: "Change tool00000 (its description, and its schema with -schema-bytes).", InputSchema: schema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			v := version.Add(1)
			s.AddTool(bumped(v), noop)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(v)}}}, nil
		})
	if err := s.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
}
