package service

import (
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
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
// So each stream has two goroutines: the handler's, which only waits, and
// the send loop (serveWatch starts it), which does all of the stream's work
// and is the only one ever to Send on it. A timer armed around each Send
// marks the stream slow when it fires; the handler then returns
// UNAVAILABLE / SLOW_CONSUMER (README, "Errors"), and on Shutdown
// UNAVAILABLE / SHUTTING_DOWN, held Send or not. The returned status ends
// the stream, which wakes the held Send with an error, and the loop ends.
// Every loop is joined by Server.Wait.

// watchSender sends on one stream from its send loop, each message bounded
// by Options.WatchSendTimeout.
type watchSender struct {
	s      *Server
	stream grpc.ServerStream
	timer  *time.Timer
	slow   chan struct{} // closed when a Send waited longer than the timeout
	once   sync.Once
}

func errSlowConsumer(timeout time.Duration) error {
	return plainError(codes.Unavailable, ReasonSlowConsumer, fmt.Sprintf(
		"watch stream ended: the client did not read for %s; resume with the last revision", timeout), nil)
}

func newWatchSender(s *Server, stream grpc.ServerStream) *watchSender {
	w := &watchSender{s: s, stream: stream, slow: make(chan struct{})}
	w.timer = time.AfterFunc(time.Hour, func() { w.once.Do(func() { close(w.slow) }) })
	w.timer.Stop()
	return w
}

func (w *watchSender) close() { w.timer.Stop() }

// serveWatch runs loop, the stream's send loop, on a goroutine of its own
// and returns the stream's status: the loop's, or the reason the server
// ends the stream while the loop may be held in a Send (see above).
func (s *Server) serveWatch(w *watchSender, loop func() error) error {
	done := make(chan error, 1) // the loop never waits for the handler
	s.watchLoops.Add(1)
	go func() {
		defer s.watchLoops.Done()
		defer func() {
			if p := recover(); p != nil { // as the recovery interceptor would (grpcserver.go)
				s.log.Error("panic in watch send loop", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				done <- plainError(codes.Internal, ReasonInternal, "internal error", nil)
			}
		}()
		done <- loop()
	}()
	select {
	case err := <-done:
		return err
	case <-w.slow:
		s.watch.slow.Add(1)
		s.log.Info("watch: client did not read for the send timeout; ending the stream", "timeout", s.opts.WatchSendTimeout)
		return errSlowConsumer(s.opts.WatchSendTimeout)
	case <-s.shutdown:
		return errShuttingDown
	}
}

// Wait returns once the send loop of every watch stream has ended. A loop
// ends when its stream is done, so Wait is for after the gRPC server
// stopped (GracefulStop or Stop).
func (s *Server) Wait() { s.watchLoops.Wait() }

// sendEvent sends every message of an event, or returns its error (an
// event too large to send), logged: the stream ends with it.
func (w *watchSender) sendEvent(ev eventMessages) error {
	if ev.err != nil {
		w.s.log.Warn("watch: event too large to send; ending the stream", "error", ev.err)
		return ev.err
	}
	for _, m := range ev.msgs {
		if err := w.send(m); err != nil {
			return err
		}
	}
	return nil
}

func (w *watchSender) send(m proto.Message) error {
	w.timer.Reset(w.s.opts.WatchSendTimeout)
	err := w.stream.SendMsg(m)
	w.timer.Stop()
	if err != nil {
		return w.ended(err)
	}
	return nil
}

// ended is the status of a stream whose Send failed (with sendErr) or
// whose context ended: SHUTTING_DOWN during Shutdown, else the context's
// error, else sendErr. (When the handler ended the stream, it returned its
// own status first and gRPC ignores this one.)
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
