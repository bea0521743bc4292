package catalog

import (
	"fmt"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func numberedTools(n int, desc string) []*mcp.Tool {
	ts := make([]*mcp.Tool, n)
	for i := range ts {
		ts[i] = &mcp.Tool{Name: fmt.Sprintf("t%05d", i), Description: desc}
	}
	return ts
}

// TestCatalogHistoryBudget: the history keeps at most historySize snapshots
// and at most historyToolRefs tool pointers, always including the current
// snapshot, and forgets the oldest first.
func TestCatalogHistoryBudget(t *testing.T) {
	c := NewCatalog()
	for i := range historySize + 10 {
		c.SetServer("s", "s", numberedTools(3, fmt.Sprint(i)), true)
	}
	if h := c.History(); len(h) != historySize || h[len(h)-1] != c.Current() {
		t.Fatalf("small catalog: %d snapshots remembered, want %d ending with the current one", len(h), historySize)
	}

	// The tool budget, scaled down (512 Ki refs and 20,000 tools keep 26).
	defer func(old int) { historyToolRefs = old }(historyToolRefs)
	historyToolRefs = 2600
	const n = 100
	c = NewCatalog()
	var revs []string
	for i := range 40 {
		c.SetServer("s", "s", numberedTools(n, fmt.Sprint(i)), true)
		revs = append(revs, c.Current().Revision)
	}
	h := c.History()
	want := historyToolRefs / n
	if len(h) != want || h[len(h)-1] != c.Current() {
		t.Fatalf("%d-tool catalog: %d snapshots remembered, want %d", n, len(h), want)
	}
	for i, rev := range revs {
		_, ok := c.Snapshot(rev)
		if remembered := i >= len(revs)-want; ok != remembered {
			t.Fatalf("revision %d of %d: remembered = %v, want %v", i, len(revs), ok, remembered)
		}
	}
	// One snapshot larger than the whole budget is still kept.
	c.SetServer("s", "s", numberedTools(historyToolRefs+1, "huge"), true)
	if h := c.History(); len(h) != 1 || h[0] != c.Current() {
		t.Fatalf("over-budget snapshot: history %d, want just the current one", len(h))
	}
}

func TestSnapshotLookupAndRevisionOfViews(t *testing.T) {
	t.Parallel()
	c := NewCatalog()
	c.SetServer("a", "a", numberedTools(50, "x"), true)
	c.SetServer("b", "b", numberedTools(3, "y"), false)
	s := c.Current()
	for _, tl := range s.Tools {
		if got, ok := s.Lookup(tl.Name); !ok || got != tl {
			t.Fatalf("Lookup(%s) = %v %v", tl.Name, got, ok)
		}
	}
	for _, name := range []string{"", "a__", "a__t99999", "c__t00000", "zzz"} {
		if _, ok := s.Lookup(name); ok {
			t.Fatalf("Lookup(%q) found a tool", name)
		}
	}
	if Revision(s.Tools) != s.Revision {
		t.Fatal("Revision(snapshot tools) != snapshot revision")
	}
	// A view (b's tools) has the revision of a catalog holding just those.
	var onlyB []*Tool
	for _, tl := range s.Tools {
		if tl.Server == "b" {
			onlyB = append(onlyB, tl)
		}
	}
	other := NewCatalog()
	other.SetServer("b", "b", numberedTools(3, "y"), false)
	if Revision(onlyB) != other.Current().Revision {
		t.Fatal("a view's revision differs from a catalog with the same content")
	}
	up, rm := DiffTools(onlyB, s.Tools)
	if len(up) != 50 || len(rm) != 0 {
		t.Fatalf("DiffTools(b view, all) = %d upserted, %d removed", len(up), len(rm))
	}
	up, rm = DiffTools(s.Tools, onlyB)
	if len(up) != 0 || len(rm) != 50 || !slices.IsSorted(rm) {
		t.Fatalf("DiffTools(all, b view) = %d upserted, %v removed", len(up), len(rm))
	}
}
