package catalog

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// snapshots is what the tool catalog (catalog.go) and the resource catalog
// (resources.go) share: an immutable current snapshot swapped atomically
// (readers never lock), a bounded history of recent snapshots by revision
// (for page tokens and watch resumption), and capacity-1 change signals (a
// writer never blocks on a subscriber). A catalog embeds it and calls
// publish with every snapshot it builds; revisions are content-derived, so
// a snapshot whose revision is the current one changes nothing.
type snapshots[S any] struct {
	cur      atomic.Pointer[S]
	revision func(*S) string
	// maxLen bounds the history; budget, if set, bounds it further (it is
	// told of every snapshot added and forgotten). The current snapshot is
	// always kept.
	maxLen func() int
	budget historyBudget[S]

	mu      sync.Mutex    // guards history, byRev and pins
	history []*S          // oldest first; the last is the current one
	byRev   map[string]*S // revision -> newest snapshot with it
	pins    []pin[S]      // snapshots listings page through (Pin)

	signals signals
}

// historyBudget accounts for what a history holds beyond a count of
// snapshots (the tool catalog's pointer and byte budgets). Its methods run
// under the history's lock.
type historyBudget[S any] interface {
	// added: s joined the history after prev (nil when the history was
	// empty).
	added(prev, s *S)
	// dropped: old, the oldest, was forgotten; next is now the oldest.
	dropped(old, next *S)
	// over reports a history over the budget.
	over() bool
}

func newSnapshots[S any](revision func(*S) string, maxLen func() int, budget historyBudget[S]) snapshots[S] {
	return snapshots[S]{revision: revision, maxLen: maxLen, budget: budget, byRev: map[string]*S{}}
}

// Current returns the current snapshot.
func (h *snapshots[S]) Current() *S { return h.cur.Load() }

// Snapshot returns a recent snapshot with the given revision, if this
// process still remembers one (in its history, or pinned).
func (h *snapshots[S]) Snapshot(revision string) (*S, bool) {
	if cur := h.cur.Load(); cur != nil && h.revision(cur) == revision {
		return cur, true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.byRev[revision]; ok {
		return s, true
	}
	now := time.Now()
	for _, p := range h.pins {
		if p.rev == revision && now.Before(p.until) {
			return p.snap, true
		}
	}
	return nil, false
}

// A paged listing names the revision it started from in its page tokens,
// and under churn (500 upstreams announcing list_changed at once) the
// history's budgets can forget that revision before the listing ends. A
// listing that hands out a page token pins the revision: it stays
// retrievable for PinTTL (2 minutes) after the last page served from it,
// whatever the history forgets. Pins are bounded: MaxPinsPerOwner per owner (a
// principal: its newest listings; one principal's listings cannot evict
// another's), MaxPins in all (past it, the pin nearest its expiry goes).
// A pinned snapshot shares its entries with the others, so one costs a
// slice of pointers plus the entries no newer snapshot holds.
const (
	PinTTL          = 2 * time.Minute
	MaxPins         = 32
	MaxPinsPerOwner = 2
)

type pin[S any] struct {
	rev, owner string
	snap       *S
	until      time.Time
}

// Pin keeps s retrievable by Snapshot for PinTTL from now, on behalf of
// owner.
func (h *snapshots[S]) Pin(s *S, owner string) {
	rev, now := h.revision(s), time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pins = slices.DeleteFunc(h.pins, func(p pin[S]) bool { return !now.Before(p.until) })
	mine := 0
	for i := range h.pins {
		if h.pins[i].owner != owner {
			continue
		}
		if h.pins[i].rev == rev {
			h.pins[i].until, h.pins[i].snap = now.Add(PinTTL), s
			return
		}
		mine++
	}
	soonest := func(of func(pin[S]) bool) {
		at := -1
		for i, p := range h.pins {
			if of(p) && (at < 0 || p.until.Before(h.pins[at].until)) {
				at = i
			}
		}
		if at >= 0 {
			h.pins = slices.Delete(h.pins, at, at+1)
		}
	}
	if mine >= MaxPinsPerOwner {
		soonest(func(p pin[S]) bool { return p.owner == owner })
	}
	if len(h.pins) >= MaxPins {
		// The owner with the most pins gives one up first: many owners'
		// listings cannot be evicted by one owner's.
		counts := map[string]int{}
		most := 0
		for _, p := range h.pins {
			counts[p.owner]++
			most = max(most, counts[p.owner])
		}
		soonest(func(p pin[S]) bool { return counts[p.owner] == most })
	}
	h.pins = append(h.pins, pin[S]{rev: rev, owner: owner, snap: s, until: now.Add(PinTTL)})
}

// History returns the remembered snapshots, oldest first; the last is the
// current one.
func (h *snapshots[S]) History() []*S {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.history)
}

