package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// profileCalls runs a profiling build of toolsvc (-tags benchprofile) in
// front of the stdio upstream, drives *callers concurrent callers for
// *profileSecs and writes cpu.pprof and allocs.pprof (allocations during
// the load only) into *profileDir.
func profileCalls(ctx context.Context, e *env) error {
	defer stopAll()
	if err := os.MkdirAll(*profileDir, 0o755); err != nil {
		return err
	}
	ts, err := startToolsvc(ctx, e, "profile", fmt.Sprintf(`{"refreshInterval": "1h", "mcpServers": {"s": {"command": %q, "args": ["-mode", "stdio"]}}}`, e.upstream),
		"TOOLSVC_BENCH_PPROF=127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ts.close()
	addr, err := ts.waitFor(ctx, pprofRE, 10*time.Second)
	if err != nil {
		return fmt.Errorf("toolsvc was not built with -tags benchprofile: %w", err)
	}
	p := path{name: "toolsvc stdio", call: toolsvcEcho(ts.client, "s")}
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
		f, err := os.Create(filepath.Join(*profileDir, name))
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
		t0 := time.Now()
		for time.Since(t0) < time.Duration(*profileSecs)*time.Second && loadCtx.Err() == nil {
			if _, loadErr = concurrent(loadCtx, p, 2000, *callers); loadErr != nil {
				return
			}
			calls += 2000
		}
	}()
	time.Sleep(time.Second)
	log.Printf("profile: %d s of CPU and allocations from %s", secs, addr)
	errs := make(chan error, 2)
	go func() {
		errs <- fetch("cpu.pprof", fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs))
	}()
	go func() {
		errs <- fetch("allocs.pprof", fmt.Sprintf("http://%s/debug/pprof/allocs?seconds=%d", addr, secs))
	}()
	err = <-errs
	if err2 := <-errs; err == nil {
		err = err2
	}
	stopLoad()
	wg.Wait()
	if err != nil {
		return err
	}
	if loadErr != nil && status.Code(loadErr) != codes.Canceled {
		return loadErr
	}
	log.Printf("profile: %d calls; go tool pprof -top %s/cpu.pprof; go tool pprof -sample_index=alloc_space -top %s/allocs.pprof", calls, *profileDir, *profileDir)
	return nil
}
