package service

import (
	"fmt"
	"runtime/debug"
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
// So the handler goroutine is the stream's loop (watchStream.run) but does
// not call SendMsg itself: each message is sent by a goroutine of its own
// (at most one per stream at a time; an idle stream has none) while the
// handler waits for it, for the send timeout and for Shutdown. When the
// timeout passes first, the handler returns UNAVAILABLE / SLOW_CONSUMER
// (README, "Errors"); on Shutdown UNAVAILABLE / SHUTTING_DOWN. The returned
// status ends the stream, which wakes the held SendMsg with an error, and
// its goroutine ends; Server.Wait joins every one.

// watchSender sends on one stream, each message bounded by
// Options.WatchSendTimeout.
type watchSender struct {
	s      *Server
	stream grpc.ServerStream // the handler's: its context is the call's
	out    grpc.ServerStream // the transport's, past the per-message interceptors (directStream)
	timer  *time.Timer
	done   chan error // the result of the message in flight; never waits
}

func errSlowConsumer(timeout time.Duration) error {
	return plainError(core.Unavailable, ReasonSlowConsumer, fmt.Sprintf(
		"watch stream ended: the client did not read for %s; resume with the last revision", timeout), nil)
}

func newWatchSender(s *Server, stream grpc.ServerStream) *watchSender {
	w := &watchSender{s: s, stream: stream, out: directStream(stream), timer: time.NewTimer(time.Hour), done: make(chan error, 1)}
	w.timer.Stop()
	return w
}

func (w *watchSender) close() { w.timer.Stop() }

// Wait returns once every watch message in flight has been sent or has
// failed. A message held by a client that does not read fails when its
// stream is done, so Wait is for after the gRPC server stopped
// (GracefulStop or Stop).
func (s *Server) Wait() { s.watchSends.Wait() }

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

// send sends m on its own goroutine and waits for it, for the send
// timeout or for Shutdown, whichever comes first; the error of the last
// two is the status the handler returns to end the stream.
func (w *watchSender) send(m proto.Message) error {
	w.s.watchSends.Add(1)
	go w.sendMsg(m)
	w.timer.Reset(w.s.opts.WatchSendTimeout)
	defer w.timer.Stop()
	select {
	case err := <-w.done:
		if err != nil {
			return w.ended(err)
		}
		return nil
	case <-w.timer.C:
		w.s.watch.slow.Add(1)
		w.s.log.Info("watch: client did not read for the send timeout; ending the stream", "timeout", w.s.opts.WatchSendTimeout)
		return errSlowConsumer(w.s.opts.WatchSendTimeout)
	case <-w.s.shutdown:
		return errShuttingDown
	}
}

func (w *watchSender) sendMsg(m proto.Message) {
	defer w.s.watchSends.Done()
	defer func() {
		if p := recover(); p != nil { // as the recovery interceptor would (grpcserver.go)
			w.s.log.Error("panic in watch send", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			w.done <- plainError(core.Internal, ReasonInternal, "internal error", nil)
		}
	}()
	err := w.out.SendMsg(m)
	if err == nil {
		w.s.watch.sent.Add(1)
	}
	w.done <- err
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
