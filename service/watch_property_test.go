package service

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

// propState is a client's catalog: name -> tool.
type propState map[string]*toolsvcv1.Tool

// propWatcher is one randomly behaving client of the property test. It
// rebuilds the catalog from the stream, checks every event against the
// contract as it arrives, and logs the state it holds at every revision it
// reports, for checking against the server's history afterwards.
type propWatcher struct {
	id     int
	req    *toolsvcv1.WatchCatalogRequest
	filter *watchFilter
	rng    *rand.Rand
	client toolsvcv1.ToolServiceClient
	errorf func(format string, args ...any)

	mu     sync.Mutex
	rev    string
	state  propState
	log    []propEntry          // every revision reported, in order
	seen   map[string]propState // revision -> the state it meant
	moved  chan struct{}        // closed and replaced whenever rev changes
	events int
	stats  map[string]int
}

type propEntry struct {
	rev   string
	state propState
}

func (w *propWatcher) fail(format string, args ...any) {
	w.errorf("watcher %d %v: "+format, append([]any{w.id, w.req}, args...)...)
}

func (w *propWatcher) current() (string, chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rev, w.moved
}

// run opens streams until ctx ends, choosing at random where to resume
// from, when to disconnect and whether to read slowly.
func (w *propWatcher) run(ctx context.Context) {
	for ctx.Err() == nil {
		tok, base, kind := w.pickResume()
		limit := -1 // events before disconnecting; -1: never
		if w.rng.IntN(10) < 7 {
			limit = 1 + w.rng.IntN(12)
		}
		slow := w.rng.IntN(3) == 0
		w.stream(ctx, tok, base, kind, limit, slow)
	}
}

// pickResume returns a resume token and the state a client holding it has.
func (w *propWatcher) pickResume() (string, propState, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch r := w.rng.IntN(20); {
	case w.state == nil || r == 0:
		return "", propState{}, "fresh"
	case r == 1:
		junk := []string{"garbage", "ZZZZ", w.rev[:31], w.rev + "0", "0123456789ABCDEF0123456789ABCDEF", "r\u00e9vision\x00"}
		return junk[w.rng.IntN(len(junk))], propState{}, "malformed"
	case r <= 5 && len(w.log) > 0:
		e := w.log[w.rng.IntN(len(w.log))]
		return e.rev, maps.Clone(e.state), "past"
	}
	return w.rev, maps.Clone(w.state), "latest"
}

func (w *propWatcher) stream(ctx context.Context, tok string, state propState, kind string, limit int, slow bool) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req := proto.Clone(w.req).(*toolsvcv1.WatchCatalogRequest)
	req.ResumeToken = tok
	st, err := w.client.WatchCatalog(sctx, req)
	if err != nil {
		if ctx.Err() == nil {
			w.fail("WatchCatalog: %v", err)
		}
		return
	}
	w.mu.Lock()
	w.stats["resume:"+kind]++
	w.mu.Unlock()
	rev := tok
	for n := 0; limit < 0 || n < limit; n++ {
		if slow {
			time.Sleep(time.Duration(w.rng.IntN(8)) * time.Millisecond)
		}
		m, err := st.Recv()
		if err != nil {
			if ctx.Err() == nil && status.Code(err) != codes.Unavailable {
				w.fail("Recv: %v", err)
			}
			return
		}
		if !w.check(n == 0, tok, kind, rev, state, m) {
			return
		}
		rev = m.GetRevision()
		w.record(rev, state)
	}
}

