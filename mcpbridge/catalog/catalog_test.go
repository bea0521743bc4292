package catalog

import (
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func names(ts []*Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func TestCatalogRevisionIsContentDerived(t *testing.T) {
	t.Parallel()
	a, b := NewCatalog(), NewCatalog()
	if a.Current().Revision != b.Current().Revision {
		t.Fatal("empty catalogs differ in revision")
	}
	tools := []*mcp.Tool{{Name: "x", InputSchema: map[string]any{"type": "object"}}, {Name: "y"}}
	// Different order of servers and of tools: same content, same revision.
	a.SetServer("one", "one", tools, true)
	a.SetServer("two", "two", tools[:1], true)
	b.SetServer("two", "two", tools[:1], true)
	b.SetServer("one", "one", []*mcp.Tool{tools[1], tools[0]}, true)
	if a.Current().Revision != b.Current().Revision {
		t.Fatalf("same content, revisions %s and %s", a.Current().Revision, b.Current().Revision)
	}
	if got, want := names(a.Current().Tools), []string{"one__x", "one__y", "two__x"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	r := a.Current().Revision
	a.SetAvailable("two", false)
	if a.Current().Revision == r {
		t.Fatal("availability change kept the revision")
	}
	a.SetAvailable("two", true)
	if a.Current().Revision != r {
		t.Fatal("returning to the same content gave a new revision")
	}
}

func TestCatalogPublishesOnlyOnChange(t *testing.T) {
	t.Parallel()
	c := NewCatalog()
	sub := c.Subscribe()
	defer sub.Close()
	c.SetServer("s", "s", []*mcp.Tool{{Name: "x"}}, true)
	select {
	case <-sub.C():
	default:
		t.Fatal("no signal after a change")
	}
	c.SetServer("s", "s", []*mcp.Tool{{Name: "x"}}, true)
	select {
	case <-sub.C():
		t.Fatal("signal without a change")
	default:
	}
}

func TestCatalogHistory(t *testing.T) {
	t.Parallel()
	c := NewCatalog()
	c.SetServer("s", "s", []*mcp.Tool{{Name: "a"}}, true)
	first := c.Current()
	for i := 0; i < historySize+5; i++ {
		c.SetServer("s", "s", []*mcp.Tool{{Name: "a", Description: string(rune('A'+i%50)) + string(rune(i))}}, true)
	}
	if _, ok := c.Snapshot(first.Revision); ok {
		t.Fatal("a snapshot older than the history is still retained")
	}
	if s, ok := c.Snapshot(c.Current().Revision); !ok || s != c.Current() {
		t.Fatal("current snapshot not found by revision")
	}
}

func TestDiff(t *testing.T) {
	t.Parallel()
	c := NewCatalog()
	c.SetServer("s", "s", []*mcp.Tool{{Name: "keep"}, {Name: "change"}, {Name: "drop"}}, true)
	from := c.Current()
	c.SetServer("s", "s", []*mcp.Tool{{Name: "keep"}, {Name: "change", Description: "new"}, {Name: "add"}}, true)
	up, rm := Diff(from, c.Current())
	if got, want := names(up), []string{"s__add", "s__change"}; !slices.Equal(got, want) {
		t.Errorf("upserted = %v, want %v", got, want)
	}
	if want := []string{"s__drop"}; !slices.Equal(rm, want) {
		t.Errorf("removed = %v, want %v", rm, want)
	}
	up, rm = Diff(c.Current(), c.Current())
	if len(up)+len(rm) != 0 {
		t.Errorf("Diff of a snapshot with itself = %v, %v", up, rm)
	}
}

func TestCrossServerCollision(t *testing.T) {
	t.Parallel()
	// Validated configs never give two servers one prefix, but the catalog
	// must still resolve such a collision deterministically.
	c := NewCatalog()
	c.SetServer("p1", "same", []*mcp.Tool{{Name: "t"}}, true)
	c.SetServer("p2", "same", []*mcp.Tool{{Name: "t"}}, true)
	s := c.Current()
	if len(s.Tools) != 2 || s.Tools[0].Name == s.Tools[1].Name {
		t.Fatalf("colliding tools = %v, want two distinct names", names(s.Tools))
	}
	if p1, ok := s.Lookup("same__t"); !ok || p1.Server != "p1" {
		t.Fatalf("same__t should stay with the first server in order")
	}
	if len(c.Warnings("p2")) != 1 {
		t.Fatalf("warnings for p2 = %v, want one", c.Warnings("p2"))
	}
}

func TestBareNames(t *testing.T) {
	t.Parallel()
	c := NewCatalog()
	// A bare-names server (names prefix "") next to a prefixed one whose
	// tool sanitises to the same bare name as the bare server's.
	c.SetServer("main", "", []*mcp.Tool{{Name: "test_simple_text"}, {Name: "a.b"}}, true)
	c.SetServer("other", "other", []*mcp.Tool{{Name: "test_simple_text"}}, true)
	if got, want := names(c.Current().Tools), []string{"a_b", "other__test_simple_text", "test_simple_text"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	if tl, ok := c.Current().Lookup("test_simple_text"); !ok || tl.Server != "main" || tl.OriginalName != "test_simple_text" {
		t.Fatalf("test_simple_text = %+v, want main's tool", tl)
	}
	// A second bare server with the same tool: the incumbent keeps the bare
	// name, the newcomer gets a hash suffix and a warning.
	c.SetServer("again", "", []*mcp.Tool{{Name: "test_simple_text"}}, true)
	s := c.Current()
	if tl, ok := s.Lookup("test_simple_text"); !ok || tl.Server != "main" {
		t.Fatalf("test_simple_text moved to %+v", tl)
	}
	var moved *Tool
	for _, tl := range s.Tools {
		if tl.Server == "again" {
			moved = tl
		}
	}
	if moved == nil || moved.Name == "test_simple_text" || !ValidExposedName(moved.Name) || len(c.Warnings("again")) != 1 {
		t.Fatalf("colliding bare tool = %+v, warnings %v", moved, c.Warnings("again"))
	}
	// Switching a server between prefixed and bare renames its tools: a
	// held name from the other scheme is not kept.
	c.SetServer("again", "again", []*mcp.Tool{{Name: "test_simple_text"}}, true)
	if _, ok := c.Current().Lookup("again__test_simple_text"); !ok {
		t.Fatalf("after bare -> prefixed: %v", names(c.Current().Tools))
	}
	c.SetServer("other", "", []*mcp.Tool{{Name: "x"}}, true)
	c.SetServer("main", "main", []*mcp.Tool{{Name: "test_simple_text"}, {Name: "a.b"}}, true)
	if got, want := names(c.Current().Tools), []string{"again__test_simple_text", "main__a_b", "main__test_simple_text", "x"}; !slices.Equal(got, want) {
		t.Fatalf("after prefixed <-> bare: %v, want %v", got, want)
	}
}
