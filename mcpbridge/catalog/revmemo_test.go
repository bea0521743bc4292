package catalog

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// oldRevision is Revision as it was written before the memo (fmt into the
// final digest): the revision's bytes are compared across replicas and
// versions, so they must not change.
func oldRevision(tools []*Tool) string {
	by := map[string][]*Tool{}
	for _, t := range tools {
		by[t.Server] = append(by[t.Server], t)
	}
	parts := make([]serverPart, 0, len(by))
	for s, ts := range by {
		parts = append(parts, serverPart{s, serverDigest(ts)})
	}
	slices.SortFunc(parts, func(a, b serverPart) int { return cmp.Compare(a.server, b.server) })
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s;", len(p.server), p.server)
		h.Write(p.digest[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// TestRevisionMemo: a memo over successive filtered versions of a
// catalog (a server changed, a server gone, a server back, a filter
// dropping a server, entries of a server split by another's name, an
// empty list) gives Revision's answer each time, which is the revision as
// it was written before.
func TestRevisionMemo(t *testing.T) {
	t.Parallel()
	c := NewCatalog()
	set := func(server string, descr string, names ...string) {
		tools := make([]*mcp.Tool, len(names))
		for i, n := range names {
			tools[i] = &mcp.Tool{Name: n, Description: descr}
		}
		if _, err := c.SetServer(server, server, tools, true); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"a", "b", "c"} {
		set(s, "v0", "x", "y", "z")
	}
	keep := func(drop string) []*Tool {
		var out []*Tool
		for _, t := range c.Current().Tools {
			if t.Server != drop && t.OriginalName != "y" {
				out = append(out, t)
			}
		}
		return out
	}
	var m RevisionMemo
	check := func(what string, tools []*Tool) {
		t.Helper()
		got, want := m.Revision(tools), Revision(tools)
		if got != want || want != oldRevision(tools) {
			t.Errorf("%s: memo %s, Revision %s, before %s", what, got, want, oldRevision(tools))
		}
	}
	check("first", keep(""))
	check("again", keep(""))
	set("b", "v1", "x", "y", "z")
	check("b changed", keep(""))
	check("c filtered out", keep("c"))
	check("c back", keep(""))
	c.RemoveServer("a")
	check("a removed", keep(""))
	split := []*Tool{{Name: "b__x", Server: "b"}, {Name: "b__y", Server: "c"}, {Name: "b__z", Server: "b"}}
	for _, tl := range split {
		tl.hash = entryHash(tl)
	}
	check("split", split)
	check("after the split", keep(""))
	check("empty", nil)
	if len(m.servers) != 0 {
		t.Errorf("the memo holds %d servers after an empty list", len(m.servers))
	}
}

// BenchmarkFilteredRevision is the revision of one rule set's view (half
// of 500 servers × 100 tools) after one upstream changed, as a View
// computes it per snapshot: whole is Revision (before the memo: a digest
// per server, every entry hashed), memo is a RevisionMemo kept across
// snapshots (the changed server digested again, the others compared).
//
//	go test -run XXX -bench FilteredRevision -benchmem ./mcpbridge/catalog
func BenchmarkFilteredRevision(b *testing.B) {
	c := NewCatalog()
	tools := func(version int) []*mcp.Tool {
		out := make([]*mcp.Tool, 100)
		for i := range out {
			out[i] = &mcp.Tool{Name: fmt.Sprintf("tool_%03d", i), Description: fmt.Sprintf("v%d", version)}
		}
		return out
	}
	for i := range 500 {
		s := fmt.Sprintf("s%03d", i)
		if _, err := c.SetServer(s, s, tools(0), true); err != nil {
			b.Fatal(err)
		}
	}
	// Two versions of the catalog, s008 changed between them, filtered to
	// the even servers.
	var views [2][]*Tool
	for v := range views {
		if _, err := c.SetServer("s008", "s008", tools(v+1), true); err != nil {
			b.Fatal(err)
		}
		for _, t := range c.Current().Tools {
			if t.Server[len(t.Server)-1]%2 == 0 {
				views[v] = append(views[v], t)
			}
		}
	}
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			Revision(views[i%2])
		}
	})
	b.Run("memo", func(b *testing.B) {
		var m RevisionMemo
		m.Revision(views[1])
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			m.Revision(views[i%2])
		}
	})
}
