package service

import (
	"context"

	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service/core"
)

// The gRPC listings of resources, resource templates and prompts: one
// path (resourceList) over the merged resource snapshot, paged by
// core.Page with the response limit as the byte budget.

// resourceList is one page of a listing: the caller authenticated, the
// servers field checked (servers: nil for a listing without one), the
// page token resolved, the items the caller may see converted.
func resourceList[T any, P proto.Message](s *Server, ctx context.Context, servers []string, pageSize int32, token string,
	items func(*mcpbridge.ResourceSnapshot) []T, keep func(ctx context.Context, only func(string) bool) func(T) bool, conv func(T) P,
) (page []P, revision, next string, err error) {
	ctx, _, err = s.authenticateRPC(ctx)
	if err != nil {
		return nil, "", "", err
	}
	only, err := s.core.ServerFilter(servers)
	if err != nil {
		return nil, "", "", toStatus(err)
	}
	size, e := core.PageSize("page_size", int(pageSize), DefaultPageSize, MaxPageSize)
	if e != nil {
		return nil, "", "", grpcStatus(e).Err()
	}
	snap, off, e := s.core.ResourceCursor(token, grpcFields)
	if e != nil {
		return nil, "", "", grpcStatus(e).Err()
	}
	page, n := core.Page(items(snap), off, size, s.pageBudget(), keep(ctx, only), conv, func(p P) int { return proto.Size(p) })
	if n >= 0 {
		next = core.EncodeResourcePageToken(snap.Revision, n)
	}
	return page, snap.Revision, next, nil
}

// ofVisibleServer keeps the items of servers the caller may see the
// resources of (and, with only, that the request names).
func ofVisibleServer[T any](s *Server, server func(T) string) func(context.Context, func(string) bool) func(T) bool {
	return func(ctx context.Context, only func(string) bool) func(T) bool {
		vis := s.core.ResourceVisible(ctx, only)
		return func(t T) bool { return vis(server(t)) }
	}
}

// allowedPrompt keeps the prompts the caller may see.
func (s *Server) allowedPrompt(ctx context.Context, _ func(string) bool) func(*mcpbridge.Prompt) bool {
	allowed := s.authOf(ctx).Filter(ctx)
	return func(p *mcpbridge.Prompt) bool { return allowed == nil || allowed(p.Name) }
}

func resourceServer(r *mcpbridge.Resource) string         { return r.Server }
func templateServer(t *mcpbridge.ResourceTemplate) string { return t.Server }

// ListResources implements toolsvc.v1.ToolService.
func (s *Server) ListResources(ctx context.Context, req *toolsvcv1.ListResourcesRequest) (*toolsvcv1.ListResourcesResponse, error) {
	items, rev, next, err := resourceList(s, ctx, req.GetServers(), req.GetPageSize(), req.GetPageToken(),
		func(snap *mcpbridge.ResourceSnapshot) []*mcpbridge.Resource { return snap.Resources },
		ofVisibleServer(s, resourceServer), resourceToProto)
	if err != nil {
		return nil, err
	}
	return &toolsvcv1.ListResourcesResponse{Revision: rev, Resources: items, NextPageToken: next}, nil
}

// ListResourceTemplates implements toolsvc.v1.ToolService.
func (s *Server) ListResourceTemplates(ctx context.Context, req *toolsvcv1.ListResourceTemplatesRequest) (*toolsvcv1.ListResourceTemplatesResponse, error) {
	items, rev, next, err := resourceList(s, ctx, req.GetServers(), req.GetPageSize(), req.GetPageToken(),
		func(snap *mcpbridge.ResourceSnapshot) []*mcpbridge.ResourceTemplate { return snap.Templates },
		ofVisibleServer(s, templateServer), templateToProto)
	if err != nil {
		return nil, err
	}
	return &toolsvcv1.ListResourceTemplatesResponse{Revision: rev, ResourceTemplates: items, NextPageToken: next}, nil
}

// ListPrompts implements toolsvc.v1.ToolService.
func (s *Server) ListPrompts(ctx context.Context, req *toolsvcv1.ListPromptsRequest) (*toolsvcv1.ListPromptsResponse, error) {
	items, rev, next, err := resourceList(s, ctx, nil, req.GetPageSize(), req.GetPageToken(),
		func(snap *mcpbridge.ResourceSnapshot) []*mcpbridge.Prompt { return snap.Prompts },
		s.allowedPrompt, promptToProto)
	if err != nil {
		return nil, err
	}
	return &toolsvcv1.ListPromptsResponse{Revision: rev, Prompts: items, NextPageToken: next}, nil
}
