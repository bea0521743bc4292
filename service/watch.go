package service

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// DefaultWatchSendTimeout bounds how long one message of a watch stream may
// wait for the client to read (gRPC flow control) before the stream ends
// with UNAVAILABLE.
const DefaultWatchSendTimeout = 30 * time.Second

// Stats are counters of the service edge. Metrics come later; tests and
// operators read them through Server.Stats.
type Stats struct {
	// WatchStreams is the number of open WatchCatalog streams.
	WatchStreams int64
	// WatchResets counts watches that began with a reset snapshot because
	// their resume token could not be served (any reason).
	WatchResets uint64
	// WatchMalformedTokens counts resume tokens that were not revisions at
	// all (a subset of WatchResets).
	WatchMalformedTokens uint64
	// WatchSlowConsumers counts streams ended with UNAVAILABLE because one
	// message waited longer than Options.WatchSendTimeout for the client.
	WatchSlowConsumers uint64
}

type watchCounters struct {
	streams   atomic.Int64
	resets    atomic.Uint64
	malformed atomic.Uint64
	slow      atomic.Uint64
}

// Stats returns the current counters.
func (s *Server) Stats() Stats {
	return Stats{
		WatchStreams:         s.watch.streams.Load(),
		WatchResets:          s.watch.resets.Load(),
		WatchMalformedTokens: s.watch.malformed.Load(),
		WatchSlowConsumers:   s.watch.slow.Load(),
	}
}

// Wait blocks until every goroutine the watch streams started has ended. A
// stream ended for a blocked Send leaves its sender blocked until gRPC
// cancels the stream, which it does as soon as the handler returns; call
// Wait after the gRPC server stopped.
func (s *Server) Wait() { s.senders.wait() }

// goroutines counts running goroutines. Unlike sync.WaitGroup, it allows
// starting one while another goroutine waits (a watch handler may still be
// running when the gRPC server's Stop returns).
type goroutines struct {
	mu   sync.Mutex
	n    int
	idle *sync.Cond
}

func (g *goroutines) goFunc(f func()) {
	g.mu.Lock()
	g.n++
	g.mu.Unlock()
	go func() {
		defer func() {
			g.mu.Lock()
			if g.n--; g.n == 0 && g.idle != nil {
				g.idle.Broadcast()
			}
			g.mu.Unlock()
		}()
		f()
	}()
}

func (g *goroutines) wait() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.idle == nil {
		g.idle = sync.NewCond(&g.mu)
	}
	for g.n > 0 {
		g.idle.Wait()
	}
}

// watchFilter is the view of the catalog a watch asked for.
type watchFilter struct {
	servers            map[string]bool // nil: every server
	excludeUnavailable bool
	allowed            func(tool string) bool // the caller's authorization; nil: all
	key                string                 // canonical form; "" is the whole catalog
}

func (s *Server) newWatchFilter(ctx context.Context, req *toolsvcv1.WatchCatalogRequest) (*watchFilter, error) {
	f := &watchFilter{excludeUnavailable: req.GetExcludeUnavailable(), allowed: s.opts.Authorizer.filter(ctx)}
	var names []string
	for i, name := range req.GetServers() {
		field := fmt.Sprintf("servers[%d]", i)
		if err := mcpbridge.ValidateServerName(name); err != nil {
			return nil, invalidArgument(field, err.Error())
		}
		if _, err := s.bridge.Server(name); err != nil {
			return nil, plainError(codes.NotFound, ReasonServerNotFound, fmt.Sprintf("%s: no configured server is named %q", field, name), map[string]string{"server": name})
		}
		if f.servers == nil {
			f.servers = map[string]bool{}
		}
		if !f.servers[name] {
			f.servers[name] = true
			names = append(names, name)
		}
	}
	principal := ""
	if f.allowed != nil {
		// Views are shared by key: callers with different rules must not
		// share one. The rules are fixed per principal.
		p, _ := PrincipalFrom(ctx)
		principal = p.Method + ":" + p.Name
	}
	if f.servers != nil || f.excludeUnavailable || f.allowed != nil {
		slices.Sort(names)
		f.key = fmt.Sprintf("%q|%v|%q", names, f.excludeUnavailable, principal) // quoted: names may hold any character
	}
	return f, nil
}

