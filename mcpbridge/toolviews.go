package mcpbridge

import (
	"context"
	"strings"

	"github.com/toolsvc/toolsvc/mcpbridge/catalog"
)

// ToolView is the tool catalog as one principal sees it: the shared
// catalog with the principal's per-principal listings merged in (Bridge.Tools).
type ToolView interface {
	// Current is the current snapshot of the view.
	Current() *Snapshot
	// Snapshot is a remembered snapshot of the view by revision.
	Snapshot(revision string) (*Snapshot, bool)
	// History is the view's remembered snapshots, oldest first.
	History() []*Snapshot
	// Subscribe signals the view's changes (and possibly others': the
	// reader compares revisions); Close it when done.
	Subscribe() *Subscription
	// Pin keeps a snapshot of the view retrievable by Snapshot for a while
	// on behalf of owner (a listing pages through it: catalog.PinTTL).
	Pin(s *Snapshot, owner string)
}

// Tools is principal's view of the tool catalog: the catalog itself for
// "" or when no upstream has per-user credentials, else the shared catalog
// with principal's per-principal listings merged in. Every read of a
// caller's catalog (listing, search, watch, the lookup of a call) goes
// through it.
func (b *Bridge) Tools(principal string) ToolView {
	if principal == "" || b.perUser.Load() == 0 {
		return b.catalog
	}
	return principalCatalog{b: b, principal: principal}
}

type principalCatalog struct {
	b         *Bridge
	principal string
}

func (v principalCatalog) Current() *Snapshot {
	return v.b.private.View(v.b.catalog.Current(), v.principal)
}

func (v principalCatalog) Snapshot(rev string) (*Snapshot, bool) {
	return v.b.private.Snapshot(v.b.catalog, v.principal, rev)
}

func (v principalCatalog) History() []*Snapshot {
	if h := v.b.private.History(v.principal); len(h) > 0 {
		return h
	}
	return v.b.catalog.History()
}

func (v principalCatalog) Pin(s *Snapshot, _ string) {
	v.b.private.Pin(v.b.catalog, v.principal, s)
}

func (v principalCatalog) Subscribe() *Subscription {
	return v.b.private.Subscribe(v.b.catalog, v.principal)
}

// privateUnlisted is the per-principal upstream whose names name would
// have (its prefix) when principal has no listing of it ("" if none).
func (b *Bridge) privateUnlisted(principal, name string) string {
	if principal == "" || b.privateUps.Load() == 0 {
		return ""
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	for server, u := range b.ups {
		p := u.cfg.namesPrefix()
		if p != "" && strings.HasPrefix(name, p+catalog.NameSep) && u.source.privateFor(principal) {
			return server
		}
	}
	return ""
}

// CheckCaller reports why the caller of ctx cannot reach server with its
// own credentials (the credential source's admission: a
// *CredentialsError, a *LoginRequiredError, the authorization server
// failing), or nil (also for a server with shared credentials). It may
// exchange the caller's token: for a failed lookup of a per-user
// upstream's tool, so that a refused caller learns that rather than
// UNAVAILABLE.
func (b *Bridge) CheckCaller(ctx context.Context, server string) error {
	u, err := b.upstream(server)
	if err != nil {
		return nil
	}
	return u.source.admit(ctx)
}

// SubscribeAllTools is a subscription signalled by the shared catalog's
// changes and by every principal's listings' changes (for a loop that
// follows every principal's view, as the front door's list_changed does).
func (b *Bridge) SubscribeAllTools() *Subscription {
	return b.private.SubscribeAll(b.catalog)
}

// PrivateGen counts the changes of principals' listings: a loop woken by
// SubscribeAllTools tells them from shared changes by it.
func (b *Bridge) PrivateGen() uint64 { return b.private.Gen() }

// HasPerUser reports whether an upstream with per-user credentials runs
// (principals' views of the catalog can differ).
func (b *Bridge) HasPerUser() bool { return b.perUser.Load() > 0 }

// PrivateListings is the number of principals with a per-principal
// listing (a measure of what per-principal listings hold).
func (b *Bridge) PrivateListings() int { return b.private.Listed() }
