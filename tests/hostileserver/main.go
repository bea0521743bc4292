// Binary hostileserver is a go-sdk MCP server over stdio that misbehaves
// on purpose, for toolsvc's end-to-end tests of hostile upstreams
// (issue 23):
//
//	-mode hang-list   never answers tools/list (blocks until cancelled)
//	-mode bad-names   lists tools with an empty name, control characters,
//	                  a zero-width character and a 100 KB name beside "echo"
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	mode := flag.String("mode", "", "hang-list or bad-names")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Return text."}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	obj := map[string]any{"type": "object"}
	var tools []*mcp.Tool
	switch *mode {
	case "hang-list":
	case "bad-names":
		tools = []*mcp.Tool{
			{Name: "", InputSchema: obj},
			{Name: "echo", InputSchema: obj},
			{Name: "red\x1b[31malert", InputSchema: obj},
			{Name: "zero\u200bwidth", InputSchema: obj},
			{Name: strings.Repeat("a", 100_000), InputSchema: obj},
		}
	default:
		log.Fatalf("unknown -mode %q", *mode)
	}
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/list" {
				return next(ctx, method, req)
			}
			if *mode == "hang-list" {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return &mcp.ListToolsResult{Tools: tools}, nil
		}
	})
	if err := s.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
}
