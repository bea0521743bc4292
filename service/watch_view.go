package service

import (
	"context"
	"fmt"
	"slices"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
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
	allowed            func(name string) bool // the caller's authorization; nil: all
	key                string                 // canonical form of the view; "" is the whole catalog
	format             schemaFormat           // how events carry schemas (not part of the view)
	fragment           bool                   // the client accepts events split across messages
	kinds              watchKinds             // the resource catalog's kinds the watch follows
	// tools is the principal whose view of the tool catalog the watch
	// follows (mcpbridge.Bridge.Tools; "": the shared catalog): the
	// caller's while per-user upstreams run (docs/credentials.md).
	tools string
}

// watchKinds are the kinds of the resource catalog a watch follows.
type watchKinds struct{ resources, prompts bool }

func (k watchKinds) any() bool { return k.resources || k.prompts }

func (s *Server) newWatchFilter(ctx context.Context, req *toolsvcv1.WatchCatalogRequest) (*watchFilter, error) {
	f := &watchFilter{excludeUnavailable: req.GetExcludeUnavailable(), allowed: s.authOf(ctx).Filter(ctx), fragment: req.GetFragment(),
		kinds: watchKinds{resources: req.GetIncludeResources(), prompts: req.GetIncludePrompts()}}
	format, err := parseSchemaFormat(req.GetSchemaFormat(), "schema_format")
	if err != nil {
		return nil, err
	}
	f.format = format
	if s.bridge.HasPerUser() {
		f.tools = core.ToolsPrincipal(ctx)
	}
	var names []string
	for i, name := range req.GetServers() {
		field := fmt.Sprintf("servers[%d]", i)
		if err := mcpbridge.ValidateServerName(name); err != nil {
			return nil, invalidArgument(field, err.Error())
		}
		if _, err := s.bridge.Server(name); err != nil {
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
	principal := ""
	if f.allowed != nil {
		// Views are shared by key: callers with different rules must not
		// share one. The rules are fixed per principal and auth state
		// (a group's remembered views were built under one state).
		p, _ := core.PrincipalFrom(ctx)
		principal = fmt.Sprintf("%d/%s:%s", s.authOf(ctx).Gen(), p.Method, p.Name)
	}
	if f.servers != nil || f.excludeUnavailable || f.allowed != nil {
		slices.Sort(names)
		f.key = fmt.Sprintf("%q|%v|%q", names, f.excludeUnavailable, principal) // quoted: names may hold any character
	}
	return f, nil
}

func (f *watchFilter) keep(t *mcpbridge.Tool) bool {
	return (f.servers == nil || f.servers[t.Server]) && (t.Available || !f.excludeUnavailable) &&
		(f.allowed == nil || f.allowed(t.Name))
}

// A view is the catalogs as one filter sees them: the tool part (the
// filtered tools of snap; toolRev is their content revision,
// mcpbridge.Revision, so the unfiltered view's is the snapshot's) and, for
// a watch that follows resources or prompts, the resource part.
type view struct {
	snap    *mcpbridge.Snapshot
	tools   []*mcpbridge.Tool
	toolRev string
	res     *resourceView // nil: the watch follows tools only
	rev     string        // toolRev, followed by res.rev when res is set
}

// resourceView is the resource catalog as one filter sees it: the kinds it
// follows, of the servers it selects, that the caller may see (a server's
// resources by <prefix>__@resources, prompts by name: docs/resources.md). exclude_unavailable applies to tools only.
type resourceView struct {
	snap      *mcpbridge.ResourceSnapshot
	resources []*mcpbridge.Resource
	templates []*mcpbridge.ResourceTemplate
	prompts   []*mcpbridge.Prompt
	rev       string // mcpbridge.ResourceRevision of the three lists
}

// buildToolView returns the tool part of snap as f sees it.
func buildToolView(snap *mcpbridge.Snapshot, f *watchFilter) *view {
	if f.key == "" {
		return &view{snap: snap, tools: snap.Tools, toolRev: snap.Revision, rev: snap.Revision}
	}
	tools := make([]*mcpbridge.Tool, 0, len(snap.Tools))
	for _, t := range snap.Tools {
		if f.keep(t) {
			tools = append(tools, t)
		}
	}
	rev := mcpbridge.Revision(tools)
	return &view{snap: snap, tools: slices.Clip(tools), toolRev: rev, rev: rev}
}

// buildResourceView returns the resource part of rsnap as f sees it.
func (s *Server) buildResourceView(rsnap *mcpbridge.ResourceSnapshot, f *watchFilter) *resourceView {
	if f.key == "" && f.kinds.resources && f.kinds.prompts {
		return &resourceView{snap: rsnap, resources: rsnap.Resources, templates: rsnap.Templates, prompts: rsnap.Prompts, rev: rsnap.Revision}
	}
	v := &resourceView{snap: rsnap}
	if f.kinds.resources {
		visible := map[string]bool{} // per server; this build's own, so groups may build concurrently
		see := func(server string) bool {
			ok, known := visible[server]
			if !known {
				ok = (f.servers == nil || f.servers[server]) && (f.allowed == nil || f.allowed(s.core.ResourcesAuthName(server)))
				visible[server] = ok
			}
			return ok
		}
		v.resources = keepIf(rsnap.Resources, func(r *mcpbridge.Resource) bool { return see(r.Server) })
		v.templates = keepIf(rsnap.Templates, func(t *mcpbridge.ResourceTemplate) bool { return see(t.Server) })
	}
	if f.kinds.prompts {
		v.prompts = keepIf(rsnap.Prompts, func(p *mcpbridge.Prompt) bool {
			return (f.servers == nil || f.servers[p.Server]) && (f.allowed == nil || f.allowed(p.Name))
		})
	}
	v.rev = mcpbridge.ResourceRevision(v.resources, v.templates, v.prompts)
	return v
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

// withResources returns the view of a watch that follows resources or
// prompts: tool part tv, resource part rv.
func withResources(tv *view, rv *resourceView) *view {
	return &view{snap: tv.snap, tools: tv.tools, toolRev: tv.toolRev, res: rv, rev: tv.toolRev + rv.rev}
}

// view returns snap as f sees it, with the resource catalog's current
// snapshot when f follows resources or prompts (tests).
func (s *Server) view(snap *mcpbridge.Snapshot, f *watchFilter) *view {
	tv := buildToolView(snap, f)
	if !f.kinds.any() {
		return tv
	}
	return withResources(tv, s.buildResourceView(s.bridge.Resources().Current(), f))
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
