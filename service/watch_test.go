package service

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

func recvT(t *testing.T, st interface {
	Recv() (*toolsvcv1.WatchCatalogResponse, error)
}) *toolsvcv1.WatchCatalogResponse {
	t.Helper()
	m, err := st.Recv()
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	return m
}

func TestWatchFilters(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, nil, map[string][]string{"a": {"x", "y"}, "b": {"x"}})
	ctx := ctxT(t)
	list, err := f.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}

	open := func(req *toolsvcv1.WatchCatalogRequest) toolsvcv1.ToolService_WatchCatalogClient {
		st, err := f.client.WatchCatalog(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	all := open(&toolsvcv1.WatchCatalogRequest{})
	onlyA := open(&toolsvcv1.WatchCatalogRequest{Servers: []string{"a"}})
	avail := open(&toolsvcv1.WatchCatalogRequest{ExcludeUnavailable: true})

	m := recvT(t, all)
	if m.GetRevision() != list.GetRevision() || toolNames(m.GetSnapshot().GetTools()) != "a__x a__y b__x " {
		t.Fatalf("unfiltered snapshot = %s %q, want ListTools revision %s and every tool", m.GetRevision(), toolNames(m.GetSnapshot().GetTools()), list.GetRevision())
	}
	a0 := recvT(t, onlyA)
	if got := toolNames(a0.GetSnapshot().GetTools()); got != "a__x a__y " {
		t.Fatalf("servers=[a] snapshot = %q", got)
	}
	if a0.GetRevision() == list.GetRevision() {
		t.Fatal("a filtered view carries the whole catalog's revision")
	}
	if v0 := recvT(t, avail); v0.GetRevision() != list.GetRevision() {
		t.Fatalf("exclude_unavailable with every tool available: revision %s, want the catalog's %s", v0.GetRevision(), list.GetRevision())
	}

	// A change to b: the unfiltered watch sees it, the servers=[a] watch does
	// not (its next event is the change to a).
	f.servers["b"].put("z", "v1")
	if m := recvT(t, all); toolNames(m.GetChanges().GetUpserted()) != "b__z " {
		t.Fatalf("after adding b__z: %v", m)
	}
	f.servers["a"].put("x", "v2")
	if m := recvT(t, onlyA); toolNames(m.GetChanges().GetUpserted()) != "a__x " || m.GetChanges().GetUpserted()[0].GetDescription() != "v2" {
		t.Fatalf("servers=[a] after updating a__x: %v", m)
	}
	// Resume the filtered view from its first revision on a new stream:
	// only the change to a__x.
	resumed := open(&toolsvcv1.WatchCatalogRequest{Servers: []string{"a"}, ResumeToken: a0.GetRevision()})
	if m := recvT(t, resumed); toolNames(m.GetChanges().GetUpserted()) != "a__x " || len(m.GetChanges().GetRemoved()) != 0 {
		t.Fatalf("servers=[a] resumed from %s: %v", a0.GetRevision(), m)
	}
	// The whole-catalog token is unknown to the filtered view: reset.
	other := open(&toolsvcv1.WatchCatalogRequest{Servers: []string{"a"}, ResumeToken: list.GetRevision()})
	if m := recvT(t, other); !m.GetSnapshot().GetReset_() {
		t.Fatalf("servers=[a] resumed with the unfiltered revision: %v, want a reset", m)
	}

	// b goes down: excluded tools arrive as removed, included ones flip.
	// (Both streams first catch up to the catalog as it is now.)
	cur := f.waitCatalog(t, "a__x v2", func(s *mcpbridge.Snapshot) bool { x, _ := s.Lookup("a__x"); return x.Description == "v2" })
	recvUntil(t, avail, func(m *toolsvcv1.WatchCatalogResponse) bool { return m.GetRevision() == cur.Revision })
	recvUntil(t, all, func(m *toolsvcv1.WatchCatalogResponse) bool { return m.GetRevision() == cur.Revision })
	f.servers["b"].setDown(true)
	if m := recvUntil(t, avail, hasChanges); strings.Join(m.GetChanges().GetRemoved(), " ") != "b__x b__z" || len(m.GetChanges().GetUpserted()) != 0 {
		t.Fatalf("exclude_unavailable after b went down: %v", m)
	}
	m = recvUntil(t, all, hasChanges)
	if ups := m.GetChanges().GetUpserted(); toolNames(ups) != "b__x b__z " || ups[0].GetAvailable() || ups[1].GetAvailable() {
		t.Fatalf("unfiltered after b went down: %v", m)
	}
	f.servers["b"].setDown(false)
	if m := recvUntil(t, avail, hasChanges); toolNames(m.GetChanges().GetUpserted()) != "b__x b__z " || len(m.GetChanges().GetRemoved()) != 0 {
		t.Fatalf("exclude_unavailable after b came back: %v", m)
	}
}

func hasChanges(m *toolsvcv1.WatchCatalogResponse) bool { return m.GetChanges() != nil }

// recvUntil reads events (progress and older changes) until one satisfies
// cond, and returns it.
func recvUntil(t *testing.T, st toolsvcv1.ToolService_WatchCatalogClient, cond func(*toolsvcv1.WatchCatalogResponse) bool) *toolsvcv1.WatchCatalogResponse {
	t.Helper()
	for {
		if m := recvT(t, st); cond(m) {
			return m
		}
	}
}

func TestWatchFilterErrors(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, nil, map[string][]string{"a": {"x"}})
	ctx := ctxT(t)
	for _, tc := range []struct {
		servers []string
		code    codes.Code
		field   string
	}{
		{[]string{"a", "bad__name"}, codes.InvalidArgument, "servers[1]"},
		{[]string{""}, codes.InvalidArgument, "servers[0]"},
		{[]string{"nope"}, codes.NotFound, "servers[0]"},
	} {
		st, err := f.client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{Servers: tc.servers})
		if err == nil {
			_, err = st.Recv()
		}
		if status.Code(err) != tc.code || !strings.Contains(status.Convert(err).Message(), tc.field) {
			t.Errorf("servers %q: %v, want %v naming %s", tc.servers, err, tc.code, tc.field)
		}
		if tc.code == codes.InvalidArgument {
			wantInvalid(t, err, tc.field)
		}
	}
}

