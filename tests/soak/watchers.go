package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/toolsvc/toolsvc/catalogwatch"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// watcherState is one catalog watcher (package catalogwatch) and the soak's
// own shadow of the catalog, built from the events alone, which is how
// repeated events are seen.
type watcherState struct {
	s    *soak
	id   int
	json bool // SCHEMA_FORMAT_JSON
	slow atomic.Pointer[chan struct{}]

	mu      sync.Mutex
	replica *replica
	conn    *grpc.ClientConn
	cw      *catalogwatch.Watcher
	cancel  context.CancelFunc
	done    chan struct{}
	shadow  map[string]*toolsvcv1.Tool
	rev     string
}

func (s *soak) startWatchers(ctx context.Context, wg *sync.WaitGroup, n int) error {
	// Four connections per replica, shared by its watchers.
	conns := map[int][]*grpc.ClientConn{}
	for _, r := range s.replicas {
		for range 4 {
			c, err := dial(r.addr(), s.tokens[principalSoak])
			if err != nil {
				return err
			}
			conns[r.idx] = append(conns[r.idx], c)
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		for _, w := range s.watchers {
			w.stop()
		}
		for _, cs := range conns {
			for _, c := range cs {
				c.Close()
			}
		}
	}()
	s.watcherConns = conns
	for i := range n {
		w := &watcherState{s: s, id: i, json: i%2 == 1, shadow: map[string]*toolsvcv1.Tool{}}
		s.watchers = append(s.watchers, w)
		w.startOn(ctx, s.replicas[i%len(s.replicas)], "", nil)
	}
	// Every watcher has its snapshot before the load starts.
	deadline := time.Now().Add(60 * time.Second)
	for _, w := range s.watchers {
		for w.revision() == "" {
			if time.Now().After(deadline) {
				return fmt.Errorf("watcher %d got no snapshot within 60s", w.id)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	s.logf("%d watchers have their snapshots", n)
	return nil
}

func (w *watcherState) startOn(ctx context.Context, r *replica, resume string, initial []*toolsvcv1.Tool) {
	conns := w.s.watcherConns[r.idx]
	conn := conns[w.id%len(conns)]
	opts := catalogwatch.Options{
		ResumeToken: resume,
		Initial:     initial,
		OnEvent:     w.onEvent,
		MinBackoff:  50 * time.Millisecond,
		MaxBackoff:  time.Second,
		OnRetry:     func(error, time.Duration) { w.s.resumes.Add(1) },
	}
	if w.json {
		opts.SchemaFormat = toolsvcv1.SchemaFormat_SCHEMA_FORMAT_JSON
	}
	cw := catalogwatch.New(newClient(conn), opts)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	w.mu.Lock()
	w.replica, w.conn, w.cw, w.cancel, w.done = r, conn, cw, cancel, done
	w.mu.Unlock()
	go func() {
		defer close(done)
		if err := cw.Run(wctx); err != nil && wctx.Err() == nil {
			w.s.mu.Lock()
			w.s.lost++
			w.s.lostDetail = append(w.s.lostDetail, fmt.Sprintf("watcher %d ended: %v", w.id, err))
			w.s.mu.Unlock()
		}
	}()
}

func (w *watcherState) stop() {
	w.mu.Lock()
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (w *watcherState) revision() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rev
}

// onEvent runs on catalogwatch's goroutine after each applied event.
func (w *watcherState) onEvent(ev catalogwatch.Event) {
	if ch := w.slow.Load(); ch != nil {
		<-*ch
	}
	s := w.s
	s.watchEvents.Add(1)
	w.mu.Lock()
	defer w.mu.Unlock()
	repeat := func(what string) {
		s.repeated.Add(1)
		s.mu.Lock()
		s.repDetail = append(s.repDetail, fmt.Sprintf("watcher %d (replica%d) at %s: %s", w.id, w.replica.idx, ev.Revision, what))
		s.mu.Unlock()
	}
	switch ev.Kind {
	case catalogwatch.Snapshot, catalogwatch.Reset:
		w.shadow = make(map[string]*toolsvcv1.Tool, len(ev.Tools))
		for _, t := range ev.Tools {
			w.shadow[t.GetName()] = t
		}
	case catalogwatch.Changes:
		if len(ev.Upserted)+len(ev.Removed) == 0 {
			repeat("an empty changes event")
		}
		if ev.Revision == w.rev {
			repeat("changes that keep the revision")
		}
		for _, t := range ev.Upserted {
			if old, ok := w.shadow[t.GetName()]; ok && proto.Equal(old, t) {
				repeat("upsert of an unchanged tool " + t.GetName())
			}
			w.shadow[t.GetName()] = t
		}
		for _, name := range ev.Removed {
			if _, ok := w.shadow[name]; !ok {
				repeat("removal of a tool it does not hold: " + name)
			}
			delete(w.shadow, name)
		}
	}
	if ev.Revision != w.rev {
		r := w.replica
		r.mu.Lock()
		r.revSeen[ev.Revision] = true
		r.mu.Unlock()
	}
	w.rev = ev.Revision
}

// hopper moves a random watcher to another replica every 0.5-2 s, resuming
// from the revision and tools it holds, as a client does when its replica
// goes away.
func (s *soak) hopper(ctx context.Context) {
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.durn(500*time.Millisecond, 2*time.Second)):
		}
		s.loadGate.RLock()
		w := s.watchers[s.intn(len(s.watchers))]
		if w.slow.Load() == nil {
			w.stop()
			w.mu.Lock()
			from := w.replica
			tools := make([]*toolsvcv1.Tool, 0, len(w.shadow))
			for _, t := range w.cw.Tools() {
				tools = append(tools, t)
			}
			rev := w.cw.Revision()
			w.mu.Unlock()
			to := s.replicas[(from.idx+1+s.intn(len(s.replicas)-1))%len(s.replicas)]
			if ctx.Err() == nil {
				s.resumes.Add(1)
				w.startOn(ctx, to, rev, tools)
			}
		}
		s.loadGate.RUnlock()
	}
}
