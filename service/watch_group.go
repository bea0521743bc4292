package service

import (
	"sync"
	"sync/atomic"

	"github.com/toolsvc/toolsvc/mcpbridge"
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
// (README, "Watching the catalog": fan-out).

// watchHub holds the groups; its lock is taken when a stream opens or
// closes, never to deliver an event.
type watchHub struct {
	mu     sync.Mutex
	groups map[groupKey]*watchGroup
	closed bool // Shutdown: no more joins
}

type groupKey struct {
	view     string
	kinds    watchKinds
	format   schemaFormat
	fragment bool // events are split into parts (or refused when too large)

	tools string // whose view of the tool catalog (watchFilter.tools)
}

type watchGroup struct {
	key    groupKey
	filter *watchFilter // the first member's; members' filters are equal (same key)
	refs   int          // watchHub.mu

	state atomic.Pointer[groupState]

	mu       sync.Mutex                                           // builds states; guards the caches below
	views    viewMemo[*mcpbridge.Snapshot, *view]                 // tool parts of older snapshots (resumption)
	resViews viewMemo[*mcpbridge.ResourceSnapshot, *resourceView] // resource parts likewise
	deltas   map[[2]string]*encodedEvent                          // changes from revisions older than the previous one
	events   map[string]*viewEvents                               // the events of recent revisions, so a flip back reuses them
}

// groupState is the group's newest snapshots and the events of its view.
type groupState struct {
	snap  *mcpbridge.Snapshot
	rsnap *mcpbridge.ResourceSnapshot // nil: the group follows tools only
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

// join adds a stream to the group of its view, or returns false after
// Shutdown.
func (h *watchHub) join(f *watchFilter) (*watchGroup, bool) {
	k := groupKey{f.key, f.kinds, f.format, f.fragment, f.tools}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
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
	return g, true
}

func (h *watchHub) leave(g *watchGroup) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if g.refs--; g.refs == 0 {
		delete(h.groups, g.key)
	}
}

// shutdown refuses later joins; the streams end on Server.shutdown.
func (h *watchHub) shutdown() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
}

// snapshots returns the current snapshots of the catalogs the group
// follows (no resource snapshot for tools only).
func (g *watchGroup) snapshots(s *Server) (*mcpbridge.Snapshot, *mcpbridge.ResourceSnapshot) {
	cat := s.bridge.Tools(g.key.tools)
	if !g.key.kinds.any() {
		return cat.Current(), nil
	}
	return cat.Current(), s.bridge.Resources().Current()
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
func (g *watchGroup) viewLocked(s *Server, snap *mcpbridge.Snapshot, rsnap *mcpbridge.ResourceSnapshot) *view {
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
	g.mu.Lock()
	defer g.mu.Unlock()
	rv := findInHistory(s.bridge.Resources().History(), &g.resViews, resRev,
		func(rs *mcpbridge.ResourceSnapshot) *resourceView { return s.buildResourceView(rs, g.filter) },
		func(v *resourceView) string { return v.rev })
	if rv == nil {
		return nil
	}
	return withResources(tv, rv)
}

// findToolView returns the newest remembered tool part with revision rev.
func (g *watchGroup) findToolView(s *Server, rev string) *view {
	cat := s.bridge.Tools(g.key.tools)
	if g.filter.key == "" {
		if snap, ok := cat.Snapshot(rev); ok {
			return buildToolView(snap, g.filter)
		}
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return findInHistory(cat.History(), &g.views, rev,
		func(snap *mcpbridge.Snapshot) *view { return buildToolView(snap, g.filter) },
		func(v *view) string { return v.toolRev })
}

// findInHistory searches a catalog's history, newest first, for a view
// with revision rev, remembering only what matches: an unknown token must
// not flush the views other resumers share. The caller holds the group's
// lock.
func findInHistory[S comparable, V comparable](hist []S, memo *viewMemo[S, V], rev string, build func(S) V, revOf func(V) string) V {
	var none V
	for i := len(hist) - 1; i >= 0; i-- {
		v, ok := memo.get(hist[i])
		if !ok {
			if v = build(hist[i]); revOf(v) != rev {
				continue
			}
			memo.put(hist[i], v)
		}
		if revOf(v) == rev {
			return v
		}
	}
	return none
}
