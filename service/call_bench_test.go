package service

import (
	"context"
	"net"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// benchCallServer serves f's service the way cmd/toolsvc does without an
// auth section (the full interceptor chain, call metrics), and returns a
// client for it.
func benchCallServer(b *testing.B, f *fixture) toolsvcv1.ToolServiceClient {
	reg := prometheus.NewRegistry()
	svc := New(f.bridge, &Options{Metrics: NewMetrics(reg)})
	gs, _ := NewGRPCServer(svc, GRPCOptions{Registry: reg})
	lis := bufconn.Listen(1 << 20)
	go func() { _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		conn.Close()
		svc.Shutdown()
		gs.Stop()
	})
	return toolsvcv1.NewToolServiceClient(conn)
}

// BenchmarkCallPipeline is one validated CallTool through the whole edge
// (gRPC over bufconn, interceptors, pipeline, bridge) to an in-memory go-sdk
// upstream. It measures toolsvc's own CPU and garbage per call; compare
// before/after with -benchmem -count=6 and benchstat.
func BenchmarkCallPipeline(b *testing.B) {
	f := newFixture(b, 0)
	c := benchCallServer(b, f)
	ctx := context.Background()
	req := &toolsvcv1.CallToolRequest{Name: "mem__echo", ArgumentsJson: `{"text": "hello"}`}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.CallTool(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallPipelineStream is BenchmarkCallPipeline over CallToolStream.
func BenchmarkCallPipelineStream(b *testing.B) {
	f := newFixture(b, 0)
	c := benchCallServer(b, f)
	ctx := context.Background()
	req := &toolsvcv1.CallToolStreamRequest{Name: "mem__echo", ArgumentsJson: `{"text": "hello"}`}
	b.ReportAllocs()
	for b.Loop() {
		st, err := c.CallToolStream(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := st.Recv(); err != nil {
			b.Fatal(err)
		}
	}
}
