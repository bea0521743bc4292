package catalog

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Per-principal listings (docs/credentials.md, "Per-principal listings"):
// a per-user upstream whose tools differ per principal (a 2026-07-28
// upstream answered tools/list with cacheScope "private", or the operator
// set credentials.Private) has no tools in the shared catalog. Each
// principal session lists its own, kept here by (principal, server) while
// the session lives (principalSessions.closeSession drops it), and the principal's
// view of the catalog is the shared snapshot with those tools merged in:
//
//	shared Snapshot ──┐
//	                  ├─▶ principal's Snapshot (immutable, content revision,
//	listings of p ────┘   built on first read after either changed, kept
//	                      in p's own bounded history for page tokens and
//	                      watch resumption)
//
// A principal's subscription is signalled by the shared catalog and by
// that principal's listings only: another principal's listing never wakes
// it. A principal without a listing sees the shared snapshot itself.

// PrincipalHistory bounds the merged snapshots remembered per principal
// (page tokens, watch resumption); they share their entries with the
// shared catalog and the listings, so one costs a slice of pointers: 8 KiB
// with a shared catalog of 1,000 tools (TestPrivateListingCost), so at
// most 32 KiB per principal with a listing. A page token or resume token
// of an older view gets what an expired shared revision gets.
const PrincipalHistory = 4

// Private holds every per-principal listing of the bridge.
type Private struct {
	mu  sync.Mutex // guards byP and every principalTools' servers and subs
	byP map[string]*principalTools
	// listed counts the principals with at least one listing: zero, and a
	// catalog read costs one atomic load more than the shared catalog.
	listed atomic.Int64
	// gen counts the changes of any principal's listings, and anySig
	// signals them (SubscribeAllTools: the front door's list_changed).
	gen    atomic.Uint64
	anySig signals
}

// principalTools is one principal's listings and view.
type principalTools struct {
	servers map[string]*privateListing // by server; Private.mu
	subs    int                        // open subscriptions; Private.mu
	gen     atomic.Uint64              // bumped (under Private.mu) on every change of servers
	sig     signals

	buildMu sync.Mutex // serialises merges; guards hist, the pin and revs
	view    atomic.Pointer[principalView]
	// revs digests the merged snapshots: a merge after one server's
	// change digests that server's entries, not the catalog's.
	revs RevisionMemo
	hist []*Snapshot // merged snapshots, oldest first; the last is the newest built
	// pinned is the view a listing of the principal pages through, kept
	// until pinnedUntil whatever hist forgets (Pin).
	pinned      *Snapshot
	pinnedUntil time.Time
}

// privateListing is one server's tools as one principal's session listed
// them.
type privateListing struct {
	session int64 // the session that listed them (a closing older one must not drop a newer one's)
	entry   *serverEntry
	rev     string // Revision(entry.tools)
}

// principalView is the merged snapshot built from one shared snapshot and
// one generation of the listings.
type principalView struct {
	shared *Snapshot
	gen    uint64
	snap   *Snapshot
}

// getLocked returns principal's state, creating it when create is set.
func (p *Private) getLocked(principal string, create bool) *principalTools {
	pt := p.byP[principal]
	if pt == nil && create {
		if p.byP == nil {
			p.byP = map[string]*principalTools{}
		}
		pt = &principalTools{servers: map[string]*privateListing{}}
		p.byP[principal] = pt
	}
	return pt
}

// forgetLocked drops principal's state once it holds nothing.
func (p *Private) forgetLocked(principal string, pt *principalTools) {
	if len(pt.servers) == 0 && pt.subs == 0 && p.byP[principal] == pt {
		delete(p.byP, principal)
	}
}

