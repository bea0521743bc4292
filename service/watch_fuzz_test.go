package service

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service/core"
)

// FuzzWatchResumeToken checks what any resume token earns, for the whole
// catalog and filtered views, tools only or with resources and prompts: an
// empty token a plain snapshot, the current revision "synced", a
// remembered revision exactly the changes since it, and anything else a
// reset snapshot, counted as malformed exactly when the token is not shaped
// like a revision of the view (32 hex digits, or 64 with resources or
// prompts). Never a panic, never an error.
//
// CI runs the seed corpus (go test); a longer run:
//
//	go test -run '^$' -fuzz FuzzWatchResumeToken -fuzztime 5m ./service
func FuzzWatchResumeToken(f *testing.F) {
	fx := newWatchFixture(f, nil, map[string][]string{"a": {"x", "y"}, "b": {"x"}})
	cat := fx.bridge.Catalog()
	old := cat.Current()
	fx.servers["a"].put("z", "v1")
	cur := fx.waitCatalog(f, "a__z", func(s *mcpbridge.Snapshot) bool { _, ok := s.Lookup("a__z"); return ok })
	filters := []*toolsvcv1.WatchCatalogRequest{{}, {Servers: []string{"a"}}, {Servers: []string{"b"}, ExcludeUnavailable: true},
		{IncludeResources: true, IncludePrompts: true}, {Servers: []string{"a"}, IncludePrompts: true}}
	res := fx.bridge.Resources().Current().Revision

	for _, seed := range []string{
		"", old.Revision, cur.Revision, strings.ToUpper(cur.Revision), cur.Revision[:31], cur.Revision + "0",
		strings.Repeat("0", 32), "not-a-revision", "cDE6...", "\x00", "é" + cur.Revision[2:],
		base64.RawURLEncoding.EncodeToString([]byte("p1:" + cur.Revision + ":a__x")), // a ListTools page token
		old.Revision + res, cur.Revision + res, res + cur.Revision, cur.Revision + strings.ToUpper(res), cur.Revision + res + "0",
	} {
		for i := range filters {
			f.Add(seed, i)
		}
	}
	f.Fuzz(func(t *testing.T, tok string, fi int) {
		if fi < 0 || fi >= len(filters) {
			fi = 0
		}
		flt, err := fx.svc.newWatchFilter(context.Background(), filters[fi])
		if err != nil {
			t.Fatal(err)
		}
		g := joinT(t, fx.svc, flt)
		ev := g.current(fx.svc).ev
		v := ev.view
		if v.rev != fx.svc.view(cur, flt).rev {
			t.Fatalf("the group's view %s is not the current snapshot's", v.rev)
		}
		before := fx.svc.Stats()
		m := decodeEvent(t, fx.svc.resumeEvent(tok, ev))
		after := fx.svc.Stats()
		if m.GetRevision() != v.rev {
			t.Fatalf("token %q: revision %s, want the view's %s", tok, m.GetRevision(), v.rev)
		}
		malformed := after.WatchMalformedTokens - before.WatchMalformedTokens
		resets := after.WatchResets - before.WatchResets
		if _, _, shaped := splitToken(tok, flt.kinds); (malformed == 1) != (tok != "" && !shaped) || malformed > 1 {
			t.Fatalf("token %q: malformed counter moved by %d", tok, malformed)
		}
		known := g.findView(fx.svc, tok)
		switch {
		case tok == "":
			if m.GetSnapshot() == nil || m.GetSnapshot().GetReset_() || resets != 0 {
				t.Fatalf("empty token: %v", m)
			}
		case tok == v.rev:
			if m.GetSynced() == nil || resets != 0 {
				t.Fatalf("current revision: %v", m)
			}
		case known != nil:
			if m.GetChanges() == nil || resets != 0 {
				t.Fatalf("remembered token %q: %v", tok, m)
			}
			got := map[string]bool{}
			for _, tl := range m.GetChanges().GetUpserted() {
				got[tl.GetName()] = true
			}
			for _, name := range m.GetChanges().GetRemoved() {
				got["-"+name] = true
			}
			if len(got) == 0 {
				t.Fatalf("remembered token %q: empty changes", tok)
			}
		default:
			if !m.GetSnapshot().GetReset_() || resets != 1 || len(m.GetSnapshot().GetTools()) != len(v.tools) {
				t.Fatalf("token %q: %v, want a reset snapshot of %d tools, counted", tok, m, len(v.tools))
			}
		}
		if core.ValidRevision(tok) && !utf8.ValidString(tok) {
			t.Fatalf("validRevision accepted non-UTF-8 %q", tok)
		}
	})
}

// decodeEvent reads an event as a client would.
func decodeEvent(t *testing.T, ev eventMessages) *toolsvcv1.WatchCatalogResponse {
	t.Helper()
	if ev.err != nil || len(ev.msgs) != 1 {
		t.Fatalf("event of %d messages (%v), want one", len(ev.msgs), ev.err)
	}
	b, err := proto.Marshal(ev.msgs[0])
	if err != nil {
		t.Fatal(err)
	}
	var out toolsvcv1.WatchCatalogResponse
	if err := proto.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}
