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

// WatchCatalog implements toolsvc.v1.ToolService, for every watch: tools
// only, or with resources and prompts (include_resources,
// include_prompts). The catalog writers never block on this stream: they
// only signal capacity-1 channels. The handler is the stream's loop
// (watchStream.run): it takes its group's current state on a signal and
// sends the shared event that moves its client from the last view it sent
// to that one, so a slow client skips intermediate states but always
// reaches the latest. A Send that waits for the client longer than
// WatchSendTimeout ends the stream with UNAVAILABLE / SLOW_CONSUMER
// (watch_send.go); the client resumes.
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
	g       *watchGroup
	f       *watchFilter
	last    *viewEvents // the view the client holds
}

// run is the stream's loop: the first event, then every change.
func (ws *watchStream) run() error {
	s := ws.s
	g, ok := s.hub.join(ws.f)
	if !ok {
		return errShuttingDown
	}
	ws.g = g
	defer func() { s.hub.leave(ws.g) }() // the group changes with the auth state
	// Subscribe before reading the current state, so that no change between
	// the two goes unsignalled.
	sub := s.bridge.Tools(ws.f.tools).Subscribe() // the caller's view: another principal's listing never signals it
	defer sub.Close()
	var rsub <-chan struct{} // nil (never ready) for tools only
	if ws.f.kinds.any() {
		rs := s.bridge.Resources().Subscribe()
		defer rs.Close()
		rsub = rs.C()
	}
	ws.last = g.current(s).ev
	if err := ws.w.sendEvent(s.resumeEvent(ws.req.GetResumeToken(), ws.last)); err != nil {
		return err
	}
	return ws.follow(sub.C(), rsub)
}

// follow sends every change signalled on sub (tools) or rsub (resources
// and prompts), the views a new auth state gives, and progress on an idle
// stream, until the stream ends.
func (ws *watchStream) follow(sub, rsub <-chan struct{}) error {
	s, ctx := ws.s, ws.w.stream.Context()
	authSt := s.authOf(ws.authCtx)
	progress := time.NewTimer(s.opts.ProgressInterval)
	defer progress.Stop()
	for {
		select {
		case <-ctx.Done():
			return ws.w.ended(nil)
		case <-s.shutdown:
			return errShuttingDown
		case <-progress.C:
			if err := ws.w.sendEvent(ws.last.progressEvent(s)); err != nil {
				return err
			}
			progress.Reset(s.opts.ProgressInterval)
			continue
		case <-authSt.Changed():
			if err := ws.followAuth(); err != nil {
				return err
			}
			authSt = s.authOf(ws.authCtx)
		case <-sub:
		case <-rsub:
		}
		cur := ws.g.current(s).ev
		if cur.view.rev != ws.last.view.rev {
			if err := ws.w.sendEvent(cur.changesFrom(s, ws.last.view)); err != nil {
				return err
			}
			progress.Reset(s.opts.ProgressInterval)
		}
		ws.last = cur
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
	ng, ok := s.hub.join(nf)
	if !ok {
		return errShuttingDown
	}
	s.hub.leave(ws.g)
	ws.g, ws.f = ng, nf
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
// event is copied once per stream).
func (s *Server) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ForceServerCodecV2(newWireCodec()),
		grpc.ChainUnaryInterceptor(undecodableUnary),
		grpc.ChainStreamInterceptor(undecodableStream),
	}
}
