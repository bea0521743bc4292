package service

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service/core"
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

// watchFilter is the view of the catalog a watch asked for.
type watchFilter struct {
	servers            map[string]bool // nil: every server
	excludeUnavailable bool
	allowed            func(tool string) bool // the caller's authorization; nil: all
	key                string                 // canonical form of the view; "" is the whole catalog
	format             schemaFormat           // how events carry schemas (not part of the view)
	fragment           bool                   // the client accepts events split across messages
}

func (s *Server) newWatchFilter(ctx context.Context, req *toolsvcv1.WatchCatalogRequest) (*watchFilter, error) {
	f := &watchFilter{excludeUnavailable: req.GetExcludeUnavailable(), allowed: s.authOf(ctx).Filter(ctx), fragment: req.GetFragment()}
	format, err := parseSchemaFormat(req.GetSchemaFormat(), "schema_format")
	if err != nil {
		return nil, err
	}
	f.format = format
	var names []string
	for i, name := range req.GetServers() {
		field := fmt.Sprintf("servers[%d]", i)
		if err := mcpbridge.ValidateServerName(name); err != nil {
			return nil, invalidArgument(field, err.Error())
		}
		if _, err := s.bridge.Server(name); err != nil {
			return nil, plainError(core.NotFound, ReasonServerNotFound, fmt.Sprintf("%s: no configured server is named %q", field, name), map[string]string{"server": name})
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
		// share one. The rules are fixed per principal and auth state
		// (a group's remembered views were built under one state).
		p, _ := core.PrincipalFrom(ctx)
		principal = fmt.Sprintf("%d/%s:%s", s.authOf(ctx).Gen(), p.Method, p.Name)
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

func buildView(snap *mcpbridge.Snapshot, f *watchFilter) *view {
	if f.key == "" {
		return &view{snap: snap, tools: snap.Tools, rev: snap.Revision}
	}
	tools := make([]*mcpbridge.Tool, 0, len(snap.Tools))
	for _, t := range snap.Tools {
		if f.keep(t) {
			tools = append(tools, t)
		}
	}
	return &view{snap: snap, tools: slices.Clip(tools), rev: mcpbridge.Revision(tools)}
}

// view returns snap as f sees it (tests and resumption).
func (s *Server) view(snap *mcpbridge.Snapshot, f *watchFilter) *view { return buildView(snap, f) }

// The fan-out engine. Streams with the same view and schema format share a
// watchGroup. A group's state is the newest (snapshot, view) a member has
// asked for; it is built once per catalog change by the first member that
// wakes (under the group's own lock: groups never wait for each other), and
// read by every other member with one atomic load. Every event a state can
// send (snapshot, reset snapshot, changes from the previous view, synced,
// progress) is encoded once, on first use, and shared by every member: a
// member's own work per change is one Send. Each stream's handler goroutine
// is its send loop: nothing else ever calls Send on it.

// watchHub holds the groups; its lock is taken when a stream opens or
// closes, never to deliver an event.
type watchHub struct {
	mu     sync.Mutex
	groups map[groupKey]*watchGroup
	closed bool // Shutdown: no more joins
}

type groupKey struct {
	view     string
	format   schemaFormat
	fragment bool // events are split into parts (or refused when too large)
}

type watchGroup struct {
	key     groupKey
	filter  *watchFilter              // the first member's; members' filters are equal (same key)
	refs    int                       // watchHub.mu
	members map[*watchSender]struct{} // watchHub.mu; Shutdown ends them

	state atomic.Pointer[groupState]

	mu     sync.Mutex                    // builds states; guards the caches below
	views  map[*mcpbridge.Snapshot]*view // remembered views of older snapshots (resumption)
	deltas map[[2]string]*encodedEvent   // changes from revisions older than the previous one
	events map[string]*viewEvents        // the events of recent revisions, so a flip back reuses them
}

// groupState is the group's newest snapshot and the events of its view.
type groupState struct {
	snap *mcpbridge.Snapshot
	ev   *viewEvents
}

// viewEvents are the events of one view revision of a group, each encoded
// at most once.
type viewEvents struct {
	g    *watchGroup
	view *view
	prev *view // the group's view before this one; nil for the first

	changes, snapshot, reset, synced, progress encodedEvent
}

// encodedEvent is one event, encoded once on first use.
type encodedEvent struct {
	once sync.Once
	msgs eventMessages
}

func (e *encodedEvent) get(s *Server, fragment bool, build func() *toolsvcv1.WatchCatalogResponse) eventMessages {
	e.once.Do(func() { e.msgs = s.encodeEvent(build(), fragment) })
	return e.msgs
}

// Bounds of a group's caches; each is dropped whole when it is full.
const (
	groupViewsMax  = 128
	groupDeltasMax = 64
	groupEventsMax = 8
)

// join adds a stream (w; nil in tests) to the group of its view, or
// returns false after Shutdown.
func (h *watchHub) join(f *watchFilter, w *watchSender) (*watchGroup, bool) {
	k := groupKey{f.key, f.format, f.fragment}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	g := h.groups[k]
	if g == nil {
		if h.groups == nil {
			h.groups = map[groupKey]*watchGroup{}
		}
		g = &watchGroup{key: k, filter: f, members: map[*watchSender]struct{}{}}
		h.groups[k] = g
	}
	g.refs++
	if w != nil {
		g.members[w] = struct{}{}
	}
	return g, true
}

func (h *watchHub) leave(g *watchGroup, w *watchSender) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(g.members, w)
	if g.refs--; g.refs == 0 {
		delete(h.groups, g.key)
	}
}

// shutdown ends every stream with SHUTTING_DOWN, including those whose
// Send a client holds up (an idle handler would also see s.shutdown).
func (h *watchHub) shutdown() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, g := range h.groups {
		for w := range g.members {
			w.endWith(errShuttingDown)
		}
	}
}

// current returns the group's state for the catalog's current snapshot,
// building it if this member is the first to ask.
func (g *watchGroup) current(s *Server) *groupState {
	cat := s.bridge.Catalog()
	if st := g.state.Load(); st != nil && st.snap == cat.Current() {
		return st
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	snap := cat.Current() // the newest, even if another member just built one
	old := g.state.Load()
	if old != nil && old.snap == snap {
		return old
	}
	st := &groupState{snap: snap}
	v := g.viewLocked(snap)
	switch {
	case old != nil && old.ev.view.rev == v.rev:
		st.ev = old.ev // nothing this view shows changed
	case g.events[v.rev] != nil:
		st.ev = g.events[v.rev]
	default:
		st.ev = &viewEvents{g: g, view: v}
		if old != nil {
			st.ev.prev = old.ev.view
		}
		if g.events == nil || len(g.events) >= groupEventsMax {
			g.events = map[string]*viewEvents{}
		}
		g.events[v.rev] = st.ev
	}
	g.state.Store(st)
	return st
}

// viewLocked returns snap as the group sees it, remembered for resumption.
func (g *watchGroup) viewLocked(snap *mcpbridge.Snapshot) *view {
	if v := g.views[snap]; v != nil {
		return v
	}
	v := buildView(snap, g.filter)
	if g.filter.key != "" { // the unfiltered view is the snapshot itself
		if g.views == nil || len(g.views) >= groupViewsMax {
			g.views = map[*mcpbridge.Snapshot]*view{}
		}
		g.views[snap] = v
	}
	return v
}

// findView returns the newest remembered view with revision rev, or nil.
func (g *watchGroup) findView(s *Server, rev string) *view {
	cat := s.bridge.Catalog()
	if g.filter.key == "" {
		if snap, ok := cat.Snapshot(rev); ok {
			return buildView(snap, g.filter)
		}
		return nil
	}
	// Search the history, remembering only what matches: an unknown token
	// must not flush the views other resumers share.
	hist := cat.History()
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := len(hist) - 1; i >= 0; i-- {
		v := g.views[hist[i]]
		if v == nil {
			if v = buildView(hist[i], g.filter); v.rev != rev {
				continue
			}
			if g.views == nil || len(g.views) >= groupViewsMax {
				g.views = map[*mcpbridge.Snapshot]*view{}
			}
			g.views[hist[i]] = v
		}
		if v.rev == rev {
			return v
		}
	}
	return nil
}

// changesFrom is the event that moves a member holding from to ev's view:
// the shared one when from is the previous view (the common case), else
// one built once per (from, to) for the group.
func (ev *viewEvents) changesFrom(s *Server, from *view) eventMessages {
	if ev.prev != nil && ev.prev.rev == from.rev {
		return ev.changes.get(s, ev.g.key.fragment, func() *toolsvcv1.WatchCatalogResponse { return ev.buildChanges(s, from) })
	}
	g := ev.g
	k := [2]string{from.rev, ev.view.rev}
	g.mu.Lock()
	e := g.deltas[k]
	if e == nil {
		if g.deltas == nil || len(g.deltas) >= groupDeltasMax {
			g.deltas = map[[2]string]*encodedEvent{}
		}
		e = &encodedEvent{}
		g.deltas[k] = e
	}
	g.mu.Unlock()
	return e.get(s, ev.g.key.fragment, func() *toolsvcv1.WatchCatalogResponse { return ev.buildChanges(s, from) })
}

func (ev *viewEvents) buildChanges(s *Server, from *view) *toolsvcv1.WatchCatalogResponse {
	up, rm := mcpbridge.DiffTools(from.tools, ev.view.tools)
	ch := &toolsvcv1.CatalogChanges{Removed: rm, Upserted: make([]*toolsvcv1.Tool, len(up))}
	for i, t := range up {
		ch.Upserted[i] = s.cache.one(t, ev.g.key.format).msg
	}
	return &toolsvcv1.WatchCatalogResponse{Revision: ev.view.rev, Event: &toolsvcv1.WatchCatalogResponse_Changes{Changes: ch}}
}

// snapshotEvent is the whole view (reset: the resume token could not be
// served).
func (ev *viewEvents) snapshotEvent(s *Server, reset bool) eventMessages {
	e := &ev.snapshot
	if reset {
		e = &ev.reset
	}
	return e.get(s, ev.g.key.fragment, func() *toolsvcv1.WatchCatalogResponse {
		f := ev.g.key.format
		tools := make([]*toolsvcv1.Tool, len(ev.view.tools))
		if ev.g.filter.key == "" {
			for i, w := range s.cache.tools(ev.view.snap, ev.view.snap == s.bridge.Catalog().Current(), f) {
				tools[i] = w.msg
			}
		} else {
			for i, t := range ev.view.tools {
				tools[i] = s.cache.one(t, f).msg
			}
		}
		return &toolsvcv1.WatchCatalogResponse{Revision: ev.view.rev, Event: &toolsvcv1.WatchCatalogResponse_Snapshot{
			Snapshot: &toolsvcv1.CatalogSnapshot{Tools: tools, Reset_: reset}}}
	})
}

func (ev *viewEvents) syncedEvent(s *Server) eventMessages {
	return ev.synced.get(s, false, func() *toolsvcv1.WatchCatalogResponse {
		return &toolsvcv1.WatchCatalogResponse{Revision: ev.view.rev, Event: &toolsvcv1.WatchCatalogResponse_Synced{Synced: &toolsvcv1.CatalogSynced{}}}
	})
}

func (ev *viewEvents) progressEvent(s *Server) eventMessages {
	return ev.progress.get(s, false, func() *toolsvcv1.WatchCatalogResponse {
		return &toolsvcv1.WatchCatalogResponse{Revision: ev.view.rev, Event: &toolsvcv1.WatchCatalogResponse_Progress{Progress: &toolsvcv1.CatalogProgress{}}}
	})
}

// preEncode returns a message whose wire form is exactly m's (its bytes
// ride as unknown fields of an Empty), so gRPC neither sizes nor marshals
// the event again for each of thousands of streams: clients decode a
// WatchCatalogResponse.
func preEncode(m *toolsvcv1.WatchCatalogResponse) proto.Message {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return m // gRPC will report the error on Send
	}
	e := &emptypb.Empty{}
	e.ProtoReflect().SetUnknown(b)
	return e
}

// resumeEvent is the first event of a watch: what the resume token earns.
func (s *Server) resumeEvent(tok string, ev *viewEvents) eventMessages {
	switch {
	case tok == "":
		return ev.snapshotEvent(s, false)
	case tok == ev.view.rev:
		return ev.syncedEvent(s)
	case !core.ValidRevision(tok):
		s.watch.malformed.Add(1)
		s.log.Info("watch: malformed resume token; sending a reset snapshot", "token_len", len(tok))
	default:
		if old := ev.g.findView(s, tok); old != nil {
			return ev.changesFrom(s, old)
		}
	}
	s.watch.resets.Add(1)
	return ev.snapshotEvent(s, true)
}

// WatchCatalog implements toolsvc.v1.ToolService. The catalog writer never
// blocks on this stream: it only signals a capacity-1 channel. This
// goroutine is the stream's send loop: on a signal it takes its group's
// current state and sends the shared event that moves its client from the
// last view it sent to that one, so a slow client skips intermediate states
// but always reaches the latest. A Send that waits for the client longer
// than WatchSendTimeout ends the stream with UNAVAILABLE / SLOW_CONSUMER
// (see watchSender); the client resumes.
func (s *Server) WatchCatalog(req *toolsvcv1.WatchCatalogRequest, stream grpc.ServerStreamingServer[toolsvcv1.WatchCatalogResponse]) error {
	ctx := stream.Context()
	authCtx, _, err := s.authenticateRPC(ctx) // the principal, inside the service (auth.go)
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
	w := newWatchSender(s, stream)
	defer w.close()
	g, ok := s.hub.join(f, w)
	if !ok {
		return errShuttingDown
	}
	defer func() { s.hub.leave(g, w) }() // the group changes with the auth state
	// Subscribe before reading the current state, so that no change between
	// the two goes unsignalled.
	sub := s.bridge.Catalog().Subscribe()
	defer sub.Close()
	authSt := s.authOf(authCtx)

	last := g.current(s).ev
	if err := w.sendEvent(s.resumeEvent(req.GetResumeToken(), last)); err != nil {
		return err
	}
	progress := time.NewTimer(s.opts.ProgressInterval)
	defer progress.Stop()
	for {
		select {
		case <-ctx.Done():
			return w.ended(nil)
		case <-s.shutdown:
			return errShuttingDown
		case <-progress.C:
			if err := w.sendEvent(last.progressEvent(s)); err != nil {
				return err
			}
			progress.Reset(s.opts.ProgressInterval)
		case <-authSt.Changed():
			// A reload replaced the auth state: the caller again, under the
			// new one, and the view its rules now give (authstate.go).
			if authCtx, g, f, err = s.followAuth(ctx, req, g, f, w); err != nil {
				return err
			}
			authSt = s.authOf(authCtx)
			cur := g.current(s).ev
			if cur.view.rev != last.view.rev {
				if err := w.sendEvent(cur.changesFrom(s, last.view)); err != nil {
					return err
				}
				progress.Reset(s.opts.ProgressInterval)
			}
			last = cur
		case <-sub.C():
			cur := g.current(s).ev
			if cur.view.rev == last.view.rev {
				continue // nothing this view shows has changed
			}
			if err := w.sendEvent(cur.changesFrom(s, last.view)); err != nil {
				return err
			}
			last = cur
			progress.Reset(s.opts.ProgressInterval)
		}
	}
}

// followAuth moves a watch stream (ctx; w, in group g with filter f) to a
// new auth state: its caller authenticated again under it (a credential it
// no longer accepts ends the stream with UNAUTHENTICATED), then the group
// of the view its rules now give. It returns the new authenticated context.
func (s *Server) followAuth(ctx context.Context, req *toolsvcv1.WatchCatalogRequest, g *watchGroup, f *watchFilter, w *watchSender) (context.Context, *watchGroup, *watchFilter, error) {
	authCtx, err := s.reauthenticate(ctx)
	if err != nil {
		return ctx, g, f, err
	}
	g, f, err = s.rejoin(authCtx, req, g, f, w)
	return authCtx, g, f, err
}

// rejoin moves a watch stream (w, in group g with filter f) to the group of
// the filter its request gets under authCtx's auth state, if that differs.
func (s *Server) rejoin(authCtx context.Context, req *toolsvcv1.WatchCatalogRequest, g *watchGroup, f *watchFilter, w *watchSender) (*watchGroup, *watchFilter, error) {
	nf, err := s.newWatchFilter(authCtx, req)
	if err != nil {
		return g, f, err // a server the request named is gone: as at open
	}
	if nf.key == f.key {
		return g, f, nil
	}
	ng, ok := s.hub.join(nf, w)
	if !ok {
		return g, f, errShuttingDown
	}
	s.hub.leave(g, w)
	return ng, nf, nil
}

var errShuttingDown = grpcStatus(core.ShuttingDown("server shutting down; resume with the last revision on any replica")).Err()

// watchSender sends on one stream from the handler goroutine, bounded in
// time: gRPC's SendMsg has no deadline and blocks while the client does not
// read, so a timer armed around each Send ends the stream when it fires.
// It ends it the way gRPC's own deadline timer does, at the transport: it
// writes the stream's final status (UNAVAILABLE, SLOW_CONSUMER) through the
// transport stream gRPC puts in the handler's context, which marks the
// stream done and wakes the blocked Send with an error; the client gets
// what was already queued, then that status. Shutdown ends every stream the
// same way (SHUTTING_DOWN), held or not. No goroutine but the handler's
// ever Sends, and none outlives it: the timer's function only writes a
// status, which gRPC ignores once the stream is done. (A context without
// that transport stream, or a gRPC whose stream lacks WriteStatus, cannot
// be ended early: the stream then ends when the client reads or goes away;
// TestWatchSlowConsumerEnded fails on such a gRPC.)
type watchSender struct {
	s      *Server
	stream grpc.ServerStream
	end    statusWriter // the transport stream; nil if unavailable
	timer  *time.Timer
	slow   atomic.Bool
}

// statusWriter is the method of gRPC's transport stream (the
// grpc.ServerTransportStream in a handler's context) that ends a stream
// with a status, as gRPC does when a handler returns.
type statusWriter interface {
	WriteStatus(*status.Status) error
}

func errSlowConsumer(timeout time.Duration) error {
	return plainError(core.Unavailable, ReasonSlowConsumer, fmt.Sprintf(
		"watch stream ended: the client did not read for %s; resume with the last revision", timeout), nil)
}

func newWatchSender(s *Server, stream grpc.ServerStream) *watchSender {
	w := &watchSender{s: s, stream: stream}
	w.end, _ = grpc.ServerTransportStreamFromContext(stream.Context()).(statusWriter)
	w.timer = time.AfterFunc(time.Hour, w.timedOut)
	w.timer.Stop()
	return w
}

func (w *watchSender) timedOut() {
	w.slow.Store(true)
	if !w.endWith(errSlowConsumer(w.s.opts.WatchSendTimeout)) {
		w.s.log.Warn("watch: a Send waited longer than the send timeout and cannot be ended from the server; the stream ends when the client reads or goes away")
	}
}

// endWith ends the stream from outside the handler; see watchSender.
func (w *watchSender) endWith(err error) bool {
	if w.end == nil {
		return false
	}
	_ = w.end.WriteStatus(status.Convert(err))
	return true
}

func (w *watchSender) close() { w.timer.Stop() }

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
	if err != nil || w.slow.Load() {
		return w.ended(err)
	}
	return nil
}

