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

// joinT joins a member that sends nothing (its first pump never starts)
// to the group of f, until the test ends.
func joinT(t *testing.T, s *Server, f *watchFilter) *watchGroup {
	t.Helper()
	w := newWatchSender(s, newBlockingStream())
	g, ok := s.hub.join(s, f, w)
	if !ok {
		t.Fatal("join after Shutdown")
	}
	t.Cleanup(func() { s.hub.leave(w) })
	return g
}

// senderTest runs a WatchCatalog handler (watchStream.run) for a stream
// whose SendMsg is b's, on a server with an empty catalog, in a synctest
// bubble, and returns what it returned; end stops the server and joins
// every goroutine.
func senderTest(t *testing.T, opts *serverOpts, b *blockingStream) (s *Server, result chan error, end func()) {
	br, err := mcpbridge.New(mcpbridge.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s = newServer(br, opts)
	w := newWatchSender(s, b)
	ws := &watchStream{s: s, req: &toolsvcv1.WatchCatalogRequest{}, w: w, authCtx: b.ctx, f: &watchFilter{}}
	result = make(chan error, 1)
	go func() {
		defer w.close()
		result <- ws.run()
	}()
	return s, result, func() {
		s.Shutdown()
		b.cancel() // gRPC, once the handler returned
		s.Wait()
		br.Close()
	}
}

// TestWatchSenderTimeout: a message held up for WatchSendTimeout ends the
// handler with UNAVAILABLE / SLOW_CONSUMER exactly then, counted, while the
// held SendMsg stays until gRPC ends the stream (its context) and then
// ends, joined by Wait; a send that completes in time disarms the timer,
// and an idle stream gets progress exactly ProgressInterval after its last
// message; Shutdown ends a held send at once with SHUTTING_DOWN,
// uncounted; a panic in SendMsg is INTERNAL.
func TestWatchSenderTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBlockingStream()
		s, result, end := senderTest(t, &serverOpts{WatchSendTimeout: 3 * time.Second}, b)
		start := time.Now()
		err := <-result
		if d := time.Since(start); d != 3*time.Second || errorReason(err) != ReasonSlowConsumer || status.Code(err) != codes.Unavailable || s.Stats().WatchSlowConsumers != 1 {
			t.Fatalf("held first event: %v after %v, stats %+v; want UNAVAILABLE slow consumer after exactly the 3s timeout, counted", err, d, s.Stats())
		}
		synctest.Wait()
		if b.ended.Load() != 0 {
			t.Fatal("the held SendMsg returned before the stream was done")
		}
		end()
		if b.ended.Load() != 1 {
			t.Fatal("Wait returned before the held SendMsg")
		}
	})
	synctest.Test(t, func(t *testing.T) {
		b := newBlockingStream()
		s, result, end := senderTest(t, &serverOpts{WatchSendTimeout: 3 * time.Second, ProgressInterval: 10 * time.Minute}, b)
		time.Sleep(2 * time.Second)
		close(b.release)
		time.Sleep(10*time.Minute - time.Nanosecond) // the disarmed timer must not fire
		synctest.Wait()
		if n := b.sent.Load(); n != 1 || len(result) != 0 || s.Stats().WatchSlowConsumers != 0 {
			t.Fatalf("%d sent, %d results, %+v; want the first event only, the stream open, no slow consumer", n, len(result), s.Stats())
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if n := b.sent.Load(); n != 2 || s.Stats().WatchMessagesSent != 2 {
			t.Fatalf("%d sent (%+v) at ProgressInterval after the first event, want 2 (with progress)", n, s.Stats())
		}
		b.cancel()
		if err := <-result; status.Code(err) != codes.Canceled {
			t.Fatalf("stream canceled: %v, want CANCELED", err)
		}
		end()
	})
	synctest.Test(t, func(t *testing.T) {
		b := newBlockingStream()
		s, result, end := senderTest(t, &serverOpts{WatchSendTimeout: time.Hour}, b)
		go func() { time.Sleep(time.Second); s.Shutdown() }()
		start := time.Now()
		if err := <-result; errorReason(err) != ReasonShuttingDown || time.Since(start) != time.Second || s.Stats().WatchSlowConsumers != 0 {
			t.Fatalf("send held at Shutdown: %v after %v, %+v; want UNAVAILABLE (shutting down) at once", err, time.Since(start), s.Stats())
		}
		end()
		if _, ok := s.hub.join(s, &watchFilter{}, newWatchSender(s, b)); ok {
			t.Fatal("a watch joined after Shutdown")
		}
	})
	synctest.Test(t, func(t *testing.T) {
		b := newBlockingStream()
		b.panics = true
		_, result, end := senderTest(t, nil, b)
		if err := <-result; status.Code(err) != codes.Internal {
			t.Fatalf("a panicking SendMsg: %v, want INTERNAL", err)
		}
		end()
	})
}

