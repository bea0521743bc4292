package core

import (
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// The one progress relay of tool calls, for every wire.

// RelayProgress runs dispatch with a progress callback that only queues
// (it runs on the upstream session's notification path, which must never
// block), and sends the queued progress from one goroutine, in order,
// while dispatch runs; then what arrived before the result. When a send
// fails (nobody is reading), sending stops and stop is called (to end the
// call); that error is sendErr. Every wire's progress goes through here.
func RelayProgress(dispatch func(onProgress func(mcpbridge.Progress)) (*mcp.CallToolResult, error),
	send func(mcpbridge.Progress) error, stop func()) (res *mcp.CallToolResult, err, sendErr error) {
	queue := newProgressQueue()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-queue.ready:
				for _, pr := range queue.take() {
					if err := send(pr); err != nil {
						sendErr = err // read after wg.Wait
						stop()
						return
					}
				}
			}
		}
	}()
	res, err = dispatch(queue.put)
	close(done)
	wg.Wait()
	if sendErr != nil {
		return res, err, sendErr
	}
	for _, pr := range queue.take() { // arrived before the result, not sent yet
		if sendErr = send(pr); sendErr != nil {
			break
		}
	}
	return res, err, sendErr
}

// progressBacklog bounds the undelivered progress of one call. A reader
// that keeps up sees every notification; one that falls this far behind
// sees the oldest ones and then the latest.
const progressBacklog = 32

// progressQueue holds the undelivered progress of one call. put never
// blocks: it appends, or when progressBacklog are waiting it overwrites the
// newest (latest wins), and does a non-blocking send on a capacity-1
// signal.
type progressQueue struct {
	mu    sync.Mutex
	items []mcpbridge.Progress
	ready chan struct{}
}

func newProgressQueue() *progressQueue { return &progressQueue{ready: make(chan struct{}, 1)} }

func (q *progressQueue) put(pr mcpbridge.Progress) {
	q.mu.Lock()
	if len(q.items) < progressBacklog {
		q.items = append(q.items, pr)
	} else {
		q.items[len(q.items)-1] = pr
	}
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take removes and returns everything waiting, oldest first.
func (q *progressQueue) take() []mcpbridge.Progress {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}