func (f *watchFilter) keep(t *mcpbridge.Tool) bool {
	return (f.servers == nil || f.servers[t.Server]) && (t.Available || !f.excludeUnavailable) &&
		(f.allowed == nil || f.allowed(t.Name))
}

// A view is a snapshot as one filter sees it. Its revision is the content
// revision of the filtered tools (mcpbridge.Revision), so the unfiltered
// view's revision is the snapshot's, and equal views have equal revisions on
// every replica.
type view struct {
	snap  *mcpbridge.Snapshot
	tools []*mcpbridge.Tool
	rev   string
}

type viewKey struct {
	snap   *mcpbridge.Snapshot
	filter string
}

type deltaKey struct {
	from, to *mcpbridge.Snapshot
	filter   string
}

type snapshotKey struct {
	snap   *mcpbridge.Snapshot
	filter string
	reset  bool
}

// watchCache shares the work of many watchers with the same filter: views
// of a snapshot, and encoded snapshot and changes events (thousands of
// watchers usually make the same step from the previous revision to the
// current one). Each map is dropped whole when it grows past a bound.
type watchCache struct {
	last atomic.Pointer[wireEntry] // the newest entry: most lookups, no lock

	mu        sync.Mutex
	views     map[viewKey]*view
	wire      map[any]proto.Message // deltaKey or snapshotKey -> encoded event
	wireBytes int
}

const (
	watchCacheMax      = 128      // entries per map
	watchCacheMaxBytes = 64 << 20 // encoded events
)

func (s *Server) view(snap *mcpbridge.Snapshot, f *watchFilter) *view {
	if f.key == "" {
		return &view{snap: snap, tools: snap.Tools, rev: snap.Revision}
	}
	if v := s.cachedView(snap, f); v != nil {
		return v
	}
	v := buildView(snap, f)
	s.storeView(snap, f, v)
	return v
}

func (s *Server) cachedView(snap *mcpbridge.Snapshot, f *watchFilter) *view {
	c := &s.watchCache
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.views[viewKey{snap, f.key}]
}

func (s *Server) storeView(snap *mcpbridge.Snapshot, f *watchFilter, v *view) {
	c := &s.watchCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.views == nil || len(c.views) >= watchCacheMax {
		c.views = map[viewKey]*view{}
	}
	c.views[viewKey{snap, f.key}] = v
}

func buildView(snap *mcpbridge.Snapshot, f *watchFilter) *view {
	tools := make([]*mcpbridge.Tool, 0, len(snap.Tools))
	for _, t := range snap.Tools {
		if f.keep(t) {
			tools = append(tools, t)
		}
	}
	return &view{snap: snap, tools: slices.Clip(tools), rev: mcpbridge.Revision(tools)}
}

// encoded returns the event build makes, encoded once and shared by every
// stream that sends the same event. The result is a message whose wire
// form is exactly the WatchCatalogResponse's (its bytes ride as unknown
// fields of an Empty), so gRPC neither sizes nor marshals the event again
// for each of thousands of streams: clients decode a WatchCatalogResponse.
type wireEntry struct {
	key any
	msg proto.Message
}

func (s *Server) encoded(k any, build func() *toolsvcv1.WatchCatalogResponse) proto.Message {
	c := &s.watchCache
	if e := c.last.Load(); e != nil && e.key == k {
		return e.msg
	}
	c.mu.Lock()
	m := c.wire[k]
	c.mu.Unlock()
	if m != nil {
		return m
	}
	m = preEncode(build())
	size := proto.Size(m)
	c.mu.Lock()
	if c.wire == nil || len(c.wire) >= watchCacheMax || c.wireBytes+size > watchCacheMaxBytes {
		c.wire, c.wireBytes = map[any]proto.Message{}, 0
	}
	c.wire[k] = m
	c.wireBytes += size
	c.mu.Unlock()
	c.last.Store(&wireEntry{k, m})
	return m
}

