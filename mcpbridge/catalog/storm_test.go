package catalog

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stormTools is n tools of a server, their descriptions marked with gen
// (a new gen is a change of every tool).
func stormTools(n, gen int) []*mcp.Tool {
	tools := make([]*mcp.Tool, n)
	for i := range tools {
		tools[i] = &mcp.Tool{Name: fmt.Sprintf("tool%03d", i), Description: fmt.Sprintf("gen %d", gen),
			InputSchema: map[string]any{"type": "object"}}
	}
	return tools
}

// stormCatalog is a catalog of servers s000.. with perServer tools each.
func stormCatalog(tb testing.TB, servers, perServer int) *Catalog {
	c := NewCatalog()
	for i := range servers {
		name := fmt.Sprintf("s%03d", i)
		if _, err := c.SetServer(name, name, stormTools(perServer, 0), true); err != nil {
			tb.Fatal(err)
		}
	}
	return c
}

// pendingCount is the number of changes recorded and not yet taken by a
// build, or -1 when a writer could not record one now (mu held).
func pendingCount(c *Catalog) int {
	if !c.mu.TryLock() {
		return -1
	}
	defer c.mu.Unlock()
	return len(c.pending)
}

// sameSnapshot fails unless a and b list the same entries (names and
// content digests) under the same revision.
func sameSnapshot(t *testing.T, a, b *Snapshot) {
	t.Helper()
	if a.Revision != b.Revision {
		t.Fatalf("revision %s, one by one %s", a.Revision, b.Revision)
	}
	if len(a.Tools) != len(b.Tools) {
		t.Fatalf("%d tools, one by one %d", len(a.Tools), len(b.Tools))
	}
	for i := range a.Tools {
		if a.Tools[i].Name != b.Tools[i].Name || a.Tools[i].hash != b.Tools[i].hash {
			t.Fatalf("tool %d: %s, one by one %s", i, a.Tools[i].Name, b.Tools[i].Name)
		}
	}
	if a.Revision != Revision(a.Tools) {
		t.Fatalf("revision %s is not the list's %s", a.Revision, Revision(a.Tools))
	}
}

