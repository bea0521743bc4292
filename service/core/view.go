package core

import (
	"context"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/toolsvc/toolsvc/mcpbridge/catalog"
)

// One view of the catalogs: who may see what. Every listing (tool pages,
// resource, template and prompt pages, search), every gRPC watch group and
// the front door's list_changed ask a View; no wire filters a catalog by
// the authorization rules itself.
//
// What a principal may see depends on the rules that match its name, not
// on the name itself (Authorizer.AllowTool), so principals matched by the
// same rules share a visibility class and one computed view: the front
// door with a thousand principals under three rule sets filters and hashes
// each change three times, not a thousand. A view's content revision is
// the catalog revision of the entries it holds (Revision,
// ResourceRevision): equal views have equal revisions on every replica.

// A View is the catalogs as one caller may see them under one auth state.
// It is cheap; build one per request or per change and do not keep it
// across auth changes (the class names the auth state's generation).
type View struct {
	c *Core
	// tools is the principal whose view of the tool catalog the view's
	// tool part follows ("" : the shared catalog; a principal's own while
	// per-user upstreams run, ToolsOf).
	tools string
	// allowed is the authorization of exposed names (tools, prompts, a
	// server's <prefix>__@resources); nil allows every name.
	allowed func(name string) bool
	// class identifies what allowed allows: "" for every name, else the
	// auth generation and the rules that apply. Views of one class and
	// tool source hold the same entries.
	class string
}

// ViewOf is the view of the caller of ctx (authenticated), under the auth
// state its request is pinned to.
func (s *Core) ViewOf(ctx context.Context) *View {
	st := s.AuthOf(ctx)
	v := &View{c: s, allowed: st.Filter(ctx)}
	if s.bridge.HasPerUser() {
		v.tools = ToolsPrincipal(ctx)
	}
	if v.allowed != nil {
		p, ok := PrincipalFrom(ctx)
		if !ok {
			v.class = strconv.FormatUint(st.Gen(), 10) + "/none"
		} else {
			v.class = strconv.FormatUint(st.Gen(), 10) + "/" + st.Authorizer().class(p)
		}
	}
	return v
}

// ViewFor is the view of the principal named p under the current auth
// state (a principal of a connected session, which has no request of its
// own when the catalog changes).
func (s *Core) ViewFor(p string) *View {
	st := s.CurrentAuth()
	a := st.Authorizer()
	v := &View{c: s}
	if s.bridge.HasPerUser() {
		v.tools = p
	}
	if a.HasRules() {
		who := Principal{Name: p}
		v.allowed = func(name string) bool { return a.AllowTool(who, name) }
		v.class = strconv.FormatUint(st.Gen(), 10) + "/" + a.class(who)
	}
	return v
}

// All reports whether the view allows every name (no rules apply).
func (v *View) All() bool { return v.allowed == nil }

// Key identifies the view: views with equal keys hold the same entries of
// the same catalogs. It is "" when the view is the shared catalogs whole.
func (v *View) Key() string {
	if v.tools == "" {
		return v.class
	}
	return v.class + "|" + strconv.Quote(v.tools)
}

// Tool reports whether the view holds the tool with that exposed name.
func (v *View) Tool(name string) bool { return v.allowed == nil || v.allowed(name) }

// Prompt reports whether the view holds the prompt with that exposed name.
func (v *View) Prompt(name string) bool { return v.allowed == nil || v.allowed(name) }

// ResourcesOf reports whether the view holds server's resources and
// templates (authorized as <prefix>__@resources).
func (v *View) ResourcesOf(server string) bool {
	return v.allowed == nil || v.allowed(v.c.ResourcesAuthName(server))
}

// ToolSource is the tool catalog the view follows: the shared one or the
// principal's (with its per-principal listings).
func (v *View) ToolSource() ToolView { return v.c.bridge.Tools(v.tools) }

// Tools is the view's part of snap (a snapshot of its ToolSource) that
// keep also selects (nil: all), and its content revision. Without keep the
// answer is shared by every view of the same key (View.Key) for the
// current snapshots.
func (v *View) Tools(snap *Snapshot, keep func(*Tool) bool) ([]*Tool, string) {
	if v.allowed == nil && keep == nil {
		return snap.Tools, snap.Revision
	}
	build := func() viewPart {
		tools := make([]*Tool, 0, len(snap.Tools))
		for _, t := range snap.Tools {
			if v.Tool(t.Name) && (keep == nil || keep(t)) {
				tools = append(tools, t)
			}
		}
		return viewPart{tools: tools[:len(tools):len(tools)]}
	}
	if keep != nil {
		p := build()
		return p.tools, Revision(p.tools)
	}
	key := v.Key()
	p := v.c.views.get(snap, v.c.bridge.Catalog().Current(), key, func() viewPart {
		p := build()
		p.rev = v.c.views.revision(key, p.tools)
		return p
	})
	return p.tools, p.rev
}

