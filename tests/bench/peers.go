package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	peerConcCalls = flag.Int("peer-conc-calls", 2000, "peers phase: calls per path per round from -callers concurrent callers")
	peerRoundTime = flag.Duration("peer-round-time", 10*time.Second, "peers phase: a path's share of a round ends after -calls (or -peer-conc-calls) calls or this long, whichever comes first (the Python gateways take tens of ms a call)")
	peerCatalog   = flag.String("peer-catalog-sizes", "20000,10000,5000,1000", "peers phase: catalog sizes tried in turn for each gateway's tools/list, largest first (the first listed in full is its largest; -skip peercatalog leaves this out)")
	peerNames     = flag.String("peer-names", "", "peers phase: only these peers, comma-separated (e.g. supergateway,contextforge-1w; default every one)")
	peerListWait  = flag.Duration("peer-list-timeout", 3*time.Minute, "peers phase: how long one gateway may take to start, take in its catalog and list it in full")
)

// peerSpec is one peer gateway. start runs it in front of its own stdio
// child of the upstream (upstream -mode stdio upArgs...) and connects a
// go-sdk client to it.
type peerSpec struct {
	name  string // as printed and as the path's name
	key   string // prefix of its JSON keys
	start func(ctx context.Context, e *env, upArgs []string) (*peerConn, error)
	// unavailable, when set, is why this peer cannot be installed or run
	// here: it is reported, not measured.
	unavailable string
}

// peerConn is a running peer gateway and a client session on it.
type peerConn struct {
	s     *mcp.ClientSession
	echo  string  // the name the gateway gives the upstream's echo tool
	procs []*proc // what to stop, last first
}

func (c *peerConn) close() {
	if c.s != nil {
		c.s.Close()
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].stop()
	}
}

// peerHTTP is the client every peer session of the peers phase uses: one
// pool with room for -callers idle connections, so the 32-caller phase
// reuses connections (http.DefaultTransport keeps 2 per host) on every peer
// alike.
var peerHTTP = func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 256
	return &http.Client{Transport: t}
}()

// ensurePeers installs the pinned peer gateways (npm ci) on first use.
func ensurePeers(ctx context.Context, e *env) error {
	if _, err := os.Stat(filepath.Join(e.peersDir, "node_modules", ".bin", "supergateway")); err == nil {
		return nil
	}
	log.Printf("npm ci in %s", e.peersDir)
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = e.peersDir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm ci in %s: %w", e.peersDir, err)
	}
	return nil
}

// startPeer runs one npm gateway in front of a stdio upstream and connects
// a go-sdk client to its streamable HTTP endpoint (the default client, as
// the front door phase uses it).
func startPeer(ctx context.Context, e *env, name string) (*mcp.ClientSession, error) {
	c, err := startNpmPeer(ctx, e, name, nil, nil)
	if err != nil {
		return nil, err
	}
	return c.s, nil
}

