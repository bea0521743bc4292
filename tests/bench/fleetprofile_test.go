package main

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// parkedGoroutine blocks until release is closed: goroutines of a known
// start for the breakdown to find.
func parkedGoroutine(release chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	<-release
}

// retained is what heldAllocation keeps alive while the heap profile is
// taken.
var retained [][]byte

//go:noinline
func heldAllocation() {
	for range 64 {
		retained = append(retained, make([]byte, 64<<10))
	}
}

// TestFleetBreakdown: the per-upstream breakdown of -fleet-profile, on
// this process's own goroutine dump and heap profile taken before and
// after it starts 8 parked goroutines and keeps 4 MiB: the goroutines are
// counted at their start, and the heap at its allocation site, per
// "upstream" (here 4).
func TestFleetBreakdown(t *testing.T) {
	dir := t.TempDir()
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = old }()
	dump := func(name string) {
		for _, p := range [][2]string{{"goroutine", name + "-goroutines.txt"}, {"heap", name + "-heap.pprof"}} {
			f, err := os.Create(filepath.Join(dir, p[1]))
			if err != nil {
				t.Fatal(err)
			}
			debug := 0
			if p[0] == "goroutine" {
				debug = 2
			}
			runtime.GC()
			if err := pprof.Lookup(p[0]).WriteTo(f, debug); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	dump("base")
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go parkedGoroutine(release, &wg)
	}
	heldAllocation()
	dump("fleet")
	close(release)
	wg.Wait()
	retained = nil

	table, err := fleetBreakdown(dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "fleet-idle.txt")); err != nil || string(b) != table {
		t.Fatalf("fleet-idle.txt = %q, %v; want the table returned", b, err)
	}
	// Each table's row for a site: its per-upstream figure, first table
	// first.
	const pkg = "github.com/toolsvc/toolsvc/tests/bench."
	per := map[string][]float64{}
	for _, l := range strings.Split(table, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		site := strings.Join(f[3:], " ")
		per[site] = append(per[site], v)
	}
	if got := per[pkg+"parkedGoroutine ← "+pkg+"TestFleetBreakdown"]; len(got) != 1 || got[0] != 2 {
		t.Errorf("parked goroutines per upstream = %v, want [2] (8 over 4):\n%s", got, table)
	}
	// 4 MiB over 4, by site and by owner; the slice that holds them adds
	// a little.
	if got := per[pkg+"heldAllocation"]; len(got) != 2 || got[0] < 1024 || got[0] > 1028 || got[1] < 1024 || got[1] > 1028 {
		t.Errorf("KiB per upstream allocated by heldAllocation = %v, want about 1024 in both tables:\n%s", got, table)
	}
}
