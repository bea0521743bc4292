package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// fakeSession stands for a per-principal session in the table's tests.
type fakeSession struct {
	principal string
	n         int
	closed    atomic.Bool
}

type fakeSessions struct {
	mu      sync.Mutex
	created []*fakeSession
	closed  []string
	delay   time.Duration // how long a creation takes
	fail    error
}

func (f *fakeSessions) create(ctx context.Context, p string) (*fakeSession, error) {
	select {
	case <-time.After(f.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if f.fail != nil {
		return nil, f.fail
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &fakeSession{principal: p, n: len(f.created)}
	f.created = append(f.created, s)
	return s, nil
}

func (f *fakeSessions) close(s *fakeSession) {
	if s.closed.Swap(true) {
		panic("closed twice: " + s.principal)
	}
	f.mu.Lock()
	f.closed = append(f.closed, s.principal)
	f.mu.Unlock()
}

func (f *fakeSessions) counts() (created int, closed []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.created), slices.Clone(f.closed)
}

// TestSessionTableCreateOnce (synctest): 50 concurrent first calls of one
// principal create one session; a caller that gives up while it is
// created does not leave a hold behind; a failed creation fails its
// waiters and the next call tries again.
func TestSessionTableCreateOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeSessions{delay: 100 * time.Millisecond}
		tab := newSessionTable(10, time.Minute, f.create, f.close)
		defer tab.Close()
		ctx := t.Context()

		impatient, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		var wg sync.WaitGroup
		got := make([]*fakeSession, 50)
		for i := range got {
			wg.Go(func() {
				s, release, err := tab.acquire(ctx, "alice")
				if err != nil {
					t.Errorf("acquire: %v", err)
					return
				}
				got[i] = s
				time.Sleep(time.Second) // a call
				release()
				release() // idempotent
			})
		}
		if _, _, err := tab.acquire(impatient, "alice"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("impatient acquire: %v", err)
		}
		wg.Wait()
		if n, _ := f.counts(); n != 1 {
			t.Errorf("%d sessions created for one principal, want 1", n)
		}
		for _, s := range got {
			if s != got[0] {
				t.Fatal("callers got different sessions")
			}
		}
		tab.mu.Lock()
		held := tab.entries["alice"].inflight
		tab.mu.Unlock()
		if held != 0 {
			t.Errorf("%d holds left after every call returned", held)
		}

		f.fail = errors.New("upstream refused")
		if _, _, err := tab.acquire(ctx, "bob"); err == nil || err.Error() != "upstream refused" {
			t.Errorf("failed creation: %v", err)
		}
		f.fail = nil
		if _, release, err := tab.acquire(ctx, "bob"); err != nil {
			t.Errorf("retry after a failed creation: %v", err)
		} else {
			release()
		}
	})
}

// TestSessionTableIdleEviction (synctest): a session unused for the idle
// period is closed (within a quarter of it); one with a call in flight is
// kept however long the call takes, and goes idle only from its release.
func TestSessionTableIdleEviction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeSessions{}
		idle := 10 * time.Minute
		tab := newSessionTable(10, idle, f.create, f.close)
		defer tab.Close()
		ctx := t.Context()

		_, rel, _ := tab.acquire(ctx, "alice")
		rel()
		_, busy, _ := tab.acquire(ctx, "bob") // a call that lasts an hour
		time.Sleep(idle + idle/4 + time.Second)
		if _, closed := f.counts(); !slices.Equal(closed, []string{"alice"}) {
			t.Errorf("after the idle period: closed %v, want [alice]", closed)
		}
		time.Sleep(time.Hour)
		if _, closed := f.counts(); len(closed) != 1 {
			t.Errorf("a session with a call in flight was closed: %v", closed)
		}
		busy()
		time.Sleep(idle - time.Second)
		if tab.len() != 1 {
			t.Errorf("bob's session went before its idle period after the call (%d left)", tab.len())
		}
		time.Sleep(idle/4 + 2*time.Second)
		if _, closed := f.counts(); !slices.Equal(closed, []string{"alice", "bob"}) || tab.len() != 0 {
			t.Errorf("closed %v, %d left; want bob idle-closed too", closed, tab.len())
		}
		// The principal comes back: a new session.
		s, rel, err := tab.acquire(ctx, "alice")
		if err != nil || s.n != 2 {
			t.Errorf("alice again: session %v, %v; want a new one", s, err)
		}
		rel()
	})
}

