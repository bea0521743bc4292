package service

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// blockingStream is a server stream whose SendMsg blocks like gRPC's does
// under flow control: until released or until its transport stream (in its
// context, as gRPC puts it there) is ended with WriteStatus.
type blockingStream struct {
	ctx     context.Context
	release chan struct{}
	done    chan struct{}
	final   *status.Status // what WriteStatus wrote
	sent    int
}

func newBlockingStream() *blockingStream {
	b := &blockingStream{release: make(chan struct{}), done: make(chan struct{})}
	b.ctx = grpc.NewContextWithServerTransportStream(context.Background(), (*fakeTransportStream)(b))
	return b
}

func (b *blockingStream) Context() context.Context     { return b.ctx }
func (b *blockingStream) SetHeader(metadata.MD) error  { return nil }
func (b *blockingStream) SendHeader(metadata.MD) error { return nil }
func (b *blockingStream) SetTrailer(metadata.MD)       {}
func (b *blockingStream) RecvMsg(any) error            { return nil }
func (b *blockingStream) SendMsg(any) error {
	select {
	case <-b.release:
		b.sent++
		return nil
	case <-b.done:
		return status.Error(codes.Canceled, "stream done")
	}
}

// fakeTransportStream is the blockingStream's transport side.
type fakeTransportStream blockingStream

func (f *fakeTransportStream) Method() string {
	return toolsvcv1.ToolService_WatchCatalog_FullMethodName
}
func (f *fakeTransportStream) SetHeader(metadata.MD) error  { return nil }
func (f *fakeTransportStream) SendHeader(metadata.MD) error { return nil }
func (f *fakeTransportStream) SetTrailer(metadata.MD) error { return nil }
func (f *fakeTransportStream) WriteStatus(st *status.Status) error {
	select {
	case <-f.done:
	default:
		f.final = st
		close(f.done)
	}
	return nil
}

