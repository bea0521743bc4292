package mcpbridge

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Per-principal sessions (docs/credentials.md): an upstream whose
// credentials depend on the caller has a session per principal. This file
// is their table, independent of what a session is: created on first use
// (one creation per principal at a time, shared by its concurrent
// callers), bounded (the least recently used idle session makes room),
// closed after an idle period, and never closed while a call holds it.
// principalSessions (peruser.go) is the upstream's session source built on
// it.

// ErrSessionsFull: the upstream's per-principal sessions are at their
// bound and every one has a call in flight (RESOURCE_EXHAUSTED OVERLOADED
// at the edge, like a full concurrency limit).
var ErrSessionsFull = fmt.Errorf("%w: every per-principal session has a call in flight", ErrOverloaded)

// sessionTable holds the sessions S of one upstream by principal.
//
//	acquire(p) ──hit──▶ inflight++ ──▶ release() ──▶ inflight--, lastUsed = now
//	    │ miss
//	    ▼
//	one creation flight per p (the table's goroutine, its context)
//	    │ table full? ──▶ evict the least recently used entry with inflight 0 (closed outside the lock)
//	    ▼                   └─ none idle ──▶ ErrSessionsFull
//	entry added ──▶ sweep (every idle/4): inflight 0 and unused for idle ──▶ removed, closed
type sessionTable[S comparable] struct {
	max    int
	idle   time.Duration
	create func(ctx context.Context, principal string) (S, error)
	close  func(S) // may block (a session's teardown); never under mu

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // creation flights and the sweeper

	// keep, if set, names a session to close last: the LRU eviction and the
	// idle sweep pass over it while another session can go instead (the
	// listener of a per-user upstream, peruser.go). Called under mu.
	keep func(S) bool

	mu      sync.Mutex
	entries map[string]*tableEntry[S]
	flights map[string]*tableFlight[S]
	closed  bool
}

type tableEntry[S comparable] struct {
	s        S
	inflight int
	lastUsed time.Time
}

type tableFlight[S comparable] struct {
	done     chan struct{} // closed once finished is set
	waiters  int           // callers waiting; guarded by the table's mu
	finished bool          // guarded by the table's mu
	e        *tableEntry[S]
	err      error
}

// newSessionTable starts a table and its sweeper; Close stops both and
// closes every session. create runs on the table's context (ended by
// Close), bounded by the caller's connect timeout inside create.
func newSessionTable[S comparable](maxSessions int, idle time.Duration, create func(context.Context, string) (S, error), closeFn func(S)) *sessionTable[S] {
	t := &sessionTable[S]{max: maxSessions, idle: idle, create: create, close: closeFn,
		entries: map[string]*tableEntry[S]{}, flights: map[string]*tableFlight[S]{}}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.wg.Go(t.sweeper)
	return t
}

// acquire returns principal's session, creating it if needed, held until
// release (idempotent) is called: a held session is never evicted or swept.
// The callers waiting for a creation are holders from the moment it adds
// the session, so a fresh session cannot be evicted before they get it.
func (t *sessionTable[S]) acquire(ctx context.Context, principal string) (S, func(), error) {
	var zero S
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return zero, nil, ErrClosed
	}
	if e := t.entries[principal]; e != nil {
		e.inflight++
		t.mu.Unlock()
		return e.s, t.releaser(e), nil
	}
	f := t.flights[principal]
	if f == nil {
		f = &tableFlight[S]{done: make(chan struct{})}
		t.flights[principal] = f
		t.wg.Go(func() { t.fly(principal, f) })
	}
	f.waiters++
	t.mu.Unlock()
	select {
	case <-f.done:
		if f.err != nil {
			return zero, nil, f.err
		}
		return f.e.s, t.releaser(f.e), nil
	case <-ctx.Done():
		t.mu.Lock()
		finished := f.finished
		if !finished {
			f.waiters--
		}
		t.mu.Unlock()
		if finished && f.err == nil {
			t.releaser(f.e)() // the creation counted this caller as a holder
		}
		return zero, nil, ctx.Err()
	}
}