// TestWatchSlowStreamGoroutines: once a stream ended for a slow consumer,
// neither its handler nor its held SendMsg's goroutine is left (it ends
// with the stream), while a reading stream on the same connection is
// served throughout.
func TestWatchSlowStreamGoroutines(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, &serverOpts{WatchSendTimeout: 100 * time.Millisecond}, bigCatalog())
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
	g1, g2 := joinT(t, f.svc, flt), joinT(t, f.svc, flt)
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
	f := newWatchFixture(t, &serverOpts{WatchSendTimeout: time.Hour}, bigCatalog())
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

// TestWatchSignalOncePerGroup: the catalog signals the watch hub once, not
// each stream (one subscription for any number of watches), and a change
// starts the sends of the members of the groups whose view it changes and
// of no other: each of those gets exactly the one changes event, the
// others nothing, and their next event is the change they do see.
func TestWatchSignalOncePerGroup(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, nil, map[string][]string{"a": {"x"}, "b": {"x"}})
	ctx := ctxT(t)
	const n = 20
	open := func(req *toolsvcv1.WatchCatalogRequest) []toolsvcv1.ToolService_WatchCatalogClient {
		var out []toolsvcv1.ToolService_WatchCatalogClient
		for range n {
			st, err := f.client.WatchCatalog(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			recvT(t, st)
			out = append(out, st)
		}
		return out
	}
	all := open(&toolsvcv1.WatchCatalogRequest{})
	onlyA := open(&toolsvcv1.WatchCatalogRequest{Servers: []string{"a"}})
	onlyB := open(&toolsvcv1.WatchCatalogRequest{Servers: []string{"b"}})
	if got := f.bridge.Catalog().Subscribers(); got != 1 {
		t.Fatalf("catalog subscribers with %d watches = %d, want 1 (the hub)", 3*n, got)
	}
	f.svc.hub.mu.Lock()
	var sizes []int
	for _, g := range f.svc.hub.groups {
		sizes = append(sizes, len(g.members))
	}
	f.svc.hub.mu.Unlock()
	if len(sizes) != 3 || sizes[0] != n || sizes[1] != n || sizes[2] != n {
		t.Fatalf("group sizes %v, want three of %d", sizes, n)
	}

	pumps, sent := f.svc.watch.pumps.Load(), f.svc.Stats().WatchMessagesSent
	f.putTool(t, "b", "y")
	for _, st := range append(all, onlyB...) {
		if m := recvT(t, st); toolNames(m.GetChanges().GetUpserted()) != "b__y " {
			t.Fatalf("after b__y: %v", m)
		}
	}
	deadline := time.Now().Add(defaultTestTimeout)
	for f.svc.Stats().WatchMessagesSent-sent < 2*n {
		if time.Now().After(deadline) {
			t.Fatal("messages sent not counted")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // time for sends nobody should make
	if d := f.svc.Stats().WatchMessagesSent - sent; d != 2*n {
		t.Fatalf("%d messages sent for a change of b, want %d (the views with b)", d, 2*n)
	}
	if d := f.svc.watch.pumps.Load() - pumps; d > 2*n {
		t.Fatalf("%d sends started for a change of b, want at most %d: the servers=[a] group was woken", d, 2*n)
	}
	f.putTool(t, "a", "y")
	for _, st := range append(all, onlyA...) {
		if m := recvT(t, st); toolNames(m.GetChanges().GetUpserted()) != "a__y " {
			t.Fatalf("after a__y: %v", m)
		}
	}
}
