package core

import (
	"context"
	"slices"
	"testing"

	"github.com/toolsvc/toolsvc/internal/memupstream"
)

// TestViewOneClassPerRuleSet: who may see what is the core's View.
// Principals matched by the same rules share a view key and one computed
// tool part of the current snapshot (built once, whatever the number of
// principals); other rules give other keys and other entries; a request's
// view (ViewOf) and a principal's (ViewFor) agree; a reload moves every key.
func TestViewOneClassPerRuleSet(t *testing.T) {
	u := memupstream.New(t, 12) // t0000 … t0011, echo
	authz := NewAuthorizer([]Rule{{Principal: "team-*", Allow: []string{"mem__t000*"}}, {Principal: "bob", Allow: []string{"mem__echo"}}}, nil)
	c := New(u.Bridge, Options{Auth: AuthConfig{Authorizer: authz}})
	snap := c.Catalog().Current()
	if len(snap.Tools) != 13 {
		t.Fatalf("catalog has %d tools, want 13", len(snap.Tools))
	}

	a, b := c.ViewFor("team-a"), c.ViewFor("team-b")
	if a.Key() == "" || a.Key() != b.Key() {
		t.Fatalf("principals under the same rules: keys %q and %q, want one non-empty key", a.Key(), b.Key())
	}
	ta, ra := a.Tools(snap, nil)
	tb, rb := b.Tools(snap, nil)
	if len(ta) != 10 || ra != rb || &ta[0] != &tb[0] {
		t.Fatalf("team views: %d tools (want 10), revisions %s / %s, shared %v", len(ta), ra, rb, len(tb) > 0 && &ta[0] == &tb[0])
	}
	if ra != Revision(ta) || ra == snap.Revision {
		t.Errorf("view revision %s: want the revision of its own entries (%s), not the snapshot's", ra, Revision(ta))
	}
	if ra != a.ToolRevision() {
		t.Errorf("ToolRevision %s, Tools' revision %s", a.ToolRevision(), ra)
	}

	bob := c.ViewFor("bob")
	tbob, _ := bob.Tools(snap, nil)
	if bob.Key() == a.Key() || len(tbob) != 1 || tbob[0].Name != "mem__echo" {
		t.Fatalf("bob's view: key %q (team's %q), tools %v; want its own key and mem__echo alone", bob.Key(), a.Key(), names(tbob))
	}
	eve := c.ViewFor("eve") // no rule names eve: nothing
	if teve, _ := eve.Tools(snap, nil); len(teve) != 0 || eve.Key() == a.Key() || eve.Key() == bob.Key() {
		t.Fatalf("eve's view: key %q, tools %v; want an empty view of its own", eve.Key(), names(teve))
	}

	ctx := WithPrincipal(context.Background(), Principal{Name: "team-z", Method: "token"})
	if v := c.ViewOf(ctx); v.Key() != a.Key() || !v.Tool("mem__t0003") || v.Tool("mem__t0011") {
		t.Fatalf("ViewOf(team-z): key %q, want %q, allowing mem__t0003 and not mem__t0011", v.Key(), a.Key())
	}
	if v := c.ViewOf(context.Background()); v.All() || v.Tool("mem__echo") {
		t.Fatal("ViewOf without a principal under rules: want nothing visible")
	}
	narrowed, _ := a.Tools(snap, func(t *Tool) bool { return t.Name == "mem__t0001" })
	if len(narrowed) != 1 {
		t.Fatalf("narrowed view: %v", names(narrowed))
	}

	before := a.Key()
	if err := c.SetAuth(AuthConfig{Authorizer: authz}); err != nil {
		t.Fatal(err)
	}
	if c.ViewFor("team-a").Key() == before {
		t.Fatal("a reload kept the view's key: views built under the old rules would be shared")
	}
	open := New(u.Bridge, Options{})
	if v := open.ViewFor("anyone"); !v.All() || v.Key() != "" {
		t.Fatalf("no rules: key %q, all %v; want the whole catalog", v.Key(), v.All())
	}
}

func names(ts []*Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return slices.Clip(out)
}

// BenchmarkViewRevisions is what one catalog change costs the front
// door's list_changed for 1000 connected principals under 4 rule sets and
// a 1000-tool catalog: perPrincipal filters and hashes every principal's
// view (what the front door did before the core's View), perClass asks
// the View, which builds each rule set's view once per snapshot (the memo
// is emptied every iteration, as a new snapshot does).
//
//	go test -run XXX -bench ViewRevisions -benchmem ./service/core
func BenchmarkViewRevisions(b *testing.B) {
	u := memupstream.New(b, 1000)
	var rules []Rule
	for i := range 4 {
		rules = append(rules, Rule{Principal: "team" + string(rune('a'+i)) + "-*", Allow: []string{"mem__t0" + string(rune('0'+i)) + "*"}})
	}
	c := New(u.Bridge, Options{Auth: AuthConfig{Authorizer: NewAuthorizer(rules, nil)}})
	var principals []string
	for i := range 1000 {
		principals = append(principals, "team"+string(rune('a'+i%4))+"-"+string(rune('0'+i/4%10))+string(rune('a'+i/40)))
	}
	snap := c.Catalog().Current()
	b.Run("perPrincipal", func(b *testing.B) {
		all := func(*Tool) bool { return true } // a keep function bypasses the memo: one build per principal
		for b.Loop() {
			for _, p := range principals {
				c.ViewFor(p).Tools(snap, all)
			}
		}
	})
	b.Run("perClass", func(b *testing.B) {
		for b.Loop() {
			c.views.mu.Lock()
			c.views.m = nil
			c.views.mu.Unlock()
			for _, p := range principals {
				c.ViewFor(p).ToolRevision()
			}
		}
	})
}
