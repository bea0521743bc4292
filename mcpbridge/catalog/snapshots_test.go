package catalog

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type testSnap struct{ rev string }

// countBudget is a historyBudget over snapshot counts, to check what the
// store tells a budget.
type countBudget struct{ held, limit int }

func (b *countBudget) added(_, _ *testSnap)   { b.held++ }
func (b *countBudget) dropped(_, _ *testSnap) { b.held-- }
func (b *countBudget) over() bool             { return b.held > b.limit }

// TestSnapshotStore: the store both catalogs share publishes only a new
// revision, signals once per change (collapsing), remembers the newest
// snapshot of each revision within its bounds, and always keeps the
// current one.
func TestSnapshotStore(t *testing.T) {
	t.Parallel()
	budget := &countBudget{limit: 3}
	h := newSnapshots(func(s *testSnap) string { return s.rev }, func() int { return 4 }, historyBudget[testSnap](budget))
	sub := h.Subscribe()
	a1 := &testSnap{"a"}
	h.publish(a1)
	h.publish(&testSnap{"a"}) // same revision: nothing
	if h.Current() != a1 || len(h.History()) != 1 || !signalled(sub.C()) || signalled(sub.C()) {
		t.Fatalf("first publish: current %v, history %d", h.Current(), len(h.History()))
	}
	b, a2 := &testSnap{"b"}, &testSnap{"a"}
	h.publish(b)
	h.publish(a2)
	if !signalled(sub.C()) || signalled(sub.C()) {
		t.Fatal("two changes between reads are not one signal")
	}
	if s, ok := h.Snapshot("a"); !ok || s != a2 {
		t.Fatalf("Snapshot(a) = %v, want the newest snapshot with that revision", s)
	}
	// The budget (3) binds before maxLen (4); the oldest go first.
	c, d := &testSnap{"c"}, &testSnap{"d"}
	h.publish(c)
	h.publish(d)
	if hist := h.History(); len(hist) != 3 || hist[0] != a2 || hist[2] != d || budget.held != 3 {
		t.Fatalf("history %v (budget holds %d), want a c d (the oldest forgotten)", hist, budget.held)
	}
	if _, ok := h.Snapshot("b"); ok {
		t.Fatal("a forgotten revision is still found")
	}
	// Even over every bound, the current snapshot stays.
	budget.limit = 0
	h.publish(&testSnap{"e"})
	if hist := h.History(); len(hist) != 1 || hist[0] != h.Current() || !signalled(sub.C()) {
		t.Fatalf("history %v, want only the current snapshot", hist)
	}
	if h.Subscribers() != 1 {
		t.Fatalf("Subscribers = %d, want 1", h.Subscribers())
	}
	sub.Close()
	sub.Close() // idempotent
	h.publish(&testSnap{"f"})
	if h.Subscribers() != 0 || signalled(sub.C()) {
		t.Fatal("a closed subscription is still signalled")
	}
}

// TestCatalogsShareSubscriptions: the tool and the resource catalog hand
// out the same kind of subscription, signalled by their own changes only.
func TestCatalogsShareSubscriptions(t *testing.T) {
	t.Parallel()
	tools, res := NewCatalog(), NewResourceCatalog()
	var subs [2]*Subscription
	subs[0], subs[1] = tools.Subscribe(), res.Subscribe()
	defer subs[0].Close()
	defer subs[1].Close()
	tools.SetServer("s", "s", []*mcp.Tool{{Name: "x"}}, true)
	if !signalled(subs[0].C()) || signalled(subs[1].C()) {
		t.Fatal("a tool change must signal the tool catalog's subscribers only")
	}
	res.SetServer("s", "s", []*mcp.Resource{{URI: "x://1"}}, nil, nil, [3]bool{})
	if signalled(subs[0].C()) || !signalled(subs[1].C()) {
		t.Fatal("a resource change must signal the resource catalog's subscribers only")
	}
	if tools.Subscribers() != 1 || res.Subscribers() != 1 {
		t.Fatalf("subscribers: tools %d, resources %d", tools.Subscribers(), res.Subscribers())
	}
	if h := res.History(); len(h) != 2 || h[1] != res.Current() {
		t.Fatalf("resource history %d snapshots, want the empty one and the current one", len(h))
	}
}
