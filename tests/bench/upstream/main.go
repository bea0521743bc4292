// Binary upstream is the MCP server (go-sdk) that go run ./tests/bench puts
// behind toolsvc, behind the peer gateways and in front of the direct
// client: the same binary on both sides of every comparison. It serves an
// echo tool plus -tools generated tools, over stdio or streamable HTTP. With
// -mode grpc it is instead the no-op gRPC unary the call overhead is measured
// against (grpc.health.v1 Check on loopback, no interceptors).
//
//	upstream -mode stdio [-tools N]
//	upstream -mode http  [-tools N] -addr 127.0.0.1:0   (prints "URL http://…/mcp")
//	upstream -mode grpc  -addr 127.0.0.1:0             (prints "ADDR host:port")
//	upstream -mode http  -servers N [-tools N]          (N servers at /mcp/0 … /mcp/N-1; POST /changed
//	                                                    adds a tool to every one of them at once)
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

type echoArgs struct {
	Text string `json:"text"`
}

func newServer(tools int) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-upstream", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Return text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	// Generated tools look like real ones: a title, a sentence of
	// description and a small object schema with two typed properties.
	for i := range tools {
		name := fmt.Sprintf("tool_%05d", i)
		s.AddTool(&mcp.Tool{
			Name:        name,
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
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ok"}}}, nil
		})
	}
	return s
}

func main() {
	mode := flag.String("mode", "stdio", "stdio, http or grpc")
	addr := flag.String("addr", "127.0.0.1:0", "listen address for -mode http and grpc")
	tools := flag.Int("tools", 0, "generated tools besides echo")
	fleet := flag.Int("servers", 0, "with -mode http: serve this many servers, at /mcp/0 … /mcp/N-1, and POST /changed (0: one server at /mcp)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("upstream: ")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	switch *mode {
	case "stdio":
		if err := newServer(*tools).Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
			log.Fatal(err)
		}
	case "http":
		s := newServer(*tools)
		lis, err := net.Listen("tcp", *addr)
		if err != nil {
			log.Fatal(err)
		}
		var handler http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
		if *fleet > 0 {
			handler = fleetHandler(*fleet, *tools)
		}
		hs := &http.Server{Handler: handler}
		fmt.Printf("URL http://%s/mcp\n", lis.Addr())
		go func() {
			<-ctx.Done()
			_ = hs.Close()
		}()
		if err := hs.Serve(lis); err != nil && err != http.ErrServerClosed {
			log.Fatal(err)
		}
	case "grpc":
		lis, err := net.Listen("tcp", *addr)
		if err != nil {
			log.Fatal(err)
		}
		gs := grpc.NewServer()
		healthpb.RegisterHealthServer(gs, health.NewServer())
		fmt.Printf("ADDR %s\n", lis.Addr())
		go func() {
			<-ctx.Done()
			gs.Stop()
		}()
		if err := gs.Serve(lis); err != nil {
			log.Fatal(err)
		}
	default:
		log.Fatalf("unknown -mode %q", *mode)
	}
}

// fleetHandler serves n servers of tools generated tools each (besides
// echo) at /mcp/<i>, for the bench's fleet phase: one process stands for
// n HTTP upstreams. POST /changed adds one tool to every server at once,
// so each announces tools/list_changed to its sessions together.
func fleetHandler(n, tools int) http.Handler {
	servers := make([]*mcp.Server, n)
	for i := range servers {
		servers[i] = newServer(tools)
	}
	mcpHandler := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/mcp/"))
		if err != nil || i < 0 || i >= n {
			return nil // go-sdk answers 400
		}
		return servers[i]
	}, nil)
	var changes atomic.Int64
	mux := http.NewServeMux()
	mux.Handle("/mcp/", mcpHandler)
	mux.HandleFunc("POST /changed", func(w http.ResponseWriter, _ *http.Request) {
		name := fmt.Sprintf("changed_%d", changes.Add(1))
		for _, s := range servers {
			s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ok"}}}, nil
				})
		}
		fmt.Fprintln(w, name)
	})
	return mux
}
