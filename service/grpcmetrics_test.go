package service

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestGRPCMetricsSameExposition: toolsvc's gRPC server metrics
// (grpcmetrics.go) expose what go-grpc-middleware's ServerMetrics, which
// they replaced, exposes for the same calls. Both sit in one server's
// chain, side by side where the old one was (right inside directSends,
// outside logging, recovery and auth), each on its own registry, and see
// the same calls over real gRPC on loopback: unary calls that succeed, are
// refused before the handler (no token) and fail in it (an unknown tool),
// server streams (CallToolStream; WatchCatalog, whose messages go past the
// wrappers, ended by a cancel), a health check and reflection's bidi
// stream. The two registries then hold the same families with the same
// help, type, label sets, counter values, histogram buckets and sample
// counts, pre-initialised series included (only the handling times
// differ: each interceptor reads its own clock).
func TestGRPCMetricsSameExposition(t *testing.T) {
	t.Parallel()
	a := authGen(tokA, "a")
	regNew, regOld := prometheus.NewRegistry(), prometheus.NewRegistry()
	f := newWatchFixture(t, &serverOpts{Authenticator: a.Authenticator, Authorizer: a.Authorizer, RateLimits: a.RateLimits},
		map[string][]string{"a": {"x", "y"}})
	t.Cleanup(f.svc.Shutdown)

	o := GRPCOptions{Registry: regNew, StreamWorkers: -1}.withDefaults()
	unary, stream := o.interceptors(f.svc)
	old := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(grpcprom.WithHistogramBuckets(grpcHandlingBuckets)))
	regOld.MustRegister(old)
	// Unary: the old interceptor outermost; the new one is the chain's first.
	unary = append([]grpc.UnaryServerInterceptor{old.UnaryServerInterceptor()}, unary...)
	// Streams: right inside directSends (stream[0]), beside the new one.
	stream = slices.Insert(stream, 1, old.StreamServerInterceptor())
	gs := grpc.NewServer(o.serverOptions(f.svc, unary, stream)...)
	f.svc.Register(gs)
	healthpb.RegisterHealthServer(gs, health.NewServer())
	reflection.Register(gs)
	f.svc.grpcMetrics.InitializeMetrics(gs)
	old.InitializeMetrics(gs)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); gs.Stop(); <-served })
	client := toolsvcv1.NewToolServiceClient(conn)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	authed := bearer(ctx, tokA)

	for range 3 {
		if _, err := client.CallTool(authed, &toolsvcv1.CallToolRequest{Name: "a__x", ArgumentsJson: "{}"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "a__x"}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("CallTool without a token: %v, want UNAUTHENTICATED", err)
	}
	if _, err := client.CallTool(authed, &toolsvcv1.CallToolRequest{Name: "a__nope"}); status.Code(err) == codes.OK {
		t.Fatal("CallTool of an unknown tool succeeded")
	}
	cs, err := client.CallToolStream(authed, &toolsvcv1.CallToolStreamRequest{Name: "a__y", ArgumentsJson: "{}"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := cs.Recv(); err != nil {
			break
		}
	}
	wctx, wcancel := context.WithCancel(authed)
	w, err := client.WatchCatalog(wctx, &toolsvcv1.WatchCatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Recv(); err != nil {
		t.Fatal(err)
	}
	wcancel()
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	rs, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Recv(); err != nil {
		t.Fatal(err)
	}
	if err := rs.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Recv(); err == nil {
		t.Fatal("reflection's stream did not end after CloseSend")
	}

	// The server counts a stream's end after its client saw it: wait for
	// both to count every call (the canceled watch last of all).
	done := map[string]string{"grpc_service": "toolsvc.v1.ToolService", "grpc_method": "WatchCatalog", "grpc_code": "Canceled"}
	reflected := map[string]string{"grpc_service": "grpc.reflection.v1.ServerReflection", "grpc_code": "OK"}
	waitMetrics(t, func() bool {
		return metricValue(t, regNew, "grpc_server_handled_total", done) == 1 && metricValue(t, regOld, "grpc_server_handled_total", done) == 1 &&
			metricValue(t, regNew, "grpc_server_handled_total", reflected) == 1 && metricValue(t, regOld, "grpc_server_handled_total", reflected) == 1
	})

	got, want := exposition(t, regNew), exposition(t, regOld)
	if len(want) < 100 {
		t.Fatalf("the old metrics exposed %d samples; the pre-initialised series alone are more", len(want))
	}
	for _, line := range []string{
		`grpc_server_handled_total{grpc_code="OK",grpc_method="CallTool",grpc_service="toolsvc.v1.ToolService",grpc_type="unary"} 3`,
		`grpc_server_handled_total{grpc_code="Unauthenticated",grpc_method="CallTool",grpc_service="toolsvc.v1.ToolService",grpc_type="unary"} 1`,
		`grpc_server_msg_sent_total{grpc_method="CallTool",grpc_service="toolsvc.v1.ToolService",grpc_type="unary"} 3`,
		`grpc_server_msg_received_total{grpc_method="CallTool",grpc_service="toolsvc.v1.ToolService",grpc_type="unary"} 5`,
		`grpc_server_msg_sent_total{grpc_method="WatchCatalog",grpc_service="toolsvc.v1.ToolService",grpc_type="server_stream"} 0`,
		`grpc_server_msg_received_total{grpc_method="ServerReflectionInfo",grpc_service="grpc.reflection.v1.ServerReflection",grpc_type="bidi_stream"} 1`,
	} {
		if !slices.Contains(want, line) {
			t.Errorf("the old metrics lack %s: the calls above did not happen as meant", line)
		}
	}
	if !slices.Equal(got, want) {
		for _, l := range got {
			if !slices.Contains(want, l) {
				t.Errorf("only the new metrics have %s", l)
			}
		}
		for _, l := range want {
			if !slices.Contains(got, l) {
				t.Errorf("only the old metrics have %s", l)
			}
		}
	}
}

// exposition is reg's grpc_server_ families as sorted lines: each
// family's help and type, each counter's value, each histogram's bucket
// bounds and sample count (not its sum or bucket counts: the time each
// interceptor measured).
func exposition(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range fams {
		if !strings.HasPrefix(mf.GetName(), "grpc_server_") {
			continue
		}
		out = append(out, fmt.Sprintf("# %s %s %q", mf.GetName(), mf.GetType(), mf.GetHelp()))
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			series := mf.GetName() + "{" + strings.Join(ls, ",") + "}"
			switch h := m.GetHistogram(); {
			case m.GetCounter() != nil:
				out = append(out, fmt.Sprintf("%s %v", series, m.GetCounter().GetValue()))
			case h != nil:
				var bounds []string
				for _, b := range h.GetBucket() {
					bounds = append(bounds, fmt.Sprint(b.GetUpperBound()))
				}
				out = append(out, fmt.Sprintf("%s count=%d buckets=%s", series, h.GetSampleCount(), strings.Join(bounds, " ")))
			default:
				out = append(out, series+" of an unexpected type")
			}
		}
	}
	slices.Sort(out)
	return out
}

// waitMetrics waits, within defaultTestTimeout, for cond.
func waitMetrics(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(defaultTestTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("the metrics did not count every call in time")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkGRPCMetricsUnary is one unary call's metrics, go-grpc-middleware's
// ServerMetrics (old) against toolsvc's (new), around a handler that does
// nothing, for a method registered on the server (CallTool).
func BenchmarkGRPCMetricsUnary(b *testing.B) {
	gs := grpc.NewServer()
	toolsvcv1.RegisterToolServiceServer(gs, toolsvcv1.UnimplementedToolServiceServer{})
	old := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(grpcprom.WithHistogramBuckets(grpcHandlingBuckets)))
	old.InitializeMetrics(gs)
	m := newGRPCMetrics()
	m.InitializeMetrics(gs)
	info := &grpc.UnaryServerInfo{FullMethod: toolsvcv1.ToolService_CallTool_FullMethodName}
	handler := func(context.Context, any) (any, error) { return nil, nil }
	for _, c := range []struct {
		name string
		i    grpc.UnaryServerInterceptor
	}{{"old", old.UnaryServerInterceptor()}, {"new", m.UnaryServerInterceptor()}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				_, _ = c.i(ctx, nil, info, handler)
			}
		})
	}
}
