package service

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// TestTracing: a call makes a server span and a child upstream span, and
// the upstream receives the W3C traceparent in the request's _meta.
// Not parallel: it sets otel's global tracer provider and propagator.
func TestTracing(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	defer func() {
		otel.SetTracerProvider(prevTP)
		otel.SetTextMapPropagator(prevProp)
		_ = tp.Shutdown(context.Background())
	}()

	gotMeta := make(chan map[string]any, 1)
	up := mcp.NewServer(&mcp.Implementation{Name: "traced", Version: "1"}, nil)
	up.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			gotMeta <- req.Params.Meta
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	var sessions []*mcp.ServerSession
	b, err := mcpbridge.New(mcpbridge.Config{Servers: []mcpbridge.ServerConfig{{Name: "up",
		NewTransport: func() (mcp.Transport, error) {
			ct, st := mcp.NewInMemoryTransports()
			ss, err := up.Connect(context.Background(), st, nil)
			sessions = append(sessions, ss)
			return ct, err
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	<-b.Ready()
	svc := newServer(b, nil)
	t.Cleanup(svc.Shutdown)
	gs, _ := NewGRPCServer(svc, GRPCOptions{StatsHandler: otelgrpc.NewServerHandler()})
	lis := bufconn.Listen(1 << 20)
	go func() { _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		conn.Close()
		gs.Stop()
		b.Close()
		for _, ss := range sessions {
			ss.Close()
		}
	}()
	if _, err := toolsvcv1.NewToolServiceClient(conn).CallTool(t.Context(), &toolsvcv1.CallToolRequest{Name: "up__echo"}); err != nil {
		t.Fatal(err)
	}
	meta := <-gotMeta
	// The server span ends after the response is written, so it may end a
	// moment after the client has the result: wait for both.
	var server, upstream sdktrace.ReadOnlySpan
	for deadline := time.Now().Add(5 * time.Second); server == nil || upstream == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("spans = %v, want a server span and an upstream span", rec.Ended())
		}
		for _, s := range rec.Ended() {
			switch s.Name() {
			case "toolsvc.v1.ToolService/CallTool":
				server = s
			case "mcp tools/call":
				upstream = s
			}
		}
	}
	if upstream.Parent().SpanID() != server.SpanContext().SpanID() || upstream.SpanContext().TraceID() != server.SpanContext().TraceID() {
		t.Errorf("upstream span is not a child of the server span")
	}
	tp2, _ := meta["traceparent"].(string)
	want := "00-" + upstream.SpanContext().TraceID().String() + "-" + upstream.SpanContext().SpanID().String() + "-01"
	if tp2 != want {
		t.Errorf("upstream _meta.traceparent = %q, want %q", tp2, want)
	}
}
