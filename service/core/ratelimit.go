package core

import (
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// RateLimit limits the tool calls of the principals matching a glob. The
// first rule whose Principal matches applies; a principal no rule matches
// is not limited. Each principal has its own token bucket and concurrency
// count (a rule for "agent-*" gives every agent its own budget).
type RateLimit struct {
	Principal string // glob over principal names (path.Match)
	// CallsPerSecond refills the principal's token bucket; 0: no rate limit.
	CallsPerSecond float64
	// Burst is the bucket's size: calls allowed at once after a quiet
	// period. 0 means max(1, ceil(CallsPerSecond)).
	Burst int
	// MaxConcurrent caps the principal's calls in flight; 0: no cap.
	MaxConcurrent int
}

// maxLimitedPrincipals bounds the per-principal state. Past it, principals
// whose bucket is full again and who have nothing in flight are evicted
// (forgetting them loses nothing), then, if that is not enough, every
// principal with nothing in flight (which at worst forgives part of a
// spent bucket).
var maxLimitedPrincipals = 10000 // a variable for tests

// concurrencyRetryAfter is the RetryInfo hint of a refusal for
// maxConcurrent: calls in flight end at no predictable time.
const concurrencyRetryAfter = 100 * time.Millisecond

// rateLimiter applies RateLimit rules in the call pipeline. A limiter is
// immutable in its rules; a reload builds a new one from its predecessor
// (newRateLimiter), sharing its lock and the per-principal state of every
// principal whose rule did not change.
type rateLimiter struct {
	rules    []RateLimit
	observer Observer

	mu *sync.Mutex // shared by a limiter and its successors: entries move between them
	m  map[string]*principalLimit
}

type principalLimit struct {
	rule     *RateLimit
	bucket   *rate.Limiter // nil: no rate limit
	inflight int
	last     time.Time
}

// newRateLimiter returns the limiter of rules (nil without rules). prev,
// if set, is the limiter it replaces: a principal whose first matching
// rule is equal in both keeps its bucket and in-flight count (an unrelated
// change resets nobody); one whose rule changed keeps its in-flight count
// (its calls still end) and gets a fresh bucket of the new rule; one no
// rule matches any more is forgotten.
func newRateLimiter(rules []RateLimit, o Observer, prev *rateLimiter) *rateLimiter {
	if len(rules) == 0 {
		return nil
	}
	r := &rateLimiter{rules: slices.Clone(rules), observer: o, mu: &sync.Mutex{}, m: map[string]*principalLimit{}}
	for i := range r.rules {
		if r.rules[i].CallsPerSecond > 0 && r.rules[i].Burst <= 0 {
			r.rules[i].Burst = max(1, int(math.Ceil(r.rules[i].CallsPerSecond)))
		}
	}
	if prev == nil {
		return r
	}
	r.mu = prev.mu
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, e := range prev.m {
		rule := r.ruleFor(name)
		switch {
		case rule == nil:
			continue
		case *rule == *e.rule:
			e.rule = rule
		default:
			e.rule, e.bucket = rule, nil
			if rule.CallsPerSecond > 0 {
				e.bucket = rate.NewLimiter(rate.Limit(rule.CallsPerSecond), rule.Burst)
			}
		}
		r.m[name] = e
	}
	return r
}

func (r *rateLimiter) ruleFor(principal string) *RateLimit {
	for i := range r.rules {
		if ok, _ := path.Match(r.rules[i].Principal, principal); ok {
			return &r.rules[i]
		}
	}
	return nil
}

// admitNow is acquire at the current time; without rate limits it reads
// no clock (a clock read on every operation for nothing).
func (r *rateLimiter) admitNow(principal string) (func(), error) {
	if r == nil {
		return nil, nil
	}
	return r.acquire(principal, time.Now())
}

// acquire admits one call of principal at now, or refuses it with
// RATE_LIMITED. The returned release (nil when the principal has no
// concurrency cap) must be called when the call ends.
func (r *rateLimiter) acquire(principal string, now time.Time) (func(), error) {
	if r == nil {
		return nil, nil
	}
	r.mu.Lock()
	e := r.m[principal]
	if e == nil {
		rule := r.ruleFor(principal)
		if rule == nil {
			r.mu.Unlock()
			return nil, nil
		}
		if len(r.m) >= maxLimitedPrincipals {
			r.evictLocked(now)
		}
		e = &principalLimit{rule: rule}
		if rule.CallsPerSecond > 0 {
			e.bucket = rate.NewLimiter(rate.Limit(rule.CallsPerSecond), rule.Burst)
		}
		r.m[principal] = e
	}
	e.last = now
	rule := e.rule
	if rule.MaxConcurrent > 0 && e.inflight >= rule.MaxConcurrent {
		r.mu.Unlock()
		r.refused(principal, "max_concurrent")
		return nil, &Error{Code: ResourceExhausted, Reason: ReasonRateLimited, RetryAfter: concurrencyRetryAfter,
			Message: fmt.Sprintf("principal %q has %d calls in flight, its limit (auth.rateLimits maxConcurrent)", principal, rule.MaxConcurrent),
			Meta:    map[string]string{"principal": principal, "limit": "max_concurrent", "max_concurrent": strconv.Itoa(rule.MaxConcurrent)}}
	}
	if e.bucket != nil {
		res := e.bucket.ReserveN(now, 1)
		if d := res.DelayFrom(now); d > 0 {
			res.CancelAt(now)
			r.mu.Unlock()
			r.refused(principal, "calls_per_second")
			return nil, &Error{Code: ResourceExhausted, Reason: ReasonRateLimited, RetryAfter: d,
				Message: fmt.Sprintf("principal %q is over its rate limit of %g calls per second (burst %d, auth.rateLimits); retry after %s",
					principal, rule.CallsPerSecond, rule.Burst, d.Round(time.Millisecond)),
				Meta: map[string]string{"principal": principal, "limit": "calls_per_second"}}
		}
	}
	if rule.MaxConcurrent <= 0 {
		r.mu.Unlock()
		return nil, nil
	}
	e.inflight++
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			e.inflight--
			r.mu.Unlock()
		})
	}, nil
}

// evictLocked forgets principals that are idle: first those whose bucket
// has refilled, then any with nothing in flight.
func (r *rateLimiter) evictLocked(now time.Time) {
	for name, e := range r.m {
		if e.inflight == 0 && (e.bucket == nil || e.bucket.TokensAt(now) >= float64(e.bucket.Burst())) {
			delete(r.m, name)
		}
	}
	if len(r.m) < maxLimitedPrincipals {
		return
	}
	for name, e := range r.m {
		if e.inflight == 0 {
			delete(r.m, name)
		}
	}
}

func (r *rateLimiter) refused(principal, limit string) {
	if r.observer != nil {
		r.observer.RateLimited(principal, limit)
	}
}

// inFlight reports the calls in flight per limited principal (those with a
// maxConcurrent rule), for the metrics.
func (r *rateLimiter) inFlight() map[string]int {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for name, e := range r.m {
		if e.rule.MaxConcurrent > 0 {
			out[name] = e.inflight
		}
	}
	return out
}

// CallsInFlight reports the calls in flight per principal with an
// auth.rateLimits maxConcurrent cap, for the metrics.
func (s *Core) CallsInFlight() map[string]int { return s.CurrentAuth().limits.inFlight() }
