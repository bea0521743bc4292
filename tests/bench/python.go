package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

var (
	pyEnabled   = flag.Bool("python", true, "measure the Python agent: toolsvc package vs the Python MCP SDK (scripts/pyenv.sh client on first use)")
	pyCalls     = flag.Int("py-calls", 1000, "Python agent: sequential calls per path per round")
	pyConcCalls = flag.Int("py-conc-calls", 4000, "Python agent: calls per path per round from -callers concurrent tasks")
	pyWarmup    = flag.Int("py-warmup", 200, "Python agent: calls per path before measuring")
)

// pyAgent is one tests/bench/pyagent.py process: one path, driven over
// stdin/stdout.
type pyAgent struct {
	name string
	p    *proc
	in   io.WriteCloser
	out  *bufio.Reader
}

// pyRun is one command's answer.
type pyRun struct {
	LatNS     []int64 `json:"lat_ns"`
	ElapsedNS int64   `json:"elapsed_ns"`
	CPUNS     int64   `json:"cpu_ns"`
}

func startPyAgent(ctx context.Context, e *env, name string, args ...string) (*pyAgent, error) {
	py := filepath.Join(e.root, ".venv", "client", "bin", "python")
	cmd := exec.Command(py, append([]string{filepath.Join(e.root, "tests", "bench", "pyagent.py")}, args...)...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(e.root, "clients", "python", "src"))
	cmd.Dir = e.root
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	outW.Close()
	errW.Close()
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), cond: make(chan struct{})}
	procs.mu.Lock()
	procs.list = append(procs.list, p)
	procs.mu.Unlock()
	go func() {
		defer close(p.done)
		p.consume(errR)
		errR.Close()
		_ = cmd.Wait()
		outR.Close()
	}()
	a := &pyAgent{name: name, p: p, in: in, out: bufio.NewReaderSize(outR, 1<<20)}
	ready := make(chan error, 1)
	go func() {
		line, err := a.out.ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "READY" {
			err = fmt.Errorf("unexpected first line %q", line)
		}
		ready <- err
	}()
	select {
	case err = <-ready:
	case <-time.After(60 * time.Second):
		err = fmt.Errorf("not ready after 60 s")
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w; output:\n%s", name, err, p.output())
	}
	return a, nil
}

func (a *pyAgent) do(command string) (*pyRun, error) {
	if _, err := fmt.Fprintln(a.in, command); err != nil {
		return nil, fmt.Errorf("%s: %w; output:\n%s", a.name, err, a.p.output())
	}
	line, err := a.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("%s: %q: %w; output:\n%s", a.name, command, err, a.p.output())
	}
	var r pyRun
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return nil, fmt.Errorf("%s: %q: %w", a.name, command, err)
	}
	return &r, nil
}

func durations(ns []int64) []time.Duration {
	out := make([]time.Duration, len(ns))
	for i, n := range ns {
		out[i] = time.Duration(n)
	}
	return out
}

