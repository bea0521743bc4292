package mcpbridge

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The clock counts only running time: paused spans (nested) do not count,
// and it fires once the running time reaches the limit.
func TestActiveClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fired atomic.Int64
		start := time.Now()
		c := newActiveClock(10*time.Second, func() { fired.Store(int64(time.Since(start))) })
		time.Sleep(4 * time.Second) // 4 s run
		c.pause()
		c.pause() // a second ask at once
		time.Sleep(time.Hour)
		c.resume()
		time.Sleep(time.Minute) // still paused: one ask waits
		c.resume()
		time.Sleep(5 * time.Second) // 9 s run
		if fired.Load() != 0 {
			t.Fatalf("fired after 9 s of running time")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got, want := time.Duration(fired.Load()), 4*time.Second+time.Hour+time.Minute+6*time.Second; got != want {
			t.Fatalf("fired at %v, want %v (10 s of running time)", got, want)
		}
	})
}

// A stopped clock never fires, paused or not.
func TestActiveClockStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fired := false
		c := newActiveClock(time.Second, func() { fired = true })
		c.pause()
		c.stop()
		c.resume()
		time.Sleep(time.Minute)
		synctest.Wait()
		if fired {
			t.Fatal("a stopped clock fired")
		}
	})
}
