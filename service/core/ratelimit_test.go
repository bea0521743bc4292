package core

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func rateLimited(t *testing.T, err error) time.Duration {
	t.Helper()
	var re *Error
	if !errors.As(err, &re) || re.Reason != ReasonRateLimited {
		t.Fatalf("err = %v, want RATE_LIMITED", err)
	}
	return re.RetryAfter
}

// TestRateLimiterBucket: the bucket admits burst calls at once, refuses the
// next with the exact wait for one token, refills at callsPerSecond, and
// first matching rule wins; a principal no rule matches is not limited.
func TestRateLimiterBucket(t *testing.T) {
	t.Parallel()
	l := newRateLimiter([]RateLimit{
		{Principal: "agent-*", CallsPerSecond: 2, Burst: 3},
		{Principal: "agent-x", CallsPerSecond: 1000}, // shadowed by the first
		{Principal: "slow", CallsPerSecond: 0.5},     // burst defaults to 1
	}, nil, nil)
	t0 := time.Unix(1000, 0)
	for i := 0; i < 3; i++ {
		if _, err := l.acquire("agent-x", t0); err != nil {
			t.Fatalf("call %d within the burst: %v", i, err)
		}
	}
	if d := rateLimited(t, func() error { _, err := l.acquire("agent-x", t0); return err }()); d != 500*time.Millisecond {
		t.Errorf("retry after %v, want 500ms (one token at 2/s)", d)
	}
	// A refused call took no token: half a second later exactly one is back.
	if _, err := l.acquire("agent-x", t0.Add(500*time.Millisecond)); err != nil {
		t.Fatalf("after refill: %v", err)
	}
	rateLimited(t, func() error { _, err := l.acquire("agent-x", t0.Add(500*time.Millisecond)); return err }())
	// Each principal has its own bucket.
	if _, err := l.acquire("agent-y", t0); err != nil {
		t.Fatalf("another agent: %v", err)
	}
	if _, err := l.acquire("slow", t0); err != nil {
		t.Fatal(err)
	}
	if d := rateLimited(t, func() error { _, err := l.acquire("slow", t0); return err }()); d != 2*time.Second {
		t.Errorf("slow: retry after %v, want 2s", d)
	}
	for i := 0; i < 100; i++ {
		if _, err := l.acquire("human", t0); err != nil {
			t.Fatalf("an unlimited principal was limited: %v", err)
		}
	}
	if len(l.m) != 3 {
		t.Errorf("%d principals tracked, want 3 (unlimited ones are not)", len(l.m))
	}
}

// TestRateLimiterEviction: the per-principal state stays within its bound;
// a principal with calls in flight is never forgotten (its cap holds).
func TestRateLimiterEviction(t *testing.T) {
	defer func(n int) { maxLimitedPrincipals = n }(maxLimitedPrincipals)
	maxLimitedPrincipals = 10
	l := newRateLimiter([]RateLimit{{Principal: "*", CallsPerSecond: 1, Burst: 1, MaxConcurrent: 1}}, nil, nil)
	t0 := time.Unix(1000, 0)
	release, err := l.acquire("busy", t0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		r, err := l.acquire(fmt.Sprintf("p%d", i), t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		r()
		if len(l.m) > maxLimitedPrincipals {
			t.Fatalf("%d principals tracked, bound %d", len(l.m), maxLimitedPrincipals)
		}
	}
	if _, err := l.acquire("busy", t0.Add(time.Hour)); err == nil {
		t.Fatal("a principal with a call in flight was forgotten: its maxConcurrent no longer holds")
	}
	release()
	release() // idempotent
	if _, err := l.acquire("busy", t0.Add(time.Hour)); err != nil {
		t.Fatalf("after release: %v", err)
	}
}

// TestRateLimiterSurvivesReload: a rebuilt limiter keeps the spent bucket
// and in-flight count of a principal whose rule did not change, gives a
// fresh bucket (and the same in-flight count) to one whose rule changed,
// and forgets one no rule matches.
func TestRateLimiterSurvivesReload(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	old := newRateLimiter([]RateLimit{
		{Principal: "same", CallsPerSecond: 0.001, Burst: 1, MaxConcurrent: 5},
		{Principal: "changed", CallsPerSecond: 0.001, Burst: 1},
		{Principal: "gone", CallsPerSecond: 0.001, Burst: 1},
	}, nil, nil)
	var release func()
	for _, p := range []string{"same", "changed", "gone"} {
		r, err := old.acquire(p, t0)
		if err != nil {
			t.Fatalf("%s's first call: %v", p, err)
		}
		if p == "same" {
			release = r
		}
	}
	next := newRateLimiter([]RateLimit{
		{Principal: "same", CallsPerSecond: 0.001, Burst: 1, MaxConcurrent: 5},
		{Principal: "changed", CallsPerSecond: 0.002, Burst: 1},
	}, nil, old)
	if _, err := next.acquire("same", t0); err == nil {
		t.Error("same rule: the reload refilled the spent bucket")
	}
	if _, err := next.acquire("changed", t0); err != nil {
		t.Errorf("changed rule: %v, want a fresh bucket", err)
	}
	if _, err := next.acquire("gone", t0); err != nil {
		t.Errorf("no rule: %v, want unlimited", err)
	}
	if got := next.inFlight()["same"]; got != 1 {
		t.Errorf("same rule: %d in flight after the reload, want 1", got)
	}
	release() // a call admitted before the reload ends after it
	if got := next.inFlight()["same"]; got != 0 {
		t.Errorf("same rule: %d in flight after the call ended, want 0", got)
	}
}
