package service

import (
	"context"
	"strings"
	"testing"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// resourceFixture: servers a (tool x, resource a://1, prompt p) and b
// (tool x, resource b://1), upstreams that declare resources and prompts.
func resourceFixture(t *testing.T, opts *serverOpts) *watchFixture {
	f := newWatchFixtureWith(t, opts, map[string][]string{"a": {"x"}, "b": {"x"}}, true)
	f.servers["a"].putResource("a://1", "v0")
	f.servers["a"].putPrompt("p", "v0")
	f.servers["b"].putResource("b://1", "v0")
	f.waitResources(t, "the resources", func(s *mcpbridge.ResourceSnapshot) bool { return len(s.Resources) == 2 && len(s.Prompts) == 1 })
	return f
}

func resourceURIs(rs []*toolsvcv1.Resource) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString(r.GetUri() + " ")
	}
	return b.String()
}

// TestWatchResourcesGroupSharesEvents: watches with include_resources and
// include_prompts are members of one group like tools-only watches: one
// view per change, one encoded event shared by every member (its resource
// and prompt parts included), one delta for every laggard at a revision;
// the tools-only watch of the same filter is another group.
func TestWatchResourcesGroupSharesEvents(t *testing.T) {
	f := resourceFixture(t, nil)
	flt, err := f.svc.newWatchFilter(context.Background(), &toolsvcv1.WatchCatalogRequest{IncludeResources: true, IncludePrompts: true})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := f.svc.newWatchFilter(context.Background(), &toolsvcv1.WatchCatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	g1, g2, g3 := joinT(t, f.svc, flt), joinT(t, f.svc, flt), joinT(t, f.svc, tools)
	if g1 != g2 || g1 == g3 {
		t.Fatalf("groups: %p %p (want equal), tools-only %p (want another)", g1, g2, g3)
	}
	v0 := g1.current(f.svc).ev
	if want := f.bridge.Catalog().Current().Revision + f.bridge.Resources().Current().Revision; v0.view.rev != want {
		t.Fatalf("unfiltered view revision %s, want the two snapshots' %s", v0.view.rev, want)
	}
	if a, b := v0.snapshotEvent(f.svc, false), g2.current(f.svc).ev.snapshotEvent(f.svc, false); a.msgs[0] != b.msgs[0] {
		t.Fatal("the snapshot was encoded twice")
	}
	if m := decodeEvent(t, v0.snapshotEvent(f.svc, false)); resourceURIs(m.GetSnapshot().GetResources()) != "a://1 b://1 " || len(m.GetSnapshot().GetPrompts()) != 1 {
		t.Fatalf("snapshot: %v", m)
	}
	f.servers["b"].putResource("b://2", "v0")
	f.waitResources(t, "b://2", func(s *mcpbridge.ResourceSnapshot) bool { return len(s.Resources) == 3 })
	v1 := g1.current(f.svc).ev
	if g2.current(f.svc).ev != v1 || g3.current(f.svc).ev.view.rev != v0.view.toolRev {
		t.Fatal("members of one group hold different states, or a resource change moved the tools-only view")
	}
	a, b := v1.changesFrom(f.svc, v0.view), g2.current(f.svc).ev.changesFrom(f.svc, v0.view)
	if a.msgs[0] != b.msgs[0] {
		t.Fatal("the changes event was built twice")
	}
	if m := decodeEvent(t, a); resourceURIs(m.GetChanges().GetUpsertedResources()) != "b://2 " || m.GetRevision() != v1.view.rev {
		t.Fatalf("changes: %v", m)
	}
	f.putTool(t, "a", "y")
	_, m := laggardDelta(t, f.svc, g2, v0.view)
	if toolNames(m.GetChanges().GetUpserted()) != "a__y " || resourceURIs(m.GetChanges().GetUpsertedResources()) != "b://2 " {
		t.Fatalf("laggard delta: %v", m)
	}
	if old := g1.findView(f.svc, v0.view.rev); old == nil || old.rev != v0.view.rev {
		t.Fatalf("the first revision %s is not found for resumption: %v", v0.view.rev, old)
	}
}

// TestWatchResourcesStream: over gRPC, a watch with resources and prompts
// gets a snapshot of every kind it asked for under a 64-digit revision,
// then resource, prompt and tool changes; resuming with its first
// revision gets exactly the changes since, with its last "synced"; a
// tools-only token is malformed for it (a reset, counted), and a watch of
// prompts only sees no resource change.
func TestWatchResourcesStream(t *testing.T) {
	f := resourceFixture(t, nil)
	ctx := ctxT(t)
	open := func(req *toolsvcv1.WatchCatalogRequest) toolsvcv1.ToolService_WatchCatalogClient {
		st, err := f.client.WatchCatalog(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	both := &toolsvcv1.WatchCatalogRequest{IncludeResources: true, IncludePrompts: true, Servers: []string{"a"}}
	st := open(both)
	prompts := open(&toolsvcv1.WatchCatalogRequest{IncludePrompts: true})
	first := recvT(t, st)
	if len(first.GetRevision()) != 64 || resourceURIs(first.GetSnapshot().GetResources()) != "a://1 " ||
		len(first.GetSnapshot().GetPrompts()) != 1 || toolNames(first.GetSnapshot().GetTools()) != "a__x " {
		t.Fatalf("first event: %v", first)
	}
	if m := recvT(t, prompts); len(m.GetSnapshot().GetResources()) != 0 || len(m.GetSnapshot().GetPrompts()) != 1 {
		t.Fatalf("prompts-only snapshot: %v", m)
	}
	f.servers["a"].putResource("a://2", "v0")
	if m := recvT(t, st); resourceURIs(m.GetChanges().GetUpsertedResources()) != "a://2 " {
		t.Fatalf("after a://2: %v", m)
	}
	f.servers["a"].srv.RemovePrompts("p")
	m := recvT(t, st)
	if strings.Join(m.GetChanges().GetRemovedPrompts(), " ") != "a__p" {
		t.Fatalf("after removing prompt p: %v", m)
	}
	if m := recvT(t, prompts); strings.Join(m.GetChanges().GetRemovedPrompts(), " ") != "a__p" || len(m.GetChanges().GetUpsertedResources()) != 0 {
		t.Fatalf("prompts-only watch after a://2 and removing p: %v, want the prompt's removal only", m)
	}
	last := m.GetRevision()
	resumed := open(&toolsvcv1.WatchCatalogRequest{IncludeResources: true, IncludePrompts: true, Servers: []string{"a"}, ResumeToken: first.GetRevision()})
	if m := recvT(t, resumed); resourceURIs(m.GetChanges().GetUpsertedResources()) != "a://2 " ||
		strings.Join(m.GetChanges().GetRemovedPrompts(), " ") != "a__p" || m.GetRevision() != last {
		t.Fatalf("resumed from the first revision: %v, want a://2 and a__p's removal at %s", m, last)
	}
	synced := open(&toolsvcv1.WatchCatalogRequest{IncludeResources: true, IncludePrompts: true, Servers: []string{"a"}, ResumeToken: last})
	if m := recvT(t, synced); m.GetSynced() == nil {
		t.Fatalf("resumed at the last revision: %v, want synced", m)
	}
	before := f.svc.Stats()
	reset := open(&toolsvcv1.WatchCatalogRequest{IncludeResources: true, IncludePrompts: true, ResumeToken: last[:32]})
	if m := recvT(t, reset); !m.GetSnapshot().GetReset_() || f.svc.Stats().WatchMalformedTokens != before.WatchMalformedTokens+1 {
		t.Fatalf("a tools-only token: %v, %+v; want a reset, counted as malformed", m, f.svc.Stats())
	}
}
