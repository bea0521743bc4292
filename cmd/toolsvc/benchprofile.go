//go:build benchprofile

// A profiling build for go run ./tests/bench -profile: with the benchprofile
// tag and TOOLSVC_BENCH_PPROF=host:port, toolsvc serves net/http/pprof on
// its own listener. Never part of a normal build.

package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"strconv"
)

func init() {
	addr := os.Getenv("TOOLSVC_BENCH_PPROF")
	if addr == "" {
		return
	}
	// TOOLSVC_BENCH_MEMPROFILERATE samples the heap finer than the
	// runtime's 512 KiB, for per-site figures of small retained objects
	// (the fleet phase's breakdown per upstream). Set here, before the
	// allocations it should see.
	if v := os.Getenv("TOOLSVC_BENCH_MEMPROFILERATE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			fmt.Fprintln(os.Stderr, "benchprofile: TOOLSVC_BENCH_MEMPROFILERATE is not a positive number of bytes:", v)
			os.Exit(2)
		}
		runtime.MemProfileRate = n
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchprofile:", err)
		os.Exit(2)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	fmt.Fprintf(os.Stderr, "benchprofile: pprof on %s\n", lis.Addr())
	// Lives as long as the process: this build exists only to be profiled.
	go func() { _ = http.Serve(lis, mux) }()
}
