package service

import (
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsvc/toolsvc/service/core"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// DefaultWatchSendTimeout bounds how long one message of a watch stream may
// wait for the client to read (gRPC flow control) before the stream ends
// with UNAVAILABLE.
const DefaultWatchSendTimeout = 30 * time.Second

// Sending on a watch stream, bounded in time with grpc-go's public API
// only. gRPC's SendMsg has no deadline: it blocks while the client does not
// read, "until there is sufficient flow control ... or the stream is done"
// (grpc.ServerStream, https://pkg.go.dev/google.golang.org/grpc#ServerStream),
// and a stream is done when its handler returns: grpc-go then writes the
// handler's status after what was already queued and cancels the stream's
// context "to interrupt the potential blocking on other goroutines"
// (finishStream in
// https://github.com/grpc/grpc-go/blob/v1.85.0/internal/transport/http2_server.go).
// So the handler goroutine holds the stream (watchStream.run) but does not
// call SendMsg itself: messages are sent by a pump goroutine (at most one
// per stream at a time; an idle stream has none) while the handler waits
// for the send timeout, the pump's failure and Shutdown. When the timeout
// passes first, the handler returns UNAVAILABLE / SLOW_CONSUMER
// (docs/errors.md); on Shutdown UNAVAILABLE / SHUTTING_DOWN. The returned status
// ends the stream, which wakes the held SendMsg with an error, and the
// pump ends; Server.Wait joins every one.

// watchSender sends on one stream, each message bounded by
// Options.WatchSendTimeout. Its sends run on a pump goroutine (at most one
// per stream at a time; an idle stream has none) that the stream's group
// starts when the group's view changes (watchGroup.fanout, "signal once
// per view group") and the handler starts for the first event and for
// progress: the handler is not woken to deliver a change. The pump sends
// what is due in order (the event the handler queued, then the changes
// from the view the client holds to the group's current one, then
// progress) until nothing is, and ends. The handler waits for the stream's
// end, a pump's failure, the send timeout (armed by the pump around every
// message) and Shutdown.
type watchSender struct {
	s      *Server
	stream grpc.ServerStream // the handler's: its context is the call's
	out    grpc.ServerStream // the transport's, past the per-message interceptors (directStream)
	timer  *time.Timer       // armed while a message is in flight
	failed chan error        // the pump's error: the stream ends with it; never waits

	sendStart atomic.Int64 // when the message in flight began (UnixNano); 0: none
	lastSent  atomic.Int64 // when the last message was sent (UnixNano)

	mu       sync.Mutex
	g        *watchGroup   // the group the stream follows
	last     *viewEvents   // the view the client holds once the pump's sends are done
	queued   eventMessages // an event the handler queued, sent first
	isQueued bool
	progress bool // a progress event is due
	sending  bool // a pump runs
	closed   bool // the handler returned: no more pumps
	idx      int  // in g.members (watchHub.mu)
}

func errSlowConsumer(timeout time.Duration) error {
	return plainError(core.Unavailable, ReasonSlowConsumer, fmt.Sprintf(
		"watch stream ended: the client did not read for %s; resume with the last revision", timeout), nil)
}

func newWatchSender(s *Server, stream grpc.ServerStream) *watchSender {
	w := &watchSender{s: s, stream: stream, out: directStream(stream), timer: time.NewTimer(time.Hour), failed: make(chan error, 1),
		sending: true, idx: -1} // the first pump is start's
	w.timer.Stop()
	return w
}

// close stops later pumps; a pump in flight ends with its send.
func (w *watchSender) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.timer.Stop()
}

// Wait returns once every watch message in flight has been sent or has
// failed. A message held by a client that does not read fails when its
// stream is done, so Wait is for after the gRPC server stopped
// (GracefulStop or Stop).
func (s *Server) Wait() {
	s.hub.wg.Wait()
	s.watchSends.Wait()
}

// start starts the first pump: it sends first, which moves the client to
// last, then whatever is due. Until then the group's signals start none.
func (w *watchSender) start(last *viewEvents, first eventMessages) {
	w.mu.Lock()
	w.last, w.queued, w.isQueued = last, first, true
	w.mu.Unlock()
	w.s.watch.pumps.Add(1)
	w.s.watchSends.Add(1)
	go w.pump()
}

// queueProgress asks for a progress event, unless a change goes first.
func (w *watchSender) queueProgress() {
	w.mu.Lock()
	w.progress = true
	w.mu.Unlock()
	w.kick()
}

