package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

var (
	fleetProfile = flag.String("fleet-profile", "", "write profiles of the fleet phase into this directory (a benchprofile build of toolsvc): "+
		"goroutines and heap of the idle baseline and fleet replicas with a per-upstream breakdown by site (fleet-idle.txt), "+
		"and a CPU profile and execution trace of the connect storm at start and of the re-list after the list_changed")
	fleetProfileSecs = flag.Int("fleet-profile-seconds", 5, "length of each fleet storm's CPU profile and execution trace")
	fleetProfileRate = flag.Int("fleet-profile-memrate", 4096, "with -fleet-profile, toolsvc's heap sampling rate in bytes (runtime.MemProfileRate; the runtime's default, 512 KiB, is too coarse for sites of a few KiB per upstream)")
)

// fleetProf profiles one replica of the fleet phase through its
// benchprofile pprof listener.
type fleetProf struct {
	dir, addr string
	running   int
	done      chan error
}

// newFleetProf waits for the replica's pprof address (printed at init,
// before it serves).
func newFleetProf(ctx context.Context, p *proc) (*fleetProf, error) {
	addr, err := p.waitFor(ctx, pprofRE, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("toolsvc was not built with -tags benchprofile: %w", err)
	}
	return &fleetProf{dir: *fleetProfile, addr: addr, done: make(chan error, 2)}, nil
}

