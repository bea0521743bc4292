package core

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// One subscription hub for resource subscriptions, for every wire. A
// subscriber (a gRPC SubscribeResource stream, the front door's sessions
// subscribed to a URI) joins the hub's entry of (server, URI); the entry
// holds one upstream subscription however many subscribers there are on
// this replica, and fans each resources/updated out to all of them.
//
// The lifecycle, the same on every wire (docs/resources.md, "One
// subscription lifecycle"): when the upstream's session is lost (the
// process killed, the connection dropped), the entry subscribes again on
// the next session, with a backoff from ResubscribeBackoff's first value
// doubling to its second, and, once subscribed again, signals every
// subscriber one update (the contents may have changed while the upstream
// was away). Subscribers are not ended by the loss: a gRPC stream stays
// open, a front-door session stays subscribed. An entry ends for good,
// with an error every subscriber sees (ResourceSub.Err), only when
// subscribing again fails for a reason retrying cannot fix (the server
// removed from the configuration, an upstream that no longer declares
// resources.subscribe); it ends quietly when its last subscriber leaves.

// ResubscribeBackoff bounds the waits between attempts to subscribe again
// after the upstream's session was lost: the first wait, doubling to the
// second.
var ResubscribeBackoff = [2]time.Duration{200 * time.Millisecond, 5 * time.Second}

// subscribeTimeout bounds an upstream subscription the first subscriber
// makes on behalf of every subscriber of the URI (so that one caller's
// cancellation does not fail the others).
const subscribeTimeout = 30 * time.Second

// resubscribeWarnAfter is the failed attempts after which the hub tells
// the operator (about 30 s with the default backoff).
const resubscribeWarnAfter = 10

// upstreamSub is one upstream subscription as the hub uses it (the
// bridge's *mcpbridge.ResourceSubscription; tests give their own).
type upstreamSub interface {
	// updated is signalled on the upstream's resources/updated; lost is
	// closed when its session goes away.
	updated() <-chan struct{}
	lost() <-chan struct{}
	close()
}

type bridgeSub struct {
	s *mcpbridge.ResourceSubscription
}

func (b bridgeSub) updated() <-chan struct{} { return b.s.Updated }
func (b bridgeSub) lost() <-chan struct{}    { return b.s.Done }
func (b bridgeSub) close()                   { b.s.Close() }

type subHub struct {
	log       *slog.Logger
	subscribe func(ctx context.Context, server, uri string) (upstreamSub, error)
	backoff   [2]time.Duration

	mu      sync.Mutex
	entries map[subKey]*subEntry
}

// subKey names a hub entry. owner is "" for an upstream with shared
// credentials; for one with per-user credentials it is the principal
// whose session the subscription rides (each principal its own).
type subKey struct{ server, uri, owner string }

// subEntry is the hub's state of one (server, URI).
type subEntry struct {
	key subKey
	// creds carries the first subscriber's identity (no deadline, no
	// cancellation): a per-user upstream is subscribed again with it.
	creds context.Context
	subs  map[chan struct{}]struct{} // the subscribers' signals (capacity 1)
	// ready is closed once the first upstream subscription answered; err
	// is its error.
	ready chan struct{}
	err   error
	// done is closed when the entry ends for good; doneErr says why.
	done    chan struct{}
	doneErr error
	// stop is closed when the last subscriber leaves; the forwarder then
	// closes the upstream subscription and returns (exited).
	stop   chan struct{}
	exited chan struct{}
}

// ResourceSub is one subscriber's share of a resource subscription.
type ResourceSub struct {
	// Updated is signalled (capacity 1: updates collapse) on every
	// resources/updated for the URI, and once after the hub subscribed
	// again to an upstream that was away.
	Updated <-chan struct{}
	// Done is closed when the subscription ended for good; Err says why.
	Done <-chan struct{}
	// Server is the server subscribed to.
	Server string

	h    *subHub
	e    *subEntry
	ch   chan struct{}
	once sync.Once
}

// Err is why the subscription ended (Done closed).
func (r *ResourceSub) Err() error { return r.e.doneErr }

// Close leaves the subscription; the last subscriber's Close ends the
// upstream subscription and returns once it has.
func (r *ResourceSub) Close() { r.once.Do(func() { r.h.leave(r.e, r.ch) }) }

func newSubHub(log *slog.Logger, b *mcpbridge.Bridge) *subHub {
	h := &subHub{log: log, backoff: ResubscribeBackoff, entries: map[subKey]*subEntry{}}
	h.subscribe = func(ctx context.Context, server, uri string) (upstreamSub, error) {
		s, err := b.SubscribeResource(ctx, server, uri)
		if err != nil {
			return nil, err
		}
		return bridgeSub{s}, nil
	}
	return h
}

