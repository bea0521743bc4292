package service

import (
	"context"
	"encoding/json"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

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