// TestWatchSenderTimeout: a Send held up for WatchSendTimeout is ended
// exactly then, from the handler's own timer (no goroutine Sends), with the
// final status SLOW_CONSUMER written at the transport, and counted; a Send
// that completes in time disarms the timer; Shutdown ends a held Send at
// once with SHUTTING_DOWN.
func TestWatchSenderTimeout(t *testing.T) {
	msg := &toolsvcv1.WatchCatalogResponse{}
	synctest.Test(t, func(t *testing.T) {
		s := New(nil, &Options{WatchSendTimeout: 3 * time.Second})
		b := newBlockingStream()
		w := newWatchSender(s, b)
		defer w.close()
		start := time.Now()
		err := w.send(msg)
		if d := time.Since(start); d != 3*time.Second {
			t.Fatalf("held Send returned after %v, want exactly the 3s timeout", d)
		}
		if errorReason(err) != ReasonSlowConsumer || s.Stats().WatchSlowConsumers != 1 {
			t.Fatalf("held Send: %v, stats %+v; want UNAVAILABLE slow consumer, counted", err, s.Stats())
		}
		if b.final.Code() != codes.Unavailable || errorReason(b.final.Err()) != ReasonSlowConsumer {
			t.Fatalf("status written at the transport: %v", b.final)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		s := New(nil, &Options{WatchSendTimeout: 3 * time.Second})
		b := newBlockingStream()
		w := newWatchSender(s, b)
		defer w.close()
		go func() { time.Sleep(2 * time.Second); close(b.release) }()
		if err := w.send(msg); err != nil {
			t.Fatalf("Send released after 2s: %v", err)
		}
		time.Sleep(time.Hour) // the disarmed timer must not fire
		synctest.Wait()
		if b.final != nil || s.Stats().WatchSlowConsumers != 0 {
			t.Fatalf("a Send that completed in time ended the stream (%v, %+v)", b.final, s.Stats())
		}
		if err := w.send(msg); err != nil || b.sent != 2 {
			t.Fatalf("second Send: %v (sent %d)", err, b.sent)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		s := New(nil, &Options{WatchSendTimeout: time.Hour})
		b := newBlockingStream()
		w := newWatchSender(s, b)
		defer w.close()
		flt := &watchFilter{}
		g, _ := s.hub.join(flt, w)
		defer s.hub.leave(g, w)
		go func() { time.Sleep(time.Second); s.Shutdown() }()
		start := time.Now()
		if err := w.send(msg); errorReason(err) != ReasonShuttingDown || time.Since(start) != time.Second || s.Stats().WatchSlowConsumers != 0 {
			t.Fatalf("Send held at Shutdown: %v after %v, %+v; want UNAVAILABLE (shutting down) at once", err, time.Since(start), s.Stats())
		}
		if errorReason(b.final.Err()) != ReasonShuttingDown {
			t.Fatalf("status written at the transport: %v", b.final)
		}
		if _, ok := s.hub.join(flt, nil); ok {
			t.Fatal("a watch joined after Shutdown")
		}
	})
}

// TestWatchSlowStreamGoroutines: once a stream ended for a slow consumer,
// no goroutine of it is left in a Send (the old engine's sender goroutine
// outlived the handler), while a reading stream on the same connection is
// served throughout.
func TestWatchSlowStreamGoroutines(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, &Options{WatchSendTimeout: 100 * time.Millisecond}, bigCatalog())
	ctx := ctxT(t)
	reader, err := f.client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{Servers: []string{"small"}})
	if err != nil {
		t.Fatal(err)
	}
	recvT(t, reader)
	stuckWatch(t, f, ctx)
	f.servers["small"].put("y", "v1") // every watcher sends once more
	if m := recvT(t, reader); toolNames(m.GetChanges().GetUpserted()) != "small__y " {
		t.Fatalf("reader: %v", m)
	}
	deadline := time.Now().Add(defaultTestTimeout)
	for f.svc.Stats().WatchSlowConsumers != 1 || f.svc.Stats().WatchStreams != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v: the stuck stream was not ended", f.svc.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		n := strings.Count(stacks, "service.(*Server).WatchCatalog(")
		if n == 1 && !strings.Contains(stacks, "service.(*watchSender).send.func") {
			break // only the reader's handler
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d WatchCatalog goroutines left, want the reader's only:\n%s", n, stacks)
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.servers["small"].put("z", "v1")
	if m := recvT(t, reader); toolNames(m.GetChanges().GetUpserted()) != "small__z " {
		t.Fatalf("reader after the slow stream ended: %v", m)
	}
}

// TestWatchGroupSharesEvents: members of one view share one encoded event
// per change, and a member that missed a revision gets one delta, built
// once for every member at that revision.
func TestWatchGroupSharesEvents(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, nil, map[string][]string{"a": {"x"}})
	flt, err := f.svc.newWatchFilter(context.Background(), &toolsvcv1.WatchCatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	g1, _ := f.svc.hub.join(flt, nil)
	g2, _ := f.svc.hub.join(flt, nil)
	defer f.svc.hub.leave(g1, nil)
	defer f.svc.hub.leave(g2, nil)
	if g1 != g2 {
		t.Fatal("two watchers of the same view got different groups")
	}
	v0 := g1.current(f.svc).ev
	f.servers["a"].put("y", "v1")
	f.waitCatalog(t, "a__y", func(s *mcpbridge.Snapshot) bool { _, ok := s.Lookup("a__y"); return ok })
	v1 := g1.current(f.svc).ev
	if v1.prev == nil || v1.prev.rev != v0.view.rev {
		t.Fatalf("new state's previous view %v, want %s", v1.prev, v0.view.rev)
	}
	if a, b := v1.changesFrom(f.svc, v0.view), v1.changesFrom(f.svc, v0.view); a.msgs[0] != b.msgs[0] {
		t.Fatal("the changes event was built twice")
	}
	f.servers["a"].put("z", "v1")
	f.waitCatalog(t, "a__z", func(s *mcpbridge.Snapshot) bool { _, ok := s.Lookup("a__z"); return ok })
	v2 := g2.current(f.svc).ev
	lag1, lag2 := v2.changesFrom(f.svc, v0.view), v2.changesFrom(f.svc, v0.view)
	if lag1.msgs[0] != lag2.msgs[0] {
		t.Fatal("a laggard's delta was built twice")
	}
	if m := decodeEvent(t, lag1); toolNames(m.GetChanges().GetUpserted()) != "a__y a__z " || m.GetRevision() != v2.view.rev {
		t.Fatalf("laggard delta: %v", m)
	}
}

// errorReason is the ErrorInfo reason of a status error ("" without one).
func errorReason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

// TestWatchShutdownEndsHeldSend: Shutdown ends a stream whose Send the
// client holds up at once (not when the client reads), and the client, when
// it reads, gets what was queued, then UNAVAILABLE with SHUTTING_DOWN.
func TestWatchShutdownEndsHeldSend(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, &Options{WatchSendTimeout: time.Hour}, bigCatalog())
	ctx := ctxT(t)
	st := stuckWatch(t, f, ctx)
	waitStreams(t, f, 1)
	f.servers["big"].put("first_change", "v1") // a second Send, held: the snapshot filled the window
	f.waitCatalog(t, "first_change", func(s *mcpbridge.Snapshot) bool { _, ok := s.Lookup("big__first_change"); return ok })
	time.Sleep(50 * time.Millisecond) // let the handler reach its Send
	f.svc.Shutdown()
	waitStreams(t, f, 0)
	var err error
	for err == nil {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.Unavailable || errorReason(err) != ReasonShuttingDown {
		t.Fatalf("held stream at Shutdown: %v, want UNAVAILABLE with SHUTTING_DOWN", err)
	}
}