// TestSessionTableBound (synctest): at the bound, a new principal's
// session evicts the least recently used idle one; when every session has
// a call in flight the new principal gets ErrSessionsFull (an overload,
// not a wait) and nothing is evicted. A rotating population of 100
// principals never holds more than the bound.
func TestSessionTableBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeSessions{}
		tab := newSessionTable(3, time.Hour, f.create, f.close)
		defer tab.Close()
		ctx := t.Context()
		var releases []func()
		for _, p := range []string{"a", "b", "c"} {
			_, rel, err := tab.acquire(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			releases = append(releases, rel)
			time.Sleep(time.Second)
		}
		if _, _, err := tab.acquire(ctx, "d"); !errors.Is(err, ErrSessionsFull) || !errors.Is(err, ErrOverloaded) {
			t.Errorf("full of busy sessions: %v, want ErrSessionsFull (an ErrOverloaded)", err)
		}
		synctest.Wait() // the creating flight closes what it evicted or no longer needs after acquire has returned
		if _, closed := f.counts(); !slices.Equal(closed, []string{"d"}) {
			t.Errorf("closed %v, want only d's unneeded session", closed)
		}
		releases[1]() // b idle now, then c, then a: b is the least recently used
		time.Sleep(time.Second)
		releases[2]()
		releases[0]()
		_, rel, err := tab.acquire(ctx, "e")
		if err != nil {
			t.Fatal(err)
		}
		rel()
		synctest.Wait() // e's creating flight closes b, the session it evicted, after acquire has returned
		if _, closed := f.counts(); !slices.Equal(closed, []string{"d", "b"}) {
			t.Errorf("closed %v, want b (least recently used) evicted", closed)
		}

		peak := 0
		for i := range 100 {
			_, rel, err := tab.acquire(ctx, fmt.Sprintf("p%d", i))
			if err != nil {
				t.Fatal(err)
			}
			peak = max(peak, tab.len())
			time.Sleep(time.Millisecond)
			rel()
		}
		if peak > 3 {
			t.Errorf("%d sessions at the peak, bound 3", peak)
		}
	})
}

// TestSessionTableDropAndClose: a dead session dropped is replaced on the
// next call (a stale drop does nothing); Close closes every session once,
// held ones too, and cancels and waits for creations in flight.
func TestSessionTableDropAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeSessions{delay: time.Second}
		tab := newSessionTable(10, time.Hour, f.create, f.close)
		ctx := t.Context()
		s1, rel, _ := tab.acquire(ctx, "alice")
		rel()
		tab.drop("alice", s1)
		tab.drop("alice", s1) // already gone: nothing
		s2, rel, _ := tab.acquire(ctx, "alice")
		if s2 == s1 {
			t.Error("a dropped session was handed out again")
		}
		_ = rel // held through Close
		bob := make(chan error, 1)
		go func() { // a creation in flight at Close: cancelled, awaited
			_, _, err := tab.acquire(ctx, "bob")
			bob <- err
		}()
		synctest.Wait()
		tab.Close()
		tab.Close()
		if _, closed := f.counts(); !slices.Equal(closed, []string{"alice", "alice"}) {
			t.Errorf("closed %v: want alice's two sessions", closed)
		}
		if err := <-bob; !errors.Is(err, context.Canceled) {
			t.Errorf("bob's creation at Close: %v, want cancelled", err)
		}
		if _, _, err := tab.acquire(ctx, "carol"); !errors.Is(err, ErrClosed) {
			t.Errorf("acquire after Close: %v", err)
		}
	})
}

// TestSessionTableKeep: the session keep names (a per-user upstream's
// listener) is passed over by the LRU eviction while another idle one can
// go, and by the idle sweep while other sessions stay; it goes when it is
// the only candidate.
func TestSessionTableKeep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeSessions{}
		tab := newSessionTable(2, time.Hour, f.create, f.close)
		tab.keep = func(s *fakeSession) bool { return s.principal == "a" }
		defer tab.Close()
		ctx := t.Context()
		use := func(p string) {
			t.Helper()
			_, rel, err := tab.acquire(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			rel()
			time.Sleep(time.Minute)
		}
		use("a") // the least recently used from here on
		use("b")
		use("c") // evicts b, not a
		if _, closed := f.counts(); !slices.Equal(closed, []string{"b"}) {
			t.Errorf("closed %v, want b: the LRU eviction passes over a", closed)
		}
		// An hour idle: c goes; a stays while c is there to go, then goes
		// as the last one in the same sweep.
		time.Sleep(2 * time.Hour)
		if _, closed := f.counts(); !slices.Equal(closed, []string{"b", "c", "a"}) || tab.len() != 0 {
			t.Errorf("after the idle sweep: closed %v, %d left; want b, c, a and none", closed, tab.len())
		}
	})
}