// kick starts the pump unless one runs (it sends what is due before it
// ends) or the handler returned.
func (w *watchSender) kick() {
	w.mu.Lock()
	if w.sending || w.closed {
		w.mu.Unlock()
		return
	}
	w.sending = true
	w.mu.Unlock()
	w.s.watch.pumps.Add(1)
	w.s.watchSends.Add(1)
	go w.pump()
}

// pump sends every event due, then ends; a failure goes to the handler.
func (w *watchSender) pump() {
	defer w.s.watchSends.Done()
	defer func() {
		// Building an event (views, diffs, encoding) runs here, past the
		// recovery interceptor: a panic ends this stream INTERNAL, not the
		// process. The pump stays "sending", so none starts after it.
		if p := recover(); p != nil {
			w.s.log.Error("panic in watch pump", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			select {
			case w.failed <- plainError(core.Internal, ReasonInternal, "internal error", nil):
			default:
			}
		}
	}()
	for {
		ev, ok := w.next()
		if !ok {
			return
		}
		if ev.err != nil {
			w.s.log.Warn("watch: event too large to send; ending the stream", "error", ev.err)
			w.failed <- ev.err
			return
		}
		for _, m := range ev.msgs {
			if err := w.sendMsg(m); err != nil {
				w.failed <- w.ended(err)
				return
			}
		}
	}
}

// next is the pump's next event, or false (and the pump ends) when none
// is due. The changes event is built outside the lock: the group's first
// member to need it encodes it for all.
func (w *watchSender) next() (eventMessages, bool) {
	w.mu.Lock()
	if w.closed { // the handler returned: the stream is done
		w.mu.Unlock()
		return eventMessages{}, false
	}
	if w.isQueued {
		ev := w.queued
		w.queued, w.isQueued = eventMessages{}, false
		w.mu.Unlock()
		return ev, true
	}
	g, last := w.g, w.last
	w.mu.Unlock()
	cur := g.current(w.s).ev
	// What to send is decided under the lock; the event is built after it
	// (kick, and the hub's leave through it, wait on this lock).
	w.mu.Lock()
	if w.isQueued || w.g != g {
		w.mu.Unlock()
		return eventMessages{}, true // look again: the handler moved meanwhile
	}
	switch {
	case cur.view.rev != last.view.rev:
		w.last, w.progress = cur, false
		w.mu.Unlock()
		return cur.changesFrom(w.s, last.view), true
	case w.progress:
		w.last, w.progress = cur, false
		w.mu.Unlock()
		return cur.progressEvent(w.s), true
	}
	w.last = cur
	if st := g.state.Load(); st != nil && st.ev != cur && st.ev.view.rev != cur.view.rev {
		w.mu.Unlock()
		return eventMessages{}, true // the group moved on while we looked
	}
	w.sending = false
	w.mu.Unlock()
	return eventMessages{}, false
}

// overdue reports whether the message in flight has waited for the send
// timeout; if one waits for less, the timer is armed for the rest.
func (w *watchSender) overdue() bool {
	start := w.sendStart.Load()
	if start == 0 {
		return false
	}
	waited := time.Since(time.Unix(0, start))
	if waited >= w.s.opts.WatchSendTimeout {
		return true
	}
	w.timer.Reset(w.s.opts.WatchSendTimeout - waited)
	return false
}

// slow is the status of a stream whose message waited for the timeout.
func (w *watchSender) slow() error {
	w.s.watch.slow.Add(1)
	w.s.log.Info("watch: client did not read for the send timeout; ending the stream", "timeout", w.s.opts.WatchSendTimeout)
	return errSlowConsumer(w.s.opts.WatchSendTimeout)
}

// sendMsg sends m on the transport's stream with the send timeout armed;
// a panic is INTERNAL, as the recovery interceptor would make it
// (grpcserver.go).
func (w *watchSender) sendMsg(m proto.Message) (err error) {
	w.sendStart.Store(time.Now().UnixNano())
	w.timer.Reset(w.s.opts.WatchSendTimeout)
	defer func() {
		w.timer.Stop()
		w.sendStart.Store(0)
		if p := recover(); p != nil {
			w.s.log.Error("panic in watch send", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = plainError(core.Internal, ReasonInternal, "internal error", nil)
		}
	}()
	if err = w.out.SendMsg(m); err == nil {
		w.s.watch.sent.Add(1)
		w.lastSent.Store(time.Now().UnixNano())
	}
	return err
}

// ended is the status of a stream whose Send failed (with sendErr) or
// whose context ended: SHUTTING_DOWN during Shutdown, else the context's
// error, else sendErr.
func (w *watchSender) ended(sendErr error) error {
	select {
	case <-w.s.shutdown:
		return errShuttingDown
	default:
	}
	if err := w.stream.Context().Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	return sendErr
}
