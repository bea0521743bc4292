package mcpbridge

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// The refresh work limit: a replica-wide bound on the refresh work done at
// once, so a storm of listings (every upstream announcing list_changed
// together) leaves the calls some CPU.
//
// A listing's CPU is spent once its response has arrived: go-sdk decoding
// the result and checking its tools, the raw-schema check (rawschema.go),
// the size and name checks, and the catalog splice. Each of these runs
// holding a turn of the replica's refreshWork; waiting for the upstream to
// answer does not (the turn is taken through mcp.WithResultGate, once the
// response is in, and given back before the next page is asked for), so an
// upstream that is slow or hangs holds no turn. What runs outside turns:
// reading the response off the connection (the transport) and the garbage
// collector.
//
// Turns go round the upstreams that wait, one each in turn (fair: an
// upstream with many listings waiting, such as a per-user upstream's
// principals, gets one turn a round like any other, so neither an upstream
// nor a principal can hold the limit alone while others wait), and in
// order of arrival within an upstream. A single upstream's refresh waits
// only while others' work is running: its debounce and freshness are
// unchanged.
//
// Calls first: when calls are being made (counted by Bridge.request: one
// in flight when the turn ends, one begun since it was taken, or one begun
// within callsRecent) and other listings wait for
// a turn (a storm), the turn rests as long as it worked before it is given
// back, so the storm's work takes at most half of the limit's cores while
// calls are made. Calls one after another are in flight in the bridge a
// fraction of the time (the rest is gRPC's goroutines, the network, the
// caller), so a turn's end usually falls between two of them: counting
// only the calls in flight at that instant let most of a storm's turns run
// back to back under such traffic (docs/benchmarks.md, "Calls during a
// refresh storm: what ran while a call waited"). A storm's turns otherwise run back to back on a core, and a
// call's goroutines (gRPC's reader and writer, the upstream connection's)
// queue behind them and the transport's reads for the other core
// (docs/benchmarks.md, "Calls during a refresh storm: where they wait").
// Without calls, or without others waiting, nothing rests: a storm with
// no traffic, or one upstream's refresh, runs as fast as before. Rests
// are bounded by the rest budget (stormRestBudget): a turn rests only as
// long as the listings still to be worked, at the recent mean turn, end
// within the budget of the oldest waiting listing's arrival, so a box
// whose load stretches the turns does not see its storm doubled too.
//
// The window: at most askWindow listings of the replica are on the wire at
// once (asked for, their response not yet arrived). Reading a response off
// the connection (the transport's goroutines, the session taps) is outside
// the turns; without the window the 500 responses of a storm arrive
// together and their readers, hundreds of goroutines runnable at once,
// queue the calls' goroutines behind them. Places go round the upstreams
// that wait, one each, like turns; a place is given back when the
// response arrives, or listingGrace after it was asked for, whichever is
// first: an upstream slow to answer or hung holds a place no longer than
// that.

// defaultRefreshWork is the limit when none is configured: all cores but
// one, at least one.
func defaultRefreshWork() int {
	return max(1, runtime.GOMAXPROCS(0)-1)
}

// askWindow is the number of listings on the wire at once: a few per
// turn of work, so responses are ready when a turn is free.
func askWindow(limit int) int { return 8 * max(1, limit) }

// listingGrace is how long a listing keeps its place in the window while
// its upstream has not answered (a variable for tests). It also sets the
// window's slowest pace: with upstreams that all take longer than this to
// answer, askWindow listings go out every listingGrace (160 a second on 2
// cores: a storm of 500 such upstreams is asked for within 3.1 s), where a
// longer grace would stretch a slow fleet's storm past the 5 s it has.
var listingGrace = 50 * time.Millisecond

// maxTurnRest bounds a turn's rest: a turn of more than a second (a
// listing of tens of thousands of tools in one page) rests a second, so
// one huge listing delays the others of its storm by no more than that.
const maxTurnRest = time.Second

// stormRestBudget bounds what the rests add to a storm: a turn rests only
// as long as the listings still to be worked (waiting for a turn, on the
// wire or waiting to be asked for), at the mean work of the recent turns
// of listings that arrived since the oldest of them, are all worked
// within this time of that oldest one's arrival: when it began to wait
// for a place in the window (to be asked for), or for a turn once its
// response was in (what an upstream takes to answer is not counted, so a
// slow or hostile upstream's page, or a long pass's later page, brings no
// old arrival that would leave no rest to anyone while it waits: a
// review). The budget is each listing's, not a storm's: a storm's
// listings arrive together, so it bounds the storm; and listings that
// keep coming (upstreams that change all the time, a hostile one
// included) make no endless storm whose budget would be spent once, with
// no rest for any real storm after it (a review of an earlier form, which
// reckoned the budget from a storm's first turn and ended a storm only at
// an idle gap). A turn's work is measured in wall time, which a loaded
// box stretches; resting as long again doubled a storm that load had
// already stretched (8.6-9.4 s to re-list 500 upstreams at load 15-22,
// against a 5 s goal: docs/benchmarks.md, "Calls during a refresh storm:
// what ran while a call waited"). With the budget a storm whose own work
// fills it rests no more and runs its turns back to back. Four seconds
// leave a second of the 5 s goal to the debounce and the first asks.
const stormRestBudget = 4 * time.Second

