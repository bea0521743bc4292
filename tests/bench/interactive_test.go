package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkContinuation is the continuation phase as a Go benchmark: each
// iteration makes one plain call and one continued call (two rounds) on a
// 2025-11-25 upstream (parked) and on a 2026-07-28 one (relayed), in turn,
// through a real toolsvc (built without -race). It reports the median of
// each and the ratios continued / (2 × plain): at most 1 means the answer's
// round trip costs no more than one extra call; and the first round's
// median alone. No thresholds: a noisy
// machine moves the absolute times; the ratio is the figure.
//
//	go test -run '^$' -bench Continuation -benchtime 2000x ./tests/bench
func BenchmarkContinuation(b *testing.B) {
	root, err := moduleRoot()
	if err != nil {
		b.Fatal(err)
	}
	e := &env{root: root, tmp: b.TempDir()}
	e.toolsvc = filepath.Join(e.tmp, "toolsvc")
	if err := goBuild(root, e.toolsvc, "./cmd/toolsvc"); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer stopAll()
	first := map[string][]time.Duration{}
	ts, ps, err := startContinuation(ctx, e, func(name string, d time.Duration) { first[name] = append(first[name], d) })
	if err != nil {
		b.Fatal(err)
	}
	defer ts.close()
	all := []path{ps.plainOld, ps.parked, ps.plainNew, ps.relayed}
	for _, p := range all {
		if _, err := sequential(ctx, p, 50); err != nil {
			b.Fatal(err)
		}
	}
	lat := map[string][]time.Duration{}
	for i := 0; b.Loop(); i++ {
		for j := range all {
			p := all[(i+j)%len(all)]
			t0 := time.Now()
			if err := p.call(ctx); err != nil {
				b.Fatal(err)
			}
			lat[p.name] = append(lat[p.name], time.Since(t0))
		}
	}
	med := func(p path) float64 { return float64(pct(lat[p.name], 50)) }
	b.ReportMetric(med(ps.plainOld)/1e3, "plain-parked-µs")
	b.ReportMetric(med(ps.parked)/1e3, "continued-parked-µs")
	b.ReportMetric(med(ps.plainNew)/1e3, "plain-relayed-µs")
	b.ReportMetric(med(ps.relayed)/1e3, "continued-relayed-µs")
	// The first round alone, and the retry (the rest).
	round1 := func(p path) float64 { return float64(pct(first[p.name], 50)) }
	b.ReportMetric(round1(ps.parked)/1e3, "parked-round1-µs")
	b.ReportMetric(round1(ps.relayed)/1e3, "relayed-round1-µs")
	b.ReportMetric(med(ps.parked)/(2*med(ps.plainOld)), "parked/2plain")
	b.ReportMetric(med(ps.relayed)/(2*med(ps.plainNew)), "relayed/2plain")
}
