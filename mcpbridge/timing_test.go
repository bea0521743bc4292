package mcpbridge

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Timing logic under testing/synctest: the bubble's clock is fake, so
// these check exact durations without sleeping for real.

// debounceSession is a session with just what debounce reads.
func debounceSession(quiet, maxDelay time.Duration) *session {
	u := &upstream{cfg: ServerConfig{RefreshDebounce: quiet, RefreshMaxDelay: maxDelay}}
	u.source = sharedSession{u} // newUpstream's choice for shared credentials
	s := &session{u: u, dirty: make(chan struct{}, 1), markBase: time.Now()}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.deadCtx, s.deadCancel = context.WithCancelCause(context.Background())
	return s
}

// TestDebounceWaitsForQuiet: marks 10 ms apart keep the refresh waiting
// until they have been quiet for RefreshDebounce.
func TestDebounceWaitsForQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := debounceSession(50*time.Millisecond, 500*time.Millisecond)
		defer s.cancel()
		start := time.Now()
		go func() {
			for range 5 { // marks at 0, 10, …, 40 ms
				s.markDirty()
				time.Sleep(10 * time.Millisecond)
			}
		}()
		<-s.dirty // the first mark starts the wait, as in refresher
		if !s.debounce() {
			t.Fatal("debounce gave up")
		}
		if got, want := time.Since(start), 90*time.Millisecond; got != want {
			t.Fatalf("debounce ended after %s, want %s (last mark at 40 ms + 50 ms quiet)", got, want)
		}
	})
}

// TestDebounceCountsAbsorbedMarks: list_changed notifications the stdio
// connection absorbs while the refresher debounces (absorbListChanged)
// keep it waiting as marks do, from the time each was read; outside a
// debounce nothing is absorbed (go-sdk delivers it, markDirty marks).
func TestDebounceCountsAbsorbedMarks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := debounceSession(50*time.Millisecond, 500*time.Millisecond)
		defer s.cancel()
		if s.absorbListChanged() {
			t.Fatal("absorbed a notification with no debounce running")
		}
		start := time.Now()
		done := make(chan time.Duration)
		go func() {
			if !s.debounce() {
				t.Error("debounce gave up")
			}
			done <- time.Since(start)
		}()
		for range 4 { // absorbed at 0, 30, 60, 90 ms
			synctest.Wait()
			if !s.absorbListChanged() {
				t.Fatalf("not absorbed during the debounce, at %s", time.Since(start))
			}
			time.Sleep(30 * time.Millisecond)
		}
		if got, want := <-done, 140*time.Millisecond; got != want {
			t.Fatalf("debounce ended after %s, want %s (last absorbed at 90 ms + 50 ms quiet)", got, want)
		}
		if s.absorbListChanged() {
			t.Fatal("absorbed a notification after the debounce ended")
		}
		// A stateless-era session: go-sdk caches its lists until a
		// list_changed reaches it, so nothing is absorbed even while
		// debouncing.
		s.listsCached = true
		go func() { s.debounce(); done <- 0 }()
		synctest.Wait()
		if s.absorbListChanged() {
			t.Fatal("absorbed a notification on a session whose lists go-sdk caches")
		}
		<-done
		s.listsCached = false
		// A mark absorbed in an earlier debounce does not extend this one.
		start = time.Now()
		if !s.debounce() {
			t.Fatal("debounce gave up")
		}
		if got, want := time.Since(start), 50*time.Millisecond; got != want {
			t.Fatalf("a quiet debounce took %s, want %s", got, want)
		}
	})
}

// TestDebounceCapsAnAbsorbedStorm: absorbed notifications that never stop
// still refresh after RefreshMaxDelay.
func TestDebounceCapsAnAbsorbedStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := debounceSession(50*time.Millisecond, 500*time.Millisecond)
		defer s.cancel()
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
					s.absorbListChanged()
				}
			}
		}()
		start := time.Now()
		if !s.debounce() {
			t.Fatal("debounce gave up")
		}
		close(stop)
		if got, want := time.Since(start), 500*time.Millisecond; got != want {
			t.Fatalf("debounce ended after %s in an absorbed storm, want the %s cap", got, want)
		}
	})
}

// TestDebounceCapsAStorm: marks that never stop still refresh after
// RefreshMaxDelay.
func TestDebounceCapsAStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := debounceSession(50*time.Millisecond, 500*time.Millisecond)
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
					s.markDirty()
				}
			}
		}()
		start := time.Now()
		s.markDirty()
		<-s.dirty
		if !s.debounce() {
			t.Fatal("debounce gave up")
		}
		close(stop)
		s.cancel()
		if got, want := time.Since(start), 500*time.Millisecond; got != want {
			t.Fatalf("debounce ended after %s in a storm, want the %s cap", got, want)
		}
	})
}

