// Package service is toolsvc's gRPC edge: request validation, mapping
// between the bridge and the wire, error mapping, and streaming. It holds no
// upstream state of its own; mcpbridge does.
package service

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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

// CallTool implements toolsvc.v1.ToolService.
func (s *Server) CallTool(ctx context.Context, req *toolsvcv1.CallToolRequest) (*toolsvcv1.CallToolResponse, error) {
	if req.GetName() == "" {
		return nil, invalidArgument("name", "required: the exposed tool name from ListTools")
	}
	var args any
	switch {
	case req.GetArguments() != nil && req.GetArgumentsJson() != "":
		return nil, invalidArgument("arguments_json", "set at most one of arguments and arguments_json")
	case req.GetArgumentsJson() != "":
		raw := json.RawMessage(req.GetArgumentsJson())
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return nil, invalidArgument("arguments_json", "must be a JSON object")
		}
		args = raw
	case req.GetArguments() != nil:
		args = req.GetArguments().AsMap()
	}
	res, err := s.bridge.CallTool(ctx, req.GetName(), args, nil)
	if err != nil {
		return nil, toStatus(err)
	}
	return resultToProto(res, s.log), nil
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

// WatchCatalog implements toolsvc.v1.ToolService. The catalog writer never
// blocks on this stream: it only signals a capacity-1 channel, and this
// goroutine computes the delta from the last revision it sent to the
// current snapshot, so a slow client skips intermediate states but always
// reaches the latest.
func (s *Server) WatchCatalog(req *toolsvcv1.WatchCatalogRequest, stream grpc.ServerStreamingServer[toolsvcv1.WatchCatalogResponse]) error {
	ctx := stream.Context()
	cat := s.bridge.Catalog()
	sub := cat.Subscribe()
	defer sub.Close()

	cur := cat.Current()
	first := &toolsvcv1.WatchCatalogResponse{Revision: cur.Revision}
	switch tok := req.GetResumeToken(); {
	case tok == "":
		first.Event = &toolsvcv1.WatchCatalogResponse_Snapshot{Snapshot: &toolsvcv1.CatalogSnapshot{Tools: s.cache.tools(cur, true)}}
	case tok == cur.Revision:
		first.Event = &toolsvcv1.WatchCatalogResponse_Synced{Synced: &toolsvcv1.CatalogSynced{}}
	default:
		if old, ok := cat.Snapshot(tok); ok {
			first.Event = &toolsvcv1.WatchCatalogResponse_Changes{Changes: s.changes(old, cur)}
		} else {
			if !validRevision(tok) {
				s.log.Info("watch: malformed resume token; sending a reset snapshot")
			}
			first.Event = &toolsvcv1.WatchCatalogResponse_Snapshot{Snapshot: &toolsvcv1.CatalogSnapshot{Tools: s.cache.tools(cur, true), Reset_: true}}
		}
	}
	if err := stream.Send(first); err != nil {
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
			return status.Error(codes.Unavailable, "server shutting down; resume with the last revision on any replica")
		case <-progress.C:
			if err := stream.Send(&toolsvcv1.WatchCatalogResponse{
				Revision: last.Revision,
				Event:    &toolsvcv1.WatchCatalogResponse_Progress{Progress: &toolsvcv1.CatalogProgress{}},
			}); err != nil {
				return err
			}
		case <-sub.C():
			cur := cat.Current()
			if cur.Revision == last.Revision {
				continue
			}
			if err := stream.Send(&toolsvcv1.WatchCatalogResponse{
				Revision: cur.Revision,
				Event:    &toolsvcv1.WatchCatalogResponse_Changes{Changes: s.changes(last, cur)},
			}); err != nil {
				return err
			}
			last = cur
			progress.Reset(s.opts.ProgressInterval)
		}
	}
}

func (s *Server) changes(from, to *mcpbridge.Snapshot) *toolsvcv1.CatalogChanges {
	up, rm := mcpbridge.Diff(from, to)
	ch := &toolsvcv1.CatalogChanges{Removed: rm, Upserted: make([]*toolsvcv1.Tool, len(up))}
	for i, t := range up {
		ch.Upserted[i] = s.cache.one(t)
	}
	return ch
}