// fly creates principal's session and adds it, held by the callers
// waiting for it, making room first.
func (t *sessionTable[S]) fly(principal string, f *tableFlight[S]) {
	s, err := t.create(t.ctx, principal)
	var evicted []S
	t.mu.Lock()
	delete(t.flights, principal)
	switch {
	case err != nil:
	case t.closed:
		err = ErrClosed
		evicted = append(evicted, s)
	case len(t.entries) >= t.max:
		victim, vs := t.lruIdleLocked()
		if victim == "" {
			err = ErrSessionsFull
			evicted = append(evicted, s)
			break
		}
		delete(t.entries, victim)
		evicted = append(evicted, vs)
	}
	if err == nil {
		f.e = &tableEntry[S]{s: s, inflight: f.waiters, lastUsed: time.Now()}
		t.entries[principal] = f.e
	}
	f.err, f.finished = err, true
	t.mu.Unlock()
	close(f.done)
	for _, v := range evicted {
		t.close(v)
	}
}

// lruIdleLocked is the least recently used entry without a call in flight
// (one to keep only when no other is idle).
func (t *sessionTable[S]) lruIdleLocked() (string, S) {
	var (
		name, kept string
		oldest     time.Time
		s, ks      S
	)
	for p, e := range t.entries {
		switch {
		case e.inflight != 0:
		case t.keep != nil && t.keep(e.s):
			kept, ks = p, e.s
		case name == "" || e.lastUsed.Before(oldest):
			name, oldest, s = p, e.lastUsed, e.s
		}
	}
	if name == "" {
		return kept, ks
	}
	return name, s
}

func (t *sessionTable[S]) releaser(e *tableEntry[S]) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			e.inflight--
			e.lastUsed = time.Now()
			t.mu.Unlock()
		})
	}
}

// drop removes principal's session if it is still s (it died: the next
// acquire creates a new one) and closes it; calls holding it fail with the
// dead session as they would anyway.
func (t *sessionTable[S]) drop(principal string, s S) {
	t.mu.Lock()
	e := t.entries[principal]
	if e == nil || e.s != s {
		t.mu.Unlock()
		return
	}
	delete(t.entries, principal)
	t.mu.Unlock()
	t.close(s)
}

// sweeper closes idle sessions every idle/4 until Close.
func (t *sessionTable[S]) sweeper() {
	tick := time.NewTicker(max(t.idle/4, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-tick.C:
			t.sweep()
		}
	}
}

// sweep removes and closes the sessions without a call in flight that
// were last used idle ago or more.
func (t *sessionTable[S]) sweep() { t.closeIdle(t.idle) }

// closeIdle removes and closes the sessions without a call in flight
// unused for at least d (0: every one without a call in flight).
func (t *sessionTable[S]) closeIdle(d time.Duration) {
	var idle []S
	now := time.Now()
	t.mu.Lock()
	kept := ""
	for p, e := range t.entries {
		if e.inflight == 0 && now.Sub(e.lastUsed) >= d {
			if d > 0 && t.keep != nil && t.keep(e.s) {
				kept = p // closed last: below, if nothing else stays
				continue
			}
			delete(t.entries, p)
			idle = append(idle, e.s)
		}
	}
	if e, ok := t.entries[kept]; ok && len(t.entries) == 1 {
		delete(t.entries, kept)
		idle = append(idle, e.s)
	}
	t.mu.Unlock()
	for _, s := range idle {
		t.close(s)
	}
}

// closeIdleOf removes and closes principal's session if it has no call in
// flight (one with a call closes when idle, as usual).
func (t *sessionTable[S]) closeIdleOf(principal string) {
	t.mu.Lock()
	e := t.entries[principal]
	if e == nil || e.inflight != 0 {
		t.mu.Unlock()
		return
	}
	delete(t.entries, principal)
	t.mu.Unlock()
	t.close(e.s)
}

// has reports whether principal has a session in the table.
func (t *sessionTable[S]) has(principal string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.entries[principal] != nil
}

// peek returns principal's session, if it has one, without holding it.
func (t *sessionTable[S]) peek(principal string) (S, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.entries[principal]; e != nil {
		return e.s, true
	}
	var zero S
	return zero, false
}

// all returns the sessions in the table.
func (t *sessionTable[S]) all() []S {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]S, 0, len(t.entries))
	for _, e := range t.entries {
		out = append(out, e.s)
	}
	return out
}

// len is the number of sessions in the table.
func (t *sessionTable[S]) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}

// Close stops the sweeper, waits for creations in flight, and closes every
// session (held ones too: the upstream is going away). Idempotent.
func (t *sessionTable[S]) Close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	t.mu.Unlock()
	t.cancel()
	t.wg.Wait()
	t.mu.Lock()
	all := make([]S, 0, len(t.entries))
	for _, e := range t.entries {
		all = append(all, e.s)
	}
	clear(t.entries)
	t.mu.Unlock()
	for _, s := range all {
		t.close(s)
	}
}
