package service

import (
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

// The events of a watch (proto/toolsvc/v1/toolsvc.proto,
// WatchCatalogResponse), built and encoded once per group and view
// revision (watch_group.go), tools, resources and prompts alike.

// viewEvents are the events of one view revision of a group, each encoded
// at most once.
type viewEvents struct {
	g    *watchGroup
	view *view
	prev *view // the group's view before this one; nil for the first

	changes, snapshot, reset, synced, progress encodedEvent
}

// encodedEvent is one event, encoded once on first use.
type encodedEvent struct {
	once sync.Once
	msgs eventMessages
}

func (e *encodedEvent) get(s *Server, fragment bool, build func() *toolsvcv1.WatchCatalogResponse) eventMessages {
	e.once.Do(func() { e.msgs = s.encodeEvent(build(), fragment) })
	return e.msgs
}

// changesFrom is the event that moves a member holding from to ev's view:
// the shared one when from is the previous view (the common case), else
// one built once per (from, to) for the group.
func (ev *viewEvents) changesFrom(s *Server, from *view) eventMessages {
	build := func() *toolsvcv1.WatchCatalogResponse { return ev.buildChanges(s, from) }
	if ev.prev != nil && ev.prev.rev == from.rev {
		return ev.changes.get(s, ev.g.key.fragment, build)
	}
	g := ev.g
	k := [2]string{from.rev, ev.view.rev}
	g.mu.Lock()
	e := g.deltas[k]
	if e == nil {
		if g.deltas == nil || len(g.deltas) >= groupDeltasMax {
			g.deltas = map[[2]string]*encodedEvent{}
		}
		e = &encodedEvent{}
		g.deltas[k] = e
	}
	g.mu.Unlock()
	return e.get(s, g.key.fragment, build)
}

func (ev *viewEvents) buildChanges(s *Server, from *view) *toolsvcv1.WatchCatalogResponse {
	var up []*core.Tool
	var rm []string
	if from.snap != nil && ev.view.snap != nil && from.toolRev == from.snap.Revision && ev.view.toolRev == ev.view.snap.Revision {
		// Views that are their whole snapshots (equal revisions, equal
		// lists): the catalog knows what a snapshot changed from its
		// predecessor, so the diff costs what changed.
		up, rm = core.Diff(from.snap, ev.view.snap)
	} else {
		up, rm = core.DiffTools(from.tools, ev.view.tools)
	}
	ch := &toolsvcv1.CatalogChanges{Removed: rm, Upserted: make([]*toolsvcv1.Tool, len(up))}
	for i, t := range up {
		ch.Upserted[i] = s.cache.one(t, ev.g.key.format).msg
	}
	if from.res != nil && ev.view.res != nil {
		addResourceChanges(ch, from.res, ev.view.res)
	}
	return &toolsvcv1.WatchCatalogResponse{Revision: ev.view.rev, Event: &toolsvcv1.WatchCatalogResponse_Changes{Changes: ch}}
}

// snapshotEvent is the whole view (reset: the resume token could not be
// served).
func (ev *viewEvents) snapshotEvent(s *Server, reset bool) eventMessages {
	e := &ev.snapshot
	if reset {
		e = &ev.reset
	}
	return e.get(s, ev.g.key.fragment, func() *toolsvcv1.WatchCatalogResponse {
		f, v := ev.g.key.format, ev.view
		snap := &toolsvcv1.CatalogSnapshot{Tools: make([]*toolsvcv1.Tool, len(v.tools)), Reset_: reset}
		if ev.g.filter.key == "" {
			for i, w := range s.cache.tools(v.snap, v.snap == s.core.Catalog().Current(), f) {
				snap.Tools[i] = w.msg
			}
		} else {
			for i, t := range v.tools {
				snap.Tools[i] = s.cache.one(t, f).msg
			}
		}
		if v.res != nil {
			snap.Resources = convertAll(v.res.resources, resourceToProto)
			snap.ResourceTemplates = convertAll(v.res.templates, templateToProto)
			snap.Prompts = convertAll(v.res.prompts, promptToProto)
		}
		return &toolsvcv1.WatchCatalogResponse{Revision: v.rev, Event: &toolsvcv1.WatchCatalogResponse_Snapshot{Snapshot: snap}}
	})
}

func convertAll[T, P any](in []T, conv func(T) P) []P {
	if len(in) == 0 {
		return nil
	}
	out := make([]P, len(in))
	for i, x := range in {
		out[i] = conv(x)
	}
	return out
}

func (ev *viewEvents) syncedEvent(s *Server) eventMessages {
	return ev.synced.get(s, false, func() *toolsvcv1.WatchCatalogResponse {
		return &toolsvcv1.WatchCatalogResponse{Revision: ev.view.rev, Event: &toolsvcv1.WatchCatalogResponse_Synced{Synced: &toolsvcv1.CatalogSynced{}}}
	})
}

func (ev *viewEvents) progressEvent(s *Server) eventMessages {
	return ev.progress.get(s, false, func() *toolsvcv1.WatchCatalogResponse {
		return &toolsvcv1.WatchCatalogResponse{Revision: ev.view.rev, Event: &toolsvcv1.WatchCatalogResponse_Progress{Progress: &toolsvcv1.CatalogProgress{}}}
	})
}

// resumeEvent is the first event of a watch: what the resume token earns
// (proto: WatchCatalogRequest.resume_token).
func (s *Server) resumeEvent(tok string, ev *viewEvents) eventMessages {
	switch _, _, shaped := splitToken(tok, ev.g.key.kinds); {
	case tok == "":
		return ev.snapshotEvent(s, false)
	case tok == ev.view.rev:
		return ev.syncedEvent(s)
	case !shaped:
		s.watch.malformed.Add(1)
		s.log.Info("watch: malformed resume token; sending a reset snapshot", "token_len", len(tok))
	default:
		if old := ev.g.findView(s, tok); old != nil {
			return ev.changesFrom(s, old)
		}
	}
	s.watch.resets.Add(1)
	return ev.snapshotEvent(s, true)
}

// preEncode returns a message whose wire form is exactly m's (its bytes
// ride as unknown fields of an Empty), so gRPC neither sizes nor marshals
// the event again for each of thousands of streams: clients decode a
// WatchCatalogResponse.
func preEncode(m *toolsvcv1.WatchCatalogResponse) proto.Message {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return m // gRPC will report the error on Send
	}
	e := &emptypb.Empty{}
	e.ProtoReflect().SetUnknown(b)
	return e
}

