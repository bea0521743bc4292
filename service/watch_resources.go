package service

import (
	"context"
	"time"

	"google.golang.org/grpc"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service/core"
)

// A WatchCatalog that asks for resources and/or prompts
// (include_resources, include_prompts) follows two catalogs: the tool
// catalog, through the same filtered views as a tools-only watch (watch.go),
// and the resource catalog (mcpbridge/resources.go), through a view of its
// own. The revision such a watch reports is the tool view's revision
// followed by the resource view's (64 hex digits): content-derived, so equal
// on every replica with the same upstreams, and self-describing, so any
// replica that remembers both halves can resume it. The contract is the
// tools-only one: a snapshot (or "synced", or the changes since
// resume_token), then every change, each carrying the revision it brings
// the client to; an unusable token earns a snapshot with reset = true. Large
// events are split or refused as for tools-only watches (watch_fragment.go).
//
// A watch that asks for neither never reaches this file: it is exactly
// today's tools-only watch.

// resourceView is the resource catalog as one watch sees it.
type resourceView struct {
	snap      *mcpbridge.ResourceSnapshot
	resources []*mcpbridge.Resource
	templates []*mcpbridge.ResourceTemplate
	prompts   []*mcpbridge.Prompt
	rev       string
}

// resourceWatchFilter adds the resource kinds to a watchFilter.
type resourceWatchFilter struct {
	*watchFilter
	resources, prompts bool
	visible            func(server string) bool // the servers whose resources the caller may see
}

func (s *Server) newResourceWatchFilter(ctx context.Context, f *watchFilter, req *toolsvcv1.WatchCatalogRequest) *resourceWatchFilter {
	var only func(string) bool
	if f.servers != nil {
		only = func(n string) bool { return f.servers[n] }
	}
	return &resourceWatchFilter{watchFilter: f, resources: req.GetIncludeResources(), prompts: req.GetIncludePrompts(),
		visible: s.core.ResourceVisible(ctx, only)}
}

func (f *resourceWatchFilter) view(snap *mcpbridge.ResourceSnapshot) *resourceView {
	v := &resourceView{snap: snap}
	if f.resources {
		for _, r := range snap.Resources {
			if f.visible(r.Server) {
				v.resources = append(v.resources, r)
			}
		}
		for _, t := range snap.Templates {
			if f.visible(t.Server) {
				v.templates = append(v.templates, t)
			}
		}
	}
	if f.prompts {
		for _, p := range snap.Prompts {
			if (f.servers == nil || f.servers[p.Server]) && (f.allowed == nil || f.allowed(p.Name)) {
				v.prompts = append(v.prompts, p)
			}
		}
	}
	v.rev = mcpbridge.ResourceRevision(v.resources, v.templates, v.prompts)
	return v
}

// findToolView returns the newest remembered tool view with revision rev,
// or nil (this watch shares no group with tools-only watches, so it looks
// the history up itself).
func (s *Server) findToolView(rev string, f *watchFilter) *view {
	cat := s.bridge.Catalog()
	if f.key == "" {
		if snap, ok := cat.Snapshot(rev); ok {
			return buildView(snap, f)
		}
		return nil
	}
	hist := cat.History()
	for i := len(hist) - 1; i >= 0; i-- {
		if v := buildView(hist[i], f); v.rev == rev {
			return v
		}
	}
	return nil
}

// findResourceView returns the newest remembered resource view with
// revision rev, or nil.
func (s *Server) findResourceView(rev string, f *resourceWatchFilter) *resourceView {
	hist := s.bridge.Resources().History()
	for i := len(hist) - 1; i >= 0; i-- {
		if v := f.view(hist[i]); v.rev == rev {
			return v
		}
	}
	return nil
}

