// Binary testserver is a real MCP server (go-sdk) for toolsvc's end-to-end
// tests. It grows tools at runtime, can make tools/list slow, sends
// progress, and counts the tools/list calls it answers.
//
//	testserver -mode stdio
//	testserver -mode http -addr 127.0.0.1:0    (prints "URL http://…/mcp")
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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	listCalls  atomic.Int64
	slowListMS atomic.Int64
)

type pingArgs struct {
	X int `json:"x"`
}

type extraArgs struct {
	Y int `json:"y"`
}

type echoArgs struct {
	Text string `json:"text"`
}

type msArgs struct {
	MS int `json:"ms"`
}

type progressArgs struct {
	Steps  int `json:"steps"`
	StepMS int `json:"step_ms"`
}

type addToolArgs struct {
	Name string `json:"name"`
}

type stats struct {
	ListCalls int64 `json:"list_calls"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "push-victim", Version: "1.0.0"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				listCalls.Add(1)
				if ms := slowListMS.Load(); ms > 0 {
					select {
					case <-time.After(time.Duration(ms) * time.Millisecond):
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
			}
			return next(ctx, method, req)
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ping_me", Description: "Return x + 1."},
		func(_ context.Context, _ *mcp.CallToolRequest, in pingArgs) (*mcp.CallToolResult, any, error) {
			return text(fmt.Sprint(in.X + 1)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Return text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "register_extra", Description: "Register extra_tool, which pushes tools/list_changed while this call is still in flight."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, &mcp.Tool{Name: "extra_tool", Description: "Return y * 2."},
				func(_ context.Context, _ *mcp.CallToolRequest, in extraArgs) (*mcp.CallToolResult, any, error) {
					return text(fmt.Sprint(in.Y * 2)), nil, nil
				})
			// go-sdk sends list_changed 10 ms after the change: stay in
			// flight past that, so the push and this result share the
			// session, as in the seed.
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
			}
			return text("registered"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "Register a tool named name that answers \"<name> ok\"."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addToolArgs) (*mcp.CallToolResult, any, error) {
			name := in.Name
			s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return text(name + " ok"), nil
				})
			return text("added " + name), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "set_slow_list", Description: "Make every tools/list answer after ms milliseconds (0: fast)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in msArgs) (*mcp.CallToolResult, any, error) {
			slowListMS.Store(int64(in.MS))
			return text("ok"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "progress", Description: "Send steps progress notifications, step_ms apart, then return."},
		func(ctx context.Context, req *mcp.CallToolRequest, in progressArgs) (*mcp.CallToolResult, any, error) {
			tok := req.Params.GetProgressToken()
			for i := 1; i <= in.Steps; i++ {
				select {
				case <-time.After(time.Duration(in.StepMS) * time.Millisecond):
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
				if tok != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: tok, Progress: float64(i), Total: float64(in.Steps),
						Message: fmt.Sprintf("sent %d", time.Now().UnixMicro()),
					})
				}
			}
			return text(fmt.Sprintf("%d steps", in.Steps)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "stats", Description: "Counters."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, stats, error) {
			return nil, stats{ListCalls: listCalls.Load()}, nil
		})
	return s
}

func main() {
	mode := flag.String("mode", "stdio", "stdio or http")
	addr := flag.String("addr", "127.0.0.1:0", "listen address for -mode http")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := newServer()
	switch *mode {
	case "stdio":
		if err := s.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
			log.Fatal(err)
		}
	case "http":
		lis, err := net.Listen("tcp", *addr)
		if err != nil {
			log.Fatal(err)
		}
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
		srv := &http.Server{Handler: h}
		fmt.Printf("URL http://%s/mcp\n", lis.Addr())
		go func() {
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		if err := srv.Serve(lis); err != nil && err != http.ErrServerClosed {
			log.Fatal(err)
		}
	default:
		log.Fatalf("unknown -mode %q", *mode)
	}
}
