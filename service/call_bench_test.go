package service

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// benchCallServer serves f's service the way cmd/toolsvc does without an
// auth section (the full interceptor chain, call metrics), and returns a
// client for it.
func benchCallServer(b *testing.B, f *fixture, workers int) toolsvcv1.ToolServiceClient {
	reg := prometheus.NewRegistry()
	svc := New(f.bridge, &Options{Metrics: NewMetrics(reg)})
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

// BenchmarkValidateOnFreshGoroutine validates arguments the way a gRPC
// handler without stream workers does: on a fresh goroutine whose stack
// already holds about twenty frames (the interceptor chain), and, for
// comparison, on one long-lived goroutine. jsonschema-go's recursion grows
// and copies the fresh goroutine's stack on nearly every call.
func BenchmarkValidateOnFreshGoroutine(b *testing.B) {
	in := `{"count": 12, "point": {"x": 1}, "tags": ["a", "b", "c"], "pair": ["a", 1], "odd key": true}`
	var c schemaCache
	cs := c.get("h", testSchema)
	validate := func() {
		args, err := decodeArgumentsJSON(in)
		if err != nil {
			panic(err)
		}
		if err := cs.validate("arguments_json", args); err != nil {
			panic(err)
		}
	}
	b.Run("goroutine=fresh", func(b *testing.B) {
		done := make(chan struct{})
		b.ReportAllocs()
		for b.Loop() {
			go func() {
				frames(20, validate)
				done <- struct{}{}
			}()
			<-done
		}
	})
	b.Run("goroutine=long-lived", func(b *testing.B) {
		jobs, done := make(chan struct{}), make(chan struct{})
		go func() {
			for range jobs {
				frames(20, validate)
				done <- struct{}{}
			}
		}()
		defer close(jobs)
		b.ReportAllocs()
		for b.Loop() {
			jobs <- struct{}{}
			<-done
		}
	})
}

// frames calls f under n ordinary stack frames.
//
//go:noinline
func frames(n int, f func()) {
	var pad [64]byte // a modest frame, like an interceptor's
	if n == 0 {
		f()
		return
	}
	frames(n-1, f)
	_ = pad
}
