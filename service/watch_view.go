package service

import (
	"context"
	"fmt"
	"slices"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

// Views: what one WatchCatalog request sees of the catalogs
// (docs/watching.md and docs/resources.md). A view has a tool
// part, always, and a resource part when the request set include_resources
// or include_prompts (docs/resources.md, "The watch"); its revision, the
// watch's resume token, is the tool part's revision (32 hex digits),
// followed by the resource part's when there is one (64 in all). Both are
// content-derived, so equal views have equal revisions on every replica.

// watchFilter is the view of the catalogs a watch asked for.
type watchFilter struct {
	servers            map[string]bool // nil: every server
	excludeUnavailable bool
	view               *core.View   // who may see what: the caller's view of the catalogs
	key                string       // canonical form of the filter; "" is the whole catalog
	format             schemaFormat // how events carry schemas (not part of the view)
	fragment           bool         // the client accepts events split across messages
	kinds              watchKinds   // the resource catalog's kinds the watch follows
	// tools is the principal whose view of the tool catalog the watch
	// follows (core.Core.ToolsOf; "": the shared catalog): the
	// caller's while per-user upstreams run (docs/credentials.md).
	tools string
}

// watchKinds are the kinds of the resource catalog a watch follows.
type watchKinds struct{ resources, prompts bool }

func (k watchKinds) any() bool { return k.resources || k.prompts }

func (s *Server) newWatchFilter(ctx context.Context, req *toolsvcv1.WatchCatalogRequest) (*watchFilter, error) {
	f := &watchFilter{excludeUnavailable: req.GetExcludeUnavailable(), view: s.core.ViewOf(ctx), fragment: req.GetFragment(),
		kinds: watchKinds{resources: req.GetIncludeResources(), prompts: req.GetIncludePrompts()}}
	format, err := parseSchemaFormat(req.GetSchemaFormat(), "schema_format")
	if err != nil {
		return nil, err
	}
	f.format = format
	if s.core.HasPerUser() {
		f.tools = core.ToolsPrincipal(ctx)
	}
	var names []string
	for i, name := range req.GetServers() {
		field := fmt.Sprintf("servers[%d]", i)
		if err := core.ValidateServerName(name); err != nil {
			return nil, invalidArgument(field, err.Error())
		}
		if _, err := s.core.Server(name); err != nil {
			return nil, plainError(core.NotFound, ReasonServerNotFound, fmt.Sprintf("%s: no configured server is named %q", field, name), map[string]string{"server": name})
		}
		if f.servers == nil {
			f.servers = map[string]bool{}
		}
		if !f.servers[name] {
			f.servers[name] = true
			names = append(names, name)
		}
	}
	if f.servers != nil || f.excludeUnavailable || !f.view.All() {
		// Views are shared by key: callers who may see different entries
		// must not share one (the view's key names the auth state and the
		// rules that apply to the caller).
		slices.Sort(names)
		f.key = fmt.Sprintf("%q|%v|%q", names, f.excludeUnavailable, f.view.Key()) // quoted: names may hold any character
	}
	return f, nil
}

// narrows reports whether the watch asked for less than its view (some
// servers, available tools only); narrow is that selection.
func (f *watchFilter) narrows() bool { return f.servers != nil || f.excludeUnavailable }

func (f *watchFilter) narrow(t *core.Tool) bool {
	return (f.servers == nil || f.servers[t.Server]) && (t.Available || !f.excludeUnavailable)
}

// A view is the catalogs as one filter sees them: the tool part (the
// filtered tools of snap; toolRev is their content revision,
// core.Revision, so the unfiltered view's is the snapshot's) and, for
// a watch that follows resources or prompts, the resource part.
type view struct {
	snap    *core.Snapshot
	tools   []*core.Tool
	toolRev string
	res     *resourceView // nil: the watch follows tools only
	rev     string        // toolRev, followed by res.rev when res is set
}

// resourceView is the resource catalog as one filter sees it: the kinds it
// follows, of the servers it selects, that the caller may see (a server's
// resources by <prefix>__@resources, prompts by name: docs/resources.md). exclude_unavailable applies to tools only.
type resourceView struct {
	snap      *core.ResourceSnapshot
	resources []*core.Resource
	templates []*core.ResourceTemplate
	prompts   []*core.Prompt
	rev       string // core.ResourceRevision of the three lists
}

// buildToolView returns the tool part of snap as f sees it: the caller's
// view (core.View, shared by the watches and listings of one view) narrowed
// to what the watch asked for.
func buildToolView(snap *core.Snapshot, f *watchFilter) *view {
	if f.key == "" {
		return &view{snap: snap, tools: snap.Tools, toolRev: snap.Revision, rev: snap.Revision}
	}
	var narrow func(*core.Tool) bool
	if f.narrows() {
		narrow = f.narrow
	}
	tools, rev := f.view.Tools(snap, narrow)
	return &view{snap: snap, tools: tools, toolRev: rev, rev: rev}
}

// buildResourceView returns the resource part of rsnap as f sees it
// (exclude_unavailable applies to tools only).
func (s *Server) buildResourceView(rsnap *core.ResourceSnapshot, f *watchFilter) *resourceView {
	var only func(string) bool
	if f.servers != nil {
		only = func(server string) bool { return f.servers[server] }
	}
	v := &resourceView{snap: rsnap}
	v.resources, v.templates, v.prompts, v.rev = f.view.ResourceLists(rsnap, only, f.kinds.resources, f.kinds.prompts)
	return v
}

// withResources returns the view of a watch that follows resources or
// prompts: tool part tv, resource part rv.
func withResources(tv *view, rv *resourceView) *view {
	return &view{snap: tv.snap, tools: tv.tools, toolRev: tv.toolRev, res: rv, rev: tv.toolRev + rv.rev}
}

// view returns snap as f sees it, with the resource catalog's current
// snapshot when f follows resources or prompts (tests).
func (s *Server) view(snap *core.Snapshot, f *watchFilter) *view {
	tv := buildToolView(snap, f)
	if !f.kinds.any() {
		return tv
	}
	return withResources(tv, s.buildResourceView(s.core.Resources().Current(), f))
}

// splitToken returns the tool and resource parts of a resume token of a
// watch that follows kinds, and whether it is shaped like one of its
// revisions (32 hex digits, or 64 with resources or prompts).
func splitToken(tok string, kinds watchKinds) (toolRev, resRev string, ok bool) {
	if !kinds.any() {
		return tok, "", core.ValidRevision(tok)
	}
	if len(tok) != 64 || !core.ValidRevision(tok[:32]) || !core.ValidRevision(tok[32:]) {
		return "", "", false
	}
	return tok[:32], tok[32:], true
}
