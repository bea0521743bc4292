package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

var nodeAgent = flag.Bool("node-agent", true, "measure the Node agent: @toolsvc/client through toolsvc vs the TypeScript MCP SDK client direct (npm ci in clients/typescript and tests/bench/nodeagent on first use)")

// nodeFigures are the headline keys of the Node agent phase.
var nodeFigures = []string{"node_call_p50_ratio", "node_call_p99_ratio", "node_throughput_ratio"}

// nodePath is one path's figures as the agent prints them.
type nodePath struct {
	P50us1     float64 `json:"p50_us_1"`
	P99us1     float64 `json:"p99_us_1"`
	CallsPerS1 float64 `json:"calls_per_s_1"`
	P50usN     float64 `json:"p50_us_n"`
	P99usN     float64 `json:"p99_us_n"`
	CallsPerSN float64 `json:"calls_per_s_n"`
	AgentCPUus float64 `json:"agent_cpu_us_per_call_n"`
}

// ensureNodeAgent installs and builds @toolsvc/client (clients/typescript)
// and the agent's packages (tests/bench/nodeagent) when they are missing.
func ensureNodeAgent(ctx context.Context, e *env) (string, error) {
	pkg := filepath.Join(e.root, "clients", "typescript")
	dir := filepath.Join(e.root, "tests", "bench", "nodeagent")
	steps := []struct {
		dir, marker string
		args        []string
	}{
		{pkg, filepath.Join(pkg, "node_modules", ".bin", "tsc"), []string{"ci", "--no-audit", "--no-fund"}},
		{pkg, filepath.Join(pkg, "dist", "index.js"), []string{"run", "build"}},
		{dir, filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk"), []string{"ci", "--no-audit", "--no-fund"}},
	}
	for _, s := range steps {
		if _, err := os.Stat(s.marker); err == nil {
			continue
		}
		log.Printf("npm %s in %s", strings.Join(s.args, " "), s.dir)
		cmd := exec.CommandContext(ctx, "npm", s.args...)
		cmd.Dir = s.dir
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("npm %s in %s: %w", strings.Join(s.args, " "), s.dir, err)
		}
	}
	return dir, nil
}

