package service

import (
	"context"

	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

// The gRPC listings of resources, resource templates and prompts: one
// path (resourceList) over the merged resource snapshot, paged by
// core.Page with the response limit as the byte budget.

// resourceList is one page of a listing: the caller authenticated, the
// servers field checked (servers: nil for a listing without one), then
// core.ListPage with the response limit as the byte budget.
func resourceList[T any, P proto.Message](s *Server, ctx context.Context, servers []string, pageSize int32, token string,
	kind core.ListKind[T], conv func(T) P) (page []P, revision, next string, err error) {
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
	page, revision, next, e = core.ListPage(s.core, ctx, kind, only, token, grpcFields, size, s.pageBudget(), conv, func(p P) int { return proto.Size(p) })
	if e != nil {
		return nil, "", "", grpcStatus(e).Err()
	}
	return page, revision, next, nil
}

// ListResources implements toolsvc.v1.ToolService.
func (s *Server) ListResources(ctx context.Context, req *toolsvcv1.ListResourcesRequest) (*toolsvcv1.ListResourcesResponse, error) {
	items, rev, next, err := resourceList(s, ctx, req.GetServers(), req.GetPageSize(), req.GetPageToken(), core.Resources, resourceToProto)
	if err != nil {
		return nil, err
	}
	return &toolsvcv1.ListResourcesResponse{Revision: rev, Resources: items, NextPageToken: next}, nil
}

// ListResourceTemplates implements toolsvc.v1.ToolService.
func (s *Server) ListResourceTemplates(ctx context.Context, req *toolsvcv1.ListResourceTemplatesRequest) (*toolsvcv1.ListResourceTemplatesResponse, error) {
	items, rev, next, err := resourceList(s, ctx, req.GetServers(), req.GetPageSize(), req.GetPageToken(), core.Templates, templateToProto)
	if err != nil {
		return nil, err
	}
	return &toolsvcv1.ListResourceTemplatesResponse{Revision: rev, ResourceTemplates: items, NextPageToken: next}, nil
}

// ListPrompts implements toolsvc.v1.ToolService.
func (s *Server) ListPrompts(ctx context.Context, req *toolsvcv1.ListPromptsRequest) (*toolsvcv1.ListPromptsResponse, error) {
	items, rev, next, err := resourceList(s, ctx, nil, req.GetPageSize(), req.GetPageToken(), core.Prompts, promptToProto)
	if err != nil {
		return nil, err
	}
	return &toolsvcv1.ListPromptsResponse{Revision: rev, Prompts: items, NextPageToken: next}, nil
}