func startNpmPeer(ctx context.Context, e *env, name string, upArgs []string, hc *http.Client) (*peerConn, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(e.peersDir, "node_modules", ".bin")
	var argv []string
	switch name {
	case "mcp-proxy":
		argv = append([]string{filepath.Join(bin, "mcp-proxy"), "--host", "127.0.0.1", "--port", fmt.Sprint(port), "--", e.upstream, "-mode", "stdio"}, upArgs...)
	case "supergateway":
		// supergateway has no host flag: loopback.cjs keeps it on 127.0.0.1.
		argv = []string{"node", "-r", filepath.Join(e.nodeDir, "loopback.cjs"), filepath.Join(bin, "supergateway"),
			"--stdio", strings.Join(append([]string{e.upstream, "-mode", "stdio"}, upArgs...), " "), "--outputTransport", "streamableHttp", "--stateful",
			"--port", fmt.Sprint(port), "--logLevel", "none"}
	default:
		return nil, fmt.Errorf("unknown npm peer %q", name)
	}
	p, err := start(name, nil, e.root, argv...)
	if err != nil {
		return nil, err
	}
	c := &peerConn{echo: "echo", procs: []*proc{p}}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := waitPort(ctx, p, addr, 60*time.Second); err != nil {
		c.close()
		return nil, err
	}
	for range 50 {
		if c.s, err = connectMCP(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", MaxRetries: -1, HTTPClient: hc}); err == nil {
			return c, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.close()
	return nil, fmt.Errorf("%s: connect: %w; output:\n%s", name, err, p.output())
}

// peerSpecs are the peer gateways of the peers phase: the npm ones
// (installed by ensurePeers: a failure fails the phase, as before) and the
// Python ones (pypeers.go: a failure to install or start one is reported as
// that peer being unavailable).
func peerSpecs(ctx context.Context, e *env) ([]peerSpec, error) {
	if err := ensurePeers(ctx, e); err != nil {
		return nil, err
	}
	var specs []peerSpec
	for _, name := range []string{"mcp-proxy", "supergateway"} {
		specs = append(specs, peerSpec{name: name, key: strings.ReplaceAll(name, "-", "_"),
			start: func(ctx context.Context, e *env, upArgs []string) (*peerConn, error) {
				return startNpmPeer(ctx, e, name, upArgs, peerHTTP)
			}})
	}
	specs = append(specs, pythonPeerSpecs(ctx, e)...)
	if *peerNames != "" {
		want := map[string]bool{}
		for _, n := range strings.Split(*peerNames, ",") {
			want[strings.TrimSpace(n)] = true
		}
		for i := range specs {
			if !want[specs[i].name] && specs[i].unavailable == "" {
				specs[i].unavailable = "not measured: not in -peer-names"
			}
		}
	}
	return specs, nil
}

// benchPeers is item 2: toolsvc's added latency over the
// direct stdio call against each peer gateway's added latency over the same
// call, then calls/s at -callers concurrent callers, all interleaved; then
// (benchPeerCatalog, called after) the largest catalog each serves in tools/list.
//
// It returns the peers, those that could not be run marked unavailable.
//
// toolsvcRSS is the memory of toolsvc's side (it and its stdio child), set
// beside each peer's (<peer>_rss_kib: every process of the peer, its stdio
// child included) after the throughput part.
func benchPeers(ctx context.Context, e *env, r *results, directStdio, toolsvcStdio path, toolsvcRSS func() int64) ([]peerSpec, error) {
	specs, err := peerSpecs(ctx, e)
	if err != nil {
		return nil, err
	}
	r.set("contextforge_nw_workers", contextforgeWorkers())
	paths := []path{directStdio, toolsvcStdio}
	var measured []peerSpec
	errs := map[string]*callErrors{}
	conns := map[string]*peerConn{}
	for i, sp := range specs {
		if sp.unavailable != "" {
			peerUnavailable(r, sp, sp.unavailable)
			continue
		}
		c, err := sp.start(ctx, e, nil)
		if err != nil {
			specs[i].unavailable = "unavailable: did not start: " + firstLine(err.Error())
			peerUnavailable(r, specs[i], specs[i].unavailable)
			log.Printf("peers: %s unavailable: %v", sp.name, err)
			continue
		}
		defer c.close()
		ce := &callErrors{}
		errs[sp.name] = ce
		conns[sp.key] = c
		paths = append(paths, path{name: sp.name, call: peerEcho(c.s, c.echo, ce)})
		measured = append(measured, sp)
	}
	if len(measured) == 0 {
		r.skip("peer_added_latency_ratio", "no peer gateway could be run")
		return specs, nil
	}
	log.Printf("peers: %d rounds of %d sequential calls (at most %s) per path", *rounds, *calls, *peerRoundTime)
	lat, latRounds, err := peerLatencies(ctx, paths)
	if err != nil {
		return nil, err
	}
	log.Printf("peers: %d rounds of %d calls (at most %s) per path from %d callers", *rounds, *peerConcCalls, *peerRoundTime, *callers)
	tput, tputRounds, err := peerThroughputs(ctx, paths)
	if err != nil {
		return nil, err
	}
	r.set("toolsvc_peers_rss_kib", toolsvcRSS())
	for _, sp := range measured {
		var rss int64
		for _, p := range conns[sp.key].procs {
			rss += p.groupRSSKiB()
		}
		r.set(sp.key+"_rss_kib", rss)
	}
	direct, directP99 := pct(lat[directStdio.name], 50), pct(lat[directStdio.name], 99)
	added := func(name string) time.Duration { return pct(lat[name], 50) - direct }
	ours := added(toolsvcStdio.name)
	oursP99 := pct(lat[toolsvcStdio.name], 99) - directP99
	r.set("peers_direct_stdio_p50_us", us(direct))
	r.set("peers_direct_stdio_p99_us", us(directP99))
	r.set("toolsvc_added_p50_us", us(ours))
	r.set("toolsvc_added_p99_us", us(oursP99))
	r.set("toolsvc_peers_calls_per_s", round3(tput[toolsvcStdio.name]))
	r.row("peers: direct stdio p50 / p99", fmt.Sprintf("%.0f / %.0f µs", us(direct), us(directP99)), "")
	r.row(fmt.Sprintf("peers: toolsvc (gRPC, stdio upstream) added p50 / p99, calls/s at %d", *callers),
		fmt.Sprintf("%.0f / %.0f µs, %.0f", us(ours), us(oursP99), tput[toolsvcStdio.name]), "")
	best, bestName := time.Duration(1<<62), ""
	var rows []string
	for _, sp := range measured {
		a, aP99 := added(sp.name), pct(lat[sp.name], 99)-directP99
		r.set(sp.key+"_p50_us", us(pct(lat[sp.name], 50)))
		r.set(sp.key+"_p99_us", us(pct(lat[sp.name], 99)))
		r.set(sp.key+"_added_p50_us", us(a))
		r.set(sp.key+"_added_p99_us", us(aP99))
		r.set(sp.key+"_calls_per_s", round3(tput[sp.name]))
		r.set(sp.key+"_samples", len(lat[sp.name]))
		rows = append(rows, fmt.Sprintf("%s %.0f", sp.name, us(a)))
		if n := errs[sp.name].n.Load(); n > 0 {
			first := *errs[sp.name].first.Load()
			r.set(sp.key+"_failed_calls", n)
			r.set(sp.key+"_failed_call_first", first)
			r.row(fmt.Sprintf("peers: %s FAILED calls (counted in its figures)", sp.name), fmt.Sprintf("%d, first: %.120s", n, first), "")
		}
		// toolsvc vs this peer, round by round.
		var addR, tputR []float64
		for k, lr := range latRounds {
			d := pct(lr[directStdio.name], 50)
			addR = append(addR, float64(pct(lr[toolsvcStdio.name], 50)-d)/float64(pct(lr[sp.name], 50)-d))
			tputR = append(tputR, tputRounds[k][toolsvcStdio.name]/tputRounds[k][sp.name])
		}
		ar := round3(float64(ours) / float64(a))
		tr := round3(tput[toolsvcStdio.name] / tput[sp.name])
		r.set(sp.key+"_added_ratio", ar)
		asp := r.setSpread(sp.key+"_added_ratio", addR)
		r.set(sp.key+"_throughput_ratio", tr)
		tsp := r.setSpread(sp.key+"_throughput_ratio", tputR)
		r.row(fmt.Sprintf("peers: %s added p50 / p99, calls/s at %d", sp.name, *callers),
			fmt.Sprintf("%.0f / %.0f µs, %.0f", us(a), us(aP99), tput[sp.name]), "")
		r.row(fmt.Sprintf("peers: toolsvc / %s: added p50, calls/s (spread)", sp.name), fmt.Sprintf("%v (%s), %v (%s)", ar, asp, tr, tsp), "")
		if a < best {
			best, bestName = a, sp.name
		}
	}
	ratio := round3(float64(ours) / float64(best))
	// Per round, against the same peer.
	var perRound []float64
	for _, lr := range latRounds {
		d := pct(lr[directStdio.name], 50)
		perRound = append(perRound, float64(pct(lr[toolsvcStdio.name], 50)-d)/float64(pct(lr[bestName], 50)-d))
	}
	spread := r.setSpread("peer_added_latency_ratio", perRound)
	r.set("best_peer", bestName)
	r.set("peer_added_latency_ratio", ratio)
	r.row("added p50 over direct stdio: toolsvc", fmt.Sprintf("%.0f µs", us(ours)), "")
	r.row("added p50 over direct stdio: peers", strings.Join(rows, ", ")+" µs", "")
	r.row("peer_added_latency_ratio (vs "+bestName+"; spread over rounds)", fmt.Sprintf("%v (%s)", ratio, spread), "≤ 0.5")
	return specs, nil
}

// peerLatencies is latencies (calls.go) with each path's share of a round
// bounded by -peer-round-time as well as -calls, so a gateway that takes
// tens of milliseconds a call gets fewer samples instead of a longer phase.
// The warm-up is bounded the same way.
func peerLatencies(ctx context.Context, paths []path) (map[string][]time.Duration, []map[string][]time.Duration, error) {
	for _, p := range paths {
		if _, err := sequentialFor(ctx, p, *warmup, *peerRoundTime); err != nil {
			return nil, nil, err
		}
	}
	out := map[string][]time.Duration{}
	var byRound []map[string][]time.Duration
	for r := range *rounds {
		byRound = append(byRound, map[string][]time.Duration{})
		for i := range paths {
			p := paths[(i+r)%len(paths)]
			lat, err := sequentialFor(ctx, p, *calls, *peerRoundTime)
			if err != nil {
				return nil, nil, err
			}
			out[p.name] = append(out[p.name], lat...)
			byRound[r][p.name] = lat
		}
	}
	return out, byRound, nil
}

// sequentialFor is sequential, stopping after d as well.
func sequentialFor(ctx context.Context, p path, n int, d time.Duration) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	end := time.Now().Add(d)
	for range n {
		t0 := time.Now()
		if err := p.call(ctx); err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		lat = append(lat, time.Since(t0))
		if t0.After(end) {
			break
		}
	}
	return lat, nil
}

// peerThroughputs is throughputs (calls.go) for the peers phase: calls/s at
// -callers concurrent callers, interleaved, each path's share of a round
// -peer-conc-calls calls or -peer-round-time, whichever ends first.
func peerThroughputs(ctx context.Context, paths []path) (map[string]float64, []map[string]float64, error) {
	done, took := map[string]int64{}, map[string]time.Duration{}
	var perRound []map[string]float64
	for r := range *rounds {
		perRound = append(perRound, map[string]float64{})
		for i := range paths {
			p := paths[(i+r)%len(paths)]
			n, d, err := concurrentFor(ctx, p, *peerConcCalls, *callers, *peerRoundTime)
			if err != nil {
				return nil, nil, err
			}
			done[p.name] += n
			took[p.name] += d
			perRound[r][p.name] = float64(n) / d.Seconds()
		}
	}
	rate := map[string]float64{}
	for name, d := range took {
		rate[name] = float64(done[name]) / d.Seconds()
	}
	return rate, perRound, nil
}

// concurrentFor is concurrent (calls.go) with a deadline: after d the
// callers take no new call. It returns the calls made and the time taken.
func concurrentFor(ctx context.Context, p path, n, workers int, d time.Duration) (int64, time.Duration, error) {
	var next, made atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Pointer[error]
	t0 := time.Now()
	end := t0.Add(d)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) && time.Now().Before(end) {
				if err := p.call(ctx); err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
				made.Add(1)
			}
		}()
	}
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		return 0, 0, fmt.Errorf("%s: %w", p.name, *e)
	}
	return made.Load(), time.Since(t0), nil
}

