package service

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/toolsvc/toolsvc/service/core"
)

// The fan-out engine, one for every watch (tools only, or with resources
// and prompts). Streams with the same view, kinds, schema format and
// fragment flag share a watchGroup. A group's state is the newest
// (snapshot, resource snapshot, view) a member has asked for; it is built
// once per catalog change by the first member that wakes (under the
// group's own lock: groups never wait for each other), and read by every
// other member with one atomic load. Every event a state can send
// (snapshot, reset snapshot, changes from the previous view, synced,
// progress; tools, resources and prompts alike) is encoded once, on first
// use, and shared by every member, and so is the delta of a laggard
// resuming from an older view: a member's own work per change is one Send
// (docs/watching.md: fan-out).

// watchHub holds the groups; its lock is taken when a stream opens or
// closes, and by the signal loop to copy the groups and a group's members,
// never to deliver an event. The catalogs signal the hub once per change
// (one subscription each, taken by the first join), not every stream: the
// signal loop (run) wakes each group once, which builds its state once and
// starts the sends of its members (watchGroup.fanout), and only when the
// group's view changed; a stream's handler is not woken.
type watchHub struct {
	mu      sync.Mutex
	groups  map[groupKey]*watchGroup
	closed  bool // Shutdown: no more joins
	started bool // the signal loop runs
	wg      sync.WaitGroup

	gbuf  []*watchGroup    // the signal loop's copies (run only)
	mbufs [][]*watchSender // a member list per fan-out worker (run only)
}

type groupKey struct {
	view     string
	kinds    watchKinds
	format   schemaFormat
	fragment bool // events are split into parts (or refused when too large)

	tools string // whose view of the tool catalog (watchFilter.tools)
}

type watchGroup struct {
	key     groupKey
	filter  *watchFilter   // the first member's; members' filters are equal (same key)
	refs    int            // watchHub.mu
	members []*watchSender // watchHub.mu
	fanned  string         // the view revision the members were last started for, or the first member's (watchHub.mu)

	state atomic.Pointer[groupState]

	mu       sync.Mutex                                      // builds states; guards the caches below
	views    viewMemo[*core.Snapshot, *view]                 // tool parts of older snapshots (resumption)
	resViews viewMemo[*core.ResourceSnapshot, *resourceView] // resource parts likewise
	toolRevs map[*core.Snapshot]string                       // the tool part's revision of snapshots a resume built (matched or not)
	resRevs  map[*core.ResourceSnapshot]string               // the resource part's likewise
	deltas   map[[2]string]*encodedEvent                     // changes from revisions older than the previous one
	events   map[string]*viewEvents                          // the events of recent revisions, so a flip back reuses them
}

// groupState is the group's newest snapshots and the events of its view.
type groupState struct {
	snap  *core.Snapshot
	rsnap *core.ResourceSnapshot // nil: the group follows tools only
	ev    *viewEvents
}

// Bounds of a group's caches; each is dropped whole when it is full.
const (
	groupViewsMax  = 128
	groupDeltasMax = 64
	groupEventsMax = 8
)

// viewMemo remembers the views of recent snapshots of one catalog.
type viewMemo[S comparable, V any] struct{ m map[S]V }

func (m *viewMemo[S, V]) get(snap S) (V, bool) {
	v, ok := m.m[snap]
	return v, ok
}

func (m *viewMemo[S, V]) put(snap S, v V) {
	if m.m == nil || len(m.m) >= groupViewsMax {
		m.m = map[S]V{}
	}
	m.m[snap] = v
}

// join adds a stream's sender to the group of its view, or returns false
// after Shutdown. The first join subscribes the hub to the catalogs, before
// it returns: a change after it reaches every group.
func (h *watchHub) join(s *Server, f *watchFilter, w *watchSender) (*watchGroup, bool) {
	k := groupKey{f.key, f.kinds, f.format, f.fragment, f.tools}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	if !h.started {
		h.started = true
		// The shared catalog's changes and every principal's listings'
		// (per-principal tool listings, mcpbridge/catalog/private.go): a group
		// whose principal's view did not move starts no send (fanout).
		tools, res := s.core.SubscribeAllTools(), s.core.Resources().Subscribe()
		h.wg.Add(1)
		go h.run(s, tools, res)
	}
	g := h.groups[k]
	if g == nil {
		if h.groups == nil {
			h.groups = map[groupKey]*watchGroup{}
		}
		g = &watchGroup{key: k, filter: f}
		h.groups[k] = g
	}
	g.refs++
	w.mu.Lock()
	w.g, w.idx = g, len(g.members)
	w.mu.Unlock()
	g.members = append(g.members, w)
	return g, true
}

