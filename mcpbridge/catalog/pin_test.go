package catalog

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bumped publishes n changes of one server's tool.
func bumped(c *Catalog, from, n int) {
	for i := range n {
		c.SetServer("s", "s", []*mcp.Tool{{Name: "t", Description: fmt.Sprint(from + i)}}, true)
	}
}

// TestPinOutlivesTheHistory: a pinned snapshot stays retrievable by
// revision past the history's length, for PinTTL after the last pin, and
// no longer.
func TestPinOutlivesTheHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewCatalog()
		bumped(c, 0, 1)
		s := c.Current()
		c.Pin(s, "alice")
		bumped(c, 1, historySize+5)
		if got, ok := c.Snapshot(s.Revision); !ok || got != s {
			t.Fatal("a pinned revision is gone once the history forgot it")
		}
		time.Sleep(PinTTL - time.Second)
		c.Pin(s, "alice") // the next page: the pin is renewed
		time.Sleep(PinTTL - time.Second)
		if _, ok := c.Snapshot(s.Revision); !ok {
			t.Fatal("a renewed pin expired early")
		}
		time.Sleep(2 * time.Second)
		if _, ok := c.Snapshot(s.Revision); ok {
			t.Fatal("a pin outlived PinTTL after its last renewal")
		}
	})
}

// TestPinsBoundedPerOwner: one owner holds at most MaxPinsPerOwner pins
// (its newest), and one owner's pins never evict another's while the
// replica-wide bound has room; past MaxPins the owner with the most pins
// gives one up.
func TestPinsBoundedPerOwner(t *testing.T) {
	t.Parallel()
	c := NewCatalog()
	pinned := func(owner string) *Snapshot {
		bumped(c, len(c.History())*1000, 1)
		s := c.Current()
		c.Pin(s, owner)
		return s
	}
	bob := pinned("bob")
	var alice []*Snapshot
	for range MaxPinsPerOwner + 3 {
		alice = append(alice, pinned("alice"))
	}
	bumped(c, 1<<20, historySize+1) // the history forgets them all
	if _, ok := c.Snapshot(bob.Revision); !ok {
		t.Fatal("alice's pins evicted bob's")
	}
	for i, s := range alice {
		_, ok := c.Snapshot(s.Revision)
		if want := i >= len(alice)-MaxPinsPerOwner; ok != want {
			t.Errorf("alice's pin %d retained %v, want %v (her newest %d only)", i, ok, want, MaxPinsPerOwner)
		}
	}
	// Many owners: the bound holds, and the owner with the most pins
	// (alice, 2) loses one before any owner with one.
	var others []*Snapshot
	for i := range MaxPins - 2 { // one more than fits beside bob's and alice's
		others = append(others, pinned(fmt.Sprintf("p%d", i)))
	}
	c.snapshots.mu.Lock()
	n := len(c.pins)
	c.snapshots.mu.Unlock()
	if n != MaxPins {
		t.Fatalf("%d pins, want the bound %d", n, MaxPins)
	}
	bumped(c, 1<<21, historySize+1)
	if _, ok := c.Snapshot(bob.Revision); !ok {
		t.Fatal("bob's only pin went before alice's second")
	}
	for i, s := range others {
		if _, ok := c.Snapshot(s.Revision); !ok {
			t.Fatalf("owner p%d's only pin went", i)
		}
	}
	kept := 0
	for _, s := range alice[len(alice)-MaxPinsPerOwner:] {
		if _, ok := c.Snapshot(s.Revision); ok {
			kept++
		}
	}
	if kept != MaxPinsPerOwner-1 {
		t.Fatalf("alice keeps %d pins at the bound, want %d", kept, MaxPinsPerOwner-1)
	}
}

// TestPrivateViewPin: a principal's merged view (per-principal listings)
// pinned by its listing stays retrievable after the principal's short
// history (PrincipalHistory) forgot it.
func TestPrivateViewPin(t *testing.T) {
	t.Parallel()
	c := NewCatalog()
	var p Private
	alive := func() error { return nil }
	if _, err := p.Set("alice", 1, alive, "mine", "mine", []*mcp.Tool{{Name: "own"}}, nil); err != nil {
		t.Fatal(err)
	}
	bumped(c, 0, 1)
	v := p.View(c.Current(), "alice")
	if v.Base() == nil {
		t.Fatal("alice's view is not a merged one")
	}
	p.Pin(c, "alice", v)
	for i := range PrincipalHistory + 2 {
		bumped(c, 100+i, 1)
		p.View(c.Current(), "alice")
	}
	if got, ok := p.Snapshot(c, "alice", v.Revision); !ok || got != v {
		t.Fatal("alice's pinned view is gone")
	}
	if _, ok := p.Snapshot(c, "bob", v.Revision); ok {
		t.Fatal("bob reaches alice's pinned view")
	}
}