// ended is the status of a stream whose Send failed (with sendErr) or
// whose context ended: why the server ended it, if it did, else the
// context's error, else sendErr. (When the stream was ended at the
// transport, gRPC has sent that status already and ignores this one.)
func (w *watchSender) ended(sendErr error) error {
	select {
	case <-w.s.shutdown:
		return errShuttingDown
	default:
	}
	if w.slow.Load() {
		w.s.watch.slow.Add(1)
		w.s.log.Info("watch: client did not read for the send timeout; ending the stream", "timeout", w.s.opts.WatchSendTimeout)
		return errSlowConsumer(w.s.opts.WatchSendTimeout)
	}
	if err := w.stream.Context().Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	return sendErr
}

// ServerOptions are the gRPC server options this service needs: the codec
// that sends pre-encoded events and pages without copying them
// (wireCodec), and with it the interceptors that answer a request it could
// not decode with INVALID_ARGUMENT naming the field: the codec marks such a
// request instead of failing it (grpc-go would answer INTERNAL), so the two
// come together and cannot be installed apart. NewGRPCServer installs
// them innermost; a server built otherwise should too (without them every
// event is copied once per stream).
func (s *Server) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ForceServerCodecV2(newWireCodec()),
		grpc.ChainUnaryInterceptor(undecodableUnary),
		grpc.ChainStreamInterceptor(undecodableStream),
	}
}
