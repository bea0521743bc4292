package service

import (
	"context"
	"net"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
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
	b.Run("validate=pool", func(b *testing.B) { benchmarkCallPipeline(b, false) })
	b.Run("validate=inline", func(b *testing.B) { benchmarkCallPipeline(b, true) })
}

func benchmarkCallPipeline(b *testing.B, inline bool) {
	validateInline = inline
	b.Cleanup(func() { validateInline = false })
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

// BenchmarkValidateOnFreshGoroutine validates arguments the way a gRPC
// handler does: on a fresh goroutine (grpc-go starts one per RPC) whose
// stack already holds about twenty frames (the interceptor chain). Inline,
// jsonschema-go's recursion grows and copies that stack on nearly every
// call; on the pool it runs on a worker whose stack is already grown.
func BenchmarkValidateOnFreshGoroutine(b *testing.B) {
	in := `{"count": 12, "point": {"x": 1}, "tags": ["a", "b", "c"], "pair": ["a", 1], "odd key": true}`
	var c schemaCache
	cs := c.get("h", testSchema)
	for _, mode := range []string{"pool", "inline"} {
		b.Run("validate="+mode, func(b *testing.B) {
			validateInline = mode == "inline"
			defer func() { validateInline = false }()
			p := newValidatorPool()
			defer p.close()
			done := make(chan struct{})
			b.ReportAllocs()
			for b.Loop() {
				go func() {
					frames(20, func() {
						args, err := decodeArgumentsJSON(in)
						if err != nil {
							panic(err)
						}
						var vs any
						p.run(func() { vs = cs.validate("arguments_json", args) })
						if vs != nil && len(vs.([]*errdetails.BadRequest_FieldViolation)) > 0 {
							panic(vs)
						}
					})
					done <- struct{}{}
				}()
				<-done
			}
		})
	}
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