// refreshWork hands out turns of refresh work, at most limit at once.
type refreshWork struct {
	limit int
	// calls counts the requests to upstreams in flight on the replica
	// (Bridge.request), begun all those ever begun: a storm's turn rests
	// when one was in flight during it (pace).
	calls atomic.Int64
	begun atomic.Int64
	// lastCall is when the last request began, as the monotonic time
	// since epoch plus one (0: none began; calls being made: callsRecent).
	lastCall atomic.Int64
	epoch    time.Time
	// window hands out the places of listings on the wire, as turns are
	// handed out (nil in the window itself).
	window *refreshWork

	// restBudget is stormRestBudget (a field for tests).
	restBudget time.Duration

	mu      sync.Mutex
	running int                    // turns held
	queued  int                    // waiters in waiting
	waiting map[string][]*workTurn // by upstream, in order of arrival
	ring    []string               // upstreams with waiters, next first
	peak    int                    // most turns ever held at once (tests)
	turns   int64                  // turns given (tests)
	// recent is the last turns given back (their listings' arrival and
	// their work), next the slot the next one goes to: the work to come
	// is reckoned at the mean of those whose listings arrived with or
	// after the oldest one waiting.
	recent [recentTurns]doneTurn
	next   int
}

// callsRecent is how long after a call began the storm's turns go on
// resting as if one were in flight. A storm's turns running
// back to back keep the calls' goroutines from running (a call's response
// is noticed when a P runs out of work, or by the runtime's 10 ms network
// poll), so a turn during which no call could begin does not mean that
// none is being made: judged turn by turn, chains of turns ran back to
// back for 5-56 ms (55 of the storm's ~200 chains over 5 ms) between the
// quiet caller's calls (docs/benchmarks.md, "Calls during a refresh
// storm: turns that did not rest"). The rest budget still bounds what
// the rests add to a storm, and a storm without calls, or one whose calls
// stopped this long ago, does not rest.
const callsRecent = 100 * time.Millisecond

// recentTurns is how many of the last turns given back the mean work per
// turn is taken over.
const recentTurns = 64

// doneTurn is one turn given back: when its listing arrived, and how long
// it worked.
type doneTurn struct {
	arrival time.Time
	worked  time.Duration
}

// workTurn is one waiter's place.
type workTurn struct {
	ready   chan struct{} // closed when granted
	granted bool          // under refreshWork.mu
	arrival time.Time     // when it began to wait (for a place, or for a turn)
}

func newRefreshWork(limit int) *refreshWork {
	w := newTurns(limit)
	w.window = newTurns(askWindow(limit))
	return w
}

// newTurns is a fair queue of limit turns.
func newTurns(limit int) *refreshWork {
	return &refreshWork{limit: max(1, limit), waiting: map[string][]*workTurn{}, restBudget: stormRestBudget, epoch: time.Now()}
}

// ask waits for a place in the window for key's listing about to be asked
// for (round the upstreams that wait, as turns) and returns the func that
// gives it back (once; it is given back by itself listingGrace later). An
// error (ctx's) means no place was taken.
func (w *refreshWork) ask(ctx context.Context, key string, arrival time.Time) (func(), error) {
	if err := w.window.acquire(ctx, key, arrival); err != nil {
		return nil, err
	}
	var once sync.Once
	give := func() { once.Do(w.window.release) }
	t := time.AfterFunc(listingGrace, give)
	return func() {
		t.Stop()
		give()
	}, nil
}

