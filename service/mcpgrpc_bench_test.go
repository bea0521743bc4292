package service

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"

	mcpgrpcpb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/mcpgrpc"
)

// BenchmarkCallToolWires is one validated call of the same tool with the
// same arguments through ToolService.CallTool and through the MCP gRPC
// binding's Mcp.CallTool , alternately, on one server built as
// cmd/toolsvc builds it (one interceptor chain, call metrics) over bufconn
// to an in-memory go-sdk upstream. It reports each wire's p50 and their
// ratio (mcp/toolservice-p50; the goal is at most 1.05): the two share
// everything but the translation, so the ratio is what the binding costs.
func BenchmarkCallToolWires(b *testing.B) {
	f := newFixture(b, 0)
	reg := prometheus.NewRegistry()
	svc := newServer(f.bridge, &serverOpts{Metrics: NewMetrics(reg)})
	gs, _ := NewGRPCServer(svc, GRPCOptions{Registry: reg,
		Services: []Wire{{Name: mcpgrpc.ServiceName, Register: mcpgrpc.New(svc.core, nil).Register}}})
	conn := serveBufconn(b, gs)
	b.Cleanup(svc.Shutdown)
	ts, mc := toolsvcv1.NewToolServiceClient(conn), mcpgrpcpb.NewMcpClient(conn)
	args, err := structpb.NewStruct(map[string]any{"text": "hello"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	mctx := metadata.AppendToOutgoingContext(ctx, "mcp_tool", "mem__echo")
	treq := &toolsvcv1.CallToolRequest{Name: "mem__echo", Arguments: args}
	mreq := &mcpgrpcpb.CallToolRequest{Request: &mcpgrpcpb.CallToolRequest_Request{Name: "mem__echo", Arguments: args}}
	callTS := func() time.Duration {
		start := time.Now()
		if res, err := ts.CallTool(ctx, treq); err != nil || res.GetIsError() {
			b.Fatal(res, err)
		}
		return time.Since(start)
	}
	callMcp := func() time.Duration {
		start := time.Now()
		if res, err := mc.CallTool(mctx, mreq); err != nil || res.GetIsError() {
			b.Fatal(res, err)
		}
		return time.Since(start)
	}
	var tds, mds []time.Duration
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		// Each wire goes first every other time: neither gets the
		// warmer caches for the whole run.
		if i%2 == 0 {
			tds = append(tds, callTS())
			mds = append(mds, callMcp())
		} else {
			mds = append(mds, callMcp())
			tds = append(tds, callTS())
		}
	}
	tp, mp := p50(tds), p50(mds)
	b.ReportMetric(float64(tp.Microseconds()), "toolservice-p50-µs")
	b.ReportMetric(float64(mp.Microseconds()), "mcp-p50-µs")
	b.ReportMetric(float64(mp)/float64(tp), "mcp/toolservice-p50")
}

func p50(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
