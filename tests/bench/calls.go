package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// protocol is the MCP version every direct client pins: toolsvc's default
// pin for upstreams, so both sides of a comparison speak the same version.
const protocol = "2025-11-25"

// path is one way of making the same echo call.
type path struct {
	name string
	call func(context.Context) error
	cpu  func() time.Duration // CPU of the process under test, if any
}

var (
	urlRE     = regexp.MustCompile(`^URL (\S+)`)
	addrRE    = regexp.MustCompile(`^ADDR (\S+)`)
	servingRE = regexp.MustCompile(`msg=serving addr=(\S+)`)
	readyRE   = regexp.MustCompile(`msg=ready`)
	pprofRE   = regexp.MustCompile(`benchprofile: pprof on (\S+)`)
)

// toolsvcProc is a running toolsvc and a client on one connection.
type toolsvcProc struct {
	*proc
	addr   string
	conn   *grpc.ClientConn
	client toolsvcv1.ToolServiceClient
}

func startToolsvc(ctx context.Context, e *env, name, config string, extraEnv ...string) (*toolsvcProc, error) {
	return startToolsvcArgs(ctx, e, name, config, nil, extraEnv...)
}

// startToolsvcArgs is startToolsvc with extra serve arguments.
func startToolsvcArgs(ctx context.Context, e *env, name, config string, args []string, extraEnv ...string) (*toolsvcProc, error) {
	return startToolsvcHook(ctx, e, name, config, args, nil, extraEnv...)
}

// startToolsvcHook is startToolsvcArgs that calls started (if not nil)
// once the process runs, before it serves: the fleet phase profiles the
// connect storm from there.
func startToolsvcHook(ctx context.Context, e *env, name, config string, args []string, started func(*proc) error, extraEnv ...string) (*toolsvcProc, error) {
	cfg := filepath.Join(e.tmp, name+".json")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		return nil, err
	}
	extraEnv = append(strings.Fields(*toolsvcEnv), extraEnv...)
	p, err := start("toolsvc "+name, extraEnv, e.root, append([]string{e.toolsvc, "serve", "--config", cfg,
		"--listen", "127.0.0.1:0", "--admin-listen", "", "--log-level", "info"}, args...)...)
	if err != nil {
		return nil, err
	}
	if started != nil {
		if err := started(p); err != nil {
			p.stop()
			return nil, err
		}
	}
	addr, err := p.waitFor(ctx, servingRE, 60*time.Second)
	if err != nil {
		return nil, err
	}
	if _, err := p.waitFor(ctx, readyRE, 120*time.Second); err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return nil, err
	}
	return &toolsvcProc{proc: p, addr: addr, conn: conn, client: toolsvcv1.NewToolServiceClient(conn)}, nil
}

func (t *toolsvcProc) close() {
	t.conn.Close()
	t.stop()
}

// startUpstream runs the bench upstream in http or grpc mode and returns
// the URL or address it printed.
func startUpstream(ctx context.Context, e *env, mode string, args ...string) (*proc, string, error) {
	p, err := start("upstream "+mode, nil, e.root, append([]string{e.upstream, "-mode", mode, "-addr", "127.0.0.1:0"}, args...)...)
	if err != nil {
		return nil, "", err
	}
	re := urlRE
	if mode == "grpc" {
		re = addrRE
	}
	s, err := p.waitFor(ctx, re, 30*time.Second)
	return p, s, err
}

var mcpClient = mcp.NewClient(&mcp.Implementation{Name: "toolsvc-bench", Version: "1"}, nil)

func connectMCP(ctx context.Context, t mcp.Transport) (*mcp.ClientSession, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return mcpClient.Connect(cctx, t, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
}

func stdioTransport(e *env, args ...string) mcp.Transport {
	return &mcp.CommandTransport{Command: exec.Command(e.upstream, append([]string{"-mode", "stdio"}, args...)...), TerminateDuration: 2 * time.Second}
}

func httpTransport(url string) mcp.Transport {
	return &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}
}