// acquire waits for a turn for key's work, of a listing that arrived at
// arrival; an error (ctx's) means none was taken.
func (w *refreshWork) acquire(ctx context.Context, key string, arrival time.Time) error {
	w.mu.Lock()
	if w.running < w.limit && len(w.ring) == 0 {
		w.grantLocked()
		w.mu.Unlock()
		return nil
	}
	t := &workTurn{ready: make(chan struct{}), arrival: arrival}
	if len(w.waiting[key]) == 0 {
		w.ring = append(w.ring, key)
	}
	w.waiting[key] = append(w.waiting[key], t)
	w.queued++
	w.mu.Unlock()
	select {
	case <-t.ready:
		return nil
	case <-ctx.Done():
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if t.granted { // granted meanwhile: pass it on
		w.releaseLocked()
		return ctx.Err()
	}
	q := w.waiting[key]
	for i, x := range q {
		if x == t {
			q = append(q[:i:i], q[i+1:]...)
			w.queued--
			break
		}
	}
	if len(q) == 0 {
		delete(w.waiting, key)
		for i, k := range w.ring {
			if k == key {
				w.ring = append(w.ring[:i:i], w.ring[i+1:]...)
				break
			}
		}
	} else {
		w.waiting[key] = q
	}
	return ctx.Err()
}

// callBegan counts a request to an upstream begun; callEnded when it
// ends.
func (w *refreshWork) callBegan() {
	w.begun.Add(1)
	w.calls.Add(1)
	w.lastCall.Store(int64(time.Since(w.epoch)) + 1)
}

// callsMade reports whether calls are being made at now: one is in
// flight, one began since begunAtTake was read, or one began within
// callsRecent.
func (w *refreshWork) callsMade(now time.Time, begunAtTake int64) bool {
	if w.calls.Load() > 0 || w.begun.Load() != begunAtTake {
		return true
	}
	last := w.lastCall.Load()
	return last != 0 && now.Sub(w.epoch)-time.Duration(last-1) < callsRecent
}

func (w *refreshWork) callEnded() { w.calls.Add(-1) }

// rest is how long a turn rests before it is given back, given how long
// it worked, when its listing arrived, and the count of requests begun
// when it was taken: when calls are being made (one is in flight now, one
// began since the turn was taken, or one is known to have begun within
// callsRecent) and other listings wait for a turn, as long
// again, or up to maxRestFactor times where the rest budget spread over
// the turns to come allows (at most maxTurnRest); else nothing; and never
// so long that the listings waiting would be worked later than the rest
// budget (stormRestBudget) after the oldest of them arrived.
func (w *refreshWork) rest(worked time.Duration, arrival time.Time, begunAtTake int64) time.Duration {
	now := time.Now()
	worked = max(worked, 0)
	w.mu.Lock()
	w.recent[w.next] = doneTurn{arrival: arrival, worked: worked}
	w.next = (w.next + 1) % recentTurns
	waiting, queued := len(w.ring) > 0, w.queued
	oldest := w.oldestLocked()
	w.mu.Unlock()
	if !waiting {
		return 0
	}
	d := w.restFor(worked, oldest, queued, w.callsMade(now, begunAtTake), now)
	if hook := workRestHook; hook != nil {
		hook(d)
	}
	return d
}

// workRestHook, when set (tests), is called with the rest of every turn
// given back while other listings waited for one.
var workRestHook func(rest time.Duration)

// restFor is the rest of a turn given back at now, that worked worked,
// while queued listings wait (the oldest arrived at oldest), calls being
// made or not.
func (w *refreshWork) restFor(worked time.Duration, oldest time.Time, queued int, calls bool, now time.Time) time.Duration {
	if worked <= 0 || !calls {
		return 0
	}
	if win := w.window; win != nil {
		win.mu.Lock()
		queued += win.running + win.queued // listings on the wire or to be asked for
		if o := win.oldestLocked(); o.Before(oldest) {
			oldest = o
		}
		win.mu.Unlock()
	}
	// What the listings still to be worked will take, on the limit's
	// turns at the mean of the recent turns of listings that arrived
	// since the oldest waiting one (this storm's, not an earlier one's):
	// the rest of the oldest one's budget is slack.
	mean := w.meanSince(oldest, worked)
	slack := oldest.Add(w.restBudget).Sub(now) - time.Duration(queued)*mean/time.Duration(w.limit)
	if slack <= 0 {
		return 0
	}
	// As long as it worked (calls first), within the slack; longer, up to
	// maxRestFactor times, where the slack spread evenly over this turn
	// and those to come allows it.
	share := slack / time.Duration(queued/w.limit+1)
	return min(maxTurnRest, max(min(worked, slack), min(maxRestFactor*worked, share)))
}

// oldestLocked is the arrival of the oldest listing waiting for a turn
// (or, in the window, for a place); now when none waits.
func (w *refreshWork) oldestLocked() time.Time {
	oldest := time.Now()
	for _, q := range w.waiting {
		for _, t := range q {
			if t.arrival.Before(oldest) {
				oldest = t.arrival
			}
		}
	}
	return oldest
}

// meanSince is the mean work of the recent turns whose listings arrived
// at or after since (worked, the turn just given back, when none did).
func (w *refreshWork) meanSince(since time.Time, worked time.Duration) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var sum time.Duration
	n := 0
	for _, d := range w.recent {
		if !d.arrival.IsZero() && !d.arrival.Before(since) {
			sum += d.worked
			n++
		}
	}
	if n == 0 {
		return worked
	}
	return sum / time.Duration(n)
}

