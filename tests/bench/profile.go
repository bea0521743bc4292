package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// profileCalls runs a profiling build of toolsvc (-tags benchprofile) in
// front of the stdio upstream (-profile-transport http: the HTTP one;
// grpc: tests/mcpgrpcupstream, the MCP gRPC binding), drives *callers concurrent callers for
// *profileSecs and writes cpu.pprof, allocs.pprof (allocations during the
// load only) and trace.out (a 1 s execution trace) into *profileDir; then
// the same for the floor gateway (tests/bench/floorgw: grpc-go in, go-sdk's
// ClientSession or the binding's client out) in front of its own stdio
// child (or the same HTTP or gRPC upstream), as floor-cpu.pprof,
// floor-allocs.pprof and floor-trace.out. With -callers 1 the two traces
// show what a sequential call costs on each side.
func profileCalls(ctx context.Context, e *env) error {
	defer stopAll()
	if err := os.MkdirAll(*profileDir, 0o755); err != nil {
		return err
	}
	// The upstream: toolsvc's own stdio child and the floor's (server s),
	// or with -profile-transport http one HTTP upstream for both (server h).
	server, servers, floorArgs := "s", fmt.Sprintf(`{"s": {"command": %q, "args": ["-mode", "stdio"]}}`, e.upstream), []string{"-upstream", e.upstream}
	switch *profileTransport {
	case "stdio":
	case "http":
		_, url, err := startUpstream(ctx, e, "http")
		if err != nil {
			return err
		}
		server, servers, floorArgs = "h", fmt.Sprintf(`{"h": {"url": %q}}`, url), []string{"-http", url}
	case "grpc":
		addr, err := startMcpGRPCUpstream(ctx, e)
		if err != nil {
			return err
		}
		server, servers, floorArgs = "g", fmt.Sprintf(`{"g": {"type": "grpc", "url": "grpc://%s"}}`, addr), []string{"-mcp-grpc", addr}
	default:
		return fmt.Errorf("-profile-transport %q: want stdio, http or grpc", *profileTransport)
	}
	ts, err := startToolsvc(ctx, e, "profile", fmt.Sprintf(`{"refreshInterval": "1h", "mcpServers": %s}`, servers),
		"TOOLSVC_BENCH_PPROF=127.0.0.1:0")
	if err != nil {
		return err
	}
	addr, err := ts.waitFor(ctx, pprofRE, 10*time.Second)
	if err != nil {
		ts.close()
		return fmt.Errorf("toolsvc was not built with -tags benchprofile: %w", err)
	}
	err = profileLoad(ctx, "", addr, path{name: "toolsvc " + *profileTransport, call: toolsvcEcho(ts.client, server)})
	ts.close() // before the floor's load: one process under test at a time
	if err != nil {
		return err
	}
	fl, err := startFloor(ctx, e, append(floorArgs, "-pprof", "127.0.0.1:0")...)
	if err != nil {
		return err
	}
	defer fl.close()
	faddr, err := fl.waitFor(ctx, floorPprofRE, 10*time.Second)
	if err != nil {
		return err
	}
	return profileLoad(ctx, "floor-", faddr, path{name: "floor " + *profileTransport, call: toolsvcEcho(fl.client, server)})
}

var (
	floorPprofRE     = regexp.MustCompile(`^pprof on (\S+)`)
	profileTransport = flag.String("profile-transport", "stdio", "the upstream of -profile's call load: stdio, http or grpc (tests/mcpgrpcupstream)")
)

// profileLoad drives p from *callers callers for *profileSecs and fetches
// the CPU and allocation profiles and a 1 s execution trace of the process
// serving pprof at addr, into *profileDir with names prefixed by prefix.
func profileLoad(ctx context.Context, prefix, addr string, p path) error {
	if _, err := sequential(ctx, p, *warmup); err != nil {
		return err
	}
	secs := max(*profileSecs-2, 1)
	fetch := func(name, url string) error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		f, err := os.Create(filepath.Join(*profileDir, prefix+name))
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(f, resp.Body)
		return err
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var wg sync.WaitGroup
	var calls int
	var loadErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for loadCtx.Err() == nil { // until the profiles and the trace are in
			if _, loadErr = concurrent(loadCtx, p, 2000, *callers); loadErr != nil {
				return
			}
			calls += 2000
		}
	}()
	time.Sleep(time.Second)
	log.Printf("profile %s: %d s of CPU and allocations from %s", p.name, secs, addr)
	errs := make(chan error, 2)
	go func() {
		errs <- fetch("cpu.pprof", fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs))
	}()
	go func() {
		errs <- fetch("allocs.pprof", fmt.Sprintf("http://%s/debug/pprof/allocs?seconds=%d", addr, secs))
	}()
	err := <-errs
	if err2 := <-errs; err == nil {
		err = err2
	}
	if err == nil {
		// The trace after the profiles: tracing inflates every step.
		err = fetch("trace.out", fmt.Sprintf("http://%s/debug/pprof/trace?seconds=1", addr))
	}
	stopLoad()
	wg.Wait()
	if err != nil {
		return err
	}
	if loadErr != nil && status.Code(loadErr) != codes.Canceled {
		return loadErr
	}
	log.Printf("profile %s: %d calls; go tool pprof -top %s/%scpu.pprof; go tool pprof -sample_index=alloc_space -top %s/%sallocs.pprof; go tool trace %s/%strace.out",
		p.name, calls, *profileDir, prefix, *profileDir, prefix, *profileDir, prefix)
	return nil
}