// benchPython is the Python agent comparison: the same asyncio
// agent calls echo through toolsvc with the toolsvc package, and directly
// with the official Python MCP SDK client, over stdio (each side its own
// child of the same upstream binary) and streamable HTTP (one shared
// upstream process), at 1 and -callers concurrent callers, interleaved.
func benchPython(ctx context.Context, e *env, r *results) error {
	defer stopAll()
	pyenv := exec.CommandContext(ctx, filepath.Join(e.root, "scripts", "pyenv.sh"), "client")
	pyenv.Stdout, pyenv.Stderr = os.Stderr, os.Stderr
	if err := pyenv.Run(); err != nil {
		return fmt.Errorf("scripts/pyenv.sh client: %w", err)
	}
	_, httpURL, err := startUpstream(ctx, e, "http")
	if err != nil {
		return err
	}
	ts, err := startToolsvc(ctx, e, "python", fmt.Sprintf(`{"refreshInterval": "1h", "mcpServers": {"s": {"command": %q, "args": ["-mode", "stdio"]}, "h": {"url": %q}}}`, e.upstream, httpURL))
	if err != nil {
		return err
	}
	defer ts.close()
	type pair struct{ transport, direct, toolsvc string }
	pairs := []pair{{"stdio", "py direct stdio", "py toolsvc stdio"}, {"http", "py direct http", "py toolsvc http"}}
	agents := map[string]*pyAgent{}
	for _, a := range []struct {
		name string
		args []string
	}{
		{"py direct stdio", []string{"mcp-stdio", "echo", e.upstream, "-mode", "stdio"}},
		{"py toolsvc stdio", []string{"toolsvc", ts.addr, "s__echo"}},
		{"py direct http", []string{"mcp-http", httpURL, "echo"}},
		{"py toolsvc http", []string{"toolsvc", ts.addr, "h__echo"}},
	} {
		ag, err := startPyAgent(ctx, e, a.name, a.args...)
		if err != nil {
			return err
		}
		agents[a.name] = ag
	}
	names := []string{"py direct stdio", "py toolsvc stdio", "py direct http", "py toolsvc http"}
	for _, n := range names {
		if _, err := agents[n].do(fmt.Sprintf("seq %d", *pyWarmup)); err != nil {
			return err
		}
	}
	type agg struct {
		lat     []time.Duration
		elapsed time.Duration
		calls   int
		cpu     time.Duration
	}
	measure := func(command string) (map[string]*agg, error) {
		out := map[string]*agg{}
		for _, n := range names {
			out[n] = &agg{}
		}
		for round := range *rounds {
			for i := range names {
				n := names[(i+round)%len(names)]
				res, err := agents[n].do(command)
				if err != nil {
					return nil, err
				}
				a := out[n]
				a.lat = append(a.lat, durations(res.LatNS)...)
				a.elapsed += time.Duration(res.ElapsedNS)
				a.calls += len(res.LatNS)
				a.cpu += time.Duration(res.CPUNS)
			}
		}
		return out, nil
	}
	log.Printf("python agent: %d rounds of %d sequential calls per path", *rounds, *pyCalls)
	one, err := measure(fmt.Sprintf("seq %d", *pyCalls))
	if err != nil {
		return err
	}
	log.Printf("python agent: %d rounds of %d calls per path from %d callers", *rounds, *pyConcCalls, *callers)
	many, err := measure(fmt.Sprintf("conc %d %d", *pyConcCalls, *callers))
	if err != nil {
		return err
	}
	rate := func(a *agg) float64 { return float64(a.calls) / a.elapsed.Seconds() }
	worstP50, worstP99, worstTput := 0.0, 0.0, 1e9
	for _, p := range pairs {
		for _, c := range []struct {
			suffix string
			m      map[string]*agg
			n      int
		}{{"_1", one, 1}, {"_" + fmt.Sprint(*callers), many, *callers}} {
			d, t := c.m[p.direct], c.m[p.toolsvc]
			dp50, dp99, tp50, tp99 := pct(d.lat, 50), pct(d.lat, 99), pct(t.lat, 50), pct(t.lat, 99)
			p50r, p99r := round3(float64(tp50)/float64(dp50)), round3(float64(tp99)/float64(dp99))
			tr := round3(rate(t) / rate(d))
			k := p.transport + c.suffix
			r.set("py_direct_"+k+"_p50_us", us(dp50))
			r.set("py_direct_"+k+"_p99_us", us(dp99))
			r.set("py_toolsvc_"+k+"_p50_us", us(tp50))
			r.set("py_toolsvc_"+k+"_p99_us", us(tp99))
			r.set("py_direct_"+k+"_calls_per_s", round3(rate(d)))
			r.set("py_toolsvc_"+k+"_calls_per_s", round3(rate(t)))
			r.set("py_direct_"+k+"_agent_cpu_us_per_call", us(d.cpu/time.Duration(d.calls)))
			r.set("py_toolsvc_"+k+"_agent_cpu_us_per_call", us(t.cpu/time.Duration(t.calls)))
			r.set("py_call_p50_ratio_"+k, p50r)
			r.set("py_call_p99_ratio_"+k, p99r)
			r.set("py_throughput_ratio_"+k, tr)
			label := fmt.Sprintf("python %s, %d caller(s)", p.transport, c.n)
			r.row(label+": direct p50 / p99", fmt.Sprintf("%.0f / %.0f µs", us(dp50), us(dp99)), "")
			r.row(label+": toolsvc p50 / p99", fmt.Sprintf("%.0f / %.0f µs", us(tp50), us(tp99)), "")
			r.row(label+": calls/s direct / toolsvc", fmt.Sprintf("%.0f / %.0f", rate(d), rate(t)), "")
			r.row(label+": agent CPU per call direct / toolsvc", fmt.Sprintf("%.0f / %.0f µs", us(d.cpu/time.Duration(d.calls)), us(t.cpu/time.Duration(t.calls))), "")
			r.row(label+": p50 / p99 ratio (toolsvc / direct)", fmt.Sprintf("%v / %v", p50r, p99r), "≤ 1.0")
			r.row(label+": throughput ratio (toolsvc / direct)", fmt.Sprint(tr), "≥ 1.0")
			if c.n == 1 {
				worstP50, worstP99 = max(worstP50, p50r), max(worstP99, p99r)
			} else {
				worstTput = min(worstTput, tr)
			}
		}
	}
	r.set("py_call_p50_ratio", worstP50)
	r.set("py_call_p99_ratio", worstP99)
	r.set("py_throughput_ratio", worstTput)
	r.row("py_call_p50_ratio (1 caller, worse of stdio, http)", fmt.Sprint(worstP50), "≤ 1.0")
	r.row("py_call_p99_ratio (1 caller, worse of stdio, http)", fmt.Sprint(worstP99), "≤ 1.0")
	r.row(fmt.Sprintf("py_throughput_ratio (%d callers, worse of stdio, http)", *callers), fmt.Sprint(worstTput), "≥ 1.0")
	for _, a := range agents {
		fmt.Fprintln(a.in, "quit")
	}
	return nil
}

// pythonPhase runs benchPython unless -python=false or -skip python, which
// mark its figures as not measured.
func pythonPhase(ctx context.Context, e *env, r *results, skip bool) error {
	if skip || !*pyEnabled {
		why := "-skip python"
		if !*pyEnabled {
			why = "-python=false"
		}
		for _, k := range []string{"py_call_p50_ratio", "py_call_p99_ratio", "py_throughput_ratio"} {
			r.skip(k, why)
		}
		return nil
	}
	if err := benchPython(ctx, e, r); err != nil {
		return fmt.Errorf("python agent: %w", err)
	}
	return nil
}