// maxRestFactor bounds a turn's rest to that many times its work. A
// storm's cost is not only its turns': reading the responses (outside the
// turns) and, on a box that also runs them, the upstreams answering scale
// with how fast the listings go out, not with the turns' work, so a turn
// made cheaper (schemas kept as text, docs/benchmarks.md "Re-list storms:
// schemas as text") paced the storm faster and left the calls less of the
// machine with a rest of its work alone. A rest up to three times the
// work, where the storm's budget has room for it, keeps a cheaper storm at
// least at its former pace.
const maxRestFactor = 3

// release gives a turn back.
func (w *refreshWork) release() {
	w.mu.Lock()
	w.releaseLocked()
	w.mu.Unlock()
}

// releaseLocked gives a turn back (a turn released, or granted to a
// waiter that gave up meanwhile).
func (w *refreshWork) releaseLocked() {
	w.running--
	w.nextLocked()
}

func (w *refreshWork) grantLocked() {
	w.running++
	w.turns++
	w.peak = max(w.peak, w.running)
}

// nextLocked grants free turns to the next upstreams of the ring, the
// first waiter of each, and moves each to the ring's end if it still has
// waiters.
func (w *refreshWork) nextLocked() {
	for w.running < w.limit && len(w.ring) > 0 {
		key := w.ring[0]
		w.ring = w.ring[1:]
		q := w.waiting[key]
		t := q[0]
		w.queued--
		if len(q) == 1 {
			delete(w.waiting, key)
		} else {
			w.waiting[key] = q[1:]
			w.ring = append(w.ring, key)
		}
		t.granted = true
		w.grantLocked()
		close(t.ready)
	}
}

// stats are the most turns held at once and the turns given so far.
func (w *refreshWork) stats() (peak int, turns int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak, w.turns
}

// workHold is one refresh pass's turn: taken when a response of the pass
// has arrived (gate) or before its own work (gate again: a no-op while
// held), given back before the pass waits on its upstream again (release).
// Used by the one goroutine that runs the pass.
type workHold struct {
	w    *refreshWork
	key  string
	held bool
	// since is when the turn was taken, begun the replica's requests
	// begun by then; done ends a rest early (the pass's context).
	since time.Time
	begun int64
	done  <-chan struct{}
	// arrival is when the pass asked for its turn (gate): its work's
	// arrival, which bounds the rests while it waits (stormRestBudget).
	arrival time.Time
	// give gives back the pass's place in the window while a page is
	// asked for (nil: none held).
	give func()
}

// workTurnHook, when set (tests), is called when a pass takes its turn
// (true) and when its work is done, before any rest (false).
var workTurnHook func(key string, taken bool)

// gate takes the pass's turn unless it holds it; it is the pass's
// mcp.WithResultGate.
func (h *workHold) gate(ctx context.Context) error {
	h.arrived()
	if h.held {
		return nil
	}
	// The page's work arrives now (its response is in, or the pass's own
	// work begins): what its upstream took to answer is not the refresh
	// work's to make up, so a slow or hostile upstream's page, or a long
	// pass's later one, waits with a budget of its own, never an old one
	// that would leave no rest to any turn while it waits.
	h.arrival = time.Now()
	if err := h.w.acquire(ctx, h.key, h.arrival); err != nil {
		return err
	}
	h.held, h.since, h.begun, h.done = true, time.Now(), h.w.begun.Load(), ctx.Done()
	if hook := workTurnHook; hook != nil {
		hook(h.key, true)
	}
	return nil
}

// ask takes a place in the window before the pass asks its upstream for
// a page.
func (h *workHold) ask(ctx context.Context) error {
	give, err := h.w.ask(ctx, h.key, time.Now()) // waiting for a place from now
	if err != nil {
		return err
	}
	h.give = give
	return nil
}

// arrived gives the pass's place in the window back, if held: the page's
// response is in, or the request ended.
func (h *workHold) arrived() {
	if h.give != nil {
		h.give()
		h.give = nil
	}
}

// release gives the pass's turn back, if held, after its rest (pace).
func (h *workHold) release() {
	if !h.held {
		return
	}
	h.held = false
	if hook := workTurnHook; hook != nil {
		hook(h.key, false)
	}
	if d := h.w.rest(time.Since(h.since), h.arrival, h.begun); d > 0 {
		// Resting holds the turn: nobody's refresh work runs on it.
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-h.done:
			t.Stop()
		}
	}
	h.w.release()
}
