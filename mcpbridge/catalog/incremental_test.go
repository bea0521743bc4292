package catalog

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestIncrementalMatchesWhole: whatever the order of changes — servers
// listing, relisting with renamed, colliding and changed tools, going
// unavailable, leaving — the snapshot a change builds from the last one
// (rebuildLocked: only the changed server visited) is the whole catalog:
// sorted unique names, every server's tools present, the revision the one
// Revision computes from the whole list, and the history's byte account
// the one a walk of every retained snapshot gives.
func TestIncrementalMatchesWhole(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	c := NewCatalog()
	servers := []string{"alpha", "beta", "gamma", "a_b", "a.b", "bare1", "bare2"}
	prefix := func(s string) string {
		switch s {
		case "bare1", "bare2":
			return ""
		case "a.b":
			return "a_b" // sanitises to a_b's prefix: cross-server collisions
		}
		return s
	}
	listed := map[string]int{} // server -> tools it lists now
	var prev *Snapshot
	for step := range 600 {
		server := servers[rng.IntN(len(servers))]
		switch op := rng.IntN(10); {
		case op < 6:
			n := rng.IntN(12)
			tools := make([]*mcp.Tool, n)
			for i := range tools {
				// Names from a small pool: servers collide with each
				// other; descriptions change now and then.
				tools[i] = &mcp.Tool{Name: fmt.Sprintf("t%d", rng.IntN(15)), Description: fmt.Sprint(rng.IntN(3)),
					InputSchema: map[string]any{"type": "object"}}
			}
			if _, err := c.SetServer(server, prefix(server), tools, rng.IntN(4) > 0); err != nil {
				t.Fatal(err)
			}
			distinct := map[string]bool{}
			for _, tl := range tools {
				distinct[tl.Name] = true
			}
			listed[server] = len(distinct)
		case op < 8:
			c.SetAvailable(server, rng.IntN(2) == 0)
		default:
			c.RemoveServer(server)
			delete(listed, server)
		}
		s := c.Current()
		if !slices.IsSortedFunc(s.Tools, func(a, b *Tool) int { return cmpName(a, b) }) {
			t.Fatalf("step %d: tools not sorted: %v", step, names(s.Tools))
		}
		for i := 1; i < len(s.Tools); i++ {
			if s.Tools[i-1].Name == s.Tools[i].Name {
				t.Fatalf("step %d: %s exposed twice", step, s.Tools[i].Name)
			}
		}
		count := map[string]int{}
		for _, tl := range s.Tools {
			count[tl.Server]++
			if got, ok := s.Lookup(tl.Name); !ok || got != tl {
				t.Fatalf("step %d: Lookup(%s) = %v", step, tl.Name, got)
			}
		}
		for server, n := range listed {
			if count[server] != n {
				t.Fatalf("step %d: server %s has %d tools in the snapshot, lists %d", step, server, count[server], n)
			}
		}
		if len(count) > len(listed) {
			t.Fatalf("step %d: servers %v in the snapshot, %v listed", step, count, listed)
		}
		if prev != nil {
			up, rm := Diff(prev, s)
			wup, wrm := DiffTools(prev.Tools, s.Tools)
			if !slices.Equal(names(up), names(wup)) || !slices.Equal(rm, wrm) {
				t.Fatalf("step %d: Diff from the predecessor = %v, -%v; the walk gives %v, -%v", step, names(up), rm, names(wup), wrm)
			}
		}
		prev = s
		if want := Revision(s.Tools); s.Revision != want {
			t.Fatalf("step %d: revision %s, the whole list's is %s", step, s.Revision, want)
		}
		c.snapshots.mu.Lock()
		h := slices.Clone(c.history)
		got, cur := c.budget.bytes, c.budget.curBytes
		c.snapshots.mu.Unlock()
		want := snapshotBytes(h[0])
		for i := 1; i < len(h); i++ {
			want += snapshotOverhead(cap(h[i].Tools)) + unsharedBytes(h[i-1].Tools, h[i].Tools)
		}
		if got != want || cur != snapshotBytes(s) {
			t.Fatalf("step %d: history bytes %d (current %d), a walk gives %d (current %d)", step, got, cur, want, snapshotBytes(s))
		}
	}
}

func cmpName(a, b *Tool) int {
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}

