package main

import (
	"context"
	"fmt"
	"log"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var frontRE = regexp.MustCompile(`msg="MCP front door serving" addr=(\S+)`)

// benchFront is the MCP front door: an MCP client calling echo
// through toolsvc's front door (its own stdio child of the upstream) against
// the same client calling its own stdio child directly, and through the
// peer gateways (each with its own stdio child), interleaved. Added p50 and
// p99 = path − direct; throughput at -callers. front_peer_added_ratio is the
// front door's added p50 over the best peer's (goal < 0.5); the floor
// proxies' ratios (floor_proxy_*peer_added_ratio, frontfloor.go) are what
// the same libraries with none of toolsvc's logic reach.
func benchFront(ctx context.Context, e *env, r *results) error {
	defer stopAll()
	ts, err := startToolsvcArgs(ctx, e, "front", fmt.Sprintf(`{"refreshInterval": "1h", "mcpServers": {"s": {"command": %q, "args": ["-mode", "stdio"]}}}`, e.upstream),
		// go-sdk's client declares roots by default, so every call through
		// the front door is an interactive one (a flight, service/core),
		// and a principal may have only --max-waiting-per-principal (16)
		// of those running: 32 callers would be refused
		// RESOURCE_EXHAUSTED TOO_MANY_WAITING.
		[]string{"--mcp-listen", "127.0.0.1:0", "--max-waiting-per-principal", strconv.Itoa(2 * *callers)})
	if err != nil {
		return err
	}
	defer ts.close()
	addr, err := ts.waitFor(ctx, frontRE, 30*time.Second)
	if err != nil {
		return err
	}
	ds, err := connectMCP(ctx, stdioTransport(e))
	if err != nil {
		return fmt.Errorf("direct stdio: %w", err)
	}
	defer ds.Close()
	// Both eras of the front door: a 2025-11-25 session (the version every
	// other path pins) and a 2026-07-28 stateless client.
	fs, err := connectMCP(ctx, httpTransport("http://"+addr+"/mcp"))
	if err != nil {
		return fmt.Errorf("front door: %w", err)
	}
	defer fs.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	fsl, err := mcpClient.Connect(cctx, httpTransport("http://"+addr+"/mcp"), nil)
	cancel()
	if err != nil {
		return fmt.Errorf("front door (2026-07-28): %w", err)
	}
	defer fsl.Close()
	// A 2025-11-25 session whose client declares nothing it could be
	// asked (go-sdk's default declares roots): its calls are answered as
	// one application/json response, where the roots session's stream.
	cctx, cancel = context.WithTimeout(ctx, 30*time.Second)
	fsp, err := plainClient.Connect(cctx, httpTransport("http://"+addr+"/mcp"), &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	cancel()
	if err != nil {
		return fmt.Errorf("front door (no capabilities): %w", err)
	}
	defer fsp.Close()
	direct := path{"direct stdio", mcpEcho(ds), selfCPU}
	front := path{"front door", prefixedEcho(fs, "s__echo"), ts.cpu}
	frontStateless := path{"front door 2026-07-28", prefixedEcho(fsl, "s__echo"), ts.cpu}
	frontPlain := path{"front door no caps", prefixedEcho(fsp, "s__echo"), ts.cpu}
	paths := []path{direct, front, frontStateless, frontPlain}
	// The floor (frontfloor.go): a bare go-sdk proxy, streamed as go-sdk
	// answers by default and as one JSON response, with the client the
	// peers get; and stateless, JSON, with the 2026-07-28 client.
	for _, fl := range []struct {
		name            string
		json, stateless bool
	}{{"floor proxy", false, false}, {"floor proxy json", true, false}, {"floor proxy 2026-07-28", true, true}} {
		s, err := startFloorProxy(ctx, e, fl.name, fl.json, fl.stateless)
		if err != nil {
			return err
		}
		defer s.Close()
		paths = append(paths, path{name: fl.name, call: mcpEcho(s)})
	}
	if *peers {
		if err := ensurePeers(ctx, e); err != nil {
			return err
		}
		for _, name := range []string{"mcp-proxy", "supergateway"} {
			s, err := startPeer(ctx, e, name)
			if err != nil {
				return err
			}
			defer s.Close()
			paths = append(paths, path{name: name, call: mcpEcho(s)})
		}
	}
	log.Printf("front door: %d rounds of %d sequential calls per path", *rounds, *calls)
	lat, _, err := latencies(ctx, paths)
	if err != nil {
		return err
	}
	log.Printf("front door: %d rounds of %d calls per path from %d callers", *rounds, *concCalls, *callers)
	tput, _, _, err := throughputs(ctx, paths)
	if err != nil {
		return err
	}
	dp50, dp99 := pct(lat[direct.name], 50), pct(lat[direct.name], 99)
	r.set("front_direct_stdio_p50_us", us(dp50))
	r.set("front_direct_stdio_p99_us", us(dp99))
	r.set("front_direct_stdio_calls_per_s", round3(tput[direct.name]))
	r.row("front: direct stdio p50 / p99", fmt.Sprintf("%.0f / %.0f µs", us(dp50), us(dp99)), "")
	best, bestName := time.Duration(1<<62), ""
	for _, p := range paths[1:] {
		key := strings.NewReplacer("-", "_", " ", "_", ".", "_").Replace(p.name)
		p50, p99 := pct(lat[p.name], 50), pct(lat[p.name], 99)
		r.set(key+"_added_p50_us", us(p50-dp50))
		r.set(key+"_added_p99_us", us(p99-dp99))
		r.set(key+"_calls_per_s", round3(tput[p.name]))
		r.row(fmt.Sprintf("front: %s added p50 / p99, calls/s at %d callers", p.name, *callers),
			fmt.Sprintf("%.0f / %.0f µs, %.0f", us(p50-dp50), us(p99-dp99), tput[p.name]), "")
		if !strings.HasPrefix(p.name, "front door") && !strings.HasPrefix(p.name, "floor proxy") && p50-dp50 < best {
			best, bestName = p50-dp50, p.name
		}
	}
	if bestName == "" {
		for _, k := range []string{"front_peer_added_ratio", "front_2026_peer_added_ratio", "front_no_caps_peer_added_ratio",
			"floor_proxy_peer_added_ratio", "floor_proxy_json_peer_added_ratio", "floor_proxy_2026_peer_added_ratio"} {
			r.skip(k, "-peers=false")
		}
		return nil
	}
	ratio := round3(float64(pct(lat[front.name], 50)-dp50) / float64(best))
	r.set("front_best_peer", bestName)
	r.set("front_peer_added_ratio", ratio)
	r.row("front_peer_added_ratio (vs "+bestName+")", fmt.Sprint(ratio), "< 0.5")
	// The same ratio for the paths answered as one JSON response (the
	// 2026-07-28 client, the 2025-11-25 client that cannot be asked).
	for _, k := range []struct {
		key string
		p   path
	}{{"front_2026_peer_added_ratio", frontStateless}, {"front_no_caps_peer_added_ratio", frontPlain},
		{"floor_proxy_peer_added_ratio", path{name: "floor proxy"}}, {"floor_proxy_json_peer_added_ratio", path{name: "floor proxy json"}},
		{"floor_proxy_2026_peer_added_ratio", path{name: "floor proxy 2026-07-28"}}} {
		ratio := round3(float64(pct(lat[k.p.name], 50)-dp50) / float64(best))
		r.set(k.key, ratio)
		goal := "≤ 0.4"
		if strings.HasPrefix(k.p.name, "floor proxy") {
			goal = "(the floor of ≤ 0.4)"
		}
		r.row(k.key+" (vs "+bestName+")", fmt.Sprint(ratio), goal)
	}
	return nil
}

// plainClient declares no capabilities: nothing it could be asked.
var plainClient = mcp.NewClient(&mcp.Implementation{Name: "toolsvc-bench-plain", Version: "1"},
	&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})

// prefixedEcho calls echo under its exposed name on an MCP session.
func prefixedEcho(s *mcp.ClientSession, name string) func(context.Context) error {
	params := &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "hello"}}
	return func(ctx context.Context) error {
		res, err := s.CallTool(ctx, params)
		if err != nil {
			return err
		}
		if len(res.Content) != 1 || res.IsError {
			return fmt.Errorf("%s: unexpected result %+v", name, res)
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "hello" {
			return fmt.Errorf("%s: unexpected content %+v", name, res.Content[0])
		}
		return nil
	}
}
