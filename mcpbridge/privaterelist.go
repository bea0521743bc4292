package mcpbridge

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Where a listing goes, and list_changed on per-principal sessions
// (docs/credentials.md, "Per-principal listings").

// publish publishes a listing made through s: to the shared catalog, or,
// when the tools are per principal, to the principal's listing. A per-user
// upstream's tools become per principal
// when the operator says so (credentials.privateTools) or a listing says
// cacheScope "private" (a 2026-07-28 field; go-sdk servers send it in
// every era, and go-sdk decodes it in every era, so it is honoured
// whatever the session negotiated); from then on (for the upstream's
// life) its tools leave the shared catalog, where they were one
// principal's.
func (pu *principalSessions) publish(s *session, tools []*mcp.Tool, taskSupport map[string]string) (int, bool, error) {
	u := pu.u
	if s.principal == "" {
		n, err := u.b.catalog.SetServerTasks(u.cfg.Name, u.names, tools, taskSupport, true)
		return n, !pu.private.Load(), err
	}
	if !pu.private.Load() && s.listedPrivate.Load() {
		if !pu.private.Swap(true) {
			u.b.privateUps.Add(1)
			u.b.catalog.RemoveServer(u.cfg.Name)
			u.log.Info("tools are listed per principal (the upstream answered cacheScope \"private\")")
		}
	}
	if !pu.private.Load() {
		n, err := u.b.catalog.SetServerTasks(u.cfg.Name, u.names, tools, taskSupport, true)
		return n, true, err
	}
	n, err := u.b.private.Set(s.principal, s.id, s.ctx.Err, u.cfg.Name, u.names, tools, taskSupport)
	return n, false, err
}

// listOwn lists the tools of a per-principal session (its principal's
// listing, or the shared one), one listing of the session at a time.
func (s *session) listOwn() error {
	s.listMu.Lock()
	defer s.listMu.Unlock()
	return s.refresh()
}

// kickRelist wakes the relister; like markDirty, which calls it, it never
// blocks.
func (pu *principalSessions) kickRelist() {
	select {
	case pu.relist <- struct{}{}:
	default:
	}
}

// relister re-lists the per-principal sessions an upstream's list_changed
// marked dirty: one goroutine per per-user upstream (not one per session:
// an idle session costs no goroutine for this), owned by the source's run,
// ending with the upstream. After a mark it waits RefreshDebounce (more
// marks meanwhile ride along), then re-lists: for tools listed per
// principal, every dirty session (each publishes to its own principal's
// view); for a shared listing, the first dirty session that lists
// successfully publishes to the shared catalog and the other marks are
// dropped (the upstream's one list changed).
func (pu *principalSessions) relister() {
	relistLoop(pu.u.ctx, pu.relist, pu.u.cfg.RefreshDebounce, pu.relistDirty)
}

// relistLoop calls relist debounce after each kick, until ctx ends; kicks
// during the wait or a pass make at most one more pass (the kick channel
// holds one), which re-lists only the sessions marked since.
func relistLoop(ctx context.Context, kick <-chan struct{}, debounce time.Duration, relist func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		}
		t := time.NewTimer(debounce)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		relist()
	}
}

// relistDirty re-lists the dirty per-principal sessions (relister).
func (pu *principalSessions) relistDirty() {
	u := pu.u
	sharedDone := false
	for _, s := range pu.table.all() {
		select {
		case <-s.dirty:
		default:
			continue
		}
		if u.ctx.Err() != nil {
			return
		}
		if s.ctx.Err() != nil || s.isDead() || sharedDone && !pu.private.Load() {
			continue
		}
		if err := s.listOwn(); err == nil && !pu.private.Load() {
			sharedDone = true
		}
	}
}