// storm starts a CPU profile and an execution trace of the next
// -fleet-profile-seconds, written as <name>-cpu.pprof and <name>-trace.out;
// wait collects them.
func (fp *fleetProf) storm(ctx context.Context, name string) {
	for _, f := range [][2]string{{"profile", name + "-cpu.pprof"}, {"trace", name + "-trace.out"}} {
		fp.running++
		go func() {
			fp.done <- fetchTo(ctx, fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", fp.addr, f[0], *fleetProfileSecs), filepath.Join(fp.dir, f[1]))
		}()
	}
	time.Sleep(100 * time.Millisecond) // both started
}

func (fp *fleetProf) wait() error {
	var first error
	for ; fp.running > 0; fp.running-- {
		if err := <-fp.done; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// idle writes the replica's goroutines (debug=2: every stack with its
// creation site) and its heap after a collection, as
// <name>-goroutines.txt and <name>-heap.pprof.
func (fp *fleetProf) idle(ctx context.Context, name string) error {
	if err := fetchTo(ctx, fmt.Sprintf("http://%s/debug/pprof/goroutine?debug=2", fp.addr), filepath.Join(fp.dir, name+"-goroutines.txt")); err != nil {
		return err
	}
	return fetchTo(ctx, fmt.Sprintf("http://%s/debug/pprof/heap?gc=1", fp.addr), filepath.Join(fp.dir, name+"-heap.pprof"))
}

// heap writes the replica's heap profile after a collection (the runtime
// publishes allocations at the end of a cycle) as <name>-heap.pprof: its
// alloc_space less an earlier profile's is what was allocated between them.
func (fp *fleetProf) heap(ctx context.Context, name string) error {
	return fetchTo(ctx, fmt.Sprintf("http://%s/debug/pprof/heap?gc=1", fp.addr), filepath.Join(fp.dir, name+"-heap.pprof"))
}

// fleetBreakdown compares the fleet replica's idle goroutines and heap
// with the baseline's (files "base-*" and "fleet-*" in dir), divides the
// difference by the n upstreams, and writes the tables to
// dir/fleet-idle.txt; it returns them.
func fleetBreakdown(dir string, n int) (string, error) {
	var out bytes.Buffer
	g0, err := goroutineSites(filepath.Join(dir, "base-goroutines.txt"))
	if err != nil {
		return "", err
	}
	g1, err := goroutineSites(filepath.Join(dir, "fleet-goroutines.txt"))
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&out, "Goroutines per idle upstream by where they start (created by), %d upstreams: fleet − baseline\n", n)
	writeSites(&out, g0, g1, n, "goroutines", 1)
	h0, err := heapSites(filepath.Join(dir, "base-heap.pprof"))
	if err != nil {
		return "", err
	}
	h1, err := heapSites(filepath.Join(dir, "fleet-heap.pprof"))
	if err != nil {
		return "", err
	}
	for i, title := range []string{
		"Heap in use per idle upstream (after a collection) by allocation site (the first frame outside runtime, reflect, sync and internal/)",
		"Heap in use per idle upstream by owner (the innermost frame of toolsvc, else go-sdk, else the site)",
	} {
		fmt.Fprintf(&out, "\n%s: fleet − baseline\n", title)
		writeSites(&out, h0[i], h1[i], n, "KiB", 1024)
	}
	if err := os.WriteFile(filepath.Join(dir, "fleet-idle.txt"), out.Bytes(), 0o644); err != nil {
		return "", err
	}
	return out.String(), nil
}

// writeSites writes the sites whose per-upstream difference is largest,
// then the total; unit divides the values.
func writeSites(out *bytes.Buffer, base, fleet map[string]float64, n int, unit string, div float64) {
	type row struct {
		site       string
		base, with float64
	}
	var rows []row
	var tb, tf float64
	for k, v := range fleet {
		rows = append(rows, row{k, base[k], v})
		tf += v
	}
	for k, v := range base {
		tb += v
		if _, ok := fleet[k]; !ok {
			rows = append(rows, row{k, v, 0})
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		di, dj := rows[i].with-rows[i].base, rows[j].with-rows[j].base
		if di != dj {
			return di > dj
		}
		return rows[i].site < rows[j].site
	})
	fmt.Fprintf(out, "%12s %12s %12s  %s\n", "per upstream", "baseline", "fleet", "site ("+unit+")")
	shown := 0
	for _, r := range rows {
		d := (r.with - r.base) / float64(n) / div
		if shown == 30 || (d < 0.01 && d > -0.01) {
			continue
		}
		shown++
		fmt.Fprintf(out, "%12.2f %12.0f %12.0f  %s\n", d, r.base/div, r.with/div, r.site)
	}
	fmt.Fprintf(out, "%12.2f %12.0f %12.0f  total\n", (tf-tb)/float64(n)/div, tb/div, tf/div)
}

// goroutineSites counts the goroutines of a debug=2 dump by their start:
// the function the goroutine began in (its outermost frame) and the one
// whose go statement started it.
func goroutineSites(file string) (map[string]float64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, g := range strings.Split(string(b), "\n\n") {
		var funcs []string
		creator := ""
		sc := bufio.NewScanner(strings.NewReader(g))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			l := sc.Text()
			switch {
			case strings.HasPrefix(l, "goroutine "), strings.HasPrefix(l, "\t"), strings.HasPrefix(l, "..."), l == "":
			case strings.HasPrefix(l, "created by "):
				creator = strings.TrimPrefix(l, "created by ")
				if i := strings.Index(creator, " in goroutine "); i >= 0 {
					creator = creator[:i]
				}
			default:
				if i := strings.LastIndexByte(l, '('); i > 0 {
					l = l[:i]
				}
				funcs = append(funcs, l)
			}
		}
		if len(funcs) == 0 {
			continue
		}
		site := funcs[len(funcs)-1]
		if creator != "" {
			site += " ← " + creator
		}
		out[site]++
	}
	return out, nil
}

// heapSites sums a heap profile's inuse_space by allocation site and by
// owner.
func heapSites(file string) ([2]map[string]float64, error) {
	out := [2]map[string]float64{{}, {}}
	f, err := os.Open(file)
	if err != nil {
		return out, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return out, fmt.Errorf("%s: %w", file, err)
	}
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "inuse_space" {
			idx = i
		}
	}
	if idx < 0 {
		return out, fmt.Errorf("%s: no inuse_space samples", file)
	}
	for _, s := range p.Sample {
		var frames []string
		for _, loc := range s.Location {
			for _, l := range loc.Line {
				if l.Function != nil {
					frames = append(frames, l.Function.Name)
				}
			}
		}
		site, owner, sdk := "?", "", ""
		for _, fn := range frames {
			if site == "?" && !strings.HasPrefix(fn, "runtime.") && !strings.HasPrefix(fn, "reflect.") &&
				!strings.HasPrefix(fn, "sync.") && !strings.HasPrefix(fn, "internal/") {
				site = fn
			}
			if owner == "" && strings.HasPrefix(fn, "github.com/toolsvc/toolsvc/") {
				owner = fn
			}
			if sdk == "" && strings.HasPrefix(fn, "github.com/modelcontextprotocol/go-sdk/") {
				sdk = fn
			}
		}
		if owner == "" {
			owner = sdk
		}
		if owner == "" {
			owner = site
		}
		v := float64(s.Value[idx])
		out[0][site] += v
		out[1][owner] += v
	}
	return out, nil
}