func TestWatchMalformedTokenCounted(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, nil, map[string][]string{"a": {"x"}})
	ctx := ctxT(t)
	for i, tok := range []string{"not-a-revision", strings.Repeat("f", 32)} {
		st, err := f.client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{ResumeToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		if m := recvT(t, st); !m.GetSnapshot().GetReset_() || toolNames(m.GetSnapshot().GetTools()) != "a__x " {
			t.Fatalf("token %q: %v, want a reset snapshot", tok, m)
		}
		got := f.svc.Stats()
		if got.WatchResets != uint64(i+1) || got.WatchMalformedTokens != 1 {
			t.Fatalf("after token %q: %+v, want %d resets of which 1 malformed", tok, got, i+1)
		}
	}
}

// bigCatalog is enough data that a client that does not read fills the
// stream's flow-control window and write quota (64 KiB each).
func bigCatalog() map[string][]string {
	var names []string
	for i := range 1500 {
		names = append(names, fmt.Sprintf("tool_with_a_rather_long_name_%04d", i))
	}
	return map[string][]string{"big": names, "small": {"x"}}
}

// stuckWatch opens a watch that never reads.
func stuckWatch(t *testing.T, f *watchFixture, ctx context.Context) toolsvcv1.ToolService_WatchCatalogClient {
	t.Helper()
	st, err := f.client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func waitStreams(t testing.TB, f *watchFixture, n int64) {
	t.Helper()
	deadline := time.Now().Add(defaultTestTimeout)
	for f.svc.Stats().WatchStreams != n {
		if time.Now().After(deadline) {
			t.Fatalf("open watch streams = %d, want %d", f.svc.Stats().WatchStreams, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWatchStuckConsumerIsolated: watchers that never read (their sends
// blocked by flow control) do not hold up the catalog or other watchers.
// The assertion is about order, not time: every reading watcher gets the
// change while every stuck stream is still open and blocked.
func TestWatchStuckConsumerIsolated(t *testing.T) {
	f := newWatchFixture(t, &serverOpts{WatchSendTimeout: time.Hour}, bigCatalog())
	ctx := ctxT(t)
	const stuck, readers = 8, 8
	for range stuck {
		stuckWatch(t, f, ctx)
	}
	waitStreams(t, f, stuck)
	// A first change makes every stuck stream try a second Send, which
	// blocks: the first (the snapshot) already overflowed the window.
	f.servers["big"].put("first_change", "v1")
	f.waitCatalog(t, "first_change", func(s *mcpbridge.Snapshot) bool { _, ok := s.Lookup("big__first_change"); return ok })

	var sts []toolsvcv1.ToolService_WatchCatalogClient
	for range readers {
		st, err := f.client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{Servers: []string{"small"}})
		if err != nil {
			t.Fatal(err)
		}
		recvT(t, st)
		sts = append(sts, st)
	}
	start := time.Now()
	f.servers["small"].put("y", "v1")
	var wg sync.WaitGroup
	lat := make([]time.Duration, readers)
	for i, st := range sts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := st.Recv()
			lat[i] = time.Since(start)
			if err != nil || toolNames(m.GetChanges().GetUpserted()) != "small__y " {
				t.Errorf("reader %d: %v %v", i, m, err)
			}
		}()
	}
	wg.Wait()
	got := f.svc.Stats()
	if got.WatchStreams != stuck+readers || got.WatchSlowConsumers != 0 {
		t.Fatalf("after delivery: %+v, want %d open streams and no slow-consumer ends: the stuck streams must still be blocked", got, stuck+readers)
	}
	t.Logf("delivery to %d readers with %d stuck watchers open: %v", readers, stuck, lat)
}

// TestWatchSlowConsumerEnded: a stream whose Send stays blocked longer
// than WatchSendTimeout is ended from the handler's own timer and counted;
// the client, once it reads again, gets what was queued, then UNAVAILABLE
// with ErrorInfo SLOW_CONSUMER. goleak (TestMain) checks that nothing
// outlives the handler.
func TestWatchSlowConsumerEnded(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, &serverOpts{WatchSendTimeout: 100 * time.Millisecond, ProgressInterval: 20 * time.Millisecond}, bigCatalog())
	ctx := ctxT(t)
	st := stuckWatch(t, f, ctx)
	deadline := time.Now().Add(defaultTestTimeout)
	for f.svc.Stats().WatchSlowConsumers != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v: the stuck stream was not ended", f.svc.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	waitStreams(t, f, 0)
	// Reading now drains what was queued, then the status.
	var err error
	n := 0
	for ; err == nil; n++ {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.Unavailable || errorReason(err) != ReasonSlowConsumer {
		t.Fatalf("after %d events: %v, want UNAVAILABLE with SLOW_CONSUMER", n-1, err)
	}
}

func TestWatchShutdownEndsStreams(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, nil, map[string][]string{"a": {"x"}})
	ctx := ctxT(t)
	st, err := f.client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	recvT(t, st)
	f.svc.Shutdown()
	if _, err := st.Recv(); status.Code(err) != codes.Unavailable {
		t.Fatalf("after Shutdown: %v, want UNAVAILABLE", err)
	}
}