// Set replaces the listing of server for principal made by the session
// numbered sid (numbers grow with each new session), unless that
// session is closing (alive reports its context's error: its listing would
// outlive it) or a newer session of the principal listed since. It reports
// the number of tools listed.
func (p *Private) Set(principal string, sid int64, alive func() error, server, prefix string, tools []*mcp.Tool, taskSupport map[string]string) (int, error) {
	p.mu.Lock()
	var prev *serverEntry
	if pt := p.byP[principal]; pt != nil && pt.servers[server] != nil {
		prev = pt.servers[server].entry
	}
	p.mu.Unlock()
	// Converting schemas runs outside the lock; the names a tool had in
	// this principal's previous listing are kept (buildServerTools).
	entries, warnings, err := buildServerTools(server, prefix, tools, taskSupport, true, heldNames(prev, prefix), reusable(prev, prefix))
	if err != nil {
		return 0, err
	}
	l := &privateListing{session: sid, entry: &serverEntry{prefix: prefix, tools: entries, warnings: CapWarnings(warnings), available: true},
		rev: Revision(entries)}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := alive(); err != nil {
		// The bridge cancels a closing session before it drops its
		// listing: a listing that finishes after the drop must not come
		// back.
		return 0, err
	}
	pt := p.getLocked(principal, true)
	old := pt.servers[server]
	if old != nil && old.session > sid {
		return len(entries), nil
	}
	if old == nil && len(pt.servers) == 0 {
		p.listed.Add(1)
	}
	pt.servers[server] = l
	if old != nil && old.rev == l.rev && old.entry.prefix == prefix {
		return len(entries), nil // the same tools: nothing to signal
	}
	pt.gen.Add(1)
	pt.sig.signal()
	p.changedLocked()
	return len(entries), nil
}

// changedLocked tells the followers of every principal's listings.
func (p *Private) changedLocked() {
	p.gen.Add(1)
	p.anySig.signal()
}

// Drop forgets server's listing of principal if session sid made it.
func (p *Private) Drop(principal, server string, sid int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pt := p.byP[principal]
	if pt == nil || pt.servers[server] == nil || pt.servers[server].session != sid {
		return
	}
	delete(pt.servers, server)
	if len(pt.servers) == 0 {
		p.listed.Add(-1)
	}
	pt.gen.Add(1)
	pt.sig.signal()
	p.changedLocked()
	p.forgetLocked(principal, pt)
}

// Has reports whether principal has a listing of server.
func (p *Private) Has(principal, server string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	pt := p.byP[principal]
	return pt != nil && pt.servers[server] != nil
}

// View is principal's view of the shared snapshot shared.
func (p *Private) View(shared *Snapshot, principal string) *Snapshot {
	if principal == "" || p.listed.Load() == 0 {
		return shared
	}
	p.mu.Lock()
	pt := p.byP[principal]
	p.mu.Unlock()
	if pt == nil {
		return shared
	}
	if v := pt.view.Load(); v != nil && v.shared == shared && v.gen == pt.gen.Load() {
		return v.snap
	}
	pt.buildMu.Lock()
	defer pt.buildMu.Unlock()
	p.mu.Lock()
	gen := pt.gen.Load()
	lists := make([]*privateListing, 0, len(pt.servers))
	for _, l := range pt.servers {
		lists = append(lists, l)
	}
	p.mu.Unlock()
	prev := pt.view.Load()
	if prev != nil && prev.shared == shared && prev.gen == gen {
		return prev.snap
	}
	snap := shared
	if len(lists) > 0 {
		snap = mergeListings(shared, lists, &pt.revs)
		if prev != nil && prev.snap.Revision == snap.Revision {
			snap = prev.snap             // the same content: the same snapshot (watchers compare pointers)
			pt.revs.Revision(snap.Tools) // the memo holds the kept list, not the dropped one (pointer comparisons only)
		}
	}
	pt.view.Store(&principalView{shared: shared, gen: gen, snap: snap})
	if n := len(pt.hist); n == 0 || pt.hist[n-1] != snap {
		pt.hist = append(pt.hist, snap)
		if len(pt.hist) > PrincipalHistory {
			pt.hist[0] = nil
			pt.hist = pt.hist[1:]
		}
	}
	return snap
}

