// Package service is toolsvc's gRPC wire: ToolService and AdminService
// built from the core (service/core) by New, mapping between the core and
// the wire, error mapping, and streaming (the watch engine). It holds no
// upstream state of its own (mcpbridge does) and no state it shares with
// another wire (the core does): auth, limits, interactive calls and tasks
// are the core's, configured and reloaded by the composition root
// (package server). It does not import mcpbridge (service/core's
// TestWiresImportTheCoreOnly).
package service

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

// Paging limits of every listing.
const (
	DefaultPageSize = core.DefaultPageSize
	MaxPageSize     = core.MaxPageSize
)

// DefaultProgressInterval is how often an idle watch gets a progress event.
const DefaultProgressInterval = 30 * time.Second

// Default size limits of a call. 4 MiB is also gRPC's default maximum
// received message size, so a default client can read any result the
// server is willing to send.
const (
	DefaultMaxRequestBytes  = core.DefaultMaxRequestBytes
	DefaultMaxResponseBytes = core.DefaultMaxResponseBytes
)

// Options configure a Server: the gRPC wire's own settings. What every
// wire shares (auth, limits, interactive calls, tasks) is the core's
// (core.Options), given to New with the core. The zero value is usable.
type Options struct {
	// Logger defaults to the core's.
	Logger *slog.Logger
	// ProgressInterval between progress events on an idle watch stream.
	ProgressInterval time.Duration
	// Config, if set, reports the configuration in ListServers and serves
	// AdminService.ReloadConfig.
	Config ConfigSource
	// Metrics, if set, reads the gRPC wire's gauges (watch streams, the
	// configuration) at scrape time; the core records calls through it as
	// its observer when the composition root makes it so.
	Metrics *Metrics
	// WatchSendTimeout bounds how long one watch message may wait for the
	// client to read; the stream then ends with UNAVAILABLE. Default
	// DefaultWatchSendTimeout.
	WatchSendTimeout time.Duration
}

// Server implements toolsvc.v1.ToolService over a bridge.
type Server struct {
	toolsvcv1.UnimplementedToolServiceServer

	// core is what the gRPC edge shares with every other wire: auth,
	// limits, validation, the operation engine (service/core).
	core  *core.Core
	log   *slog.Logger
	opts  Options
	cache toolCache
	pages pageCache

	shutdownOnce sync.Once
	shutdown     chan struct{}

	grpcMetrics *grpcMetrics // set by NewGRPCServer
	watch       watchCounters
	hub         watchHub
	watchSends  sync.WaitGroup // every watch message in flight (watch_send.go)
}

// New returns the gRPC wire of the core c: ToolService and AdminService
// over what c shares with every other wire. opts may be nil.
func New(c *core.Core, opts *Options) *Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = c.Logger()
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = DefaultProgressInterval
	}
	if o.WatchSendTimeout <= 0 {
		o.WatchSendTimeout = DefaultWatchSendTimeout
	}
	s := &Server{core: c, log: o.Logger, opts: o, shutdown: make(chan struct{})}
	if o.Metrics != nil {
		o.Metrics.server.Store(s)
	}
	return s
}

// Register adds ToolService and AdminService to a gRPC server.
func (s *Server) Register(g grpc.ServiceRegistrar) {
	toolsvcv1.RegisterToolServiceServer(g, s)
	toolsvcv1.RegisterAdminServiceServer(g, &admin{s: s})
}

// Shutdown ends every open watch stream with UNAVAILABLE, so that
// GracefulStop is not held up by them and clients resume elsewhere. It is
// idempotent.
func (s *Server) Shutdown() {
	s.shutdownOnce.Do(func() {
		close(s.shutdown)
		s.hub.shutdown()
	})
}