// mcpEcho calls echo on a direct MCP session and checks the answer.
func mcpEcho(s *mcp.ClientSession) func(context.Context) error {
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
	return func(ctx context.Context) error {
		res, err := s.CallTool(ctx, params)
		if err != nil {
			return err
		}
		if len(res.Content) != 1 || res.IsError {
			return fmt.Errorf("echo: unexpected result %+v", res)
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "hello" {
			return fmt.Errorf("echo: unexpected content %+v", res.Content[0])
		}
		return nil
	}
}

// toolsvcEcho calls <server>__echo through toolsvc and checks the answer.
func toolsvcEcho(c toolsvcv1.ToolServiceClient, server string) func(context.Context) error {
	args, err := structpb.NewStruct(map[string]any{"text": "hello"})
	if err != nil {
		panic(err)
	}
	req := &toolsvcv1.CallToolRequest{Name: server + "__echo", Arguments: args}
	return func(ctx context.Context) error {
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return err
		}
		if len(res.GetContent()) != 1 || res.GetIsError() || res.GetContent()[0].GetText().GetText() != "hello" {
			return fmt.Errorf("%s__echo: unexpected result %v", server, res)
		}
		return nil
	}
}

// sequential makes n calls one after another and returns their latencies.
func sequential(ctx context.Context, p path, n int) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if err := p.call(ctx); err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// concurrent makes n calls from workers goroutines and returns the time it
// took.
func concurrent(ctx context.Context, p path, n, workers int) (time.Duration, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Pointer[error]
	t0 := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if err := p.call(ctx); err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		return 0, fmt.Errorf("%s: %w", p.name, *e)
	}
	return time.Since(t0), nil
}

// latencies measures paths interleaved: each round runs every path once, so
// drift on a noisy machine hits every path alike. It returns every sample
// per path, and the samples of each round (for the spread of ratios).
func latencies(ctx context.Context, paths []path) (map[string][]time.Duration, []map[string][]time.Duration, error) {
	for _, p := range paths {
		if _, err := sequential(ctx, p, *warmup); err != nil {
			return nil, nil, err
		}
	}
	out := map[string][]time.Duration{}
	var byRound []map[string][]time.Duration
	for r := range *rounds {
		byRound = append(byRound, map[string][]time.Duration{})
		for i := range paths {
			// Rotate the order each round too.
			p := paths[(i+r)%len(paths)]
			lat, err := sequential(ctx, p, *calls)
			if err != nil {
				return nil, nil, err
			}
			out[p.name] = append(out[p.name], lat...)
			byRound[r][p.name] = lat
		}
	}
	return out, byRound, nil
}

// throughputs measures calls/s at *callers concurrent callers,
// interleaved, and the CPU per call of each path's process under test;
// perRound holds each round's calls/s per path.
func throughputs(ctx context.Context, paths []path) (rate map[string]float64, cpuPerCall map[string]time.Duration, perRound []map[string]float64, err error) {
	rate, cpuPerCall, _, perRound, err = throughputsMachine(ctx, paths)
	return rate, cpuPerCall, perRound, err
}

// throughputsMachine is throughputs, also with the whole machine's busy
// CPU per call of each path (/proc/stat: every process's share, the
// kernel's included; nil where /proc/stat cannot be read).
func throughputsMachine(ctx context.Context, paths []path) (rate map[string]float64, cpuPerCall, machinePerCall map[string]time.Duration, perRound []map[string]float64, err error) {
	total, cpu, machine := map[string]time.Duration{}, map[string]time.Duration{}, map[string]time.Duration{}
	machineOK := true
	for r := range *rounds {
		perRound = append(perRound, map[string]float64{})
		for i := range paths {
			p := paths[(i+r)%len(paths)]
			var c0 time.Duration
			if p.cpu != nil {
				c0 = p.cpu()
			}
			m0, ok0 := machineBusy()
			d, err := concurrent(ctx, p, *concCalls, *callers)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			m1, ok1 := machineBusy()
			machineOK = machineOK && ok0 && ok1
			machine[p.name] += m1 - m0
			total[p.name] += d
			perRound[r][p.name] = float64(*concCalls) / d.Seconds()
			if p.cpu != nil {
				cpu[p.name] += p.cpu() - c0
			}
		}
	}
	n := *concCalls * *rounds
	rate, cpuPerCall = map[string]float64{}, map[string]time.Duration{}
	for name, d := range total {
		rate[name] = float64(n) / d.Seconds()
	}
	for name, c := range cpu {
		cpuPerCall[name] = c / time.Duration(n)
	}
	if machineOK {
		machinePerCall = map[string]time.Duration{}
		for name, c := range machine {
			machinePerCall[name] = c / time.Duration(n)
		}
	}
	return rate, cpuPerCall, machinePerCall, perRound, nil
}

