package mcpfront

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service/core"
)

// Per-principal list_changed. With authorization rules, principals see
// different tools, and a catalog change may leave a principal's view as it
// was. go-sdk notifies every session at once (the only way to make it send
// list_changed), so a sending middleware drops the notification for the
// sessions whose principal's view did not change. A view is the sequence of
// catalog entries the principal may use; entries are immutable and an
// unchanged tool keeps its entry across revisions, so comparing views is
// comparing pointers. Without rules every principal sees the whole catalog
// and every session is notified.

// viewAnnounceWindow is how long a principal's changed view lets
// notifications through: go-sdk sends about 10 ms after the marker changes.
// Within the window, a session whose own view did not change in a later
// change may get that notification too (harmless: one more tools/list);
// only a send go-sdk delayed by more than the window could be dropped, so
// it is generous.
const viewAnnounceWindow = time.Second

type views struct {
	window    time.Duration // viewAnnounceWindow; tests shorten it
	mu        sync.Mutex
	sessions  map[*mcp.ServerSession]string // connected sessions' principals
	count     map[string]int                // sessions per principal
	last      map[string][]*mcpbridge.Tool  // the view last announced, per principal
	announced map[string]time.Time          // principals whose view changed, when
	// The same for the resource (with templates) and prompt lists: the
	// view last announced as a comparable key (resourceListKey, promptListKey).
	lastKey      [numListKinds]map[string]string
	announcedKey [numListKinds]map[string]time.Time
}

// listKind is a list other than tools whose list_changed is per principal.
type listKind int

const (
	kindResources listKind = iota
	kindPrompts
	numListKinds
)

func newViews() *views {
	v := &views{window: viewAnnounceWindow, sessions: map[*mcp.ServerSession]string{}, count: map[string]int{},
		last: map[string][]*mcpbridge.Tool{}, announced: map[string]time.Time{}}
	for k := range numListKinds {
		v.lastKey[k], v.announcedKey[k] = map[string]string{}, map[string]time.Time{}
	}
	return v
}

// listKey is p's view of one of the other lists of snap.
func (f *Front) listKey(k listKind, snap *mcpbridge.ResourceSnapshot, p string) string {
	a := f.c.CurrentAuth().Authorizer()
	if k == kindPrompts {
		return promptListKey(snap, func(name string) bool { return a.AllowTool(core.Principal{Name: p}, name) })
	}
	return resourceListKey(snap, func(server string) bool {
		return a.AllowTool(core.Principal{Name: p}, f.c.ResourcesAuthName(server))
	})
}

// listViewsChanged is viewsChanged for the resource or prompt list.
func (f *Front) listViewsChanged(k listKind, snap *mcpbridge.ResourceSnapshot) bool {
	if !f.rules() {
		return true
	}
	v := f.views
	v.mu.Lock()
	defer v.mu.Unlock()
	now := time.Now()
	changed := false
	for p := range v.count {
		key := f.listKey(k, snap, p)
		if key != v.lastKey[k][p] {
			v.lastKey[k][p], v.announcedKey[k][p] = key, now
			changed = true
		}
	}
	return changed
}

// sameTool reports whether a client would see a and b alike.
func sameTool(a, b *mcpbridge.Tool) bool {
	if a == b {
		return true
	}
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description && a.SchemaHash == b.SchemaHash &&
		a.Available == b.Available && reflect.DeepEqual(a.Annotations, b.Annotations) && reflect.DeepEqual(a.Meta, b.Meta)
}

// rules reports whether principals' views can differ.
func (f *Front) rules() bool {
	a := f.c.CurrentAuth().Authorizer()
	return a.HasRules()
}

// toolViews reports whether principals' tool views can differ: by rules,
// or by per-principal listings (a per-user upstream runs).
func (f *Front) toolViews() bool { return f.rules() || f.c.Bridge().HasPerUser() }

