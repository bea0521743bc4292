package service

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// blockingStream is a server stream whose SendMsg blocks like gRPC's does
// under flow control: until released or until the stream is done, which
// gRPC signals by cancelling the stream's context once the handler
// returned (cancel, here). ended counts the SendMsgs that failed.
type blockingStream struct {
	ctx         context.Context
	cancel      context.CancelFunc
	release     chan struct{}
	sent, ended atomic.Int32
	panics      bool
}

func newBlockingStream() *blockingStream {
	b := &blockingStream{release: make(chan struct{})}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	return b
}

func (b *blockingStream) Context() context.Context     { return b.ctx }
func (b *blockingStream) SetHeader(metadata.MD) error  { return nil }
func (b *blockingStream) SendHeader(metadata.MD) error { return nil }
func (b *blockingStream) SetTrailer(metadata.MD)       {}
func (b *blockingStream) RecvMsg(any) error            { return nil }
func (b *blockingStream) SendMsg(any) error {
	if b.panics {
		panic("boom")
	}
	select {
	case <-b.release:
		b.sent.Add(1)
		return nil
	case <-b.ctx.Done():
		b.ended.Add(1)
		return status.FromContextError(b.ctx.Err()).Err()
	}
}

// TestWatchSenderTimeout: a Send held up for WatchSendTimeout returns
// UNAVAILABLE / SLOW_CONSUMER exactly then, counted, for the handler to
// return, while the held SendMsg stays until gRPC ends the stream (its
// context) and then ends, joined by Wait; a Send that completes in time
// disarms the timer; Shutdown ends a held Send at once with SHUTTING_DOWN,
// uncounted; a panic in SendMsg is INTERNAL.
func TestWatchSenderTimeout(t *testing.T) {
	msg := &toolsvcv1.WatchCatalogResponse{}
	synctest.Test(t, func(t *testing.T) {
		s := New(nil, &Options{WatchSendTimeout: 3 * time.Second})
		b := newBlockingStream()
		w := newWatchSender(s, b)
		defer w.close()
		start := time.Now()
		err := w.send(msg)
		if d := time.Since(start); d != 3*time.Second || errorReason(err) != ReasonSlowConsumer || status.Code(err) != codes.Unavailable || s.Stats().WatchSlowConsumers != 1 {
			t.Fatalf("held Send: %v after %v, stats %+v; want UNAVAILABLE slow consumer after exactly the 3s timeout, counted", err, d, s.Stats())
		}
		synctest.Wait()
		if b.ended.Load() != 0 {
			t.Fatal("the held SendMsg returned before the stream was done")
		}
		b.cancel() // gRPC, once the handler returned
		s.Wait()
		if b.ended.Load() != 1 {
			t.Fatal("Wait returned before the held SendMsg")
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
		if err := w.send(msg); err != nil || s.Stats().WatchSlowConsumers != 0 || b.sent.Load() != 2 {
			t.Fatalf("second Send: %v, %+v, %d sent; want both sent, no slow consumer", err, s.Stats(), b.sent.Load())
		}
	})
	synctest.Test(t, func(t *testing.T) {
		s := New(nil, &Options{WatchSendTimeout: time.Hour})
		b := newBlockingStream()
		w := newWatchSender(s, b)
		defer w.close()
		go func() { time.Sleep(time.Second); s.Shutdown() }()
		start := time.Now()
		if err := w.send(msg); errorReason(err) != ReasonShuttingDown || time.Since(start) != time.Second || s.Stats().WatchSlowConsumers != 0 {
			t.Fatalf("Send held at Shutdown: %v after %v, %+v; want UNAVAILABLE (shutting down) at once", err, time.Since(start), s.Stats())
		}
		b.cancel()
		s.Wait()
		if _, ok := s.hub.join(&watchFilter{}); ok {
			t.Fatal("a watch joined after Shutdown")
		}
	})
	synctest.Test(t, func(t *testing.T) {
		s := New(nil, nil)
		b := newBlockingStream()
		b.panics = true
		w := newWatchSender(s, b)
		defer w.close()
		if err := w.send(msg); status.Code(err) != codes.Internal {
			t.Fatalf("a panicking SendMsg: %v, want INTERNAL", err)
		}
	})
}

// TestWatchSlowStreamGoroutines: once a stream ended for a slow consumer,
// neither its handler nor its held SendMsg's goroutine is left (it ends
// with the stream), while a reading stream on the same connection is
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
		sends := strings.Count(stacks, "service.(*watchSender).sendMsg(")
		if n == 1 && sends == 0 {
			break // only the reader's handler, idle
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d WatchCatalog handlers and %d sends left, want the reader's handler only:\n%s", n, sends, stacks)
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
	g1, _ := f.svc.hub.join(flt)
	g2, _ := f.svc.hub.join(flt)
	defer f.svc.hub.leave(g1)
	defer f.svc.hub.leave(g2)
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
	f.putTool(t, "a", "z")
	v2, m := laggardDelta(t, f.svc, g2, v0.view)
	if toolNames(m.GetChanges().GetUpserted()) != "a__y a__z " || m.GetRevision() != v2.view.rev {
		t.Fatalf("laggard delta: %v", m)
	}
}

// putTool adds tool name to server and waits until the catalog has it.
func (f *watchFixture) putTool(t *testing.T, server, name string) {
	f.servers[server].put(name, "v1")
	exposed := server + "__" + name
	f.waitCatalog(t, exposed, func(s *mcpbridge.Snapshot) bool { _, ok := s.Lookup(exposed); return ok })
}

// laggardDelta returns g's current events and the delta that moves a
// member holding from to them, checking that it is built once for the
// group.
func laggardDelta(t *testing.T, s *Server, g *watchGroup, from *view) (*viewEvents, *toolsvcv1.WatchCatalogResponse) {
	t.Helper()
	ev := g.current(s).ev
	if a, b := ev.changesFrom(s, from), ev.changesFrom(s, from); a.msgs[0] != b.msgs[0] {
		t.Fatal("a laggard's delta was built twice")
	}
	return ev, decodeEvent(t, ev.changesFrom(s, from))
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