// diffKeyed compares two sorted-by-key lists by entry hash.
func diffKeyed[T any](a, b []T, key func(T) string, hash func(T) [32]byte) (upserted []T, removed []T) {
	old := make(map[string]T, len(a))
	for _, x := range a {
		old[key(x)] = x
	}
	seen := make(map[string]bool, len(b))
	for _, x := range b {
		k := key(x)
		seen[k] = true
		if o, ok := old[k]; !ok || hash(o) != hash(x) {
			upserted = append(upserted, x)
		}
	}
	for _, x := range a {
		if !seen[key(x)] {
			removed = append(removed, x)
		}
	}
	return upserted, removed
}

func resourceKey(r *mcpbridge.Resource) string { return r.Server + "\x00" + r.R.URI }
func templateKey(t *mcpbridge.ResourceTemplate) string {
	return t.Server + "\x00" + t.T.URITemplate
}
func promptKey(p *mcpbridge.Prompt) string { return p.Name }

// addResourceChanges adds the resource view delta to a changes event.
func addResourceChanges(ch *toolsvcv1.CatalogChanges, from, to *resourceView) {
	up, rm := diffKeyed(from.resources, to.resources, resourceKey, (*mcpbridge.Resource).Hash)
	for _, r := range up {
		ch.UpsertedResources = append(ch.UpsertedResources, resourceToProto(r))
	}
	for _, r := range rm {
		ch.RemovedResources = append(ch.RemovedResources, &toolsvcv1.ResourceKey{Server: r.Server, Uri: r.R.URI})
	}
	tup, trm := diffKeyed(from.templates, to.templates, templateKey, (*mcpbridge.ResourceTemplate).Hash)
	for _, t := range tup {
		ch.UpsertedResourceTemplates = append(ch.UpsertedResourceTemplates, templateToProto(t))
	}
	for _, t := range trm {
		ch.RemovedResourceTemplates = append(ch.RemovedResourceTemplates, &toolsvcv1.ResourceKey{Server: t.Server, Uri: t.T.URITemplate})
	}
	pup, prm := diffKeyed(from.prompts, to.prompts, promptKey, (*mcpbridge.Prompt).Hash)
	for _, p := range pup {
		ch.UpsertedPrompts = append(ch.UpsertedPrompts, promptToProto(p))
	}
	for _, p := range prm {
		ch.RemovedPrompts = append(ch.RemovedPrompts, p.Name)
	}
}

func (s *Server) combinedSnapshot(tv *view, rv *resourceView, f *watchFilter, reset bool) *toolsvcv1.WatchCatalogResponse {
	snap := &toolsvcv1.CatalogSnapshot{Reset_: reset}
	for _, t := range tv.tools {
		snap.Tools = append(snap.Tools, s.cache.one(t, f.format).msg)
	}
	for _, r := range rv.resources {
		snap.Resources = append(snap.Resources, resourceToProto(r))
	}
	for _, t := range rv.templates {
		snap.ResourceTemplates = append(snap.ResourceTemplates, templateToProto(t))
	}
	for _, p := range rv.prompts {
		snap.Prompts = append(snap.Prompts, promptToProto(p))
	}
	return &toolsvcv1.WatchCatalogResponse{Revision: tv.rev + rv.rev, Event: &toolsvcv1.WatchCatalogResponse_Snapshot{Snapshot: snap}}
}

func (s *Server) combinedChanges(fromT, toT *view, fromR, toR *resourceView, f *watchFilter) *toolsvcv1.WatchCatalogResponse {
	up, rm := mcpbridge.DiffTools(fromT.tools, toT.tools)
	ch := &toolsvcv1.CatalogChanges{Removed: rm}
	for _, t := range up {
		ch.Upserted = append(ch.Upserted, s.cache.one(t, f.format).msg)
	}
	addResourceChanges(ch, fromR, toR)
	return &toolsvcv1.WatchCatalogResponse{Revision: toT.rev + toR.rev, Event: &toolsvcv1.WatchCatalogResponse_Changes{Changes: ch}}
}

