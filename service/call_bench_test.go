package service

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// benchCallServer serves f's service the way package server does without an
// auth section (the full interceptor chain, call metrics), and returns a
// client for it.
func benchCallServer(b *testing.B, f *fixture, workers int) toolsvcv1.ToolServiceClient {
	reg := prometheus.NewRegistry()
	svc := newServer(f.bridge, &serverOpts{Metrics: NewMetrics(reg)})
	gs, _ := NewGRPCServer(svc, GRPCOptions{Registry: reg, StreamWorkers: workers})
	conn := serveBufconn(b, gs)
	b.Cleanup(svc.Shutdown)
	return toolsvcv1.NewToolServiceClient(conn)
}

// BenchmarkCallPipeline is one validated CallTool through the whole edge
// (gRPC over bufconn, interceptors, pipeline, bridge) to an in-memory go-sdk
// upstream, with handlers on grpc-go stream workers (the default) and on a
// fresh goroutine per RPC (grpc-go's own default). Compare with -benchmem
// and a CPU profile: the upstream runs in the same process, so look at the
// samples under the ToolService handler (runtime.newstack there is the
// stack growth the workers remove).
func BenchmarkCallPipeline(b *testing.B) {
	b.Run("handlers=workers", func(b *testing.B) { benchmarkCallPipeline(b, 0) })
	b.Run("handlers=fresh", func(b *testing.B) { benchmarkCallPipeline(b, -1) })
}

func benchmarkCallPipeline(b *testing.B, workers int) {
	f := newFixture(b, 0)
	c := benchCallServer(b, f, workers)
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
	c := benchCallServer(b, f, 0)
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
