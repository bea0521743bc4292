package core

import (
	"slices"
	"testing"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// TestScanNames: the ranking a Staged search gives while the index's
// lexical stage is built ranks the tools whose names hold the most of the
// query's words (case folded), then by name, leaves out those keep
// refuses and those matching no word, and says it is the names' ranking.
func TestScanNames(t *testing.T) {
	var tools []*mcpbridge.Tool
	for _, n := range []string{"a__get_issue", "a__list_issues", "b__create_issue", "b__delete_repo", "c__Issue_Secret"} {
		tools = append(tools, &mcpbridge.Tool{Name: n})
	}
	snap := &mcpbridge.Snapshot{Revision: "r1", Tools: tools}
	keep := func(t *mcpbridge.Tool) bool { return t.Name != "c__Issue_Secret" }
	r := scanNames(snap, "Issue list", 10, keep)
	var got []string
	for _, h := range r.hits {
		got = append(got, h.Key)
	}
	if want := []string{"a__list_issues", "a__get_issue", "b__create_issue"}; !slices.Equal(got, want) || !r.names || r.rev != "r1" {
		t.Errorf("scanNames = %v (names %v, rev %q), want %v, names, r1", got, r.names, r.rev, want)
	}
	if r.hits[0].Score != 1 || r.hits[1].Score != 0.5 {
		t.Errorf("scores %v, %v: want 1 (both words), 0.5", r.hits[0].Score, r.hits[1].Score)
	}
	if r := scanNames(snap, "issue", 1, keep); len(r.hits) != 1 {
		t.Errorf("limit 1: %d hits", len(r.hits))
	}
	if r := scanNames(snap, " ,;", 10, keep); len(r.hits) != 0 || !r.names {
		t.Errorf("no words: %v", r.hits)
	}
}