// SubscribeResource subscribes the caller to uri on server (resolved: see
// Operation.ResolveRead) through the hub. The caller reads the contents
// itself after subscribing and on every Updated signal, and must Close
// the subscription.
func (s *Core) SubscribeResource(ctx context.Context, server, uri string) (*ResourceSub, error) {
	k := subKey{server: server, uri: uri}
	if st, err := s.bridge.Server(server); err == nil && st.PerUser {
		p, _ := PrincipalFrom(ctx)
		k.owner = p.Method + ":" + p.Name
	}
	return s.subs.join(ctx, k)
}

func (h *subHub) join(ctx context.Context, k subKey) (*ResourceSub, error) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	e := h.entries[k]
	first := e == nil
	if first {
		e = &subEntry{key: k, creds: context.WithoutCancel(ctx), subs: map[chan struct{}]struct{}{}, ready: make(chan struct{}), done: make(chan struct{}),
			stop: make(chan struct{}), exited: make(chan struct{})}
		h.entries[k] = e
	}
	e.subs[ch] = struct{}{}
	h.mu.Unlock()
	r := &ResourceSub{Updated: ch, Done: e.done, Server: k.server, h: h, e: e, ch: ch}
	if !first {
		select {
		case <-e.ready:
		case <-ctx.Done():
			r.Close()
			return nil, ctx.Err()
		}
		if e.err != nil {
			r.Close()
			return nil, e.err
		}
		return r, nil
	}
	sctx, cancel := context.WithTimeout(e.creds, subscribeTimeout)
	up, err := h.subscribe(sctx, k.server, k.uri)
	cancel()
	e.err = err
	close(e.ready)
	if err != nil {
		h.mu.Lock()
		if h.entries[k] == e {
			delete(h.entries, k)
		}
		h.mu.Unlock()
		close(e.exited) // no forwarder
		return nil, err
	}
	go h.forward(e, up)
	return r, nil
}

// leave removes a subscriber; the last one stops the entry's forwarder
// and waits for it.
func (h *subHub) leave(e *subEntry, ch chan struct{}) {
	h.mu.Lock()
	delete(e.subs, ch)
	last := len(e.subs) == 0
	if last {
		if h.entries[e.key] == e {
			delete(h.entries, e.key)
		}
		close(e.stop)
	}
	h.mu.Unlock()
	if last {
		<-e.ready
		<-e.exited
	}
}

// signal wakes every subscriber of e (never blocking).
func (h *subHub) signal(e *subEntry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range e.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// forward relays up's updates to e's subscribers and subscribes again
// when up's session is lost, until the last subscriber leaves or the
// entry ends for good.
func (h *subHub) forward(e *subEntry, up upstreamSub) {
	defer close(e.exited)
	ctx, cancel := context.WithCancel(e.creds)
	defer cancel()
	go func() {
		select {
		case <-e.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-ctx.Done():
			up.close()
			return
		case <-up.updated():
			h.signal(e)
			continue
		case <-up.lost():
		}
		up.close()
		h.log.Debug("upstream resource subscription lost; subscribing again", "server", e.key.server, "uri", e.key.uri)
		var err error
		if up, err = h.resubscribe(ctx, e.key); err != nil {
			if ctx.Err() == nil {
				h.end(e, err)
			}
			return
		}
		h.signal(e) // it may have changed while the upstream was away
	}
}

// resubscribe subscribes to k again, waiting the backoff before each
// attempt, until it succeeds, fails for a reason retrying cannot fix, or
// ctx ends.
func (h *subHub) resubscribe(ctx context.Context, k subKey) (upstreamSub, error) {
	wait := h.backoff[0]
	for tries := 1; ; tries++ {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		up, err := h.subscribe(ctx, k.server, k.uri)
		if err == nil {
			return up, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !retryable(err) {
			return nil, err
		}
		if tries == resubscribeWarnAfter {
			h.log.Warn("cannot subscribe again to an upstream resource; still trying", "server", k.server, "uri", k.uri,
				"error", Classify(err, ClassifyOptions{}).Message) // the classified message: no upstream URLs
		}
		wait = min(2*wait, h.backoff[1])
	}
}

// retryable reports whether subscribing again may succeed later: the
// upstream is unavailable (no session yet, its breaker open), not gone
// from the configuration or unable to subscribe at all.
func retryable(err error) bool {
	if errors.Is(err, mcpbridge.ErrClosed) {
		return false // the bridge is closing: this replica stops
	}
	return Classify(err, ClassifyOptions{}).Code == Unavailable
}

// end ends e for good with err: every subscriber's Done closes; later
// subscribers of the key get a new entry.
func (h *subHub) end(e *subEntry, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.entries[e.key] == e {
		delete(h.entries, e.key)
	}
	e.doneErr = err
	close(e.done)
}