// mergeListings is shared with the listings' tools merged in. A private
// tool whose exposed name a shared tool (or another listing's) has is
// exposed with a stable hash suffix, as the catalog does between servers.
// revs is the principal's memo of its merged snapshots' digests.
func mergeListings(shared *Snapshot, lists []*privateListing, revs *RevisionMemo) *Snapshot {
	slices.SortFunc(lists, func(a, b *privateListing) int {
		return cmp.Compare(a.entry.prefix, b.entry.prefix)
	})
	n := len(shared.Tools)
	for _, l := range lists {
		n += len(l.entry.tools)
	}
	all := make([]*Tool, 0, n)
	all = append(all, shared.Tools...)
	added := map[string]*Tool{}
	for _, l := range lists {
		for _, t := range l.entry.tools {
			_, inShared := shared.Lookup(t.Name)
			if _, taken := added[t.Name]; inShared || taken {
				nt := *t
				for name := withSuffix(t.Name, stableHash(hashSuffixLen, t.Server, t.OriginalName)); ; name += "_" {
					if _, clash := shared.Lookup(name); !clash && added[name] == nil {
						nt.Name = name
						break
					}
				}
				nt.hash = entryHash(&nt)
				t = &nt
			}
			added[t.Name] = t
			all = append(all, t)
		}
	}
	slices.SortFunc(all, func(a, b *Tool) int { return cmp.Compare(a.Name, b.Name) })
	return &Snapshot{Revision: revs.Revision(all), Tools: all, Created: time.Now(), base: shared}
}

// Snapshot returns principal's remembered (or pinned) snapshot with
// revision rev, or the shared catalog's.
func (p *Private) Snapshot(c *Catalog, principal, rev string) (*Snapshot, bool) {
	for _, s := range slices.Backward(p.History(principal)) {
		if s.Revision == rev {
			return s, true
		}
	}
	if s := p.pinnedView(principal); s != nil && s.Revision == rev {
		return s, true
	}
	return c.Snapshot(rev)
}

// Pin keeps s, a view of principal's (or a shared snapshot: then the
// shared catalog c pins it), retrievable by Snapshot for PinTTL: a
// principal pages through one view of its own at a time.
func (p *Private) Pin(c *Catalog, principal string, s *Snapshot) {
	if s.base == nil {
		c.Pin(s, principal)
		return
	}
	p.mu.Lock()
	pt := p.byP[principal]
	p.mu.Unlock()
	if pt == nil {
		return
	}
	pt.buildMu.Lock()
	defer pt.buildMu.Unlock()
	pt.pinned, pt.pinnedUntil = s, time.Now().Add(PinTTL)
}

// pinnedView is principal's pinned view, nil if none or expired.
func (p *Private) pinnedView(principal string) *Snapshot {
	p.mu.Lock()
	pt := p.byP[principal]
	p.mu.Unlock()
	if pt == nil {
		return nil
	}
	pt.buildMu.Lock()
	defer pt.buildMu.Unlock()
	if pt.pinned == nil || !time.Now().Before(pt.pinnedUntil) {
		pt.pinned = nil
		return nil
	}
	return pt.pinned
}

// History returns principal's merged snapshots, oldest first (nil: none).
func (p *Private) History(principal string) []*Snapshot {
	if principal == "" {
		return nil
	}
	p.mu.Lock()
	pt := p.byP[principal]
	p.mu.Unlock()
	if pt == nil {
		return nil
	}
	pt.buildMu.Lock()
	defer pt.buildMu.Unlock()
	return slices.Clone(pt.hist)
}

// Subscribe is a subscription signalled by the shared catalog's changes
// and by principal's listings' changes.
func (p *Private) Subscribe(c *Catalog, principal string) *Subscription {
	p.mu.Lock()
	pt := p.getLocked(principal, true)
	pt.subs++
	p.mu.Unlock()
	sub := c.Subscribe()
	sub.also, sub.release = &pt.sig, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		pt.subs--
		p.forgetLocked(principal, pt)
	}
	pt.sig.add(sub)
	return sub
}

// SubscribeAll is a subscription signalled by c's changes and by every
// principal's listings' changes (for a loop that follows every principal's
// view).
func (p *Private) SubscribeAll(c *Catalog) *Subscription {
	sub := c.Subscribe()
	sub.also = &p.anySig
	p.anySig.add(sub)
	return sub
}

// Gen counts the changes of principals' listings: a loop woken by
// SubscribeAll tells them from shared changes by it.
func (p *Private) Gen() uint64 { return p.gen.Load() }

// Listed is the number of principals with at least one listing.
func (p *Private) Listed() int { return int(p.listed.Load()) }
