package service

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestValidatorPoolLifecycle: work runs to completion on a worker, an idle
// worker exits after validatorIdle and a later call starts another, more
// concurrent calls than workers run inline without waiting, and after close
// calls run inline with no goroutine left behind.
func TestValidatorPoolLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newValidatorPool()
		p.max = 2
		workers := func() int { p.mu.Lock(); defer p.mu.Unlock(); return p.n }

		n := 0
		p.run(func() { n++ })
		if n != 1 || workers() != 1 {
			t.Fatalf("after one call: ran %d, workers %d; want 1, 1", n, workers())
		}
		p.run(func() { n++ }) // the parked worker takes it
		if n != 2 || workers() != 1 {
			t.Fatalf("after two calls: ran %d, workers %d; want 2, 1", n, workers())
		}

		time.Sleep(validatorIdle - time.Second)
		synctest.Wait()
		if workers() != 1 {
			t.Fatalf("worker exited before validatorIdle")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if workers() != 0 {
			t.Fatalf("idle worker still running after validatorIdle")
		}

		// Five calls at once, each blocked until all have started: two run
		// on workers, the rest inline; none waits for another.
		var started sync.WaitGroup
		started.Add(5)
		release := make(chan struct{})
		var done sync.WaitGroup
		for range 5 {
			done.Add(1)
			go func() {
				defer done.Done()
				p.run(func() { started.Done(); <-release })
			}()
		}
		started.Wait()
		if w := workers(); w > 2 {
			t.Errorf("%d workers, want at most max (2)", w)
		}
		close(release)
		done.Wait()

		p.close()
		ran := false
		p.run(func() { ran = true })
		if !ran {
			t.Fatal("after close a call did not run")
		}
		// synctest.Test fails if any worker is still blocked here.
	})
}