// machineBusy is the CPU time every CPU of the machine has spent busy
// (/proc/stat's first line: all but idle and iowait), in clock ticks of
// 10 ms (USER_HZ 100 on Linux).
func machineBusy() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, false
	}
	var busy int64
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, false
		}
		switch i {
		case 3, 4, 7: // idle, iowait, steal (another VM's time)
		case 8, 9: // guest, guest_nice: already counted in user and nice
		default:
			busy += n
		}
	}
	return time.Duration(busy) * 10 * time.Millisecond, true
}

// benchCalls is item 1: the call overhead over stdio and HTTP, and item 2:
// the peer gateways on the same stdio upstream (with the Python
// ones). It returns the peers for benchPeerCatalog (nil with -peers=false).
func benchCalls(ctx context.Context, e *env, r *results) ([]peerSpec, error) {
	defer stopAll()
	noop, noopAddr, err := startUpstream(ctx, e, "grpc")
	if err != nil {
		return nil, err
	}
	_, httpURL, err := startUpstream(ctx, e, "http")
	if err != nil {
		return nil, err
	}
	ts, err := startToolsvc(ctx, e, "calls", fmt.Sprintf(`{"refreshInterval": "1h", "mcpServers": {"s": {"command": %q, "args": ["-mode", "stdio"]}, "h": {"url": %q}}}`, e.upstream, httpURL))
	if err != nil {
		return nil, err
	}
	defer ts.close()
	fl, err := startFloor(ctx, e, "-upstream", e.upstream, "-http", httpURL)
	if err != nil {
		return nil, err
	}
	defer fl.close()
	ds, err := connectMCP(ctx, stdioTransport(e))
	if err != nil {
		return nil, fmt.Errorf("direct stdio: %w", err)
	}
	defer ds.Close()
	dh, err := connectMCP(ctx, httpTransport(httpURL))
	if err != nil {
		return nil, fmt.Errorf("direct http: %w", err)
	}
	defer dh.Close()
	nc, err := grpc.NewClient(noopAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	health := healthpb.NewHealthClient(nc)
	hreq := &healthpb.HealthCheckRequest{}

	// CPU per call: toolsvc's process; the direct client's is this
	// process (idle but for the callers); the no-op's is its server's.
	directStdio := path{"direct stdio", mcpEcho(ds), selfCPU}
	toolsvcStdio := path{"toolsvc stdio", toolsvcEcho(ts.client, "s"), ts.cpu}
	directHTTP := path{"direct http", mcpEcho(dh), selfCPU}
	toolsvcHTTP := path{"toolsvc http", toolsvcEcho(ts.client, "h"), ts.cpu}
	// The floor: the same call through a gateway that is grpc-go in and
	// go-sdk's ClientSession out and nothing else (tests/bench/floorgw).
	floorStdio := path{"floor stdio", toolsvcEcho(fl.client, "s"), fl.cpu}
	floorHTTP := path{"floor http", toolsvcEcho(fl.client, "h"), fl.cpu}
	noopGRPC := path{"no-op gRPC", func(ctx context.Context) error {
		_, err := health.Check(ctx, hreq)
		return err
	}, noop.cpu}
	// toolsvc's own health Check: its gRPC server and interceptor chain
	// without the bridge, to tell where added time goes.
	tsHealth := healthpb.NewHealthClient(ts.conn)
	toolsvcHealth := path{name: "toolsvc health", call: func(ctx context.Context) error {
		_, err := tsHealth.Check(ctx, hreq)
		return err
	}}

	log.Printf("call overhead: %d rounds of %d sequential calls per path", *rounds, *calls)
	lat, latRounds, err := latencies(ctx, []path{directStdio, toolsvcStdio, floorStdio, directHTTP, toolsvcHTTP, floorHTTP, noopGRPC, toolsvcHealth})
	if err != nil {
		return nil, err
	}
	log.Printf("call overhead: %d rounds of %d calls per path from %d callers", *rounds, *concCalls, *callers)
	tput, cpu, machine, tputRounds, err := throughputsMachine(ctx, []path{directStdio, toolsvcStdio, floorStdio, directHTTP, toolsvcHTTP, floorHTTP, noopGRPC})
	if err != nil {
		return nil, err
	}
	noopP50, noopP99 := pct(lat[noopGRPC.name], 50), pct(lat[noopGRPC.name], 99)
	r.set("noop_grpc_p50_us", us(noopP50))
	r.set("noop_grpc_p99_us", us(noopP99))
	r.row("no-op gRPC unary p50 / p99", fmt.Sprintf("%.0f / %.0f µs", us(noopP50), us(noopP99)), "")
	hp50, hp99 := pct(lat[toolsvcHealth.name], 50), pct(lat[toolsvcHealth.name], 99)
	r.set("toolsvc_health_p50_us", us(hp50))
	r.set("toolsvc_health_p99_us", us(hp99))
	r.row("toolsvc's own health Check p50 / p99", fmt.Sprintf("%.0f / %.0f µs", us(hp50), us(hp99)), "")
	r.set("noop_grpc_server_cpu_us_per_call", us(cpu[noopGRPC.name]))
	r.row(fmt.Sprintf("no-op gRPC server CPU per call (%d callers)", *callers), fmt.Sprintf("%.0f µs", us(cpu[noopGRPC.name])), "")
	worstP50, worstP99, worstTput := 0.0, 0.0, 1e9
	// The same ratios per round, for their spread; the worse-of keys take
	// the worse transport of each round.
	n := len(latRounds)
	worstP50R, worstP99R, worstTputR := make([]float64, n), make([]float64, n), slices.Repeat([]float64{1e9}, n)
	for _, tr := range []struct {
		name                   string
		direct, toolsvc, floor path
	}{{"stdio", directStdio, toolsvcStdio, floorStdio}, {"http", directHTTP, toolsvcHTTP, floorHTTP}} {
		reportFloor(r, tr.name, lat, latRounds, tput, cpu, machine, tr.direct, tr.toolsvc, tr.floor, noopGRPC)
		d, t := lat[tr.direct.name], lat[tr.toolsvc.name]
		dp50, dp99, tp50, tp99 := pct(d, 50), pct(d, 99), pct(t, 50), pct(t, 99)
		p50r := round3(float64(tp50) / float64(dp50+noopP50))
		p99r := round3(float64(tp99) / float64(dp99+noopP99))
		tr3 := round3(tput[tr.toolsvc.name] / tput[tr.direct.name])
		worstP50, worstP99, worstTput = max(worstP50, p50r), max(worstP99, p99r), min(worstTput, tr3)
		var p50s, p99s, tputs []float64
		for k, lr := range latRounds {
			np50, np99 := pct(lr[noopGRPC.name], 50), pct(lr[noopGRPC.name], 99)
			a := float64(pct(lr[tr.toolsvc.name], 50)) / float64(pct(lr[tr.direct.name], 50)+np50)
			b := float64(pct(lr[tr.toolsvc.name], 99)) / float64(pct(lr[tr.direct.name], 99)+np99)
			c := tputRounds[k][tr.toolsvc.name] / tputRounds[k][tr.direct.name]
			p50s, p99s, tputs = append(p50s, a), append(p99s, b), append(tputs, c)
			worstP50R[k], worstP99R[k], worstTputR[k] = max(worstP50R[k], a), max(worstP99R[k], b), min(worstTputR[k], c)
		}
		p50sp := r.setSpread("call_p50_ratio_"+tr.name, p50s)
		p99sp := r.setSpread("call_p99_ratio_"+tr.name, p99s)
		tsp := r.setSpread("throughput_ratio_"+tr.name, tputs)
		r.set("direct_"+tr.name+"_p50_us", us(dp50))
		r.set("direct_"+tr.name+"_p99_us", us(dp99))
		r.set("toolsvc_"+tr.name+"_p50_us", us(tp50))
		r.set("toolsvc_"+tr.name+"_p99_us", us(tp99))
		r.set("direct_"+tr.name+"_calls_per_s", round3(tput[tr.direct.name]))
		r.set("toolsvc_"+tr.name+"_calls_per_s", round3(tput[tr.toolsvc.name]))
		r.set("call_p50_ratio_"+tr.name, p50r)
		r.set("call_p99_ratio_"+tr.name, p99r)
		r.set("throughput_ratio_"+tr.name, tr3)
		r.row(tr.name+": direct p50 / p99", fmt.Sprintf("%.0f / %.0f µs", us(dp50), us(dp99)), "")
		r.row(tr.name+": toolsvc p50 / p99", fmt.Sprintf("%.0f / %.0f µs", us(tp50), us(tp99)), "")
		r.row(tr.name+": call_p50_ratio (spread over rounds)", fmt.Sprintf("%v (%s)", p50r, p50sp), "≤ 1.15")
		r.row(tr.name+": call_p99_ratio (spread over rounds)", fmt.Sprintf("%v (%s)", p99r, p99sp), "≤ 1.3")
		r.row(fmt.Sprintf("%s: calls/s at %d callers direct / toolsvc", tr.name, *callers), fmt.Sprintf("%.0f / %.0f", tput[tr.direct.name], tput[tr.toolsvc.name]), "")
		r.row(tr.name+": throughput_ratio (spread over rounds)", fmt.Sprintf("%v (%s)", tr3, tsp), "≥ 0.9")
		r.set("direct_"+tr.name+"_client_cpu_us_per_call", us(cpu[tr.direct.name]))
		r.set("toolsvc_"+tr.name+"_cpu_us_per_call", us(cpu[tr.toolsvc.name]))
		r.row(tr.name+": CPU per call: direct client / toolsvc", fmt.Sprintf("%.0f / %.0f µs", us(cpu[tr.direct.name]), us(cpu[tr.toolsvc.name])), "")
		if machine != nil {
			// The throughput ratio's ceiling on a saturated machine: a
			// gateway that cost nothing but its gRPC hop (the no-op
			// server's calls, client and kernel included) would need the
			// direct path's CPU plus the hop's per call.
			md, mt, mn := machine[tr.direct.name], machine[tr.toolsvc.name], machine[noopGRPC.name]
			ceil := round3(float64(md) / float64(md+mn))
			// Only a saturated machine makes it a ceiling: how busy the
			// direct path kept the CPUs.
			busy := round3(float64(md) * tput[tr.direct.name] / 1e9 / float64(runtime.NumCPU()))
			r.set("machine_busy_direct_"+tr.name, busy)
			r.set("machine_cpu_us_per_call_direct_"+tr.name, us(md))
			r.set("machine_cpu_us_per_call_toolsvc_"+tr.name, us(mt))
			r.set("machine_cpu_us_per_call_noop_grpc", us(mn))
			r.set("throughput_ceiling_"+tr.name, ceil)
			r.row(tr.name+": machine CPU per call: direct / toolsvc / no-op gRPC hop", fmt.Sprintf("%.0f / %.0f / %.0f µs", us(md), us(mt), us(mn)), "")
			r.row(tr.name+": throughput ceiling of a gateway costing only its gRPC hop", fmt.Sprintf("%v (the direct path kept the CPUs %.0f %% busy)", ceil, busy*100), "")
		}
	}
	r.set("call_p50_ratio", worstP50)
	r.set("call_p99_ratio", worstP99)
	r.set("throughput_ratio", worstTput)
	r.row("call_p50_ratio (worse of stdio, http; spread)", fmt.Sprintf("%v (%s)", worstP50, r.setSpread("call_p50_ratio", worstP50R)), "≤ 1.15")
	r.row("call_p99_ratio (worse of stdio, http; spread)", fmt.Sprintf("%v (%s)", worstP99, r.setSpread("call_p99_ratio", worstP99R)), "≤ 1.3")
	r.row("throughput_ratio (worse of stdio, http; spread)", fmt.Sprintf("%v (%s)", worstTput, r.setSpread("throughput_ratio", worstTputR)), "≥ 0.9")
	r.set("toolsvc_rss_kib_after_calls", ts.rssKiB())

	if !*peers {
		return nil, nil
	}
	return benchPeers(ctx, e, r, directStdio, toolsvcStdio, ts.groupRSSKiB)
}

// floorProc is a running tests/bench/floorgw and a ToolService client of it.
type floorProc struct {
	*proc
	conn   *grpc.ClientConn
	client toolsvcv1.ToolServiceClient
}

// startFloor builds (once per run) and starts the floor gateway with args.
func startFloor(ctx context.Context, e *env, args ...string) (*floorProc, error) {
	exe := filepath.Join(e.tmp, "floorgw")
	if _, err := os.Stat(exe); err != nil {
		if err := goBuild(e.root, exe, "./tests/bench/floorgw"); err != nil {
			return nil, err
		}
	}
	p, err := start("floorgw", nil, e.root, append([]string{exe}, args...)...)
	if err != nil {
		return nil, err
	}
	addr, err := p.waitFor(ctx, addrRE, 60*time.Second)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	return &floorProc{proc: p, conn: conn, client: toolsvcv1.NewToolServiceClient(conn)}, nil
}

func (f *floorProc) close() {
	f.conn.Close()
	f.stop()
}

// reportFloor sets the floor gateway's figures of one transport beside
// toolsvc's: its p50 ratio against the same denominator (direct p50 + the
// no-op hop's), with its spread over rounds, toolsvc's p50 over the
// floor's, and the floor's throughput and CPU per call. What the floor
// misses the goal by is the libraries' share of toolsvc's miss.
func reportFloor(r *results, tr string, lat map[string][]time.Duration, latRounds []map[string][]time.Duration,
	tput map[string]float64, cpu, machine map[string]time.Duration, direct, toolsvc, floor, noop path) {
	dp50, fp50, tp50, np50 := pct(lat[direct.name], 50), pct(lat[floor.name], 50), pct(lat[toolsvc.name], 50), pct(lat[noop.name], 50)
	ratio := round3(float64(fp50) / float64(dp50+np50))
	var per, over []float64
	for _, lr := range latRounds {
		d, f, t, n := pct(lr[direct.name], 50), pct(lr[floor.name], 50), pct(lr[toolsvc.name], 50), pct(lr[noop.name], 50)
		per = append(per, float64(f)/float64(d+n))
		over = append(over, float64(t)/float64(f))
	}
	sp := r.setSpread("floor_call_p50_ratio_"+tr, per)
	osp := r.setSpread("toolsvc_over_floor_p50_"+tr, over)
	r.set("floor_"+tr+"_p50_us", us(fp50))
	r.set("floor_"+tr+"_p99_us", us(pct(lat[floor.name], 99)))
	r.set("floor_call_p50_ratio_"+tr, ratio)
	r.set("toolsvc_over_floor_p50_"+tr, round3(float64(tp50)/float64(fp50)))
	r.set("floor_"+tr+"_calls_per_s", round3(tput[floor.name]))
	r.set("floor_throughput_ratio_"+tr, round3(tput[floor.name]/tput[direct.name]))
	r.set("floor_"+tr+"_cpu_us_per_call", us(cpu[floor.name]))
	r.row(tr+": floor gateway p50 / p99", fmt.Sprintf("%.0f / %.0f µs", us(fp50), us(pct(lat[floor.name], 99))), "")
	r.row(tr+": floor gateway call_p50_ratio (spread over rounds)", fmt.Sprintf("%v (%s)", ratio, sp), "")
	r.row(tr+": toolsvc p50 / floor p50 (spread over rounds)", fmt.Sprintf("%v (%s)", round3(float64(tp50)/float64(fp50)), osp), "")
	r.row(fmt.Sprintf("%s: floor gateway calls/s at %d callers, CPU per call", tr, *callers), fmt.Sprintf("%.0f, %.0f µs", tput[floor.name], us(cpu[floor.name])), "")
	if machine != nil {
		r.set("machine_cpu_us_per_call_floor_"+tr, us(machine[floor.name]))
	}
}