// ListTools implements toolsvc.v1.ToolService. A page is assembled from
// the tools' cached encodings (encoded once per tool and format, see
// toolCache) and returned as a message whose unknown fields are exactly
// its wire form, so gRPC copies it instead of encoding a thousand tools
// (and their Struct schemas) per call. Clients decode a normal
// ListToolsResponse; in-process callers must decode it the same way.
func (s *Server) ListTools(ctx context.Context, req *toolsvcv1.ListToolsRequest) (*toolsvcv1.ListToolsResponse, error) {
	ctx, _, err := s.authenticateRPC(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetPageToken() == "" {
		s.core.PrimeCatalog(ctx) // per-user upstreams list through their first caller's session
	}
	pageSize, e := core.PageSize("page_size", int(req.GetPageSize()), DefaultPageSize, MaxPageSize)
	if e != nil {
		return nil, grpcStatus(e).Err()
	}
	format, err := parseSchemaFormat(req.GetSchemaFormat(), "schema_format")
	if err != nil {
		return nil, err
	}
	snap, after, e := s.core.ToolCursor(ctx, req.GetPageToken(), grpcFields)
	if e != nil {
		return nil, grpcStatus(e).Err()
	}
	all := s.cache.tools(snap, snap == s.core.Catalog().Current(), format)
	start := core.ToolsAfter(snap, after)
	size := func(w *wireTool) int { return len(w.enc) }
	view := s.core.ViewOf(ctx)
	if view.All() && snap.Base() == nil {
		// Every caller paging the whole catalog gets the same pages: built
		// once per revision (pageCache), the page a slice of the cached
		// tools.
		end, n := core.Span(all, start, pageSize, s.pageBudget(), size)
		return s.pages.page(snap, format, start, end, all[start:end], s.nextToolToken(ctx, snap, all[start:end], n)), nil
	}
	page, n := core.Page(all, start, pageSize, s.pageBudget(), func(w *wireTool) bool { return view.Tool(w.msg.GetName()) },
		core.Same[*wireTool], size)
	return encodedListPage(page, s.nextToolToken(ctx, snap, page, n), snap.Revision), nil
}

// nextToolToken is the page token that continues after page (next < 0:
// none, the listing is complete); it pins snap for the caller
// (core.ToolPageToken).
func (s *Server) nextToolToken(ctx context.Context, snap *core.Snapshot, page []*wireTool, next int) string {
	if next < 0 || len(page) == 0 {
		return ""
	}
	return s.core.ToolPageToken(ctx, snap, page[len(page)-1].msg.GetName())
}

// pageBudget bounds the bytes of the tools in one ListTools page: a page
// holds page_size tools or as many as fit in the response limit (which
// clients must accept; its default is gRPC's default receive limit), less
// room for the page token and revision, whichever is fewer, and at least
// one. The bridge keeps each tool far below it (the bridge's Config.MaxToolBytes).
func (s *Server) pageBudget() int {
	return s.core.MaxResponseBytes() - 1024
}

// ListServers implements toolsvc.v1.ToolService. A principal sees only the
// servers that expose at least one tool it may see; last errors, warnings
// and the configuration status are operator information, shown to admins
// only (without an auth section: to callers on this machine).
func (s *Server) ListServers(ctx context.Context, _ *toolsvcv1.ListServersRequest) (*toolsvcv1.ListServersResponse, error) {
	actx, p, err := s.authenticateRPC(ctx)
	if err != nil {
		return nil, err
	}
	admin := s.core.Operator(actx, p) // operator details: the core's rule
	var visible map[string]bool
	if view := s.core.ViewOf(actx); !view.All() && !admin {
		visible = map[string]bool{}
		// The caller's view: a per-principal upstream's tools are there.
		tools, _ := view.Tools(view.ToolSource().Current(), nil)
		for _, t := range tools {
			visible[t.Server] = true
		}
	}
	sts := s.core.Servers()
	resp := &toolsvcv1.ListServersResponse{Servers: make([]*toolsvcv1.Server, 0, len(sts))}
	for _, st := range sts {
		if visible != nil && !visible[st.Name] {
			continue
		}
		p := serverToProto(st)
		if !admin {
			p.LastError, p.Warnings = "", nil
		}
		resp.Servers = append(resp.Servers, p)
	}
	if s.opts.Config != nil && admin {
		// The config path, reload errors and discovery's sources (the API
		// server's errors name users and URLs) are operator information.
		cs := s.opts.Config.Status()
		resp.Config = configToProto(cs)
		resp.DiscoverySources = discoveryToProto(cs.Discovery)
	}
	return resp, nil
}

func serverToProto(st core.ServerStatus) *toolsvcv1.Server {
	p := &toolsvcv1.Server{
		Name:            st.Name,
		ToolCount:       int32(st.ToolCount),
		ConnectCount:    st.ConnectCount,
		RefreshCount:    st.RefreshCount,
		LastError:       st.LastError,
		ProtocolVersion: st.ProtocolVersion,
		Warnings:        st.Warnings,
	}
	switch st.Transport {
	case core.TransportStdio:
		p.Transport = toolsvcv1.Transport_TRANSPORT_STDIO
	case core.TransportStreamableHTTP:
		p.Transport = toolsvcv1.Transport_TRANSPORT_STREAMABLE_HTTP
	case core.TransportSSE:
		p.Transport = toolsvcv1.Transport_TRANSPORT_SSE
	case core.TransportGRPC:
		p.Transport = toolsvcv1.Transport_TRANSPORT_GRPC
	}
	switch st.State {
	case core.StateConnecting:
		p.State = toolsvcv1.ServerState_SERVER_STATE_CONNECTING
	case core.StateReady:
		p.State = toolsvcv1.ServerState_SERVER_STATE_READY
	case core.StateDegraded:
		p.State = toolsvcv1.ServerState_SERVER_STATE_DEGRADED
	case core.StateDown:
		p.State = toolsvcv1.ServerState_SERVER_STATE_DOWN
	}
	switch st.Breaker {
	case core.BreakerClosed:
		p.BreakerState = toolsvcv1.BreakerState_BREAKER_STATE_CLOSED
	case core.BreakerOpen:
		p.BreakerState = toolsvcv1.BreakerState_BREAKER_STATE_OPEN
		p.BreakerRetryTime = timestamppb.New(st.BreakerRetryTime)
	case core.BreakerHalfOpen:
		p.BreakerState = toolsvcv1.BreakerState_BREAKER_STATE_HALF_OPEN
	}
	p.ConsecutiveFailures = int32(st.ConsecutiveFailures)
	p.InFlightCalls = int32(st.InFlightCalls)
	if !st.ConnectedTime.IsZero() {
		p.ConnectedTime = timestamppb.New(st.ConnectedTime)
	}
	if !st.LastRefreshTime.IsZero() {
		p.LastRefreshTime = timestamppb.New(st.LastRefreshTime)
		p.LastRefreshOutcome = toolsvcv1.RefreshOutcome_REFRESH_OUTCOME_FAILED
		if st.LastRefreshOK {
			p.LastRefreshOutcome = toolsvcv1.RefreshOutcome_REFRESH_OUTCOME_OK
		}
	}
	return p
}
