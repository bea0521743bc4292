package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// ensureNodeTests installs tests/node (the TypeScript-SDK storm server) if
// scripts/test.sh has not.
func ensureNodeTests(ctx context.Context, e *env) error {
	if _, err := os.Stat(filepath.Join(e.nodeDir, "node_modules", "@modelcontextprotocol", "sdk")); err == nil {
		return nil
	}
	log.Printf("npm ci in %s", e.nodeDir)
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = e.nodeDir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm ci in %s: %w", e.nodeDir, err)
	}
	return nil
}

// benchStorm is item 5: a TypeScript-SDK upstream (its low-level Server
// sends one notification per change, no merging) sends *storm
// tools/list_changed in a burst while a caller keeps calling echo on a
// second (go-sdk, stdio) upstream through the same toolsvc.
func benchStorm(ctx context.Context, e *env, r *results) error {
	defer stopAll()
	if err := ensureNodeTests(ctx, e); err != nil {
		return err
	}
	var profEnv []string
	if *profileDir != "" {
		if err := os.MkdirAll(*profileDir, 0o755); err != nil {
			return err
		}
		profEnv = []string{"TOOLSVC_BENCH_PPROF=127.0.0.1:0"}
	}
	ts, err := startToolsvc(ctx, e, "storm", fmt.Sprintf(`{"refreshInterval": "1h", "mcpServers": {"e": {"command": %q, "args": ["-mode", "stdio"]}, "storm": {"command": "node", "args": [%q]}}}`,
		e.upstream, filepath.Join(e.nodeDir, "storm_server.mjs")), profEnv...)
	if err != nil {
		return err
	}
	defer ts.close()
	var pprofAddr string
	if *profileDir != "" {
		if pprofAddr, err = ts.waitFor(ctx, pprofRE, 10*time.Second); err != nil {
			return fmt.Errorf("toolsvc was not built with -tags benchprofile: %w", err)
		}
	}
	echo := path{name: "toolsvc stdio", call: toolsvcEcho(ts.client, "e")}
	listCalls := func() (int, error) {
		res, err := ts.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "storm__stats"})
		if err != nil {
			return 0, err
		}
		v, ok := res.GetStructuredContent().GetFields()["list_calls"]
		if !ok {
			return 0, fmt.Errorf("storm__stats: no list_calls in %v", res)
		}
		return int(v.GetNumberValue()), nil
	}
	if _, err := sequential(ctx, echo, *warmup); err != nil {
		return err
	}
	before, err := sequential(ctx, echo, *stormCalls)
	if err != nil {
		return err
	}
	lists0, err := listCalls()
	if err != nil {
		return err
	}

	// The caller runs from the storm's start until the catalog is complete
	// and half a second more (a debounced second list may follow).
	stopCalls := make(chan struct{})
	type callsResult struct {
		lat   []time.Duration
		start []time.Time
		err   error
	}
	callsDone := make(chan callsResult, 1)
	go func() {
		var res callsResult
		defer func() { callsDone <- res }()
		for {
			select {
			case <-stopCalls:
				return
			default:
			}
			t0 := time.Now()
			if res.err = echo.call(ctx); res.err != nil {
				return
			}
			res.lat = append(res.lat, time.Since(t0))
			res.start = append(res.start, t0)
		}
	}()
	stopCaller := func() callsResult {
		close(stopCalls)
		return <-callsDone
	}
	// With -profile, a CPU profile and an execution trace of toolsvc cover
	// the storm (-profile-seconds, at most 3 s), written as storm-cpu.pprof
	// and storm-trace.out.
	profDone := make(chan error, 2)
	profiling := 0
	if pprofAddr != "" {
		secs := min(*profileSecs, 3)
		for _, f := range [][2]string{{"profile", "storm-cpu.pprof"}, {"trace", "storm-trace.out"}} {
			profiling++
			go func() {
				profDone <- fetchTo(ctx, fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", pprofAddr, f[0], secs), filepath.Join(*profileDir, f[1]))
			}()
		}
		time.Sleep(100 * time.Millisecond) // both started
	}
	log.Printf("storm: %d list_changed in a burst while calling e__echo", *storm)
	cpu0 := ts.cpu()
	t0 := time.Now()
	args, _ := structpb.NewStruct(map[string]any{"count": *storm})
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := ts.client.CallTool(sctx, &toolsvcv1.CallToolRequest{Name: "storm__storm", Arguments: args}); err != nil {
		stopCaller()
		return fmt.Errorf("storm__storm: %w", err)
	}
	sent := time.Since(t0)
	// The last stormed tool is callable once the catalog has caught up.
	last := &toolsvcv1.CallToolRequest{Name: fmt.Sprintf("storm__storm_%d", *storm-1)}
	for {
		_, err := ts.client.CallTool(sctx, last)
		if err == nil {
			break
		}
		if status.Code(err) != codes.NotFound {
			stopCaller()
			return fmt.Errorf("%s: %w", last.Name, err)
		}
		select {
		case <-sctx.Done():
			stopCaller()
			return errors.New("the catalog did not reach the last stormed tool within 2 minutes")
		case <-time.After(20 * time.Millisecond):
		}
	}
	complete := time.Since(t0)
	cpu := ts.cpu() - cpu0
	time.Sleep(500 * time.Millisecond)
	during := stopCaller()
	if during.err != nil {
		return fmt.Errorf("calls during the storm: %w", during.err)
	}
	for range profiling {
		if err := <-profDone; err != nil {
			return fmt.Errorf("storm profile: %w", err)
		}
	}
	logSlowCalls(t0, sent, complete, during.start, during.lat)
	time.Sleep(time.Second) // quiet: a trailing list would have started by now
	lists1, err := listCalls()
	if err != nil {
		return err
	}
	bp99, dp99 := pct(before, 99), pct(during.lat, 99)
	ratio := round3(float64(dp99) / float64(bp99))
	r.set("storm_notifications", *storm)
	r.set("storm_sent_ms", ms(sent))
	r.set("storm_catalog_complete_ms", ms(complete))
	// toolsvc's CPU from the storm's start until the catalog was complete
	// (10 ms ticks), calls served meanwhile included.
	r.set("storm_toolsvc_cpu_ms", ms(cpu))
	r.set("storm_lists", lists1-lists0)
	r.set("storm_calls_during", len(during.lat))
	r.set("storm_call_p50_before_us", us(pct(before, 50)))
	r.set("storm_call_p99_before_us", us(bp99))
	r.set("storm_call_p50_during_us", us(pct(during.lat, 50)))
	r.set("storm_call_p99_during_us", us(dp99))
	r.set("storm_call_p99_ratio", ratio)
	r.row(fmt.Sprintf("storm: %d list_changed sent in", *storm), fmt.Sprintf("%.0f ms", ms(sent)), "")
	r.row("storm: catalog complete after", fmt.Sprintf("%.0f ms (toolsvc CPU meanwhile %.0f ms)", ms(complete), ms(cpu)), "")
	r.row("storm_lists (upstream tools/list calls)", fmt.Sprint(lists1-lists0), "≤ 3")
	r.row("storm: call p50 / p99 before", fmt.Sprintf("%.0f / %.0f µs", us(pct(before, 50)), us(bp99)), "")
	r.row(fmt.Sprintf("storm: call p50 / p99 during (%d calls)", len(during.lat)), fmt.Sprintf("%.0f / %.0f µs", us(pct(during.lat, 50)), us(dp99)), "")
	r.row("storm_call_p99_ratio", fmt.Sprint(ratio), "≤ 1.2")
	return nil
}

