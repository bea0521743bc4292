package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

var fleetLean = flag.Bool("fleet-lean", true, "in the fleet phase, also measure a replica whose -fleet-upstreams upstreams have one tool each "+
	"(fleet_heap_kib_per_upstream_beyond_tools: what an idle upstream costs beyond its tools; with -fleet-profile, heap in use after two forced collections)")

// benchFleetLean measures what an idle HTTP upstream costs beyond its
// tools: a replica in front of n upstreams of one tool each (echo; one
// bench upstream process serves them all) against the baseline replica
// with the quiet upstream alone. One tool per upstream rather than the
// fleet's tools minus their cost: the tools' share is what the catalog and
// the bridge keep per tool (about 2.3 KiB), and subtracting it from a
// figure 100 times larger would leave the noise. With -fleet-profile
// (a benchprofile build) both replicas' heap in use is read after two forced
// collections (the heap profile's ?gc=1), so it counts what is live; without,
// it is the heap in use 5 s after listing, garbage included.
func benchFleetLean(ctx context.Context, e *env, r *results, n int, quiet string, profEnv []string) error {
	if !*fleetLean {
		r.skip("fleet_heap_kib_per_upstream_beyond_tools", "-fleet-lean=false")
		return nil
	}
	up, leanURL, err := startUpstream(ctx, e, "http", "-servers", fmt.Sprint(n), "-tools", "0")
	if err != nil {
		return err
	}
	defer up.stop()
	base := strings.TrimSuffix(leanURL, "/mcp")
	idle0, err := fleetIdleGC(ctx, e, "lean-base", quiet, 1, profEnv)
	if err != nil {
		return err
	}
	servers := []string{quiet}
	for i := range n {
		servers = append(servers, fmt.Sprintf(`"u%03d": {"url": "%s/mcp/%d"}`, i, base, i))
	}
	idle, err := fleetIdleGC(ctx, e, "lean", strings.Join(servers, ", "), n+1, profEnv)
	if err != nil {
		return err
	}
	heapPer := (idle.heapKiB - idle0.heapKiB) / float64(n)
	gorPer := (idle.goroutines - idle0.goroutines) / float64(n)
	r.set("fleet_heap_kib_per_upstream_beyond_tools", round3(heapPer))
	r.set("fleet_stack_kib_per_upstream_beyond_tools", round3((idle.stackKiB-idle0.stackKiB)/float64(n)))
	r.set("fleet_lean_goroutines_per_upstream", round3(gorPer))
	how := "heap in use 5 s after listing"
	if profEnv != nil {
		how = "heap in use after forced collections"
	}
	r.row(fmt.Sprintf("fleet: per idle upstream beyond its tools (%d upstreams of 1 tool; %s), goroutines", n, how),
		fmt.Sprintf("%.1f KiB, %.2f", heapPer, gorPer), "≤ 64 KiB, ≤ 4")
	return nil
}

// fleetIdleGC starts a replica with servers, waits until its upstreams
// contribute want tools and 5 s more, and returns its cost: with profEnv
// (a benchprofile build), read after two forced collections, whose goroutine
// dump and heap profile are written as <name>-goroutines.txt and
// <name>-heap.pprof.
func fleetIdleGC(ctx context.Context, e *env, name, servers string, want int, profEnv []string) (fleetCost, error) {
	admin, err := freePort()
	if err != nil {
		return fleetCost{}, err
	}
	adminAddr := fmt.Sprintf("127.0.0.1:%d", admin)
	ts, err := startToolsvcArgs(ctx, e, name, fmt.Sprintf(`{"refreshInterval": "1h", "mcpServers": {%s}}`, servers),
		[]string{"--admin-listen", adminAddr}, profEnv...)
	if err != nil {
		return fleetCost{}, err
	}
	defer ts.close()
	got, err := waitFleetTools(ctx, adminAddr, want, *fleetWait)
	if err != nil {
		return fleetCost{}, err
	}
	if got < want {
		return fleetCost{}, fmt.Errorf("%s: only %d of %d tools listed within -fleet-timeout", name, got, want)
	}
	time.Sleep(5 * time.Second)
	if profEnv != nil {
		prof, err := newFleetProf(ctx, ts.proc)
		if err != nil {
			return fleetCost{}, err
		}
		// Two collections: what sync.Pool holds (the transport's pooled
		// 64 KiB message readers, one per listing that ran at once at
		// start) survives one, and is no upstream's.
		if err := fetchTo(ctx, fmt.Sprintf("http://%s/debug/pprof/heap?gc=1", prof.addr), os.DevNull); err != nil {
			return fleetCost{}, err
		}
		if err := prof.idle(ctx, name); err != nil { // the heap profile forces the second
			return fleetCost{}, err
		}
	}
	m, err := scrapeMetrics(ctx, adminAddr)
	if err != nil {
		return fleetCost{}, err
	}
	return idleOf(m, ts.rssKiB()), nil
}