// ResourceLists is the view's part of rsnap: the resources and templates
// of the servers it holds (when resources), the prompts it holds (when
// prompts), each narrowed to the servers only selects (nil: every
// server), and the content revision of the three lists.
func (v *View) ResourceLists(rsnap *ResourceSnapshot, only func(server string) bool, resources, prompts bool) (
	res []*Resource, tmpls []*ResourceTemplate, ps []*Prompt, rev string) {
	if v.allowed == nil && only == nil && resources && prompts {
		return rsnap.Resources, rsnap.Templates, rsnap.Prompts, rsnap.Revision
	}
	if resources {
		see := v.servers(only)
		res = keepIf(rsnap.Resources, func(r *Resource) bool { return see(r.Server) })
		tmpls = keepIf(rsnap.Templates, func(t *ResourceTemplate) bool { return see(t.Server) })
	}
	if prompts {
		ps = keepIf(rsnap.Prompts, func(p *Prompt) bool { return (only == nil || only(p.Server)) && v.Prompt(p.Name) })
	}
	return res, tmpls, ps, ResourceRevision(res, tmpls, ps)
}

// servers is ResourcesOf narrowed by only, remembered per server for one
// use (the authorization of a name is a glob match per rule).
func (v *View) servers(only func(string) bool) func(server string) bool {
	memo := map[string]bool{}
	return func(server string) bool {
		ok, known := memo[server]
		if !known {
			ok = (only == nil || only(server)) && v.ResourcesOf(server)
			memo[server] = ok
		}
		return ok
	}
}

// ToolRevision, ResourcesRevision and PromptsRevision are the content
// revisions of the view's current tool list, of its resources with
// templates, and of its prompts: what the front door compares to tell
// whether a principal's list changed. The tool part is shared by the views
// of one key.
func (v *View) ToolRevision() string {
	_, rev := v.Tools(v.ToolSource().Current(), nil)
	return rev
}

// ResourcesRevision: see ToolRevision.
func (v *View) ResourcesRevision() string {
	_, _, _, rev := v.ResourceLists(v.c.bridge.Resources().Current(), nil, true, false)
	return rev
}

// PromptsRevision: see ToolRevision.
func (v *View) PromptsRevision() string {
	_, _, _, rev := v.ResourceLists(v.c.bridge.Resources().Current(), nil, false, true)
	return rev
}

func keepIf[T any](all []T, keep func(T) bool) []T {
	var out []T
	for _, x := range all {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// class names the rules that apply to p: principals with equal classes
// are allowed the same names (AllowTool reads p.Name only through the
// rules' principal globs).
func (a *Authorizer) class(p Principal) string {
	var b strings.Builder
	b.WriteString("r")
	for i, r := range a.rules {
		if ok, _ := path.Match(r.Principal, p.Name); ok {
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(i))
		}
	}
	return b.String()
}

// viewPart is one view's part of a tool snapshot.
type viewPart struct {
	tools []*Tool
	rev   string
}

// maxViewMemo bounds the views remembered for the current snapshots:
// one per view key and snapshot (principals' own snapshots while per-user
// upstreams run). Past it the memo starts over: a recomputation, never a
// wrong answer.
const maxViewMemo = 4096

// maxRevisionMemos bounds the views whose revision is kept across
// snapshots (viewMemo.revision): each holds at most one list of its view's
// entries (8 bytes per tool) besides the current one. Rule sets are few;
// per-principal views past the bound start it over, and a view without a
// memo digests its list whole (catalog.Revision): slower, never wrong.
const maxRevisionMemos = 64

// viewMemo remembers the views of the newest snapshots, so that the
// watch groups, the listings and the front door's list_changed of one
// change filter and hash each view once. An entry of an older snapshot
// is dropped when a newer shared snapshot arrives (the memo keeps no
// history alive). revs keeps, per view key, the per-server digests of the
// view's last list across snapshots (catalog.RevisionMemo), so that a
// view's revision after a change digests only the servers that changed.
type viewMemo struct {
	mu     sync.Mutex
	shared *Snapshot // the shared snapshot the entries were made under
	m      map[viewMemoKey]viewPart
	revs   map[string]*catalog.RevisionMemo
}

// revision is the content revision of tools, view key's list of the
// current snapshots, costing the servers whose entries changed since the
// key's last list.
func (m *viewMemo) revision(key string, tools []*Tool) string {
	m.mu.Lock()
	rm := m.revs[key]
	if rm == nil {
		if m.revs == nil || len(m.revs) >= maxRevisionMemos {
			m.revs = map[string]*catalog.RevisionMemo{}
		}
		rm = &catalog.RevisionMemo{}
		m.revs[key] = rm
	}
	m.mu.Unlock()
	return rm.Revision(tools) // outside the lock: each memo has its own
}

type viewMemoKey struct {
	snap *Snapshot
	key  string
}

func (m *viewMemo) get(snap, current *Snapshot, key string, build func() viewPart) viewPart {
	k := viewMemoKey{snap, key}
	m.mu.Lock()
	if p, ok := m.m[k]; ok {
		m.mu.Unlock()
		return p
	}
	m.mu.Unlock()
	p := build() // outside the lock: views of different keys build at once
	if snapshotBase(snap) != current {
		return p // an older snapshot's view (a resume, a page of an old revision): not remembered
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shared != current || m.m == nil || len(m.m) >= maxViewMemo {
		m.shared, m.m = current, map[viewMemoKey]viewPart{}
	}
	m.m[k] = p
	return p
}

// snapshotBase is the shared snapshot under snap (snap itself, or the one a
// principal's snapshot was merged over).
func snapshotBase(snap *Snapshot) *Snapshot {
	if b := snap.Base(); b != nil {
		return b
	}
	return snap
}
