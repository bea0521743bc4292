package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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

// startPeer runs one gateway in front of a stdio upstream and connects a
// go-sdk client to its streamable HTTP endpoint.
func startPeer(ctx context.Context, e *env, name string) (*mcp.ClientSession, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(e.peersDir, "node_modules", ".bin")
	var argv []string
	switch name {
	case "mcp-proxy":
		argv = []string{filepath.Join(bin, "mcp-proxy"), "--host", "127.0.0.1", "--port", fmt.Sprint(port), "--", e.upstream, "-mode", "stdio"}
	case "supergateway":
		// supergateway has no host flag: loopback.cjs keeps it on 127.0.0.1.
		argv = []string{"node", "-r", filepath.Join(e.nodeDir, "loopback.cjs"), filepath.Join(bin, "supergateway"),
			"--stdio", e.upstream + " -mode stdio", "--outputTransport", "streamableHttp", "--stateful",
			"--port", fmt.Sprint(port), "--logLevel", "none"}
	}
	p, err := start(name, nil, e.root, argv...)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := waitPort(ctx, p, addr, 60*time.Second); err != nil {
		return nil, err
	}
	var s *mcp.ClientSession
	for range 50 {
		if s, err = connectMCP(ctx, httpTransport("http://"+addr+"/mcp")); err == nil {
			return s, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil, fmt.Errorf("%s: connect: %w; output:\n%s", name, err, p.output())
}

// benchPeers is item 2: toolsvc's added latency over the direct stdio call
// against the peer gateways' added latency over the same call, interleaved.
func benchPeers(ctx context.Context, e *env, r *results, directStdio, toolsvcStdio path) error {
	if err := ensurePeers(ctx, e); err != nil {
		return err
	}
	paths := []path{directStdio, toolsvcStdio}
	for _, name := range []string{"mcp-proxy", "supergateway"} {
		s, err := startPeer(ctx, e, name)
		if err != nil {
			return err
		}
		defer s.Close()
		paths = append(paths, path{name: name, call: mcpEcho(s)})
	}
	log.Printf("peers: %d rounds of %d sequential calls per path", *rounds, *calls)
	lat, latRounds, err := latencies(ctx, paths)
	if err != nil {
		return err
	}
	direct := pct(lat[directStdio.name], 50)
	added := func(name string) time.Duration { return pct(lat[name], 50) - direct }
	ours := added(toolsvcStdio.name)
	best, bestName := time.Duration(1<<62), ""
	var rows []string
	for _, p := range paths[2:] {
		a := added(p.name)
		key := strings.ReplaceAll(p.name, "-", "_")
		r.set(key+"_p50_us", us(pct(lat[p.name], 50)))
		r.set(key+"_p99_us", us(pct(lat[p.name], 99)))
		r.set(key+"_added_p50_us", us(a))
		rows = append(rows, fmt.Sprintf("%s %.0f", p.name, us(a)))
		r.row(p.name+" (stdio upstream) p50 / p99", fmt.Sprintf("%.0f / %.0f µs", us(pct(lat[p.name], 50)), us(pct(lat[p.name], 99))), "")
		if a < best {
			best, bestName = a, p.name
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
	r.set("peers_direct_stdio_p50_us", us(direct))
	r.set("toolsvc_added_p50_us", us(ours))
	r.set("best_peer", bestName)
	r.set("peer_added_latency_ratio", ratio)
	r.row("added p50 over direct stdio: toolsvc", fmt.Sprintf("%.0f µs", us(ours)), "")
	r.row("added p50 over direct stdio: peers", strings.Join(rows, ", ")+" µs", "")
	r.row("peer_added_latency_ratio (vs "+bestName+"; spread over rounds)", fmt.Sprintf("%v (%s)", ratio, spread), "≤ 0.5")
	return nil
}
