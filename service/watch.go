package service

import (
	"context"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

// Stats are counters of the gRPC edge's watches, read by Metrics at
// scrape time (toolsvc_watch_* metrics) and by tests.
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
	// WatchMessagesSent counts the messages WatchCatalog streams sent (they
	// bypass the gRPC metrics interceptor's per-message counter:
	// grpcserver.go, directSendMethods).
	WatchMessagesSent uint64
}

type watchCounters struct {
	streams   atomic.Int64
	resets    atomic.Uint64
	malformed atomic.Uint64
	slow      atomic.Uint64
	sent      atomic.Uint64
	pumps     atomic.Uint64 // pump goroutines started (watch_send.go)
}

// Stats returns the current counters.
func (s *Server) Stats() Stats {
	return Stats{
		WatchStreams:         s.watch.streams.Load(),
		WatchResets:          s.watch.resets.Load(),
		WatchMalformedTokens: s.watch.malformed.Load(),
		WatchSlowConsumers:   s.watch.slow.Load(),
		WatchMessagesSent:    s.watch.sent.Load(),
	}
}

// WatchCatalog implements toolsvc.v1.ToolService, for every watch: tools
// only, or with resources and prompts (include_resources,
// include_prompts). The catalog writers never block on this stream: they
// only signal the watch hub's capacity-1 channels, and the hub wakes each
// group of streams with one view once (watch_group.go). The group starts
// each member's pump (watch_send.go), which sends the shared event that
// moves its client from the last view it sent to the group's current
// one, so a slow client skips intermediate states but always reaches the
// latest. The handler holds the stream: it queues the first event, asks
// for progress on an idle stream, follows auth changes, and ends the
// stream when a message waits for the client longer than WatchSendTimeout
// (UNAVAILABLE / SLOW_CONSUMER; the client resumes).
func (s *Server) WatchCatalog(req *toolsvcv1.WatchCatalogRequest, stream grpc.ServerStreamingServer[toolsvcv1.WatchCatalogResponse]) error {
	authCtx, _, err := s.authenticateRPC(stream.Context()) // the principal, inside the service (auth.go)
	if err != nil {
		return err
	}
	s.core.PrimeCatalog(authCtx) // per-user upstreams list through the caller's session, as for ListTools
	f, err := s.newWatchFilter(authCtx, req)
	if err != nil {
		return err
	}
	s.watch.streams.Add(1)
	defer s.watch.streams.Add(-1)
	w := newWatchSender(s, stream)
	defer w.close()
	ws := &watchStream{s: s, req: req, w: w, authCtx: authCtx, f: f}
	return ws.run()
}

// watchStream is one stream's state, owned by its handler.
type watchStream struct {
	s       *Server
	req     *toolsvcv1.WatchCatalogRequest
	w       *watchSender
	authCtx context.Context // the caller, under the auth state it was last authenticated with
	f       *watchFilter
}

// run is the stream's handler: the first event, then every change.
func (ws *watchStream) run() error {
	s, w := ws.s, ws.w
	g, ok := s.hub.join(s, ws.f, w)
	if !ok {
		return errShuttingDown
	}
	// Closed before it leaves: a fan-out that copied the members before the
	// leave starts no pump for a handler that is returning.
	defer func() {
		w.close()
		s.hub.leave(w) // the group changes with the auth state
	}()
	// Joined before reading the current state, so that no change between
	// the two goes unsignalled; the group's signals start no pump until the
	// first event is queued (sending).
	cur := g.current(s).ev
	s.hub.first(g, cur.view.rev)
	w.start(cur, s.resumeEvent(ws.req.GetResumeToken(), cur))
	return ws.follow()
}

// follow waits while the pumps send every change, asks for progress on an
// idle stream and moves the stream to the views a new auth state gives,
// until the stream ends.
func (ws *watchStream) follow() error {
	s, w, ctx := ws.s, ws.w, ws.w.stream.Context()
	authSt := s.authOf(ws.authCtx)
	progress := time.NewTimer(s.opts.ProgressInterval)
	defer progress.Stop()
	for {
		select {
		case <-ctx.Done():
			return w.ended(nil)
		case <-s.shutdown:
			return errShuttingDown
		case err := <-w.failed:
			return err
		case <-w.timer.C:
			if w.overdue() {
				return w.slow()
			}
		case <-progress.C:
			idle := time.Since(time.Unix(0, w.lastSent.Load()))
			if idle >= s.opts.ProgressInterval {
				w.queueProgress()
				idle = 0
			}
			progress.Reset(s.opts.ProgressInterval - idle)
		case <-authSt.Changed():
			if err := ws.followAuth(); err != nil {
				return err
			}
			authSt = s.authOf(ws.authCtx)
			w.kick() // changes from the view the client holds to the new group's
		}
	}
}

// followAuth moves the stream to a new auth state (authstate.go): its
// caller authenticated again under it (a credential it no longer accepts
// ends the stream with UNAUTHENTICATED), then the group of the view its
// rules now give, if that differs.
func (ws *watchStream) followAuth() error {
	s := ws.s
	authCtx, err := s.reauthenticate(ws.w.stream.Context())
	if err != nil {
		return err
	}
	ws.authCtx = authCtx
	nf, err := s.newWatchFilter(authCtx, ws.req)
	if err != nil {
		return err // a server the request named is gone: as at open
	}
	if nf.key == ws.f.key {
		return nil
	}
	s.hub.leave(ws.w)
	if _, ok := s.hub.join(s, nf, ws.w); !ok {
		return errShuttingDown
	}
	ws.f = nf
	return nil
}

var errShuttingDown = grpcStatus(core.ShuttingDown("server shutting down; resume with the last revision on any replica")).Err()

// ServerOptions are the gRPC server options this service needs: the codec
// that sends pre-encoded events and pages without copying them
// (wireCodec), and with it the interceptors that answer a request it could
// not decode with INVALID_ARGUMENT naming the field: the codec marks such a
// request instead of failing it (grpc-go would answer INTERNAL), so the two
// come together and cannot be installed apart. NewGRPCServer installs
// them innermost; a server built otherwise should too (without them every
// event is copied once per stream). With them Stop returns only once every
// handler has: Wait, which follows a stop, is then never racing a
// WatchCatalog handler still starting a pump (a handler honours its
// context, which Stop cancels; the shutdown bounds the wait anyway).
func (s *Server) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.WaitForHandlers(true),
		grpc.ForceServerCodecV2(newWireCodec()),
		grpc.ChainUnaryInterceptor(undecodableUnary),
		grpc.ChainStreamInterceptor(undecodableStream),
	}
}