// benchNodeAgent is the Node agent benchmark: a Node agent calling echo
// through toolsvc with @toolsvc/client vs the same agent calling the same
// upstream directly with the TypeScript MCP SDK client, over stdio (each
// side its own child of the bench upstream) and streamable HTTP (one shared
// upstream process), at 1 and -callers concurrent callers. The agent
// (nodeagent/agent.mjs) measures the paths interleaved in one process.
// Ratios are toolsvc / direct: latency ratios ≤ 1 and throughput ratios ≥ 1
// mean toolsvc is at least as fast.
func benchNodeAgent(ctx context.Context, e *env, r *results, skip bool) error {
	if skip || !*nodeAgent {
		why := "-skip node"
		if !*nodeAgent {
			why = "-node-agent=false"
		}
		for _, k := range nodeFigures {
			r.skip(k, why)
		}
		return nil
	}
	defer stopAll()
	dir, err := ensureNodeAgent(ctx, e)
	if err != nil {
		return err
	}
	_, httpURL, err := startUpstream(ctx, e, "http")
	if err != nil {
		return err
	}
	ts, err := startToolsvc(ctx, e, "node", fmt.Sprintf(`{"refreshInterval": "1h", "mcpServers": {"s": {"command": %q, "args": ["-mode", "stdio"]}, "h": {"url": %q}}}`, e.upstream, httpURL))
	if err != nil {
		return err
	}
	defer ts.close()
	cfg, err := json.Marshal(map[string]any{
		"paths": []map[string]any{
			{"name": "direct stdio", "kind": "stdio", "command": e.upstream, "args": []string{"-mode", "stdio"}, "tool": "echo"},
			{"name": "toolsvc stdio", "kind": "toolsvc", "target": ts.addr, "tool": "s__echo"},
			{"name": "direct http", "kind": "http", "url": httpURL, "tool": "echo"},
			{"name": "toolsvc http", "kind": "toolsvc", "target": ts.addr, "tool": "h__echo"},
		},
		"rounds": *rounds, "calls": *calls, "warmup": *warmup, "callers": *callers, "concCalls": *concCalls,
	})
	if err != nil {
		return err
	}
	log.Printf("node agent: %d rounds of %d sequential calls and %d calls from %d callers per path", *rounds, *calls, *concCalls, *callers)
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "agent.mjs"), string(cfg))
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("node agent: %w\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res map[string]nodePath
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		return fmt.Errorf("node agent output: %w\n%s", err, out)
	}
	worstP50, worstP99, worstTput := 0.0, 0.0, 1e9
	for _, tr := range []string{"stdio", "http"} {
		d, t := res["direct "+tr], res["toolsvc "+tr]
		if d.CallsPerSN == 0 || t.CallsPerSN == 0 {
			return fmt.Errorf("node agent: no figures for %s in %s", tr, out)
		}
		for _, side := range []struct {
			name string
			p    nodePath
		}{{"direct", d}, {"toolsvc", t}} {
			k := "node_" + side.name + "_" + tr
			r.set(k+"_p50_us", round3(side.p.P50us1))
			r.set(k+"_p99_us", round3(side.p.P99us1))
			r.set(k+"_calls_per_s", round3(side.p.CallsPerS1))
			r.set(fmt.Sprintf("%s_p50_us_%d", k, *callers), round3(side.p.P50usN))
			r.set(fmt.Sprintf("%s_p99_us_%d", k, *callers), round3(side.p.P99usN))
			r.set(fmt.Sprintf("%s_calls_per_s_%d", k, *callers), round3(side.p.CallsPerSN))
			r.set(k+"_agent_cpu_us_per_call", round3(side.p.AgentCPUus))
			r.row(fmt.Sprintf("node %s: %s p50 / p99, calls/s (1 caller)", tr, side.name), fmt.Sprintf("%.0f / %.0f µs, %.0f", side.p.P50us1, side.p.P99us1, side.p.CallsPerS1), "")
			r.row(fmt.Sprintf("node %s: %s p50 / p99, calls/s, agent CPU/call (%d callers)", tr, side.name, *callers), fmt.Sprintf("%.0f / %.0f µs, %.0f, %.0f µs", side.p.P50usN, side.p.P99usN, side.p.CallsPerSN, side.p.AgentCPUus), "")
		}
		p50 := round3(t.P50us1 / d.P50us1)
		p99 := round3(t.P99us1 / d.P99us1)
		tput := round3(t.CallsPerSN / d.CallsPerSN)
		r.set("node_call_p50_ratio_"+tr, p50)
		r.set("node_call_p99_ratio_"+tr, p99)
		r.set("node_throughput_ratio_"+tr, tput)
		r.set(fmt.Sprintf("node_call_p50_ratio_%s_%d", tr, *callers), round3(t.P50usN/d.P50usN))
		r.set(fmt.Sprintf("node_call_p99_ratio_%s_%d", tr, *callers), round3(t.P99usN/d.P99usN))
		r.set("node_throughput_ratio_"+tr+"_1", round3(t.CallsPerS1/d.CallsPerS1))
		r.row(fmt.Sprintf("node %s: p50 / p99 ratio, 1 caller (toolsvc / direct)", tr), fmt.Sprintf("%.3f / %.3f", p50, p99), "≤ 1.0")
		r.row(fmt.Sprintf("node %s: p50 / p99 ratio, %d callers", tr, *callers), fmt.Sprintf("%.3f / %.3f", t.P50usN/d.P50usN, t.P99usN/d.P99usN), "≤ 1.0")
		r.row(fmt.Sprintf("node %s: throughput ratio, %d callers (toolsvc / direct)", tr, *callers), fmt.Sprint(tput), "≥ 1.0")
		worstP50, worstP99, worstTput = max(worstP50, p50), max(worstP99, p99), min(worstTput, tput)
	}
	r.set("node_call_p50_ratio", worstP50)
	r.set("node_call_p99_ratio", worstP99)
	r.set("node_throughput_ratio", worstTput)
	r.row("node_call_p50_ratio (worse of stdio, http)", fmt.Sprint(worstP50), "≤ 1.0")
	r.row("node_call_p99_ratio (worse of stdio, http)", fmt.Sprint(worstP99), "≤ 1.0")
	r.row("node_throughput_ratio (worse of stdio, http)", fmt.Sprint(worstTput), "≥ 1.0")
	return nil
}