// addResourceChanges adds the delta between two resource parts to a
// changes event.
func addResourceChanges(ch *toolsvcv1.CatalogChanges, from, to *resourceView) {
	up, rm := diffKeyed(from.resources, to.resources, resourceKey, (*core.Resource).Hash)
	ch.UpsertedResources = convertAll(up, resourceToProto)
	ch.RemovedResources = convertAll(rm, func(r *core.Resource) *toolsvcv1.ResourceKey {
		return &toolsvcv1.ResourceKey{Server: r.Server, Uri: r.R.URI}
	})
	tup, trm := diffKeyed(from.templates, to.templates, templateKey, (*core.ResourceTemplate).Hash)
	ch.UpsertedResourceTemplates = convertAll(tup, templateToProto)
	ch.RemovedResourceTemplates = convertAll(trm, func(t *core.ResourceTemplate) *toolsvcv1.ResourceKey {
		return &toolsvcv1.ResourceKey{Server: t.Server, Uri: t.T.URITemplate}
	})
	pup, prm := diffKeyed(from.prompts, to.prompts, promptKey, (*core.Prompt).Hash)
	ch.UpsertedPrompts = convertAll(pup, promptToProto)
	ch.RemovedPrompts = convertAll(prm, func(p *core.Prompt) string { return p.Name })
}

// diffKeyed compares two lists by key and entry hash: the entries of b
// that are new or changed, and those of a that are gone (each in its
// list's order).
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

func resourceKey(r *core.Resource) string { return r.Server + "\x00" + r.R.URI }
func templateKey(t *core.ResourceTemplate) string {
	return t.Server + "\x00" + t.T.URITemplate
}
func promptKey(p *core.Prompt) string { return p.Name }
