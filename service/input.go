package service

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/timestamppb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

// The gRPC face of interactive calls (core/interact.go): the request's
// input_capabilities, input_responses and request_state in, an
// input_required out.

// inputRequest is what the call requests share for interactive calls.
type inputRequest interface {
	GetInputCapabilities() *toolsvcv1.InputCapabilities
	GetInputResponses() []*toolsvcv1.InputResponse
	GetRequestState() string
}

// inputOptions is the core's view of a request's interactive fields (nil:
// not interactive), or the error of the field at fault.
func inputOptions(req inputRequest) (*core.InputOptions, *core.Error) {
	caps, rs, state := req.GetInputCapabilities(), req.GetInputResponses(), req.GetRequestState()
	if l := caps.GetLogLevel(); l != "" && !core.ValidLogLevel(l) {
		return nil, core.InvalidField("input_capabilities.log_level", fmt.Sprintf("want an MCP logging level (%s), got %q", core.LogLevelsText, core.Clip(l)))
	}
	if caps == nil && len(rs) == 0 && state == "" {
		return nil, nil
	}
	in := &core.InputOptions{State: state, Kinds: core.InputKinds{Form: caps.GetElicitation(), URL: caps.GetElicitationUrl(),
		Sampling: caps.GetSampling(), Roots: caps.GetRoots()}}
	var e *core.Error
	if in.Responses, e = inputResponses(rs); e != nil {
		return nil, e
	}
	return in, nil
}

// inputResponses decodes a request's input_responses by id (nil: none).
func inputResponses(rs []*toolsvcv1.InputResponse) (map[string]mcp.InputResponse, *core.Error) {
	if len(rs) == 0 {
		return nil, nil
	}
	out := make(map[string]mcp.InputResponse, len(rs))
	for i, r := range rs {
		field := fmt.Sprintf("input_responses[%d]", i)
		if r.GetId() == "" {
			return nil, core.InvalidField(field+".id", "required: the id of the request it answers")
		}
		if _, dup := out[r.GetId()]; dup {
			return nil, core.InvalidField(field+".id", fmt.Sprintf("request %q is answered twice", core.Clip(r.GetId())))
		}
		a, e := inputResponse(field, r)
		if e != nil {
			return nil, e
		}
		out[r.GetId()] = a
	}
	return out, nil
}

func inputResponse(field string, r *toolsvcv1.InputResponse) (mcp.InputResponse, *core.Error) {
	switch v := r.GetResponse().(type) {
	case *toolsvcv1.InputResponse_Elicitation:
		e := v.Elicitation
		switch e.GetAction() {
		case "accept", "decline", "cancel":
		default:
			return nil, core.InvalidField(field+".elicitation.action", fmt.Sprintf("want accept, decline or cancel, got %q", core.Clip(e.GetAction())))
		}
		out := &mcp.ElicitResult{Action: e.GetAction()}
		if e.GetContentJson() != "" {
			// Bounded before it is decoded, like arguments_json.
			if de := core.CheckAnswerJSON(field+".elicitation.content_json", e.GetContentJson(), 2); de != nil {
				return nil, de
			}
			if err := json.Unmarshal([]byte(e.GetContentJson()), &out.Content); err != nil || out.Content == nil {
				return nil, core.InvalidField(field+".elicitation.content_json", "must be a JSON object")
			}
		}
		return out, nil
	case *toolsvcv1.InputResponse_Sampling:
		if de := core.CheckAnswerJSON(field+".sampling.result_json", v.Sampling.GetResultJson(), 1); de != nil {
			return nil, de
		}
		out := new(mcp.CreateMessageWithToolsResult)
		if err := json.Unmarshal([]byte(v.Sampling.GetResultJson()), out); err != nil {
			return nil, core.InvalidField(field+".sampling.result_json", "must be an MCP sampling result (role, content, model): "+core.Clip(err.Error()))
		}
		if out.Role == "" || len(out.Content) == 0 {
			return nil, core.InvalidField(field+".sampling.result_json", "must be an MCP sampling result with role and content")
		}
		return out, nil
	case *toolsvcv1.InputResponse_Roots:
		out := &mcp.ListRootsResult{Roots: make([]*mcp.Root, 0, len(v.Roots.GetRoots()))}
		for j, root := range v.Roots.GetRoots() {
			if root.GetUri() == "" {
				return nil, core.InvalidField(fmt.Sprintf("%s.roots.roots[%d].uri", field, j), "required")
			}
			out.Roots = append(out.Roots, &mcp.Root{URI: root.GetUri(), Name: root.GetName()})
		}
		return out, nil
	}
	return nil, core.InvalidField(field, "set one of elicitation, sampling, roots")
}

// inputRequiredToProto is an input_required result (its requests and
// state) for the caller: of a call, a prompt or a read.
func (s *Server) inputRequiredToProto(reqs mcp.InputRequestMap, state string) *toolsvcv1.InputRequired {
	exp, bound, _ := s.core.InputExpiry(state)
	out := &toolsvcv1.InputRequired{RequestState: state, ReplicaBound: bound}
	if !exp.IsZero() {
		out.ExpireTime = timestamppb.New(exp)
	}
	ids := make([]string, 0, len(reqs))
	for id := range reqs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		out.Requests = append(out.Requests, inputRequestToProto(id, reqs[id]))
	}
	return out
}

func inputRequestToProto(id string, r mcp.InputRequest) *toolsvcv1.InputRequest {
	out := &toolsvcv1.InputRequest{Id: id}
	switch p := r.(type) {
	case *mcp.ElicitParams:
		if p.Mode == "url" || (p.Mode == "" && p.URL != "") {
			out.Request = &toolsvcv1.InputRequest_ElicitationUrl{ElicitationUrl: &toolsvcv1.ElicitationURLRequest{
				Message: p.Message, Url: p.URL, ElicitationId: p.ElicitationID}}
			break
		}
		schema, _ := json.Marshal(p.RequestedSchema)
		out.Request = &toolsvcv1.InputRequest_Elicitation{Elicitation: &toolsvcv1.ElicitationRequest{
			Message: p.Message, RequestedSchemaJson: string(schema)}}
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		params, _ := json.Marshal(p)
		out.Request = &toolsvcv1.InputRequest_Sampling{Sampling: &toolsvcv1.SamplingRequest{ParamsJson: string(params)}}
	case *mcp.ListRootsParams:
		out.Request = &toolsvcv1.InputRequest_Roots{Roots: &toolsvcv1.RootsRequest{}}
	}
	return out
}

// callResponse is the gRPC response for a result Dispatch returned.
func (s *Server) callResponse(c *core.Call, res *mcp.CallToolResult) *toolsvcv1.CallToolResponse {
	if core.NeedsInput(res) {
		return &toolsvcv1.CallToolResponse{InputRequired: s.inputRequiredToProto(res.InputRequests, res.RequestState)}
	}
	return resultToProto(res, s.log)
}
