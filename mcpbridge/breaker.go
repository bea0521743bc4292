package mcpbridge

import (
	"hash/fnv"
	"time"
)

// BreakerState is the state of an upstream's circuit breaker.
type BreakerState int

const (
	BreakerClosed BreakerState = iota + 1
	BreakerOpen
	BreakerHalfOpen
)

func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half-open"
	}
	return "unknown"
}

// breaker fails calls fast while an upstream is known bad. Failures in a
// row (failed connects, sessions that die young, probes that find the
// session dead, calls that lose their session or run out of time) open it
// for a cooldown that doubles with each trip, up to a maximum, plus up to
// 10% jitter seeded by the server name (replicas do not retry in step).
// After the cooldown one trial call goes through (half-open); its success
// closes the breaker, its failure re-opens it for longer. A success also
// shortens the next cooldown by one step, so a flapping upstream keeps
// escalating while a recovered one forgets.
//
// Not safe for concurrent use: the upstream guards it with its mutex.
type breaker struct {
	cfg      BreakerConfig
	seed     uint32
	failures int
	trips    int
	until    time.Time // open until; zero when closed
	trial    bool      // a half-open trial call is in flight
	// lastOK is when the upstream last answered or connected (noteOK).
	lastOK time.Time
}

// noteOK records that the upstream answered at now.
func (b *breaker) noteOK(now time.Time) { b.lastOK = now }

// stale reports an attempt that began before the upstream last answered:
// its failure says nothing the success did not supersede (a connect begun
// during an outage that fails after the upstream came back), so it does
// not count.
func (b *breaker) stale(began time.Time) bool {
	return !began.IsZero() && began.Before(b.lastOK)
}

func newBreaker(cfg BreakerConfig, name string) breaker {
	h := fnv.New32a()
	h.Write([]byte(name))
	return breaker{cfg: cfg, seed: h.Sum32()}
}

func (b *breaker) state(now time.Time) BreakerState {
	switch {
	case b.until.IsZero():
		return BreakerClosed
	case now.Before(b.until):
		return BreakerOpen
	}
	return BreakerHalfOpen
}

// allow says whether a call may proceed now; if not, when to retry. A
// half-open breaker lets one trial through at a time; trial reports
// whether this call is it (only the trial may end it with neutral).
func (b *breaker) allow(now time.Time) (ok bool, retry time.Duration, trial bool) {
	switch b.state(now) {
	case BreakerClosed:
		return true, 0, false
	case BreakerOpen:
		return false, b.until.Sub(now), false
	}
	if b.trial {
		return false, time.Second, false
	}
	b.trial = true
	return true, 0, true
}

// success records a good outcome: the breaker closes.
func (b *breaker) success() {
	b.failures = 0
	b.until = time.Time{}
	b.trial = false
	if b.trips > 0 {
		b.trips--
	}
}

// reconnected records a new session: calls may flow again, but the failure
// count is kept, so an upstream that connects and then fails re-trips at
// once.
func (b *breaker) reconnected() {
	b.until = time.Time{}
	b.trial = false
}

// neutral ends a trial without a verdict (e.g. the caller cancelled).
func (b *breaker) neutral() { b.trial = false }

// failure records a bad outcome and reports whether the breaker opened.
func (b *breaker) failure(now time.Time) bool {
	b.failures++
	b.trial = false
	if b.cfg.Failures < 0 || b.failures < b.cfg.Failures || b.state(now) == BreakerOpen {
		return false
	}
	d := b.cfg.Cooldown
	for i := 0; i < b.trips && d < b.cfg.MaxCooldown; i++ {
		d *= 2
	}
	d = min(d, b.cfg.MaxCooldown)
	// Deterministic per (server, trip) jitter of up to 10%.
	j := (b.seed ^ uint32(b.trips)*2654435761) % 1000
	d += d / 10 * time.Duration(j) / 1000
	b.until = now.Add(d)
	b.trips++
	return true
}
