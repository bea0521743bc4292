package console

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// TestTrafficMemory: the ring filled for a whole hour with calls to 20,000
// distinct tools of 500 servers (every slot at its bounds, the rest under
// "(other)") stays within MaxTrafficBytes, measured on the heap.
func TestTrafficMemory(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tr := NewTraffic()
	tr.now = func() time.Time { return now }
	outcomes := []string{"ok", "tool_error", "UNAVAILABLE", "DEADLINE_EXCEEDED", "INVALID_ARGUMENT"}
	for m := range TrafficSlots {
		now = time.Unix(1_800_000_000+int64(m)*60, 0)
		for i := range 20_000 {
			tr.Observe(fmt.Sprintf("server%03d", i%500), fmt.Sprintf("server%03d__tool%05d", i%500, i), outcomes[i%len(outcomes)],
				time.Duration(i)*time.Microsecond)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	used := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("ring after an hour of 20,000 tools: %.2f MiB on the heap (bound %d MiB)", float64(used)/(1<<20), MaxTrafficBytes>>20)
	if used > MaxTrafficBytes {
		t.Errorf("the ring holds %d bytes, over its %d", used, MaxTrafficBytes)
	}
	v := tr.View()
	if len(v.Minutes) != TrafficSlots || len(v.Tools) != 50 || len(v.Servers) != MaxTrafficServers+1 {
		t.Errorf("view: %d minutes, %d tools, %d servers", len(v.Minutes), len(v.Tools), len(v.Servers))
	}
	var calls uint32
	for _, m := range v.Minutes {
		calls += m.Calls
	}
	if calls != TrafficSlots*20_000 {
		t.Errorf("the view counts %d calls, want %d", calls, TrafficSlots*20_000)
	}
	runtime.KeepAlive(tr)
}

// TestTrafficWindow: a minute older than the ring's hour is forgotten;
// quantiles come from the histogram (its bucket's upper bound, within 50 %).
func TestTrafficWindow(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tr := NewTraffic()
	tr.now = func() time.Time { return now }
	for i := range 100 {
		outcome := "ok"
		if i%10 == 0 {
			outcome = "UNAVAILABLE"
		}
		tr.Observe("s", "s__t", outcome, time.Duration(i+1)*time.Millisecond)
	}
	v := tr.View()
	if len(v.Minutes) != 1 || v.Minutes[0].Calls != 100 || v.Minutes[0].Errors != 10 || v.Minutes[0].Outcomes["UNAVAILABLE"] != 10 {
		t.Fatalf("one minute: %+v", v.Minutes)
	}
	p50, p99 := v.Tools[0].P50MS, v.Tools[0].P99MS
	if p50 < 50 || p50 > 75 || p99 < 99 || p99 > 150 || v.Tools[0].Server != "s" {
		t.Errorf("p50 %.1f ms, p99 %.1f ms for 1..100 ms; tool %+v", p50, p99, v.Tools[0])
	}
	now = now.Add(TrafficSlots * TrafficSlotLength)
	tr.Observe("s", "s__t", "ok", time.Millisecond)
	if v := tr.View(); len(v.Minutes) != 1 || v.Minutes[0].Calls != 1 {
		t.Errorf("an hour later: %+v", v.Minutes)
	}
}

// BenchmarkTrafficObserve: what the ring adds to each finished call (the
// only cost of the console while no page is open).
func BenchmarkTrafficObserve(b *testing.B) {
	tr := NewTraffic()
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("s%02d__tool%04d", i%50, i)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			tr.Observe("s", names[i%len(names)], "ok", time.Duration(i)*time.Microsecond)
			i++
		}
	})
}