func preEncode(m *toolsvcv1.WatchCatalogResponse) proto.Message {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return m // gRPC will report the error on Send
	}
	e := &emptypb.Empty{}
	e.ProtoReflect().SetUnknown(b)
	return e
}

// changesEvent moves a client from one view to another.
func (s *Server) changesEvent(from, to *view, f *watchFilter) proto.Message {
	return s.encoded(deltaKey{from.snap, to.snap, f.key}, func() *toolsvcv1.WatchCatalogResponse {
		up, rm := mcpbridge.DiffTools(from.tools, to.tools)
		ch := &toolsvcv1.CatalogChanges{Removed: rm, Upserted: make([]*toolsvcv1.Tool, len(up))}
		for i, t := range up {
			ch.Upserted[i] = s.cache.one(t)
		}
		return &toolsvcv1.WatchCatalogResponse{Revision: to.rev, Event: &toolsvcv1.WatchCatalogResponse_Changes{Changes: ch}}
	})
}

// snapshotEvent is the whole view.
func (s *Server) snapshotEvent(v *view, f *watchFilter, reset bool) proto.Message {
	return s.encoded(snapshotKey{v.snap, f.key, reset}, func() *toolsvcv1.WatchCatalogResponse {
		var tools []*toolsvcv1.Tool
		if f.key == "" {
			tools = s.cache.tools(v.snap, v.snap == s.bridge.Catalog().Current())
		} else {
			tools = make([]*toolsvcv1.Tool, len(v.tools))
			for i, t := range v.tools {
				tools[i] = s.cache.one(t)
			}
		}
		return &toolsvcv1.WatchCatalogResponse{Revision: v.rev, Event: &toolsvcv1.WatchCatalogResponse_Snapshot{
			Snapshot: &toolsvcv1.CatalogSnapshot{Tools: tools, Reset_: reset}}}
	})
}

// resumeEvent is the first event of a watch: what the resume token earns.
func (s *Server) resumeEvent(tok string, cur *view, f *watchFilter) proto.Message {
	switch {
	case tok == "":
		return s.snapshotEvent(cur, f, false)
	case tok == cur.rev:
		return &toolsvcv1.WatchCatalogResponse{Revision: cur.rev, Event: &toolsvcv1.WatchCatalogResponse_Synced{Synced: &toolsvcv1.CatalogSynced{}}}
	case !validRevision(tok):
		s.watch.malformed.Add(1)
		s.log.Info("watch: malformed resume token; sending a reset snapshot", "token_len", len(tok))
	default:
		if old := s.findView(tok, f); old != nil {
			return s.changesEvent(old, cur, f)
		}
	}
	s.watch.resets.Add(1)
	return s.snapshotEvent(cur, f, true)
}

// findView returns the newest remembered view with revision rev, or nil.
func (s *Server) findView(rev string, f *watchFilter) *view {
	cat := s.bridge.Catalog()
	if f.key == "" {
		if snap, ok := cat.Snapshot(rev); ok {
			return s.view(snap, f)
		}
		return nil
	}
	// Search the history without caching what does not match: an unknown
	// token must not flush the views every other watcher shares.
	hist := cat.History()
	for i := len(hist) - 1; i >= 0; i-- {
		v := s.cachedView(hist[i], f)
		if v == nil {
			v = buildView(hist[i], f)
			if v.rev != rev {
				continue
			}
			s.storeView(hist[i], f, v)
		}
		if v.rev == rev {
			return v
		}
	}
	return nil
}