// check validates one event against the contract and applies it to state.
func (w *propWatcher) check(first bool, tok, kind, rev string, state propState, m *toolsvcv1.WatchCatalogResponse) bool {
	if !core.ValidRevision(m.GetRevision()) {
		w.fail("event with revision %q", m.GetRevision())
		return false
	}
	switch e := m.GetEvent().(type) {
	case *toolsvcv1.WatchCatalogResponse_Snapshot:
		switch {
		case !first:
			w.fail("snapshot in the middle of a stream")
			return false
		case kind == "fresh" && e.Snapshot.GetReset_():
			w.fail("reset for an empty resume token")
		case kind == "malformed" && !e.Snapshot.GetReset_():
			w.fail("snapshot without reset for malformed token %q", tok)
		case kind == "past" || kind == "latest":
			// Nothing was evicted from history during the test (checked
			// at the end), so a token this process issued is always served.
			w.fail("reset for token %s this process issued", tok)
		}
		clear(state)
		for _, t := range e.Snapshot.GetTools() {
			state[t.GetName()] = t
		}
		w.count("snapshot")
	case *toolsvcv1.WatchCatalogResponse_Changes:
		ch := e.Changes
		if first && (kind == "fresh" || kind == "malformed") {
			w.fail("changes as the first event for a %s token", kind)
			return false
		}
		if len(ch.GetUpserted())+len(ch.GetRemoved()) == 0 {
			w.fail("empty changes from %s to %s", rev, m.GetRevision())
		}
		if m.GetRevision() == rev {
			w.fail("changes repeat revision %s", rev)
		}
		for _, name := range ch.GetRemoved() {
			if _, ok := state[name]; !ok {
				w.fail("removed %s, which the client does not have (at %s)", name, rev)
			}
			delete(state, name)
		}
		for _, t := range ch.GetUpserted() {
			if old, ok := state[t.GetName()]; ok && proto.Equal(old, t) {
				w.fail("upserted %s unchanged (repeat) at %s", t.GetName(), m.GetRevision())
			}
			state[t.GetName()] = t
		}
		w.count("changes")
	case *toolsvcv1.WatchCatalogResponse_Synced:
		if !first || m.GetRevision() != tok {
			w.fail("synced (first=%v) to %s for token %s", first, m.GetRevision(), tok)
			return false
		}
		w.count("synced")
	case *toolsvcv1.WatchCatalogResponse_Progress:
		if first || m.GetRevision() != rev {
			w.fail("progress (first=%v) at %s while the client holds %s", first, m.GetRevision(), rev)
			return false
		}
		w.count("progress")
	default:
		w.fail("unknown event %v", m)
		return false
	}
	return true
}

func (w *propWatcher) count(k string) {
	w.mu.Lock()
	w.stats[k]++
	w.mu.Unlock()
}

// record notes that the client holds state at rev.
func (w *propWatcher) record(rev string, state propState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	if prev, ok := w.seen[rev]; ok {
		if !maps.EqualFunc(prev, state, func(a, b *toolsvcv1.Tool) bool { return proto.Equal(a, b) }) {
			w.fail("revision %s reported with two different catalogs", rev)
		}
	} else {
		c := maps.Clone(state)
		w.seen[rev] = c
		w.log = append(w.log, propEntry{rev, c})
	}
	if rev != w.rev {
		w.rev = rev
		close(w.moved)
		w.moved = make(chan struct{})
	}
	w.state = maps.Clone(state)
}

