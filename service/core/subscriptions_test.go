package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// fakeUpstream scripts the upstream side of the hub: each subscribe takes
// the next outcome (nil: a subscription the test controls).
type fakeUpstream struct {
	mu       sync.Mutex
	outcomes []error
	at       []time.Time // when each subscribe ran (the bubble's clock)
	subs     []*fakeSub
}

type fakeSub struct {
	upd    chan struct{}
	gone   chan struct{}
	closed chan struct{}
	once   sync.Once
}

func (s *fakeSub) updated() <-chan struct{} { return s.upd }
func (s *fakeSub) lost() <-chan struct{}    { return s.gone }
func (s *fakeSub) close()                   { s.once.Do(func() { close(s.closed) }) }

func (u *fakeUpstream) subscribe(context.Context, string, string) (upstreamSub, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.at = append(u.at, time.Now())
	var err error
	if len(u.outcomes) > 0 {
		err, u.outcomes = u.outcomes[0], u.outcomes[1:]
	}
	if err != nil {
		return nil, err
	}
	s := &fakeSub{upd: make(chan struct{}, 1), gone: make(chan struct{}), closed: make(chan struct{})}
	u.subs = append(u.subs, s)
	return s, nil
}

func (u *fakeUpstream) sub(i int) *fakeSub {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.subs[i]
}

func newTestHub(u *fakeUpstream) *subHub {
	return &subHub{log: slog.New(slog.DiscardHandler), subscribe: u.subscribe, backoff: ResubscribeBackoff,
		entries: map[subKey]*subEntry{}}
}

func signalled(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestSubscriptionHubResubscribeBackoff: when the upstream's session is
// lost, the hub subscribes again after 200 ms, doubling to 5 s while the
// upstream stays unavailable, keeps its subscribers through it, and
// signals each of them once when it is subscribed again.
func TestSubscriptionHubResubscribeBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		unavailable := &mcpbridge.UnavailableError{Server: "s", Reason: mcpbridge.ReasonNoSession}
		u := &fakeUpstream{outcomes: []error{nil, unavailable, unavailable, unavailable, unavailable, unavailable, unavailable, unavailable}}
		h := newTestHub(u)
		a, err := h.join(t.Context(), subKey{server: "s", uri: "file:///a"})
		if err != nil {
			t.Fatal(err)
		}
		b, err := h.join(t.Context(), subKey{server: "s", uri: "file:///a"})
		if err != nil {
			t.Fatal(err)
		}
		if len(u.at) != 1 {
			t.Fatalf("two subscribers of one URI made %d upstream subscriptions, want 1", len(u.at))
		}
		u.sub(0).upd <- struct{}{}
		synctest.Wait()
		if !signalled(a.Updated) || !signalled(b.Updated) {
			t.Fatal("an upstream update did not reach both subscribers")
		}

		lost := time.Now()
		close(u.sub(0).gone)
		time.Sleep(time.Minute) // the bubble's clock: every retry is due by then
		synctest.Wait()
		if len(u.at) != 9 {
			t.Fatalf("%d subscribe attempts after the loss, want 8 (7 refused, then one that succeeds)", len(u.at)-1)
		}
		want := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond,
			3200 * time.Millisecond, 5 * time.Second, 5 * time.Second, 5 * time.Second}
		prev := lost
		for i, w := range want {
			if got := u.at[i+1].Sub(prev); got != w {
				t.Errorf("wait before attempt %d = %v, want %v", i+1, got, w)
			}
			prev = u.at[i+1]
		}
		if !signalled(u.sub(0).closed) {
			t.Error("the lost upstream subscription was not closed")
		}
		if signalled(a.Done) || signalled(b.Done) {
			t.Fatal("a subscriber was ended by the loss of the upstream's session")
		}
		if !signalled(a.Updated) || !signalled(b.Updated) {
			t.Fatal("subscribed again: the subscribers were not told to read again")
		}

		a.Close()
		if signalled(u.sub(1).closed) {
			t.Fatal("the upstream subscription ended while a subscriber remains")
		}
		b.Close() // returns once the forwarder has
		if !signalled(u.sub(1).closed) {
			t.Fatal("the last subscriber left: the upstream subscription is still open")
		}
		if len(h.entries) != 0 {
			t.Fatalf("entries left: %v", h.entries)
		}
	})
}

// TestSubscriptionHubEndsForGood: an error retrying cannot fix (the server
// gone from the configuration) ends every subscriber with it; leaving
// during a backoff stops the retries.
func TestSubscriptionHubEndsForGood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gone := fmt.Errorf("%w: %q", mcpbridge.ErrServerNotFound, "s")
		u := &fakeUpstream{outcomes: []error{nil, gone}}
		h := newTestHub(u)
		a, err := h.join(t.Context(), subKey{server: "s", uri: "file:///a"})
		if err != nil {
			t.Fatal(err)
		}
		close(u.sub(0).gone)
		synctest.Wait()
		time.Sleep(ResubscribeBackoff[0])
		synctest.Wait()
		if !signalled(a.Done) || !errors.Is(a.Err(), mcpbridge.ErrServerNotFound) {
			t.Fatalf("after a refusal that retrying cannot fix: done %v, err %v", signalled(a.Done), a.Err())
		}
		a.Close()

		// Leaving while the hub waits to retry: no attempt after it.
		unavailable := &mcpbridge.UnavailableError{Server: "s", Reason: mcpbridge.ReasonNoSession}
		u.outcomes = []error{nil, unavailable}
		b, err := h.join(t.Context(), subKey{server: "s", uri: "file:///b"})
		if err != nil {
			t.Fatal(err)
		}
		close(u.sub(1).gone)
		time.Sleep(ResubscribeBackoff[0] + time.Millisecond) // one refused attempt; the next waits 400 ms
		synctest.Wait()
		n := len(u.at)
		b.Close()
		time.Sleep(time.Minute)
		synctest.Wait()
		if len(u.at) != n {
			t.Fatalf("%d subscribe attempts after the last subscriber left", len(u.at)-n)
		}
	})
}
