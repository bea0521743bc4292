// Command floorgw is the floor of the bench's call phases: the least a
// gateway that takes toolsvc.v1.ToolService's CallTool over gRPC and makes
// the call with go-sdk's client can cost, built from the libraries toolsvc
// is built from (grpc-go's server with no interceptors, go-sdk's
// ClientSession as this module patches it, go-sdk's own stdio and
// streamable-HTTP transports) and none of toolsvc's logic: no
// authentication, catalog, argument validation, breaker, limits, timeouts,
// metrics, logs or taps. A CallTool named SERVER__TOOL goes straight to
// that server's session; only text content is carried back (the bench
// calls echo).
//
// The bench runs it beside toolsvc against the same upstream binary and
// reports its p50 against the same denominator as toolsvc's (direct call +
// the no-op gRPC hop): what toolsvc adds beyond it is toolsvc's, what it
// adds itself is the libraries' (docs/benchmarks.md, "The floor of a
// gRPC-in, MCP-out gateway").
//
// Servers: "s" is its own stdio child of -upstream, "h" the streamable
// HTTP upstream at -http, "g" the MCP gRPC binding upstream at -mcp-grpc
// (a gRPC client, no MCP session). Each is optional. It prints
// "ADDR host:port" once it serves; with -pprof it serves net/http/pprof
// too (the bench's -profile takes the floor's CPU profile and execution
// trace beside toolsvc's).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof" // -pprof: the bench's -profile profiles the floor beside toolsvc
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// protocol is the version the bench's direct clients and toolsvc pin.
const protocol = "2025-11-25"

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	upstream := flag.String("upstream", "", "the bench upstream binary: server s is its stdio child")
	httpURL := flag.String("http", "", "streamable HTTP upstream URL: server h")
	grpcAddr := flag.String("mcp-grpc", "", "MCP gRPC binding upstream address: server g")
	pprofAddr := flag.String("pprof", "", "serve net/http/pprof on this address (prints \"pprof on ADDR\")")
	flag.Parse()
	log.SetFlags(0)
	ctx := context.Background()
	gw := &gateway{sessions: map[string]*mcp.ClientSession{}}
	client := mcp.NewClient(&mcp.Implementation{Name: "floorgw", Version: "1"}, nil)
	connect := func(name string, t mcp.Transport) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		s, err := client.Connect(cctx, t, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
		if err != nil {
			log.Fatalf("floorgw: connect %s: %v", name, err)
		}
		gw.sessions[name] = s
	}
	if *upstream != "" {
		connect("s", &mcp.CommandTransport{Command: exec.Command(*upstream, "-mode", "stdio"), TerminateDuration: 2 * time.Second})
	}
	if *httpURL != "" {
		connect("h", &mcp.StreamableClientTransport{Endpoint: *httpURL, MaxRetries: -1})
	}
	if *grpcAddr != "" {
		cc, err := grpc.NewClient(*grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			log.Fatalf("floorgw: %v", err)
		}
		gw.mcpGRPC = pb.NewMcpClient(cc)
	}
	if *pprofAddr != "" {
		pl, err := net.Listen("tcp", *pprofAddr)
		if err != nil {
			log.Fatalf("floorgw: %v", err)
		}
		fmt.Fprintf(os.Stdout, "pprof on %s\n", pl.Addr())
		go http.Serve(pl, nil) //nolint:errcheck // ends with the process
	}
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("floorgw: %v", err)
	}
	srv := grpc.NewServer()
	toolsvcv1.RegisterToolServiceServer(srv, gw)
	fmt.Fprintf(os.Stdout, "ADDR %s\n", lis.Addr())
	if err := srv.Serve(lis); err != nil {
		log.Fatalf("floorgw: %v", err)
	}
}

type gateway struct {
	toolsvcv1.UnimplementedToolServiceServer
	sessions map[string]*mcp.ClientSession // read-only once serving
	mcpGRPC  pb.McpClient
}

func (g *gateway) CallTool(ctx context.Context, req *toolsvcv1.CallToolRequest) (*toolsvcv1.CallToolResponse, error) {
	server, tool, ok := strings.Cut(req.GetName(), "__")
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "name %q: want SERVER__TOOL", req.GetName())
	}
	if server == "g" && g.mcpGRPC != nil {
		res, err := g.mcpGRPC.CallTool(ctx, &pb.CallToolRequest{Request: &pb.CallToolRequest_Request{Name: tool, Arguments: req.GetArguments()}})
		if err != nil {
			return nil, err
		}
		out := &toolsvcv1.CallToolResponse{IsError: res.GetIsError()}
		for _, c := range res.GetContent() {
			out.Content = append(out.Content, text(c.GetText().GetText()))
		}
		return out, nil
	}
	s := g.sessions[server]
	if s == nil {
		return nil, status.Errorf(codes.NotFound, "server %q", server)
	}
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: req.GetArguments().AsMap()})
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	out := &toolsvcv1.CallToolResponse{IsError: res.IsError, Content: make([]*toolsvcv1.Content, 0, len(res.Content))}
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok {
			return nil, status.Errorf(codes.Unimplemented, "content %T", c)
		}
		out.Content = append(out.Content, text(tc.Text))
	}
	return out, nil
}

func text(s string) *toolsvcv1.Content {
	return &toolsvcv1.Content{Content: &toolsvcv1.Content_Text{Text: &toolsvcv1.TextContent{Text: s}}}
}
