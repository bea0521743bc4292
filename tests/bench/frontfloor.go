package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The front phase's floor: the least an MCP-in/MCP-out proxy made of the
// libraries the front door is made of can add. It is this bench's binary
// again (so it has the go-sdk the bench was built with: the module's
// patched one, or v1.8.0 as released with -direct-sdk stock), started with
// floorProxyEnv naming the upstream: a go-sdk streamable HTTP server whose
// tools are the upstream's, each answered by a go-sdk ClientSession
// connected to the upstream over stdio, and nothing else (no catalog, no
// namespacing, no argument validation, no limits, no metrics).

// floorProxyEnv holds the upstream binary of a floor proxy process;
// floorJSONEnv=1 makes it answer with application/json instead of an
// event stream (go-sdk's StreamableHTTPOptions.JSONResponse),
// floorStatelessEnv=1 serve go-sdk's stateless handler (a session per
// request: what a 2026-07-28 client gets from the front door).
const (
	floorProxyEnv     = "TOOLSVC_BENCH_FLOOR_PROXY"
	floorJSONEnv      = "TOOLSVC_BENCH_FLOOR_JSON"
	floorStatelessEnv = "TOOLSVC_BENCH_FLOOR_STATELESS"
)

// floorProxyMain runs the floor proxy until SIGTERM; it prints
// "ADDR host:port" once it accepts.
func floorProxyMain(upstream string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client := mcp.NewClient(&mcp.Implementation{Name: "toolsvc-bench-floor", Version: "1"},
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	up, err := client.Connect(cctx, &mcp.CommandTransport{Command: exec.Command(upstream, "-mode", "stdio"), TerminateDuration: 2 * time.Second},
		&mcp.ClientSessionOptions{ProtocolVersion: protocol})
	cancel()
	if err != nil {
		return fmt.Errorf("floor proxy: connecting to the upstream: %w", err)
	}
	defer up.Close()
	srv := mcp.NewServer(&mcp.Implementation{Name: "toolsvc-bench-floor", Version: "1"}, nil)
	call := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return up.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
	}
	for t, err := range up.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("floor proxy: listing the upstream's tools: %w", err)
		}
		srv.AddTool(t, call)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{JSONResponse: os.Getenv(floorJSONEnv) == "1", Stateless: os.Getenv(floorStatelessEnv) == "1"})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = hs.Close()
	}()
	fmt.Printf("ADDR %s\n", l.Addr())
	if err := hs.Serve(l); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// startFloorProxy starts a floor proxy in front of its own stdio child of
// the upstream and connects the bench's MCP client (the one the peers get)
// to it: at 2025-11-25, or, stateless, as the front door's 2026-07-28
// client connects.
func startFloorProxy(ctx context.Context, e *env, name string, jsonResponse, stateless bool) (*mcp.ClientSession, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	env := []string{floorProxyEnv + "=" + e.upstream}
	if jsonResponse {
		env = append(env, floorJSONEnv+"=1")
	}
	if stateless {
		env = append(env, floorStatelessEnv+"=1")
	}
	p, err := start(name, env, e.root, self)
	if err != nil {
		return nil, err
	}
	addr, err := p.waitFor(ctx, addrRE, 60*time.Second)
	if err != nil {
		return nil, err
	}
	var s *mcp.ClientSession
	if stateless {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		s, err = mcpClient.Connect(cctx, httpTransport("http://"+addr+"/mcp"), nil)
		cancel()
	} else {
		s, err = connectMCP(ctx, httpTransport("http://"+addr+"/mcp"))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: connect: %w; output:\n%s", name, err, p.output())
	}
	return s, nil
}
