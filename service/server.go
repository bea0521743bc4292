// Package service is toolsvc's gRPC edge: request validation, mapping
// between the bridge and the wire, error mapping, and streaming. It holds no
// upstream state of its own; mcpbridge does.
package service

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// Paging limits of ListTools.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// DefaultProgressInterval is how often an idle watch gets a progress event.
const DefaultProgressInterval = 30 * time.Second

// Options configure a Server. The zero value is usable.
type Options struct {
	Logger *slog.Logger
	// ProgressInterval between progress events on an idle watch stream.
	ProgressInterval time.Duration
	// WatchSendTimeout bounds how long one watch message may wait for the
	// client to read; the stream then ends with UNAVAILABLE. Default
	// DefaultWatchSendTimeout.
	WatchSendTimeout time.Duration
}

// Server implements toolsvc.v1.ToolService over a bridge.
type Server struct {
	toolsvcv1.UnimplementedToolServiceServer

	bridge *mcpbridge.Bridge
	log    *slog.Logger
	opts   Options
	cache  toolCache

	shutdownOnce sync.Once
	shutdown     chan struct{}

	watch      watchCounters
	watchCache watchCache
	senders    goroutines // watch Send goroutines
}

// New returns a Server for the bridge. opts may be nil.
func New(b *mcpbridge.Bridge, opts *Options) *Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = DefaultProgressInterval
	}
	if o.WatchSendTimeout <= 0 {
		o.WatchSendTimeout = DefaultWatchSendTimeout
	}
	return &Server{bridge: b, log: o.Logger, opts: o, shutdown: make(chan struct{})}
}

// Register adds the service to a gRPC server.
func (s *Server) Register(g grpc.ServiceRegistrar) { toolsvcv1.RegisterToolServiceServer(g, s) }

// Shutdown ends every open watch stream with UNAVAILABLE, so that
// GracefulStop is not held up by them and clients resume elsewhere. It is
// idempotent.
func (s *Server) Shutdown() { s.shutdownOnce.Do(func() { close(s.shutdown) }) }

// ListTools implements toolsvc.v1.ToolService.
func (s *Server) ListTools(_ context.Context, req *toolsvcv1.ListToolsRequest) (*toolsvcv1.ListToolsResponse, error) {
	size := int(req.GetPageSize())
	switch {
	case size < 0:
		return nil, invalidArgument("page_size", fmt.Sprintf("must not be negative, got %d", size))
	case size == 0:
		size = DefaultPageSize
	case size > MaxPageSize:
		size = MaxPageSize
	}
	cat := s.bridge.Catalog()
	snap := cat.Current()
	after := ""
	if req.GetPageToken() != "" {
		tok, err := decodePageToken(req.GetPageToken())
		if err != nil {
			return nil, invalidArgument("page_token", "malformed; pass a next_page_token from a previous response, or empty for the first page")
		}
		old, ok := cat.Snapshot(tok.revision)
		if !ok {
			return nil, invalidArgument("page_token", fmt.Sprintf(
				"catalog revision %s is no longer retained; restart the listing with an empty page_token", tok.revision))
		}
		snap, after = old, tok.after
	}
	all := s.cache.tools(snap, snap == cat.Current())
	start := 0
	if after != "" {
		start = sort.Search(len(snap.Tools), func(i int) bool { return snap.Tools[i].Name > after })
	}
	end := min(start+size, len(all))
	resp := &toolsvcv1.ListToolsResponse{Tools: all[start:end], Revision: snap.Revision}
	if end < len(all) {
		resp.NextPageToken = pageToken{revision: snap.Revision, after: snap.Tools[end-1].Name}.encode()
	}
	return resp, nil
}

// ListServers implements toolsvc.v1.ToolService.
func (s *Server) ListServers(context.Context, *toolsvcv1.ListServersRequest) (*toolsvcv1.ListServersResponse, error) {
	sts := s.bridge.Servers()
	resp := &toolsvcv1.ListServersResponse{Servers: make([]*toolsvcv1.Server, 0, len(sts))}
	for _, st := range sts {
		resp.Servers = append(resp.Servers, serverToProto(st))
	}
	return resp, nil
}

func serverToProto(st mcpbridge.ServerStatus) *toolsvcv1.Server {
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
	case mcpbridge.TransportStdio:
		p.Transport = toolsvcv1.Transport_TRANSPORT_STDIO
	case mcpbridge.TransportStreamableHTTP:
		p.Transport = toolsvcv1.Transport_TRANSPORT_STREAMABLE_HTTP
	}
	switch st.State {
	case mcpbridge.StateConnecting:
		p.State = toolsvcv1.ServerState_SERVER_STATE_CONNECTING
	case mcpbridge.StateReady:
		p.State = toolsvcv1.ServerState_SERVER_STATE_READY
	case mcpbridge.StateDegraded:
		p.State = toolsvcv1.ServerState_SERVER_STATE_DEGRADED
	case mcpbridge.StateDown:
		p.State = toolsvcv1.ServerState_SERVER_STATE_DOWN
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
