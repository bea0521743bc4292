package service

import (
	"strconv"
	"sync"
	"testing"
)

// TestFindInHistoryUnknownToken: a resume token that matches nothing builds
// each snapshot's view once, without the group's lock, and the next unknown
// token builds nothing; a known token finds its view and remembers it, and
// a snapshot that left the memo is found again.
func TestFindInHistoryUnknownToken(t *testing.T) {
	t.Parallel()
	type snap struct{ n int }
	hist := make([]*snap, 128) // a full history (historySize)
	for i := range hist {
		hist[i] = &snap{i}
	}
	var mu sync.Mutex
	var memo viewMemo[*snap, *string]
	var revs map[*snap]string
	builds := 0
	build := func(s *snap) *string {
		if !mu.TryLock() {
			t.Fatal("a view was built under the group's lock")
		}
		mu.Unlock()
		builds++
		r := "rev-" + strconv.Itoa(s.n)
		return &r
	}
	revOf := func(v *string) string { return *v }
	find := func(rev string) *string { return findInHistory(&mu, hist, &memo, &revs, rev, build, revOf) }

	if v := find("unknown"); v != nil {
		t.Fatalf("unknown token found %q", *v)
	}
	if builds != len(hist) {
		t.Fatalf("unknown token built %d views, want one per snapshot (%d)", builds, len(hist))
	}
	if len(memo.m) != 0 {
		t.Fatalf("an unknown token remembered %d views", len(memo.m))
	}
	builds = 0
	if v := find("another unknown"); v != nil || builds != 0 {
		t.Fatalf("second unknown token: %v, %d builds; want nil and none", v, builds)
	}
	if v := find("rev-42"); v == nil || *v != "rev-42" || builds != 1 {
		t.Fatalf("known token: %v after %d builds; want rev-42 after 1", v, builds)
	}
	builds = 0
	if v := find("rev-42"); v == nil || *v != "rev-42" || builds != 0 {
		t.Fatalf("known token again: %v after %d builds; want rev-42 from the memo", v, builds)
	}
	// The history moves on by one: only the new snapshot is built for the
	// next unknown token, and the one that left is forgotten.
	builds = 0
	gone := hist[0]
	hist = append(hist[1:], &snap{128})
	if v := find("unknown again"); v != nil || builds != 1 {
		t.Fatalf("unknown token after one change: %v, %d builds; want nil and 1", v, builds)
	}
	if _, kept := revs[gone]; kept || len(revs) != len(hist) {
		t.Fatalf("remembered %d revisions (the dropped snapshot: %v), want the history's %d only", len(revs), kept, len(hist))
	}
}