// Subscribe starts a subscription to changes. Call Close when done.
func (h *snapshots[S]) Subscribe() *Subscription { return h.signals.subscribe() }

// Subscribers returns the number of open subscriptions.
func (h *snapshots[S]) Subscribers() int { return h.signals.count() }

// publish makes s current, records it in the history and signals every
// subscriber; a snapshot with the current revision changes nothing.
// Writers serialise their calls (the catalog's writer lock).
func (h *snapshots[S]) publish(s *S) {
	if cur := h.cur.Load(); cur != nil && h.revision(cur) == h.revision(s) {
		return
	}
	h.cur.Store(s)
	h.mu.Lock()
	var newest *S
	if len(h.history) > 0 {
		newest = h.history[len(h.history)-1]
	}
	h.history = append(h.history, s)
	h.byRev[h.revision(s)] = s
	if h.budget != nil {
		h.budget.added(newest, s)
	}
	for len(h.history) > 1 && (len(h.history) > h.maxLen() || h.budget != nil && h.budget.over()) {
		old := h.history[0]
		h.history[0] = nil
		h.history = h.history[1:]
		if h.budget != nil {
			h.budget.dropped(old, h.history[0])
		}
		if rev := h.revision(old); h.byRev[rev] == old {
			delete(h.byRev, rev)
		}
	}
	h.mu.Unlock()
	h.signals.signal()
}

// lookupSorted finds the entry called name in a snapshot's list sorted by
// name (Snapshot.Lookup, ResourceSnapshot.LookupPrompt): a retained
// snapshot costs one slice of pointers and no per-snapshot index.
func lookupSorted[T any](list []T, name string, nameOf func(T) string) (T, bool) {
	i, ok := slices.BinarySearchFunc(list, name, func(e T, n string) int { return cmp.Compare(nameOf(e), n) })
	if !ok {
		var zero T
		return zero, false
	}
	return list[i], true
}

// signals is a set of subscriptions, each signalled on every change.
type signals struct {
	mu   sync.Mutex
	subs map[*Subscription]struct{}
}

func (g *signals) subscribe() *Subscription {
	s := &Subscription{c: make(chan struct{}, 1), g: g}
	g.mu.Lock()
	if g.subs == nil {
		g.subs = map[*Subscription]struct{}{}
	}
	g.subs[s] = struct{}{}
	g.mu.Unlock()
	return s
}

// add makes s, a subscription of another set, signalled by g too (its
// also).
func (g *signals) add(s *Subscription) {
	g.mu.Lock()
	if g.subs == nil {
		g.subs = map[*Subscription]struct{}{}
	}
	g.subs[s] = struct{}{}
	g.mu.Unlock()
}

func (g *signals) signal() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for s := range g.subs {
		select {
		case s.c <- struct{}{}:
		default: // already signalled; the reader will load the latest snapshot
		}
	}
}

func (g *signals) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.subs)
}

// Subscription signals catalog changes. The signal is a capacity-1 channel:
// many changes between two reads collapse into one signal, and the reader
// loads Current() to see the latest state.
type Subscription struct {
	c chan struct{}
	g *signals
	// also is a second set signalling it (a principal's listings,
	// private.go), release what its Close gives back; both optional.
	also    *signals
	release func()
	once    sync.Once
}

// C is signalled after the catalog changed.
func (s *Subscription) C() <-chan struct{} { return s.c }

// Close ends the subscription. It is idempotent.
func (s *Subscription) Close() {
	s.g.mu.Lock()
	delete(s.g.subs, s)
	s.g.mu.Unlock()
	if s.also != nil {
		s.also.mu.Lock()
		delete(s.also.subs, s)
		s.also.mu.Unlock()
	}
	if s.release != nil {
		s.once.Do(s.release)
	}
}