// leave removes a stream's sender from its group; it is idempotent. The
// sender keeps the group as the one whose state it last followed.
func (h *watchHub) leave(w *watchSender) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w.mu.Lock()
	g, i := w.g, w.idx
	w.idx = -1
	w.mu.Unlock()
	if g == nil || i < 0 {
		return
	}
	last := len(g.members) - 1
	if i != last {
		moved := g.members[last]
		g.members[i] = moved
		moved.mu.Lock()
		moved.idx = i
		moved.mu.Unlock()
	}
	g.members[last] = nil
	g.members = g.members[:last]
	if g.refs--; g.refs == 0 {
		delete(h.groups, g.key)
	}
}

// first notes the view a new group's first member starts from: its
// members need no start until the view moves from there.
func (h *watchHub) first(g *watchGroup, rev string) {
	h.mu.Lock()
	if g.fanned == "" {
		g.fanned = rev
	}
	h.mu.Unlock()
}

// run is the hub's signal loop: one wake-up per change of either catalog,
// until Shutdown. Server.Wait joins it.
func (h *watchHub) run(s *Server, tools, res *core.Subscription) {
	defer h.wg.Done()
	defer tools.Close()
	defer res.Close()
	for {
		select {
		case <-s.shutdown:
			return
		case <-tools.C():
			h.fanout(s, false)
		case <-res.C():
			h.fanout(s, true)
		}
	}
}

// fanout wakes every group once (only those that follow resources and
// prompts for a change of that catalog). Building a group's state is the
// work of a change (a view of the catalog per group); groups never share
// it, so up to GOMAXPROCS of them build at once: many groups (views,
// schema formats, principals) do not wait for each other in turn.
func (h *watchHub) fanout(s *Server, resources bool) {
	h.mu.Lock()
	groups := h.gbuf[:0]
	for _, g := range h.groups {
		if !resources || g.key.kinds.any() {
			groups = append(groups, g)
		}
	}
	h.mu.Unlock()
	workers := min(runtime.GOMAXPROCS(0), len(groups))
	if len(h.mbufs) < workers {
		h.mbufs = append(h.mbufs, make([][]*watchSender, workers-len(h.mbufs))...)
	}
	if workers <= 1 {
		for _, g := range groups {
			h.mbufs[0] = g.fanout(s, h, h.mbufs[0])
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= len(groups) {
						return
					}
					h.mbufs[w] = groups[i].fanout(s, h, h.mbufs[w])
				}
			})
		}
		wg.Wait()
	}
	clear(groups)
	h.gbuf = groups
}

// fanout builds the group's state for the current snapshots and, if its
// view moved since the members were last started, starts each member's
// sends (watchSender.kick: a member already sending picks the new state up
// when its send is done). A change the view does not show wakes no one.
// buf is scratch space for the members, returned for reuse.
func (g *watchGroup) fanout(s *Server, h *watchHub, buf []*watchSender) []*watchSender {
	st := g.current(s)
	h.mu.Lock()
	if st.ev.view.rev == g.fanned {
		h.mu.Unlock()
		return buf
	}
	g.fanned = st.ev.view.rev
	members := append(buf[:0], g.members...)
	h.mu.Unlock()
	for _, w := range members {
		w.kick()
	}
	clear(members)
	return members
}

// shutdown refuses later joins; the streams end on Server.shutdown.
func (h *watchHub) shutdown() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
}

// snapshots returns the current snapshots of the catalogs the group
// follows (no resource snapshot for tools only).
func (g *watchGroup) snapshots(s *Server) (*core.Snapshot, *core.ResourceSnapshot) {
	cat := s.core.ToolsOf(g.key.tools)
	if !g.key.kinds.any() {
		return cat.Current(), nil
	}
	return cat.Current(), s.core.Resources().Current()
}