// toolSnap is p's snapshot of the tool catalog, whose shared snapshot is
// shared: with p's per-principal listings (core.Core.Tools).
func (f *Front) toolSnap(shared *mcpbridge.Snapshot, p string) *mcpbridge.Snapshot {
	if p == "" {
		return shared
	}
	return f.c.Bridge().Tools(p).Current()
}

// view is the catalog entries of snap that p may use.
func (f *Front) view(snap *mcpbridge.Snapshot, p string) []*mcpbridge.Tool {
	var out []*mcpbridge.Tool
	a := f.c.CurrentAuth().Authorizer()
	for _, t := range snap.Tools {
		if a.AllowTool(core.Principal{Name: p}, t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// addSession records the principal of a session that can receive
// list_changed (a 2025-11-25 or SSE session at initialize, a 2026-07-28
// listen stream while it lasts).
func (f *Front) addSession(ss *mcp.ServerSession, extra *mcp.RequestExtra) {
	if extra == nil || extra.TokenInfo == nil || !f.toolViews() {
		return
	}
	p := extra.TokenInfo.UserID
	v := f.views
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.sessions[ss]; ok {
		return
	}
	v.sessions[ss] = p
	if v.count[p]++; v.count[p] == 1 {
		v.last[p] = f.view(f.toolSnap(f.c.Bridge().Catalog().Current(), p), p)
		res := f.c.Bridge().Resources().Current()
		for k := range numListKinds {
			v.lastKey[k][p] = f.listKey(k, res, p)
		}
	}
}

func (f *Front) removeSession(ss *mcp.ServerSession) {
	f.found.forget(ss)
	v := f.views
	v.mu.Lock()
	defer v.mu.Unlock()
	p, ok := v.sessions[ss]
	if !ok {
		return
	}
	delete(v.sessions, ss)
	if v.count[p]--; v.count[p] <= 0 {
		delete(v.count, p)
		delete(v.last, p)
		delete(v.announced, p)
		for k := range numListKinds {
			delete(v.lastKey[k], p)
			delete(v.announcedKey[k], p)
		}
	}
}

// viewsChanged compares every connected principal's view of snap with the
// one last announced and marks the principals whose view changed. It
// reports whether any did (always true when views cannot differ). A JWT
// principal's view is of their own snapshot (toolSnap).
func (f *Front) viewsChanged(snap *mcpbridge.Snapshot) bool {
	if !f.toolViews() {
		return true
	}
	v := f.views
	v.mu.Lock()
	defer v.mu.Unlock()
	now := time.Now()
	changed := false
	for p := range v.count {
		view := f.view(f.toolSnap(snap, p), p)
		if !slices.EqualFunc(view, v.last[p], sameTool) {
			v.last[p], v.announced[p] = view, now
			changed = true
		}
	}
	return changed
}

// wants reports whether ss should get the list_changed being sent
// (notifications/<list>/list_changed).
func (f *Front) wants(ss *mcp.ServerSession, method string) bool {
	if tools := method == "notifications/tools/list_changed"; !f.rules() && (!tools || !f.toolViews()) {
		return true
	}
	v := f.views
	v.mu.Lock()
	defer v.mu.Unlock()
	p, ok := v.sessions[ss]
	if !ok {
		return true // not recorded: notify rather than miss
	}
	var at time.Time
	switch method {
	case "notifications/tools/list_changed":
		at, ok = v.announced[p]
	case "notifications/resources/list_changed":
		at, ok = v.announcedKey[kindResources][p]
	default:
		at, ok = v.announcedKey[kindPrompts][p]
	}
	return ok && time.Since(at) < v.window
}

// sendingMiddleware drops a list_changed for sessions whose view of that
// list did not change.
func (f *Front) sendingMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	f.send = next
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "notifications/tools/list_changed", "notifications/resources/list_changed", "notifications/prompts/list_changed":
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && !f.wants(ss, method) {
				return nil, nil
			}
		case "elicitation/create":
			res, err := next(ctx, method, req)
			if err == nil {
				keepElicitContent(ctx, res)
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}
