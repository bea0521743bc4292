package service

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

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
