package service

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

// Complete implements toolsvc.v1.ToolService: the core's completion
// (service/core/complete.go) of a prompt's or a resource template's
// argument, through the operation engine like GetPrompt and ReadResource.
func (s *Server) Complete(ctx context.Context, req *toolsvcv1.CompleteRequest) (*toolsvcv1.CompleteResponse, error) {
	in := core.CompleteInput{Argument: req.GetArgumentName(), Value: req.GetArgumentValue(), Context: req.GetContextArguments()}
	switch ref := req.GetRef().(type) {
	case *toolsvcv1.CompleteRequest_Prompt:
		in.Kind, in.Prompt = core.CompletePrompt, ref.Prompt
	case *toolsvcv1.CompleteRequest_ResourceTemplate:
		in.Kind, in.Server, in.Template = core.CompleteTemplate, ref.ResourceTemplate.GetServer(), ref.ResourceTemplate.GetUri()
	}
	var out *toolsvcv1.CompleteResponse
	_, e := s.core.Complete(rpcContext(ctx), in, grpcFields, func(r *mcp.CompleteResult) int {
		out = completeResultToProto(r)
		return proto.Size(out)
	})
	if e != nil {
		return nil, grpcStatus(e).Err()
	}
	return out, nil
}

func completeResultToProto(r *mcp.CompleteResult) *toolsvcv1.CompleteResponse {
	out := &toolsvcv1.CompleteResponse{Values: r.Completion.Values, HasMore: r.Completion.HasMore}
	if t := r.Completion.Total; t > 0 {
		total := int32(min(t, 1<<31-1))
		out.Total = &total
	}
	return out
}
