package mcpfront

import (
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/service/core"
)

// Per-principal list_changed. With authorization rules (or per-user
// upstreams), principals see different catalogs, and a catalog change may
// leave a principal's view as it was. Who may see what is the core's
// (core.View); the front door remembers, per connected principal, the
// content revision of each list as last announced and, on a change,
// compares it with the view's current revision (the tool list of the
// principals under the same rules is filtered and hashed once per snapshot,
// in the core). The principals whose
// revision moved are announced; go-sdk's sending of list_changed to every
// session at once is narrowed to them by the go-sdk adapter (gosdk.go,
// announcements). Without rules or per-user upstreams every principal sees
// the whole catalog and every session is notified.

// listKind is one of the lists whose list_changed is per principal.
type listKind int

const (
	kindTools listKind = iota
	kindResources
	kindPrompts
	numListKinds
)

// method is the list's list_changed notification.
func (k listKind) method() string {
	return [...]string{"notifications/tools/list_changed", "notifications/resources/list_changed",
		"notifications/prompts/list_changed"}[k]
}

type views struct {
	mu       sync.Mutex
	sessions map[*mcp.ServerSession]string // connected sessions' principals
	count    map[string]int                // sessions per principal
	// last is, per principal, the revision of each list's view as last
	// announced (core.View.Revisions).
	last map[string][numListKinds]string
}

func newViews() *views {
	return &views{sessions: map[*mcp.ServerSession]string{}, count: map[string]int{}, last: map[string][numListKinds]string{}}
}

// rules reports whether principals' views of the resources and prompts
// can differ.
func (f *Front) rules() bool { return f.c.CurrentAuth().Authorizer().HasRules() }

// toolViews reports whether principals' tool views can differ: by rules,
// or by per-principal listings (a per-user upstream runs).
func (f *Front) toolViews() bool { return f.rules() || f.c.HasPerUser() }

// perPrincipal reports whether the list's views can differ by principal.
func (f *Front) perPrincipal(k listKind) bool {
	if k == kindTools {
		return f.toolViews()
	}
	return f.rules()
}

// revision is the current revision of p's view of list k.
func (f *Front) revision(view *core.View, k listKind) string {
	switch k {
	case kindTools:
		return view.ToolRevision()
	case kindResources:
		return view.ResourcesRevision()
	}
	return view.PromptsRevision()
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
		view := f.c.ViewFor(p)
		var last [numListKinds]string
		for k := range numListKinds {
			last[k] = f.revision(view, k)
		}
		v.last[p] = last
	}
}

func (f *Front) removeSession(ss *mcp.ServerSession) {
	f.found.forget(ss)
	f.levels.Delete(ss)
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
		f.announced.forget(p)
	}
}

// viewsChanged compares every connected principal's views of the lists
// with the ones last announced, announces the principals whose view of a
// list changed (announcements), and reports for each list whether any
// did (always, for a list whose views cannot differ by principal).
func (f *Front) viewsChanged(lists ...listKind) (changed [numListKinds]bool) {
	per := false
	for _, k := range lists {
		changed[k] = !f.perPrincipal(k)
		per = per || !changed[k]
	}
	if !per {
		return changed
	}
	v := f.views
	v.mu.Lock()
	defer v.mu.Unlock()
	for p := range v.count {
		view, last := f.c.ViewFor(p), v.last[p]
		for _, k := range lists {
			if !f.perPrincipal(k) {
				continue
			}
			if rev := f.revision(view, k); rev != last[k] {
				last[k] = rev
				f.announced.announce(k, p)
				changed[k] = true
			}
		}
		v.last[p] = last
	}
	return changed
}

// principalOf is the principal of a recorded session.
func (f *Front) principalOf(ss *mcp.ServerSession) (string, bool) {
	v := f.views
	v.mu.Lock()
	defer v.mu.Unlock()
	p, ok := v.sessions[ss]
	return p, ok
}