// WatchCatalog implements toolsvc.v1.ToolService. The catalog writer never
// blocks on this stream: it only signals a capacity-1 channel, and this
// goroutine computes the delta from the last view it sent to the current
// one, so a slow client skips intermediate states but always reaches the
// latest. Each Send runs on a goroutine of its own while this one waits for
// it with a bound: a client that does not read for WatchSendTimeout gets
// UNAVAILABLE and resumes.
func (s *Server) WatchCatalog(req *toolsvcv1.WatchCatalogRequest, stream grpc.ServerStreamingServer[toolsvcv1.WatchCatalogResponse]) error {
	authCtx, _, err := s.authenticate(stream.Context()) // the principal, inside the service (auth.go)
	if err != nil {
		return err
	}
	f, err := s.newWatchFilter(authCtx, req)
	if err != nil {
		return err
	}
	if req.GetIncludeResources() || req.GetIncludePrompts() {
		return s.watchWithResources(authCtx, req, f, stream) // watch_resources.go
	}
	s.watch.streams.Add(1)
	defer s.watch.streams.Add(-1)

	ctx := stream.Context()
	cat := s.bridge.Catalog()
	sub := cat.Subscribe()
	defer sub.Close()

	w := &watchSender{s: s, stream: stream, done: make(chan error, 1)}
	cur := s.view(cat.Current(), f)
	if err := w.send(s.resumeEvent(req.GetResumeToken(), cur, f)); err != nil {
		return err
	}
	last := cur
	progress := time.NewTicker(s.opts.ProgressInterval)
	defer progress.Stop()
	for {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-s.shutdown:
			return errShuttingDown
		case <-progress.C:
			if err := w.send(&toolsvcv1.WatchCatalogResponse{
				Revision: last.rev,
				Event:    &toolsvcv1.WatchCatalogResponse_Progress{Progress: &toolsvcv1.CatalogProgress{}},
			}); err != nil {
				return err
			}
		case <-sub.C():
			cur := s.view(cat.Current(), f)
			if cur.rev == last.rev {
				continue // nothing this view shows has changed
			}
			if err := w.send(s.changesEvent(last, cur, f)); err != nil {
				return err
			}
			last = cur
			progress.Reset(s.opts.ProgressInterval)
		}
	}
}

var errShuttingDown = (&richError{code: codes.Unavailable, reason: ReasonShuttingDown,
	msg: "server shutting down; resume with the last revision on any replica"}).err()

// watchSender does one Send at a time on a goroutine of its own, so the
// handler can give up on a Send that gRPC flow control holds. A sender left
// blocked ends when gRPC cancels the stream after the handler returns;
// Server.Wait waits for it.
type watchSender struct {
	s      *Server
	stream grpc.ServerStreamingServer[toolsvcv1.WatchCatalogResponse]
	done   chan error
	timer  *time.Timer
}

func (w *watchSender) send(m proto.Message) error {
	w.s.senders.goFunc(func() { w.done <- w.stream.SendMsg(m) })
	if w.timer == nil {
		w.timer = time.NewTimer(w.s.opts.WatchSendTimeout)
	} else {
		w.timer.Reset(w.s.opts.WatchSendTimeout)
	}
	select {
	case err := <-w.done:
		w.timer.Stop()
		return err
	case <-w.timer.C:
		w.s.watch.slow.Add(1)
		w.s.log.Info("watch: client did not read for the send timeout; ending the stream", "timeout", w.s.opts.WatchSendTimeout)
		return plainError(codes.Unavailable, ReasonSlowConsumer, fmt.Sprintf(
			"watch stream ended: the client did not read for %s; resume with the last revision", w.s.opts.WatchSendTimeout), nil)
	case <-w.s.shutdown:
		w.timer.Stop()
		return errShuttingDown
	case <-w.stream.Context().Done():
		w.timer.Stop()
		return status.FromContextError(w.stream.Context().Err()).Err()
	}
}