// current returns the group's state for the catalogs' current snapshots,
// building it if this member is the first to ask.
func (g *watchGroup) current(s *Server) *groupState {
	snap, rsnap := g.snapshots(s)
	if st := g.state.Load(); st != nil && st.snap == snap && st.rsnap == rsnap {
		return st
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	snap, rsnap = g.snapshots(s) // the newest, even if another member just built one
	old := g.state.Load()
	if old != nil && old.snap == snap && old.rsnap == rsnap {
		return old
	}
	st := &groupState{snap: snap, rsnap: rsnap}
	v := g.viewLocked(s, snap, rsnap)
	switch {
	case old != nil && old.ev.view.rev == v.rev:
		st.ev = old.ev // nothing this view shows changed
	case g.events[v.rev] != nil:
		st.ev = g.events[v.rev]
	default:
		st.ev = &viewEvents{g: g, view: v}
		if old != nil {
			st.ev.prev = old.ev.view
		}
		if g.events == nil || len(g.events) >= groupEventsMax {
			g.events = map[string]*viewEvents{}
		}
		g.events[v.rev] = st.ev
	}
	g.state.Store(st)
	return st
}

// viewLocked returns the snapshots as the group sees them, each part
// remembered for resumption.
func (g *watchGroup) viewLocked(s *Server, snap *core.Snapshot, rsnap *core.ResourceSnapshot) *view {
	tv, ok := g.views.get(snap)
	if !ok {
		tv = buildToolView(snap, g.filter)
		if g.filter.key != "" { // the unfiltered tool view is the snapshot itself
			g.views.put(snap, tv)
		}
	}
	if rsnap == nil {
		return tv
	}
	rv, ok := g.resViews.get(rsnap)
	if !ok {
		rv = s.buildResourceView(rsnap, g.filter)
		g.resViews.put(rsnap, rv)
	}
	return withResources(tv, rv)
}

// findView returns the newest remembered view with revision rev (a resume
// token), or nil.
func (g *watchGroup) findView(s *Server, rev string) *view {
	toolRev, resRev, ok := splitToken(rev, g.key.kinds)
	if !ok {
		return nil
	}
	tv := g.findToolView(s, toolRev)
	if tv == nil || !g.key.kinds.any() {
		return tv
	}
	rv := findInHistory(&g.mu, s.core.Resources().History(), &g.resViews, &g.resRevs, resRev,
		func(rs *core.ResourceSnapshot) *resourceView { return s.buildResourceView(rs, g.filter) },
		func(v *resourceView) string { return v.rev })
	if rv == nil {
		return nil
	}
	return withResources(tv, rv)
}

// findToolView returns the newest remembered tool part with revision rev.
func (g *watchGroup) findToolView(s *Server, rev string) *view {
	cat := s.core.ToolsOf(g.key.tools)
	if g.filter.key == "" {
		if snap, ok := cat.Snapshot(rev); ok {
			return buildToolView(snap, g.filter)
		}
		return nil
	}
	return findInHistory(&g.mu, cat.History(), &g.views, &g.toolRevs, rev,
		func(snap *core.Snapshot) *view { return buildToolView(snap, g.filter) },
		func(v *view) string { return v.toolRev })
}

// findInHistory searches a catalog's history, newest first, for a view
// with revision rev. It remembers every view it builds by its revision
// (revs), and the view itself only when it matches: an unknown token must
// not flush the views other resumers share, nor make the next unknown
// token build the same views again. Views are built without the group's
// lock (mu, which guards memo and revs): the group's state is built under
// it on every change, and a resume that builds the views of a long history
// of a large catalog must not hold that up.
func findInHistory[S comparable, V comparable](mu *sync.Mutex, hist []S, memo *viewMemo[S, V], revs *map[S]string, rev string, build func(S) V, revOf func(V) string) V {
	var none V
	mu.Lock()
	// Only the history's snapshots are remembered: one that left it is
	// neither kept alive nor counted against the others.
	if len(*revs) > 0 {
		keep := make(map[S]string, len(hist))
		for _, h := range hist {
			if r, ok := (*revs)[h]; ok {
				keep[h] = r
			}
		}
		*revs = keep
	}
	mu.Unlock()
	for i := len(hist) - 1; i >= 0; i-- {
		mu.Lock()
		v, ok := memo.get(hist[i])
		r, known := (*revs)[hist[i]]
		mu.Unlock()
		switch {
		case ok && revOf(v) == rev:
			return v
		case ok || known && r != rev:
			continue
		}
		v = build(hist[i])
		mu.Lock()
		if *revs == nil {
			*revs = make(map[S]string, len(hist))
		}
		(*revs)[hist[i]] = revOf(v)
		if revOf(v) == rev {
			memo.put(hist[i], v)
		}
		mu.Unlock()
		if revOf(v) == rev {
			return v
		}
	}
	return none
}