// callErrors counts a peer's failed calls. A gateway that fails some calls
// (under load) is measured anyway: its failed calls are timed like the
// others and reported with their count and the first failure.
type callErrors struct {
	n     atomic.Int64
	first atomic.Pointer[string]
}

func (ce *callErrors) add(msg string) {
	ce.n.Add(1)
	ce.first.CompareAndSwap(nil, &msg)
}

// peerEcho calls echo under its name on a peer's session and checks the
// answer; a failure is counted, not returned (but a cancelled run stops).
func peerEcho(s *mcp.ClientSession, name string, ce *callErrors) func(context.Context) error {
	params := &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "hello"}}
	return func(ctx context.Context) error {
		res, err := s.CallTool(ctx, params)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			ce.add(err.Error())
		case len(res.Content) != 1:
			ce.add(fmt.Sprintf("%d content blocks (isError %v)", len(res.Content), res.IsError))
		default:
			tc, _ := res.Content[0].(*mcp.TextContent)
			switch {
			case tc == nil:
				ce.add(fmt.Sprintf("content %T (isError %v)", res.Content[0], res.IsError))
			case res.IsError:
				ce.add("tool error: " + tc.Text)
			case tc.Text != "hello":
				ce.add(fmt.Sprintf("text %q", tc.Text))
			}
		}
		return nil
	}
}

// peerUnavailable reports a peer that was not measured (why says so:
// "unavailable: …" when it could not be installed or run here): its
// figures are null, with the reason.
func peerUnavailable(r *results, sp peerSpec, why string) {
	var keys []string
	for _, k := range peerFigures {
		keys = append(keys, sp.key+k)
	}
	r.skipMany(keys, sp.name, why)
}

// peerFigures are the per-peer headline keys (after the peer's key prefix).
var peerFigures = []string{"_added_ratio", "_throughput_ratio", "_catalog_max_tools", "_list_ratio"}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