// logSlowCalls logs the slowest 1% of the calls made during the storm, each
// with its start relative to the storm's (the sent and complete times are
// on the same clock): when in the storm the tail happens.
func logSlowCalls(t0 time.Time, sent, complete time.Duration, start []time.Time, lat []time.Duration) {
	idx := make([]int, len(lat))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(lat[b], lat[a]) })
	n := max(len(lat)/100, 1)
	idx = idx[:min(n, len(idx))]
	slices.Sort(idx)
	var b strings.Builder
	for _, i := range idx {
		fmt.Fprintf(&b, " +%.1f:%.0fµs", ms(start[i].Sub(t0)), us(lat[i]))
	}
	log.Printf("storm: sent +%.0f ms, complete +%.0f ms; slowest %d calls (start ms: latency):%s", ms(sent), ms(complete), len(idx), b.String())
}

// benchStormSink is the storm with toolsvc out of its path: toolsvc fronts
// only the echo upstream, and the bench itself runs the storm server,
// reading its output with a trivial sink (lines counted, nothing decoded)
// and asking for tools/list once after the burst, as toolsvc would. The
// caller's p99 during that storm against before is the floor the storm
// server's own CPU sets on this machine (storm_sink_call_p99_ratio).
func benchStormSink(ctx context.Context, e *env, r *results) error {
	defer stopAll()
	if err := ensureNodeTests(ctx, e); err != nil {
		return err
	}
	ts, err := startToolsvc(ctx, e, "stormsink", fmt.Sprintf(`{"refreshInterval": "1h", "mcpServers": {"e": {"command": %q, "args": ["-mode", "stdio"]}}}`, e.upstream))
	if err != nil {
		return err
	}
	defer ts.close()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(e.nodeDir, "storm_server.mjs"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	// The sink: lines are counted; a line with an id is an answer, whose id
	// is reported.
	answers := make(chan int, 4)
	var notes atomic.Int64
	go func() {
		br := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := br.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				for errors.Is(err, bufio.ErrBufferFull) {
					_, err = br.ReadSlice('\n')
				}
				answers <- -1 // a long line: the tools/list answer
				continue
			}
			if err != nil {
				close(answers)
				return
			}
			if i := bytes.Index(line, []byte(`"id":`)); i >= 0 {
				id, _ := strconv.Atoi(string(bytes.TrimRight(line[i+5:i+6], "},")))
				answers <- id
				continue
			}
			notes.Add(1)
		}
	}()
	send := func(s string) error { _, err := io.WriteString(stdin, s+"\n"); return err }
	wait := func(what string) error {
		select {
		case _, ok := <-answers:
			if !ok {
				return fmt.Errorf("storm server: no answer to %s", what)
			}
			return nil
		case <-time.After(2 * time.Minute):
			return fmt.Errorf("storm server: no answer to %s within 2 minutes", what)
		}
	}
	if err := send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sink","version":"1"}}}`); err != nil {
		return err
	}
	if err := wait("initialize"); err != nil {
		return err
	}
	if err := send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return err
	}
	echo := path{name: "toolsvc stdio", call: toolsvcEcho(ts.client, "e")}
	if _, err := sequential(ctx, echo, *warmup); err != nil {
		return err
	}
	before, err := sequential(ctx, echo, *stormCalls)
	if err != nil {
		return err
	}
	stop := make(chan struct{})
	var during []time.Duration
	var callErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			t0 := time.Now()
			if callErr = echo.call(ctx); callErr != nil {
				return
			}
			during = append(during, time.Since(t0))
		}
	}()
	t0 := time.Now()
	err = send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"storm","arguments":{"count":%d}}}`, *storm))
	if err == nil {
		err = wait("storm")
	}
	sent := time.Since(t0)
	if err == nil {
		err = send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	}
	if err == nil {
		err = wait("tools/list")
	}
	listed := time.Since(t0)
	time.Sleep(500 * time.Millisecond)
	close(stop)
	<-done
	if err != nil {
		return err
	}
	if callErr != nil {
		return fmt.Errorf("calls during the storm: %w", callErr)
	}
	bp99, dp99 := pct(before, 99), pct(during, 99)
	ratio := round3(float64(dp99) / float64(bp99))
	r.set("storm_sink_notifications_read", notes.Load())
	r.set("storm_sink_sent_ms", ms(sent))
	r.set("storm_sink_listed_ms", ms(listed))
	r.set("storm_sink_calls_during", len(during))
	r.set("storm_sink_call_p99_before_us", us(bp99))
	r.set("storm_sink_call_p99_during_us", us(dp99))
	r.set("storm_sink_call_p99_ratio", ratio)
	r.row("storm into a sink: sent / listed after", fmt.Sprintf("%.0f / %.0f ms", ms(sent), ms(listed)), "")
	r.row(fmt.Sprintf("storm into a sink: call p99 before / during (%d calls)", len(during)), fmt.Sprintf("%.0f / %.0f µs", us(bp99), us(dp99)), "")
	r.row("storm_sink_call_p99_ratio", fmt.Sprint(ratio), "")
	return nil
}
