package core

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// The one relay of what an upstream sends during a tool call (progress and
// log messages), for every wire.

// Relay says what a call's relay sends: progress (Progress set), log
// messages at or above LogLevel (Log set), and how to end the call when a
// send fails (Stop).
type Relay struct {
	// Progress, if set, sends one progress notification.
	Progress func(mcpbridge.Progress) error
	// Log, if set, sends one log message whose level is at or above
	// LogLevel ("" means debug: all of them).
	Log      func(mcpbridge.Log) error
	LogLevel mcp.LoggingLevel
	// Stop ends the call; it is called when a send fails (nobody is
	// reading).
	Stop func()
}

// Run runs dispatch with callbacks that only queue (they run on the
// upstream session's notification path, which must never block), and
// sends the queued events from one goroutine, in the order they came,
// while dispatch runs; then what arrived before the result. When a send
// fails, sending stops and Stop is called; that error is sendErr. Every
// wire's progress and log messages go through here.
//
// The queue is bounded: progress merges (latest wins) past
// progressBacklog waiting; log messages are never merged, but past
// logBacklog waiting the oldest is dropped, and the next log event sent is
// a warning from toolsvc that says how many were (dropNotice).
func (r Relay) Run(dispatch func(*mcpbridge.CallOptions) (*mcp.CallToolResult, error)) (res *mcp.CallToolResult, err, sendErr error) {
	if r.Stop == nil {
		r.Stop = func() {}
	}
	opts := &mcpbridge.CallOptions{}
	queue := newEventQueue()
	if r.Progress != nil {
		opts.OnProgress = queue.putProgress
	}
	if r.Log != nil {
		minLevel := r.LogLevel
		if minLevel == "" {
			minLevel = "debug"
		}
		opts.LogLevel = minLevel
		least := LogLevelRank(minLevel)
		opts.OnLog = func(l mcpbridge.Log) {
			if LogLevelRank(l.Level) >= least {
				queue.putLog(l)
			}
		}
	}
	send := func(ev event) error {
		if ev.log != nil {
			return r.Log(*ev.log)
		}
		return r.Progress(ev.progress)
	}
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
				for _, ev := range queue.take() {
					if err := send(ev); err != nil {
						sendErr = err // read after wg.Wait
						r.Stop()
						return
					}
				}
			}
		}
	}()
	res, err = dispatch(opts)
	close(done)
	wg.Wait()
	if sendErr != nil {
		return res, err, sendErr
	}
	for _, ev := range queue.take() { // arrived before the result, not sent yet
		if sendErr = send(ev); sendErr != nil {
			break
		}
	}
	return res, err, sendErr
}

// logLevels are the MCP logging levels, least severe first.
var logLevels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// LogLevelRank orders MCP logging levels: debug is 0, emergency 7. A level
// that is not one of them ranks as debug (as go-sdk compares them).
func LogLevelRank(l mcp.LoggingLevel) int {
	for i, v := range logLevels {
		if v == l {
			return i
		}
	}
	return 0
}

// ValidLogLevel reports whether l is an MCP logging level.
func ValidLogLevel(l string) bool {
	for _, v := range logLevels {
		if string(v) == l {
			return true
		}
	}
	return false
}

// LogLevelsText lists the levels for error messages.
const LogLevelsText = "debug, info, notice, warning, error, critical, alert or emergency"

const (
	// progressBacklog bounds the undelivered progress of one call. A reader
	// that keeps up sees every notification; one that falls this far behind
	// sees the oldest ones and then the latest.
	progressBacklog = 32
	// logBacklog bounds the undelivered log messages of one call; past it
	// the oldest is dropped (and counted: dropNotice).
	logBacklog = 256
)

// event is one queued event: a log message (log set) or progress.
type event struct {
	progress mcpbridge.Progress
	log      *mcpbridge.Log
}

// eventQueue holds the undelivered events of one call, in arrival order.
// put never blocks: it appends, merges progress (the newest waiting
// progress is replaced by the latest, which goes last) past
// progressBacklog, drops the oldest log message past logBacklog; then it
// does a non-blocking send on a capacity-1 signal.
type eventQueue struct {
	mu       sync.Mutex
	items    []event
	progress int // progress events in items
	logs     int // log events in items
	dropped  int // log messages dropped since the last take
	server   string
	ready    chan struct{}
}

func newEventQueue() *eventQueue { return &eventQueue{ready: make(chan struct{}, 1)} }

func (q *eventQueue) putProgress(pr mcpbridge.Progress) {
	q.mu.Lock()
	if q.progress >= progressBacklog {
		q.remove(func(ev event) bool { return ev.log == nil }, true)
	}
	q.items = append(q.items, event{progress: pr})
	q.progress++
	q.mu.Unlock()
	q.signal()
}

func (q *eventQueue) putLog(l mcpbridge.Log) {
	q.mu.Lock()
	if q.logs >= logBacklog {
		q.remove(func(ev event) bool { return ev.log != nil }, false)
		q.dropped++
		q.server = l.Server
	}
	q.items = append(q.items, event{log: &l})
	q.logs++
	q.mu.Unlock()
	q.signal()
}

// remove removes the newest (last) or oldest item that match; q.mu held.
func (q *eventQueue) remove(match func(event) bool, last bool) {
	at := -1
	for i := range q.items {
		j := i
		if last {
			j = len(q.items) - 1 - i
		}
		if match(q.items[j]) {
			at = j
			break
		}
	}
	if at < 0 {
		return
	}
	if q.items[at].log != nil {
		q.logs--
	} else {
		q.progress--
	}
	q.items = append(q.items[:at], q.items[at+1:]...)
}

func (q *eventQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take removes and returns everything waiting, oldest first, with a
// dropNotice first when log messages were dropped.
func (q *eventQueue) take() []event {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	if q.dropped > 0 {
		n := dropNotice(q.server, q.dropped)
		items = append([]event{{log: &n}}, items...)
		q.dropped = 0
	}
	q.items, q.progress, q.logs = nil, 0, 0
	return items
}

// dropNotice is the log event that tells a caller n of the upstream's log
// messages were dropped: the caller read too slowly.
func dropNotice(server string, n int) mcpbridge.Log {
	data, _ := json.Marshal(map[string]any{"dropped": n,
		"message": fmt.Sprintf("toolsvc dropped %d log messages of the upstream: the caller read more slowly than they came", n)})
	return mcpbridge.Log{Server: server, Level: "warning", Logger: "toolsvc", Data: data}
}