// TestProberTiming: an upstream that stops answering pings (but keeps its
// transport open, like a frozen process) is degraded after one probe
// timeout and dead after PingFailures in a row; the supervisor then
// reconnects. Times are exact on the bubble's clock.
func TestProberTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var frozen atomic.Bool
		m := newMemUpstream(t)
		m.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "ping" && frozen.Load() {
					<-ctx.Done() // never answers; ends when the client gives up or the session closes
					return nil, ctx.Err()
				}
				return next(ctx, method, req)
			}
		})
		sc := m.config("p")
		sc.PingInterval, sc.PingTimeout, sc.PingFailures = time.Second, 200*time.Millisecond, 3
		sc.BackoffBase, sc.BackoffMax = time.Second, time.Second
		b, err := New(Config{Servers: []ServerConfig{sc}})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		<-b.Ready()
		state := func() (State, int64) {
			st, _ := b.Server("p")
			return st.State, st.ConnectCount
		}
		frozen.Store(true)
		time.Sleep(time.Second + 200*time.Millisecond - time.Millisecond)
		synctest.Wait()
		if st, _ := state(); st != StateReady {
			t.Fatalf("before the first probe timed out: %v, want ready", st)
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		if st, _ := state(); st != StateDegraded {
			t.Fatalf("after one probe timeout: %v, want degraded", st)
		}
		// Probes 2 and 3 time out at 2.2 s and 3.2 s: dead at the third.
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if st, n := state(); st == StateReady || n != 1 {
			t.Fatalf("after the third probe timeout: %v, connects %d; want the session dead", st, n)
		}
		frozen.Store(false)
		time.Sleep(2 * time.Second) // backoff ≤ 1 s, then connect
		synctest.Wait()
		if st, n := state(); st != StateReady || n != 2 {
			t.Fatalf("after the backoff: %v, connects %d; want ready on session 2", st, n)
		}
	})
}

// TestPushlessRefreshInterval: while the push channel is down, the
// refresher re-lists every PushlessRefresh; once it is up again, it goes
// back to the backstop interval.
func TestPushlessRefreshInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemUpstream(t)
		var lists atomic.Int64
		m.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "tools/list" {
					lists.Add(1)
				}
				return next(ctx, method, req)
			}
		})
		sc := m.config("r")
		sc.PingInterval = -1
		sc.PushlessRefresh = time.Second
		sc.RefreshInterval = time.Hour
		b, err := New(Config{Servers: []ServerConfig{sc}})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		<-b.Ready()
		synctest.Wait()
		u, _ := b.upstream("r")
		s := u.sess.Load()
		base := lists.Load()
		s.push.set(pushDown, "test: stream closed")
		time.Sleep(3*time.Second + time.Millisecond)
		synctest.Wait()
		if got := lists.Load() - base; got != 3 {
			t.Fatalf("%d lists in 3 s with the push channel down, want 3 (one per second)", got)
		}
		s.push.set(pushUp, "")
		synctest.Wait()
		base = lists.Load() // one catch-up list when the channel comes back
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got := lists.Load() - base; got != 0 {
			t.Fatalf("%d lists in 10 s with the push channel up, want none before the 1 h backstop", got)
		}
	})
}

// TestProgressSettles: a result that overtakes its last progress
// notifications waits for them (at most progressGrace, and only while the
// progress has a total it has not reached).
func TestProgressSettles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []float64
		p := &progressSink{f: func(pr Progress) { got = append(got, pr.Progress) }}
		p.deliver(Progress{Progress: 0, Total: 100})
		go func() {
			time.Sleep(5 * time.Millisecond)
			p.deliver(Progress{Progress: 50, Total: 100})
			time.Sleep(5 * time.Millisecond)
			p.deliver(Progress{Progress: 100, Total: 100})
		}()
		start := time.Now()
		p.settle(context.Background(), progressGrace)
		if took := time.Since(start); took != 10*time.Millisecond || len(got) != 3 {
			t.Fatalf("settled after %s with %v, want 10ms and all three steps", took, got)
		}
		// Progress that never completes costs the grace, once.
		q := &progressSink{f: func(Progress) {}}
		q.deliver(Progress{Progress: 1, Total: 3})
		start = time.Now()
		q.settle(context.Background(), progressGrace)
		if took := time.Since(start); took != progressGrace {
			t.Fatalf("incomplete progress settled after %s, want %s", took, progressGrace)
		}
		// No total, or no progress: no wait.
		r := &progressSink{f: func(Progress) {}}
		r.deliver(Progress{Progress: 7})
		start = time.Now()
		r.settle(context.Background(), progressGrace)
		if took := time.Since(start); took != 0 {
			t.Fatalf("progress without a total waited %s", took)
		}
	})
}