// TestSpliceEdges: the merge of a server's entries into the others' at the
// start, the end, in between, replacing entries of the same names, and
// into an empty list.
func TestSpliceEdges(t *testing.T) {
	t.Parallel()
	mk := func(ns ...string) []*Tool {
		out := make([]*Tool, len(ns))
		for i, n := range ns {
			out[i] = &Tool{Name: n}
		}
		return out
	}
	cur := mk("b", "d", "f")
	for _, c := range []struct {
		out  []*Tool
		in   []string
		want []string
	}{
		{nil, []string{"a"}, []string{"a", "b", "d", "f"}},
		{nil, []string{"g", "h"}, []string{"b", "d", "f", "g", "h"}},
		{nil, []string{"c", "e"}, []string{"b", "c", "d", "e", "f"}},
		{cur[1:2], []string{"d"}, []string{"b", "d", "f"}},
		{cur[1:2], nil, []string{"b", "f"}},
		{cur, []string{"a", "z"}, []string{"a", "z"}},
		{cur[:1], []string{"c", "e", "g"}, []string{"c", "d", "e", "f", "g"}},
	} {
		if got := names(splice(cur, c.out, mk(c.in...))); !slices.Equal(got, c.want) {
			t.Errorf("splice(out %v, in %v) = %v, want %v", names(c.out), c.in, got, c.want)
		}
	}
	if got := names(splice(nil, nil, mk("x"))); !slices.Equal(got, []string{"x"}) {
		t.Errorf("into nothing: %v", got)
	}
}

// BenchmarkOneServerChange is what one upstream's refresh costs the catalog
// (a changed description on one of its 100 tools) as the number of other
// upstreams grows: with the change costing what changed, the ratio between
// the sizes stays near 1 (the whole-catalog rebuild before this grew with
// the catalog: go test -bench OneServerChange ./mcpbridge/catalog).
func BenchmarkOneServerChange(b *testing.B) {
	for _, servers := range []int{50, 500} {
		b.Run(fmt.Sprintf("servers=%d", servers), func(b *testing.B) {
			c := NewCatalog()
			tools := func(server string, version int) []*mcp.Tool {
				out := make([]*mcp.Tool, 100)
				for i := range out {
					out[i] = &mcp.Tool{Name: fmt.Sprintf("tool_%03d", i), Description: fmt.Sprintf("tool %d of %s", i, server),
						InputSchema: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}}
				}
				out[0].Description = fmt.Sprintf("version %d", version)
				return out
			}
			for i := range servers {
				s := fmt.Sprintf("s%03d", i)
				if _, err := c.SetServer(s, s, tools(s, 0), true); err != nil {
					b.Fatal(err)
				}
			}
			lists := [2][]*mcp.Tool{tools("s007", 1), tools("s007", 2)}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := c.SetServer("s007", "s007", lists[i%2], true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestConcurrentWritersSeeTheirChange: writers changing different servers
// at once share snapshots (flush), yet each returns only once its change
// is in the current snapshot, and the catalog ends whole: every server's
// last listing, the revision of the whole list.
func TestConcurrentWritersSeeTheirChange(t *testing.T) {
	t.Parallel()
	c := NewCatalog()
	const writers, rounds = 8, 40
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			server := fmt.Sprintf("s%d", w)
			for r := range rounds {
				descr := fmt.Sprintf("round %d", r)
				tools := []*mcp.Tool{{Name: "a", Description: descr}, {Name: fmt.Sprintf("b%d", r%3)}}
				if _, err := c.SetServer(server, server, tools, true); err != nil {
					errs <- err
					return
				}
				if got, ok := c.Current().Lookup(server + "__a"); !ok || got.Description != descr {
					errs <- fmt.Errorf("%s returned before its round %d was published (current: %v)", server, r, got)
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	s := c.Current()
	if len(s.Tools) != 2*writers || s.Revision != Revision(s.Tools) {
		t.Fatalf("%d tools (want %d), revision %s against the whole list's %s", len(s.Tools), 2*writers, s.Revision, Revision(s.Tools))
	}
	for w := range writers {
		if got, _ := s.Lookup(fmt.Sprintf("s%d__a", w)); got == nil || got.Description != fmt.Sprintf("round %d", rounds-1) {
			t.Fatalf("s%d__a = %v, want its last round", w, got)
		}
	}
}
