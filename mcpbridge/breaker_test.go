package mcpbridge

import (
	"testing"
	"time"
)

func TestBreaker(t *testing.T) {
	t.Parallel()
	b := newBreaker(BreakerConfig{Failures: 3, Cooldown: time.Second, MaxCooldown: 4 * time.Second}, "s")
	now := time.Unix(1000, 0)
	for i := 0; i < 2; i++ {
		if b.failure(now) {
			t.Fatalf("opened after %d failures, want 3", i+1)
		}
	}
	if !b.failure(now) || b.state(now) != BreakerOpen {
		t.Fatal("did not open after 3 failures")
	}
	if ok, retry, _ := b.allow(now); ok || retry < time.Second || retry > 1100*time.Millisecond {
		t.Fatalf("allow while open = %v, %v; want false and about 1s", ok, retry)
	}
	later := now.Add(2 * time.Second)
	if b.state(later) != BreakerHalfOpen {
		t.Fatalf("state after cooldown = %v, want half-open", b.state(later))
	}
	if ok, _, trial := b.allow(later); !ok || !trial {
		t.Fatal("half-open refused the trial")
	}
	if ok, _, _ := b.allow(later); ok {
		t.Fatal("half-open let a second call through during the trial")
	}
	// The trial fails: open again, for longer.
	if !b.failure(later) {
		t.Fatal("failed trial did not re-open")
	}
	if d := b.until.Sub(later); d < 2*time.Second || d > 2200*time.Millisecond {
		t.Fatalf("second cooldown %v, want about 2s", d)
	}
	// Cooldowns are capped.
	for i := 0; i < 5; i++ {
		at := b.until.Add(time.Millisecond)
		b.allow(at)
		b.failure(at)
	}
	at := b.until.Add(time.Millisecond)
	b.allow(at)
	b.failure(at)
	if d := b.until.Sub(at); d > 4400*time.Millisecond {
		t.Fatalf("cooldown %v beyond the 4s cap (+10%%)", d)
	}
	b.success()
	if b.state(at) != BreakerClosed || b.failures != 0 {
		t.Fatal("success did not close the breaker")
	}
	off := newBreaker(BreakerConfig{Failures: -1, Cooldown: time.Second, MaxCooldown: time.Second}, "s")
	for i := 0; i < 10; i++ {
		if off.failure(now) {
			t.Fatal("a disabled breaker opened")
		}
	}
}

// TestBreakerStaleFailure: the failure of an attempt that began before the
// upstream last answered does not count; one that began after it does, and
// one of unknown start always does.
func TestBreakerStaleFailure(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	b := newBreaker(BreakerConfig{Failures: 1, Cooldown: time.Second, MaxCooldown: time.Minute}, "s")
	b.noteOK(t0)
	for _, c := range []struct {
		began time.Time
		want  bool
	}{{t0.Add(-time.Millisecond), true}, {t0, false}, {t0.Add(time.Millisecond), false}, {time.Time{}, false}} {
		if got := b.stale(c.began); got != c.want {
			t.Errorf("stale(began %v after the last answer) = %v, want %v", c.began.Sub(t0), got, c.want)
		}
	}
}