// TestResubscribeBackoff: a resource subscription stream that keeps ending
// soon after it comes up is re-opened after 100 ms, 200 ms, … up to 5 s; one
// that stayed up longer than 10 s starts again at 100 ms.
func TestResubscribeBackoff(t *testing.T) {
	var got []time.Duration
	w := time.Duration(0)
	for range 8 {
		w = nextResubscribeWait(w, time.Second)
		got = append(got, w)
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 5 * time.Second, 5 * time.Second}
	if !slices.Equal(got, want) {
		t.Fatalf("waits %v, want %v", got, want)
	}
	if w := nextResubscribeWait(5*time.Second, 11*time.Second); w != 100*time.Millisecond {
		t.Fatalf("after a stable stream: %v, want 100ms", w)
	}
}

// logRecorder is a slog.Handler keeping the records' messages and
// attributes, for tests that read what the operator would see.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.recs = append(l.recs, r.Clone())
	l.mu.Unlock()
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// attrs returns the value of attribute key of every record with message msg.
func (l *logRecorder) attrs(msg, key string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.recs {
		if r.Message != msg {
			continue
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == key {
				out = append(out, a.Value.String())
			}
			return true
		})
	}
	return out
}

// TestNeverReadyBackoffGrows: an upstream that connects but never answers
// tools/list is a failed attempt each time, so the backoff grows. The
// session lived past StableAfter while it listed (RefreshTimeout), and was
// taken for stable: every reconnect came after attempt 0, a fixed 30 s
// loop (docs/security.md).
func TestNeverReadyBackoffGrows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemUpstream(t)
		m.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "tools/list" {
					<-ctx.Done() // never answers
					return nil, ctx.Err()
				}
				return next(ctx, method, req)
			}
		})
		sc := m.config("hang")
		sc.PingInterval = -1
		sc.RefreshTimeout = 30 * time.Second
		sc.StableAfter = 10 * time.Second
		sc.BackoffBase = time.Second
		sc.BackoffMax = time.Hour
		sc.Breaker = BreakerConfig{Failures: 1000}
		logs := &logRecorder{}
		b, err := New(Config{Servers: []ServerConfig{sc}, Logger: slog.New(logs)})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		<-b.Ready()
		for len(logs.attrs("upstream down; reconnecting", "attempt")) < 5 {
			time.Sleep(time.Second)
			synctest.Wait()
		}
		got := logs.attrs("upstream down; reconnecting", "attempt")[:5]
		if want := []string{"1", "2", "3", "4", "5"}; !slices.Equal(got, want) {
			t.Fatalf("reconnect attempts %v, want %v (a session that never became ready is a failed attempt)", got, want)
		}
		st, _ := b.Server("hang")
		if st.State == StateReady || st.ConsecutiveFailures < 5 {
			t.Fatalf("status %v with %d consecutive failures, want not ready and at least 5", st.State, st.ConsecutiveFailures)
		}
	})
}

// TestProbesRunWhileAListingHangs: the refresher and the prober share the
// supervisor's goroutine (sessionloop.go), yet a listing that hangs holds
// no probe back: an upstream that stops answering both tools/list and ping
// (a frozen process whose transport stays open) is dead after
// PingFailures probe timeouts, not after the 30 s RefreshTimeout. Times
// are exact on the bubble's clock.
func TestProbesRunWhileAListingHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var frozen atomic.Bool
		m := newMemUpstream(t)
		m.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if (method == "ping" || method == "tools/list") && frozen.Load() {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return next(ctx, method, req)
			}
		})
		sc := m.config("p")
		sc.PingInterval, sc.PingTimeout, sc.PingFailures = time.Second, 200*time.Millisecond, 3
		sc.RefreshTimeout = 30 * time.Second
		sc.BackoffBase, sc.BackoffMax = time.Second, time.Second
		b, err := New(Config{Servers: []ServerConfig{sc}})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		<-b.Ready()
		synctest.Wait()
		u, _ := b.upstream("p")
		frozen.Store(true)
		u.sess.Load().markDirty() // a list_changed: the re-list hangs
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		// Probes at 1 s, 2 s and 3 s time out 200 ms later each: dead at
		// 3.2 s, while the listing still waits for its 30 s timeout.
		time.Sleep(3*time.Second + 200*time.Millisecond - 100*time.Millisecond - time.Millisecond)
		synctest.Wait()
		if st, _ := b.Server("p"); st.State != StateDegraded || st.ConnectCount != 1 {
			t.Fatalf("before the third probe timed out: %v, connects %d; want degraded on session 1", st.State, st.ConnectCount)
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		if st, _ := b.Server("p"); st.State == StateReady || st.State == StateDegraded {
			t.Fatalf("after the third probe timeout: %v; want the session dead though its listing hangs", st.State)
		}
		frozen.Store(false)
		time.Sleep(2 * time.Second) // backoff ≤ 1 s, then connect
		synctest.Wait()
		if st, _ := b.Server("p"); st.State != StateReady || st.ConnectCount != 2 {
			t.Fatalf("after the backoff: %v, connects %d; want ready on session 2", st.State, st.ConnectCount)
		}
	})
}