// TestChangesDuringABuildShareTheNextSnapshot: writers whose changes land
// while a snapshot is being built record them at once and are published
// together in the next snapshot (one splice of the merged list for all of
// them), which is the one applying them one by one gives.
func TestChangesDuringABuildShareTheNextSnapshot(t *testing.T) {
	const servers, writers = 20, 8
	c := stormCatalog(t, servers, 10)
	want := stormCatalog(t, servers, 10)
	startSeq := c.Current().seq

	building, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	buildHook = func() {
		if first.CompareAndSwap(false, true) {
			close(building)
			<-release
		}
	}
	defer func() { buildHook = nil }()

	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := c.SetServer("s000", "s000", stormTools(10, 1), true); err != nil {
			t.Error(err)
		}
	})
	<-building
	for i := 1; i <= writers; i++ {
		name := fmt.Sprintf("s%03d", i)
		wg.Go(func() {
			if _, err := c.SetServer(name, name, stormTools(10, 1), true); err != nil {
				t.Error(err)
			}
		})
	}
	deadline := time.Now().Add(time.Minute)
	for pendingCount(c) != writers {
		if time.Now().After(deadline) {
			close(release)
			wg.Wait()
			t.Fatalf("the %d writers could not record their changes while a snapshot was built (pending %d)", writers, pendingCount(c))
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()

	if got := c.Current().seq - startSeq; got != 2 {
		t.Fatalf("%d snapshots built for 1+%d changes, want 2 (the first, and one for those recorded during it)", got, writers)
	}
	for i := 0; i <= writers; i++ {
		name := fmt.Sprintf("s%03d", i)
		if _, err := want.SetServer(name, name, stormTools(10, 1), true); err != nil {
			t.Fatal(err)
		}
	}
	sameSnapshot(t, c.Current(), want.Current())
	// A watcher that saw the first snapshot is told the writers' changes
	// by the coalesced one's delta, as a walk of both lists tells them.
	prev, ok := c.Snapshot(c.history[len(c.history)-2].Revision)
	if !ok {
		t.Fatal("the first snapshot is not retained")
	}
	up, rm := Diff(prev, c.Current())
	wup, wrm := DiffTools(prev.Tools, c.Current().Tools)
	if len(up) != writers*10 || len(rm) != 0 || !slices.Equal(up, wup) || !slices.Equal(rm, wrm) {
		t.Fatalf("delta: %d upserted, %d removed; a walk: %d, %d", len(up), len(rm), len(wup), len(wrm))
	}
}

// TestLoneChangePublishedAtOnce: a change with no build running is
// published in its own snapshot before SetServer returns.
func TestLoneChangePublishedAtOnce(t *testing.T) {
	c := stormCatalog(t, 5, 10)
	before := c.Current()
	if _, err := c.SetServer("s002", "s002", stormTools(10, 1), true); err != nil {
		t.Fatal(err)
	}
	cur := c.Current()
	if cur.seq != before.seq+1 || cur.prevSeq != before.seq {
		t.Fatalf("snapshot %d after %d, want the next one", cur.seq, before.seq)
	}
	if e, ok := cur.Lookup("s002__tool004"); !ok || e.Description != "gen 1" {
		t.Fatalf("the change is not in the current snapshot: %+v", e)
	}
	if pendingCount(c) != 0 {
		t.Fatal("a change is left pending")
	}
}

// TestConcurrentSplicesMatchOneByOne: many writers changing servers at
// once (added, changed, removed, gone unavailable) end in the snapshot and
// revision applying the same changes one by one gives, with every change
// visible when its writer returns.
func TestConcurrentSplicesMatchOneByOne(t *testing.T) {
	const servers = 60
	c := stormCatalog(t, servers, 20)
	want := stormCatalog(t, servers, 20)
	apply := func(c *Catalog, i int) error {
		name := fmt.Sprintf("s%03d", i)
		switch i % 4 {
		case 0, 1:
			_, err := c.SetServer(name, name, stormTools(20+i%3, i), true)
			return err
		case 2:
			c.SetAvailable(name, false)
		default:
			c.RemoveServer(name)
		}
		return nil
	}
	var wg sync.WaitGroup
	for i := range servers + 10 { // 10 servers new
		wg.Go(func() {
			if err := apply(c, i); err != nil {
				t.Error(err)
				return
			}
			name := fmt.Sprintf("s%03d", i)
			_, present := c.Current().Lookup(name + "__tool000")
			if want := i%4 < 2 || (i%4 == 2 && i < servers); present != want {
				t.Errorf("%s: present %v when its writer returned", name, present)
			}
		})
	}
	wg.Wait()
	for i := range servers + 10 {
		if err := apply(want, i); err != nil {
			t.Fatal(err)
		}
	}
	sameSnapshot(t, c.Current(), want.Current())
}

// BenchmarkStormSplices: a storm of 500 upstreams' refreshes (100 tools
// each, every tool changed) into a 50,000-tool catalog. One op is one
// server's splice; "snapshots/op" is the snapshots built per splice. With
// one writer every splice is published alone; with writers at once, those
// that land during a build share the next one.
func BenchmarkStormSplices(b *testing.B) {
	const servers, perServer = 500, 100
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			c := stormCatalog(b, servers, perServer)
			startSeq := c.Current().seq
			b.ReportAllocs()
			b.ResetTimer()
			var next atomic.Int64
			var wg sync.WaitGroup
			for range writers {
				wg.Go(func() {
					for {
						n := int(next.Add(1)) - 1
						if n >= b.N {
							return
						}
						b.StopTimer()
						i := n % servers
						tools := stormTools(perServer, n/servers+1)
						b.StartTimer()
						name := fmt.Sprintf("s%03d", i)
						if _, err := c.SetServer(name, name, tools, true); err != nil {
							b.Error(err)
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(c.Current().seq-startSeq)/float64(b.N), "snapshots/op")
		})
	}
}

// TestChunkedListMatchesFlat: with catalogs of many chunks, whatever the
// changes (servers listing more or fewer tools, leaving, coming back),
// each snapshot's chunks are sorted, non-empty and within twice
// chunkSize, a lookup in the chunks (before the list is flattened) finds
// what the flat list holds, the flat list is the predecessor's spliced,
// and a snapshot once read never changes.
func TestChunkedListMatchesFlat(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 5))
	c := NewCatalog()
	type seen struct {
		s     *Snapshot
		names []string
	}
	var read []seen
	prev := c.Current()
	for step := range 200 {
		server := fmt.Sprintf("s%02d", rng.IntN(20))
		if rng.IntN(8) == 0 {
			c.RemoveServer(server)
		} else if _, err := c.SetServer(server, server, stormTools(rng.IntN(3*chunkSize), rng.IntN(3)), true); err != nil {
			t.Fatal(err)
		}
		raw := c.snapshots.Current()
		for i, ch := range raw.lazy.chunks {
			if len(ch) == 0 || len(ch) > 2*chunkSize || !slices.IsSortedFunc(ch, cmpName) ||
				(i > 0 && raw.lazy.chunks[i-1][len(raw.lazy.chunks[i-1])-1].Name >= ch[0].Name) {
				t.Fatalf("step %d: chunk %d of %d tools out of shape", step, i, len(ch))
			}
		}
		probes := []string{server + "__tool000", server + "__tool100", server + "__tool600", "zz", ""}
		found := map[string]*Tool{}
		for _, name := range probes {
			if e, ok := raw.Lookup(name); ok {
				found[name] = e
			}
		}
		cur := c.Current()
		if cur != raw || len(cur.Tools) != raw.len() {
			t.Fatalf("step %d: the flat list has %d tools, the chunks %d", step, len(cur.Tools), raw.len())
		}
		for _, name := range probes {
			i, ok := slices.BinarySearchFunc(cur.Tools, name, func(e *Tool, n string) int { return cmp.Compare(e.Name, n) })
			if ok != (found[name] != nil) || (ok && cur.Tools[i] != found[name]) {
				t.Fatalf("step %d: %q in the chunks %v, in the flat list %v", step, name, found[name] != nil, ok)
			}
		}
		up, rm := Diff(prev, cur)
		if want := splice(prev.Tools, removedOf(prev, up, rm), up); !slices.Equal(cur.Tools, want) {
			t.Fatalf("step %d: the flat list is not the predecessor's spliced", step)
		}
		if cur.Revision != Revision(cur.Tools) {
			t.Fatalf("step %d: revision %s, the list's %s", step, cur.Revision, Revision(cur.Tools))
		}
		read = append(read, seen{cur, names(cur.Tools)})
		prev = cur
	}
	for i, r := range read {
		if !slices.Equal(names(r.s.Tools), r.names) {
			t.Fatalf("snapshot %d changed after it was read", i)
		}
	}
}

// removedOf is the entries of prev that up replaces or rm removes.
func removedOf(prev *Snapshot, up []*Tool, rm []string) []*Tool {
	gone := map[string]bool{}
	for _, name := range rm {
		gone[name] = true
	}
	for _, u := range up {
		gone[u.Name] = true
	}
	var out []*Tool
	for _, t := range prev.Tools {
		if gone[t.Name] {
			out = append(out, t)
		}
	}
	return out
}
