package service

import (
	"context"

	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

// SearchTools implements toolsvc.v1.ToolService: the core's search
// (service/core/search.go), its tools in the requested schema format, as
// many as fit in the response limit.
func (s *Server) SearchTools(ctx context.Context, req *toolsvcv1.SearchToolsRequest) (*toolsvcv1.SearchToolsResponse, error) {
	format, err := parseSchemaFormat(req.GetSchemaFormat(), "schema_format")
	if err != nil {
		return nil, err
	}
	in := core.SearchInput{Query: req.GetQuery(), Limit: int(req.GetLimit()), Servers: req.GetServers(), NameGlob: req.GetNameGlob()}
	if h := req.GetHints(); h != nil {
		in.Hints = core.Hints{ReadOnly: h.ReadOnly, Destructive: h.Destructive, Idempotent: h.Idempotent, OpenWorld: h.OpenWorld}
	}
	hits, rev, e := s.core.SearchTools(ctx, in, grpcFields)
	if e != nil {
		return nil, grpcStatus(e).Err()
	}
	resp := &toolsvcv1.SearchToolsResponse{Revision: rev, Results: make([]*toolsvcv1.SearchResult, 0, len(hits))}
	budget := s.pageBudget()
	for _, hit := range hits {
		r := &toolsvcv1.SearchResult{Tool: toolToWire(hit.Tool, format), Score: hit.Score}
		if budget -= proto.Size(r) + 8; budget < 0 && len(resp.Results) > 0 {
			break // the rest would not fit in the response limit
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}
