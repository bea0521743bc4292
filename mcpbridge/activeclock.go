package mcpbridge

import (
	"context"
	"errors"
	"sync"
	"time"
)

// An interactive request (Interaction.Ask set) outlives the caller's
// deadline by design: a person answers in between. Its server's
// callTimeout still bounds it, counting only the time the upstream works:
// the clock stops while one of its requests waits for the caller's
// answer, and runs again when the answer is sent. Without it, a caller
// that merely offered input (any go-sdk client declares roots) would run
// its calls with no timeout at all.

// errActiveTimeout is the cause of an interactive request's cancellation
// when its active time reached the server's callTimeout.
var errActiveTimeout = errors.New("the server's callTimeout passed while the upstream worked")

// ErrCallTimeout is the error of an interactive request whose active
// time reached the server's callTimeout, whatever the caller's deadline
// (errors.Is context.DeadlineExceeded too).
var ErrCallTimeout error = callTimeoutError{}

type callTimeoutError struct{}

func (callTimeoutError) Error() string {
	return "the server's callTimeout passed while the upstream worked"
}
func (callTimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// activeClock fires once its running time reaches the limit; pause and
// resume (nested: concurrent asks) stop and restart it.
type activeClock struct {
	mu      sync.Mutex
	timer   *time.Timer
	left    time.Duration
	started time.Time
	paused  int
	stopped bool
}

func newActiveClock(limit time.Duration, fire func()) *activeClock {
	return &activeClock{timer: time.AfterFunc(limit, fire), left: limit, started: time.Now()}
}

func (c *activeClock) pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused++; c.paused == 1 && !c.stopped {
		c.timer.Stop()
		c.left -= time.Since(c.started)
	}
}

func (c *activeClock) resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused--; c.paused == 0 && !c.stopped {
		c.started = time.Now()
		c.timer.Reset(max(c.left, 0))
	}
}

func (c *activeClock) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	c.timer.Stop()
}

// withActiveTimeout is withCallTimeout for an interactive request: ctx
// (whose own deadline is the interactive bound) is cancelled with
// errActiveTimeout once the request has worked callTimeout; it.pause and
// it.resume are the clock's.
func (u *upstream) withActiveTimeout(ctx context.Context, it *Interaction) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	clock := newActiveClock(u.cfg.CallTimeout, func() { cancel(errActiveTimeout) })
	it.clock = clock
	return ctx, func() {
		clock.stop()
		cancel(context.Canceled)
	}
}

// activeTimedOut reports whether ctx was cancelled by its active clock.
func activeTimedOut(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), errActiveTimeout)
}