// TestWatchProperty drives random catalog changes (adds, updates, removes,
// availability flips, bursts) through real go-sdk upstreams and the bridge,
// while clients with random filters resume from random past revisions,
// disconnect anywhere and read slowly. Every catalog a client rebuilds must
// equal the server's view at the revision it reports (no gaps), no event may
// repeat what the client has, and every client reaches the final catalog.
// PROPERTY_SEED replays a seed; PROPERTY_STEPS lengthens the run.
func TestWatchProperty(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("PROPERTY_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	steps := 120
	if s := os.Getenv("PROPERTY_STEPS"); s != "" {
		steps, _ = strconv.Atoi(s)
	}
	t.Logf("PROPERTY_SEED=%d PROPERTY_STEPS=%d", seed, steps)
	rng := rand.New(rand.NewPCG(seed, 1))

	f := newWatchFixture(t, &serverOpts{ProgressInterval: 40 * time.Millisecond},
		map[string][]string{"a": {"t0", "t1"}, "b": {"t0"}, "c": nil})
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()

	reqs := []*toolsvcv1.WatchCatalogRequest{
		{},
		{Servers: []string{"a"}},
		{Servers: []string{"b", "c"}},
		{ExcludeUnavailable: true},
		{Servers: []string{"a", "c"}, ExcludeUnavailable: true},
	}
	var watchers []*propWatcher
	var wg sync.WaitGroup
	for i := range 2 * len(reqs) {
		req := reqs[i%len(reqs)]
		flt, err := f.svc.newWatchFilter(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		w := &propWatcher{
			id: i, req: req, filter: flt, client: f.client, errorf: t.Errorf,
			rng:  rand.New(rand.NewPCG(rng.Uint64(), uint64(i))),
			seen: map[string]propState{}, moved: make(chan struct{}), stats: map[string]int{},
		}
		watchers = append(watchers, w)
		wg.Add(1)
		go func() { defer wg.Done(); w.run(ctx) }()
	}
	defer wg.Wait()
	defer cancel()

	names := []string{"a", "b", "c"}
	version := 0
	op := func() {
		m := f.servers[names[rng.IntN(len(names))]]
		switch r := rng.IntN(10); {
		case r < 5:
			version++
			m.put(fmt.Sprintf("t%d", rng.IntN(5)), fmt.Sprintf("v%d", version))
		case r < 8:
			if ns := m.names(); len(ns) > 0 {
				m.remove(ns[rng.IntN(len(ns))])
			}
		default:
			m.setDown(!m.isDown())
		}
	}
	for range steps {
		if rng.IntN(5) == 0 {
			for range 2 + rng.IntN(4) { // a burst
				op()
			}
		} else {
			op()
		}
		time.Sleep(time.Duration(rng.IntN(25)) * time.Millisecond)
	}
	for _, m := range f.servers {
		m.setDown(false)
	}
	final := f.waitCatalog(t, "the catalog to match the upstreams", f.matchesUpstreams)

	// Every watcher reaches its view of the final catalog.
	deadline := time.After(defaultTestTimeout)
	for _, w := range watchers {
		want := f.svc.view(final, w.filter).rev
		for {
			rev, moved := w.current()
			if rev == want {
				break
			}
			select {
			case <-moved:
			case <-deadline:
				t.Fatalf("watcher %d %v stuck at %s, want final %s", w.id, w.req, rev, want)
			}
		}
	}
	cancel()
	wg.Wait()

	hist := f.bridge.Catalog().History()
	if len(hist) >= 128 {
		t.Fatalf("history reached its bound (%d snapshots): the test assumes nothing was evicted; use fewer steps", len(hist))
	}
	unavailable := 0
	for _, s := range hist {
		for _, tl := range s.Tools {
			if !tl.Available {
				unavailable++
				break
			}
		}
	}
	if unavailable == 0 {
		t.Errorf("no snapshot had an unavailable tool: availability flips were not exercised")
	}
	total := 0
	for _, w := range watchers {
		views := map[string]*view{}
		for _, s := range hist {
			v := f.svc.view(s, w.filter)
			views[v.rev] = v
		}
		for _, e := range w.log {
			v, ok := views[e.rev]
			if !ok {
				t.Errorf("watcher %d reported revision %s, which is no view of any snapshot", w.id, e.rev)
				continue
			}
			for name, tl := range e.state {
				if (len(w.req.Servers) > 0 && !slices.Contains(w.req.Servers, tl.GetServer())) ||
					(w.req.ExcludeUnavailable && !tl.GetAvailable()) {
					t.Errorf("watcher %d at %s holds %s (server %s, available %v), which its filter excludes",
						w.id, e.rev, name, tl.GetServer(), tl.GetAvailable())
				}
			}
			if len(v.tools) != len(e.state) {
				t.Errorf("watcher %d at %s holds %d tools, server view has %d", w.id, e.rev, len(e.state), len(v.tools))
			}
			for _, tl := range v.tools {
				if got, ok := e.state[tl.Name]; !ok || !proto.Equal(got, toolToProto(tl)) {
					t.Errorf("watcher %d at %s: tool %s = %v, want %v", w.id, e.rev, tl.Name, got, toolToProto(tl))
				}
			}
		}
		total += w.events
		t.Logf("watcher %d %v: %d events, %d revisions, %v", w.id, w.req, w.events, len(w.log), w.stats)
	}
	st := f.svc.Stats()
	t.Logf("%d snapshots published (%d with unavailable tools), %d events checked; stats %+v", len(hist), unavailable, total, st)
	if st.WatchMalformedTokens != st.WatchResets {
		t.Errorf("resets %d != malformed tokens %d: a token this process issued was not served", st.WatchResets, st.WatchMalformedTokens)
	}
}