// watchWithResources is WatchCatalog for a client that included resources
// or prompts (f is the request's checked tool filter).
func (s *Server) watchWithResources(authCtx context.Context, req *toolsvcv1.WatchCatalogRequest, f *watchFilter, stream grpc.ServerStreamingServer[toolsvcv1.WatchCatalogResponse]) error {
	rf := s.newResourceWatchFilter(authCtx, f, req)
	s.watch.streams.Add(1)
	defer s.watch.streams.Add(-1)

	ctx := stream.Context()
	cat, rcat := s.bridge.Catalog(), s.bridge.Resources()
	sub := cat.Subscribe()
	defer sub.Close()
	rsub := rcat.Subscribe()
	defer rsub.Close()

	w := newWatchSender(s, stream)
	defer w.close()
	// Membership in the hub only so that Shutdown ends this stream too,
	// even while a client holds up its Send; the group's shared state is
	// not used here.
	g, ok := s.hub.join(f, w)
	if !ok {
		return errShuttingDown
	}
	defer func() { s.hub.leave(g, w) }() // the group changes with the auth state
	authSt := s.authOf(authCtx)
	lastT, lastR := s.view(cat.Current(), f), rf.view(rcat.Current())
	first := s.firstCombined(req.GetResumeToken(), lastT, lastR, f, rf)
	if err := w.sendEvent(s.encodeEvent(first, f.fragment)); err != nil {
		return err
	}
	progress := time.NewTicker(s.opts.ProgressInterval)
	defer progress.Stop()
	for {
		select {
		case <-ctx.Done():
			return w.ended(nil)
		case <-s.shutdown:
			return errShuttingDown
		case <-progress.C:
			if err := w.sendEvent(s.encodeEvent(&toolsvcv1.WatchCatalogResponse{Revision: lastT.rev + lastR.rev,
				Event: &toolsvcv1.WatchCatalogResponse_Progress{Progress: &toolsvcv1.CatalogProgress{}}}, f.fragment)); err != nil {
				return err
			}
			continue
		case <-authSt.Changed():
			// A reload replaced the auth state: the caller again, under the
			// new one, and the views its rules now give (authstate.go).
			var err error
			if authCtx, g, f, err = s.followAuth(ctx, req, g, f, w); err != nil {
				return err
			}
			authSt, rf = s.authOf(authCtx), s.newResourceWatchFilter(authCtx, f, req)
		case <-sub.C():
		case <-rsub.C():
		}
		curT, curR := s.view(cat.Current(), f), rf.view(rcat.Current())
		if curT.rev == lastT.rev && curR.rev == lastR.rev {
			continue // nothing this view shows has changed
		}
		if err := w.sendEvent(s.encodeEvent(s.combinedChanges(lastT, curT, lastR, curR, f), f.fragment)); err != nil {
			return err
		}
		lastT, lastR = curT, curR
		progress.Reset(s.opts.ProgressInterval)
	}
}

// firstCombined is the first event of a watch with resources that resumes
// from tok ("" for none) at the views lastT and lastR.
func (s *Server) firstCombined(tok string, lastT *view, lastR *resourceView, f *watchFilter, rf *resourceWatchFilter) *toolsvcv1.WatchCatalogResponse {
	var first *toolsvcv1.WatchCatalogResponse
	switch {
	case tok == "":
		first = s.combinedSnapshot(lastT, lastR, f, false)
	case tok == lastT.rev+lastR.rev:
		first = &toolsvcv1.WatchCatalogResponse{Revision: tok, Event: &toolsvcv1.WatchCatalogResponse_Synced{Synced: &toolsvcv1.CatalogSynced{}}}
	case len(tok) == 64 && core.ValidRevision(tok[:32]) && core.ValidRevision(tok[32:]):
		if ot, or := s.findToolView(tok[:32], f), s.findResourceView(tok[32:], rf); ot != nil && or != nil {
			first = s.combinedChanges(ot, lastT, or, lastR, f)
		}
	default:
		s.watch.malformed.Add(1)
	}
	if first == nil {
		s.watch.resets.Add(1)
		first = s.combinedSnapshot(lastT, lastR, f, true)
	}
	return first
}
