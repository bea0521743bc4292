package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
)

var listeningRE = regexp.MustCompile(`listening on (\S+)`)

// benchGRPCUpstream is the call overhead of an upstream that serves the
// MCP gRPC binding (`transport: grpc`, tests/mcpgrpcupstream): sequential
// echo calls through toolsvc against the same call made directly to the
// upstream with the binding's client, plus the no-op gRPC hop (a gateway
// that cost nothing but its own hop). grpc_upstream_call_p50_ratio is
// toolsvc p50 / (direct p50 + no-op p50), the goal at most 1.15.
func benchGRPCUpstream(ctx context.Context, e *env, r *results) error {
	defer stopAll()
	up, addr, err := startMcpGRPCUpstreamProc(ctx, e)
	if err != nil {
		return err
	}
	noop, noopAddr, err := startUpstream(ctx, e, "grpc")
	if err != nil {
		return err
	}
	ts, err := startToolsvc(ctx, e, "grpcup", fmt.Sprintf(`{"refreshInterval": "1h", "mcpServers": {"g": {"type": "grpc", "url": "grpc://%s"}}}`, addr))
	if err != nil {
		return err
	}
	defer ts.close()
	fl, err := startFloor(ctx, e, "-mcp-grpc", addr)
	if err != nil {
		return err
	}
	defer fl.close()
	dc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer dc.Close()
	nc, err := grpc.NewClient(noopAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer nc.Close()
	mcpc := pb.NewMcpClient(dc)
	args, err := structpb.NewStruct(map[string]any{"text": "hello"})
	if err != nil {
		return err
	}
	direct := path{"direct grpc", func(ctx context.Context) error {
		res, err := mcpc.CallTool(ctx, &pb.CallToolRequest{Request: &pb.CallToolRequest_Request{Name: "echo", Arguments: args}})
		if err == nil && (len(res.GetContent()) != 1 || res.GetContent()[0].GetText().GetText() != "hello") {
			err = fmt.Errorf("echo: unexpected result %v", res)
		}
		return err
	}, up.cpu}
	through := path{"toolsvc grpc upstream", toolsvcEcho(ts.client, "g"), ts.cpu}
	floor := path{"floor grpc upstream", toolsvcEcho(fl.client, "g"), fl.cpu}
	health := healthpb.NewHealthClient(nc)
	noopGRPC := path{"no-op gRPC", func(ctx context.Context) error {
		_, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}, noop.cpu}
	log.Printf("grpc upstream: %d rounds of %d sequential calls per path", *rounds, *calls)
	lat, latRounds, err := latencies(ctx, []path{direct, through, floor, noopGRPC})
	if err != nil {
		return err
	}
	dp50, tp50, np50 := pct(lat[direct.name], 50), pct(lat[through.name], 50), pct(lat[noopGRPC.name], 50)
	ratio := round3(float64(tp50) / float64(dp50+np50))
	var per []float64
	for _, lr := range latRounds {
		per = append(per, float64(pct(lr[through.name], 50))/float64(pct(lr[direct.name], 50)+pct(lr[noopGRPC.name], 50)))
	}
	sp := r.setSpread("grpc_upstream_call_p50_ratio", per)
	r.set("grpc_upstream_direct_p50_us", us(dp50))
	r.set("grpc_upstream_toolsvc_p50_us", us(tp50))
	r.set("grpc_upstream_call_p50_ratio", ratio)
	r.row("grpc upstream: direct / toolsvc / no-op hop p50", fmt.Sprintf("%.0f / %.0f / %.0f µs", us(dp50), us(tp50), us(np50)), "")
	r.row("grpc upstream: call_p50_ratio (spread over rounds)", fmt.Sprintf("%v (%s)", ratio, sp), "≤ 1.15")
	// The floor: grpc-go in, the binding's client out, nothing else.
	fp50 := pct(lat[floor.name], 50)
	var fper, over []float64
	for _, lr := range latRounds {
		fper = append(fper, float64(pct(lr[floor.name], 50))/float64(pct(lr[direct.name], 50)+pct(lr[noopGRPC.name], 50)))
		over = append(over, float64(pct(lr[through.name], 50))/float64(pct(lr[floor.name], 50)))
	}
	fsp := r.setSpread("grpc_upstream_floor_call_p50_ratio", fper)
	osp := r.setSpread("grpc_upstream_toolsvc_over_floor_p50", over)
	fratio := round3(float64(fp50) / float64(dp50+np50))
	r.set("grpc_upstream_floor_p50_us", us(fp50))
	r.set("grpc_upstream_floor_call_p50_ratio", fratio)
	r.set("grpc_upstream_toolsvc_over_floor_p50", round3(float64(tp50)/float64(fp50)))
	r.row("grpc upstream: floor gateway p50, call_p50_ratio (spread)", fmt.Sprintf("%.0f µs, %v (%s)", us(fp50), fratio, fsp), "")
	r.row("grpc upstream: toolsvc p50 / floor p50 (spread)", fmt.Sprintf("%v (%s)", round3(float64(tp50)/float64(fp50)), osp), "")
	return nil
}

// startMcpGRPCUpstreamProc builds (once per run) and starts
// tests/mcpgrpcupstream and returns it and its address.
func startMcpGRPCUpstreamProc(ctx context.Context, e *env) (*proc, string, error) {
	exe := filepath.Join(e.tmp, "mcpgrpcupstream")
	if _, err := os.Stat(exe); err != nil {
		if err := goBuild(e.root, exe, "./tests/mcpgrpcupstream"); err != nil {
			return nil, "", err
		}
	}
	up, err := start("mcpgrpcupstream", nil, e.root, exe, "-addr", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	addr, err := up.waitFor(ctx, listeningRE, 30*time.Second)
	return up, addr, err
}

// startMcpGRPCUpstream is startMcpGRPCUpstreamProc for a caller that only
// needs the address (stopAll stops the process).
func startMcpGRPCUpstream(ctx context.Context, e *env) (string, error) {
	_, addr, err := startMcpGRPCUpstreamProc(ctx, e)
	return addr, err
}
