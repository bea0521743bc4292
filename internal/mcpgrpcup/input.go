package mcpgrpcup

import (
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// Interactive calls through the binding: an answer with result_type
// RESULT_TYPE_INPUT_REQUIRED becomes the 2026-07-28 JSON-RPC result the
// bridge already relays (resultType "input_required", inputRequests by id,
// requestState), and the retry's inputResponses and requestState go back
// into the request's common fields. The bridge keys the relay on the
// result, not on the session's protocol version (service/core/exchange.go:
// a result that needs input is relayed whatever the era), so the session
// keeps the version it asked for.

// Bounds on what an upstream asks, checked before anything is relayed.
// maxInputRequests is the core's bound on the answers one request may
// carry (core.MaxAnswers): more requests could never be answered.
// maxInputRequestBytes bounds one request's encoded size; the core bounds
// a parked one by --max-input-request-bytes (1 MiB by default) too, but a
// relayed one reaches the caller as it is, so the transport holds the
// same default here. maxRequestState bounds the upstream's state, which
// rides inside toolsvc's signed state to the caller and back.
const (
	maxInputRequests     = 256
	maxInputRequestBytes = 1 << 20
	maxRequestState      = 64 << 10
	maxInputIDBytes      = 256
)

// inputRequiredJSON is an INPUT_REQUIRED answer as the 2026-07-28 result:
// its content empty, as a result that asks carries none. A malformed or
// oversized request refuses the whole answer (malformed).
func inputRequiredJSON(common *pb.ResponseFields) (map[string]any, error) {
	reqs := common.GetInputRequests()
	if len(reqs) == 0 {
		return nil, malformed("result_type is RESULT_TYPE_INPUT_REQUIRED without input_requests")
	}
	if len(reqs) > maxInputRequests {
		return nil, malformed(fmt.Sprintf("%d input_requests, over the %d allowed", len(reqs), maxInputRequests))
	}
	if len(common.GetRequestState()) > maxRequestState {
		return nil, malformed(fmt.Sprintf("request_state of %d bytes, over the %d allowed", len(common.GetRequestState()), maxRequestState))
	}
	ids := make([]string, 0, len(reqs))
	for id := range reqs {
		ids = append(ids, id)
	}
	sort.Strings(ids) // the first bad request is the same on every try
	out := make(map[string]any, len(reqs))
	for _, id := range ids {
		field := fmt.Sprintf("input_requests[%q]", clip(id))
		if id == "" || len(id) > maxInputIDBytes {
			return nil, malformed(fmt.Sprintf("%s: an id of 1 to %d bytes", field, maxInputIDBytes))
		}
		r := reqs[id]
		if n := proto.Size(r); n > maxInputRequestBytes {
			return nil, malformed(fmt.Sprintf("%s: %d bytes, over the %d allowed", field, n, maxInputRequestBytes))
		}
		method, params, err := inputRequestJSON(r)
		if err != nil {
			return nil, malformed(field + ": " + err.Error())
		}
		out[id] = map[string]any{"method": method, "params": params}
	}
	res := map[string]any{"content": []any{}, "resultType": "input_required", "inputRequests": out}
	if common.RequestState != nil {
		res["requestState"] = common.GetRequestState()
	}
	return res, nil
}

// malformed is the error of an answer the bridge must not pass on: the
// bridge reports it as a malformed answer of the upstream.
func malformed(detail string) error {
	return mcpbridge.MalformedAnswer("grpc upstream: malformed input request: " + detail)
}

// inputRequestJSON is one input request as MCP's method and params. Exactly
// one kind must be set.
func inputRequestJSON(r *pb.InputRequest) (string, any, error) {
	set := 0
	for _, ok := range []bool{r.GetElicitRequest() != nil, r.GetSamplingCreateMessage() != nil, r.GetListRootsRequest() != nil} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return "", nil, fmt.Errorf("set exactly one of elicit_request, sampling_create_message, list_roots_request")
	}
	switch {
	case r.GetElicitRequest() != nil:
		e := r.GetElicitRequest()
		if u := e.GetUrlMode(); u != nil {
			if u.GetUrl() == "" {
				return "", nil, fmt.Errorf("elicit_request.url_mode.url: required")
			}
			return "elicitation/create", map[string]any{"mode": "url", "message": e.GetMessage(), "url": u.GetUrl(), "elicitationId": u.GetId()}, nil
		}
		schema, err := elicitSchemaJSON(e)
		if err != nil {
			return "", nil, err
		}
		return "elicitation/create", map[string]any{"mode": "form", "message": e.GetMessage(), "requestedSchema": schema}, nil
	case r.GetSamplingCreateMessage() != nil:
		s := r.GetSamplingCreateMessage()
		if len(s.GetMessages()) == 0 {
			return "", nil, fmt.Errorf("sampling_create_message.messages: required")
		}
		msgs := make([]any, 0, len(s.GetMessages()))
		for i, m := range s.GetMessages() {
			c := samplingBlock(m)
			if c == nil {
				return "", nil, fmt.Errorf("sampling_create_message.messages[%d]: set one of text, image, audio", i)
			}
			msgs = append(msgs, map[string]any{"role": roleJSON(m.GetRole()), "content": c})
		}
		p := omitEmpty(map[string]any{"messages": msgs, "systemPrompt": s.GetSystemPrompt(), "maxTokens": s.GetMaxTokens()})
		switch s.GetIncludeContext() {
		case pb.SamplingCreateMessageRequest_THIS_SERVER:
			p["includeContext"] = "thisServer"
		case pb.SamplingCreateMessageRequest_ALL_SERVERS:
			p["includeContext"] = "allServers"
		}
		if s.Temperature != nil {
			p["temperature"] = s.GetTemperature()
		}
		if len(s.GetStopSequence()) > 0 {
			p["stopSequences"] = s.GetStopSequence()
		}
		if mp := s.GetModelPreferences(); mp != nil {
			prefs := map[string]any{}
			hints := []any{}
			for _, h := range mp.GetHints() {
				hints = append(hints, map[string]any{"name": h.GetName()})
			}
			if len(hints) > 0 {
				prefs["hints"] = hints
			}
			if mp.IntelligencePriority != nil {
				prefs["intelligencePriority"] = mp.GetIntelligencePriority()
			}
			if mp.SpeedPriority != nil {
				prefs["speedPriority"] = mp.GetSpeedPriority()
			}
			if mp.CostPriority != nil {
				prefs["costPriority"] = mp.GetCostPriority()
			}
			p["modelPreferences"] = prefs
		}
		return "sampling/createMessage", p, nil
	}
	return "roots/list", map[string]any{}, nil
}

func samplingBlock(m *pb.SamplingMessage) map[string]any {
	switch {
	case m.GetText() != nil:
		return map[string]any{"type": "text", "text": m.GetText().GetText()}
	case m.GetImage() != nil:
		return map[string]any{"type": "image", "data": m.GetImage().GetData(), "mimeType": m.GetImage().GetMimeType()}
	case m.GetAudio() != nil:
		return map[string]any{"type": "audio", "data": m.GetAudio().GetData(), "mimeType": m.GetAudio().GetMimeType()}
	}
	return nil
}

// elicitSchemaJSON is a form's requested_schema as MCP's restricted JSON
// Schema (an object of primitive properties).
func elicitSchemaJSON(e *pb.ElicitRequest) (map[string]any, error) {
	props := make(map[string]any, len(e.GetRequestedSchema()))
	for name, d := range e.GetRequestedSchema() {
		p, err := primitiveJSON(d)
		if err != nil {
			return nil, fmt.Errorf("elicit_request.requested_schema[%q]: %v", clip(name), err)
		}
		props[name] = p
	}
	for _, f := range e.GetRequiredFields() {
		if _, ok := props[f]; !ok {
			return nil, fmt.Errorf("elicit_request.required_fields: %q is not in requested_schema", clip(f))
		}
	}
	out := map[string]any{"type": "object", "properties": props}
	if len(e.GetRequiredFields()) > 0 {
		out["required"] = e.GetRequiredFields()
	}
	return out, nil
}

func primitiveJSON(d *pb.PrimitiveSchemaDefinition) (map[string]any, error) {
	switch {
	case d.GetStringSchema() != nil:
		s := d.GetStringSchema()
		out := omitEmpty(map[string]any{"type": "string", "title": s.GetTitle(), "description": s.GetDescription()})
		if s.MinLength != nil {
			out["minLength"] = s.GetMinLength()
		}
		if s.MaxLength != nil {
			out["maxLength"] = s.GetMaxLength()
		}
		switch s.GetFormat() {
		case pb.PrimitiveSchemaDefinition_StringSchema_FORMAT_EMAIL:
			out["format"] = "email"
		case pb.PrimitiveSchemaDefinition_StringSchema_FORMAT_URI:
			out["format"] = "uri"
		case pb.PrimitiveSchemaDefinition_StringSchema_FORMAT_DATE:
			out["format"] = "date"
		case pb.PrimitiveSchemaDefinition_StringSchema_FORMAT_DATE_TIME:
			out["format"] = "date-time"
		}
		if s.DefaultValue != nil {
			out["default"] = s.GetDefaultValue()
		}
		return out, nil
	case d.GetNumberSchema() != nil:
		n := d.GetNumberSchema()
		out := omitEmpty(map[string]any{"type": "number", "title": n.GetTitle(), "description": n.GetDescription()})
		if r := n.GetIntegerRange(); r != nil {
			out["type"] = "integer"
			if r.Minimum != nil {
				out["minimum"] = r.GetMinimum()
			}
			if r.Maximum != nil {
				out["maximum"] = r.GetMaximum()
			}
		} else if r := n.GetDoubleRange(); r != nil {
			if r.Minimum != nil {
				out["minimum"] = r.GetMinimum()
			}
			if r.Maximum != nil {
				out["maximum"] = r.GetMaximum()
			}
		}
		if n.DefaultInteger != nil {
			out["default"] = n.GetDefaultInteger()
		} else if n.DefaultNumber != nil {
			out["default"] = n.GetDefaultNumber()
		}
		return out, nil
	case d.GetBooleanSchema() != nil:
		b := d.GetBooleanSchema()
		out := omitEmpty(map[string]any{"type": "boolean", "title": b.GetTitle(), "description": b.GetDescription()})
		if b.GetDefault() {
			out["default"] = true
		}
		return out, nil
	case d.GetEnumSchema() != nil:
		e := d.GetEnumSchema()
		if len(e.GetEnumList()) == 0 {
			return nil, fmt.Errorf("enum_schema.enum_list: required")
		}
		if len(e.GetEnumNames()) > 0 && len(e.GetEnumNames()) != len(e.GetEnumList()) {
			return nil, fmt.Errorf("enum_schema.enum_names: one per enum_list value")
		}
		values := make([]any, len(e.GetEnumList()))
		for i, v := range e.GetEnumList() {
			values[i] = v
		}
		item := map[string]any{"type": "string", "enum": values}
		if len(e.GetEnumNames()) > 0 {
			item["enumNames"] = e.GetEnumNames()
		}
		if ms := e.GetMultiSelect(); ms != nil {
			out := omitEmpty(map[string]any{"type": "array", "title": e.GetTitle(), "description": e.GetDescription()})
			out["items"] = item
			if ms.MinItems != nil {
				out["minItems"] = ms.GetMinItems()
			}
			if ms.MaxItems != nil {
				out["maxItems"] = ms.GetMaxItems()
			}
			if len(ms.GetDefaultItems()) > 0 {
				out["default"] = ms.GetDefaultItems()
			}
			return out, nil
		}
		out := omitEmpty(map[string]any{"title": e.GetTitle(), "description": e.GetDescription()})
		for k, v := range item {
			out[k] = v
		}
		if ss := e.GetSingleSelect(); ss != nil && ss.DefaultItem != nil {
			out["default"] = ss.GetDefaultItem()
		}
		return out, nil
	}
	return nil, fmt.Errorf("set one of string_schema, number_schema, boolean_schema, enum_schema")
}

// requestFields are a retry's inputResponses and requestState as the
// binding's common fields (nil when the request carries neither). The
// answers were checked by the core (ids and kinds against what was asked,
// sizes and nesting) before the bridge sent them.
func requestFields(responses mcp.InputResponseMap, state string) (*pb.RequestFields, error) {
	if len(responses) == 0 && state == "" {
		return nil, nil
	}
	out := &pb.RequestFields{}
	if state != "" {
		s := state // &state would move the parameter to the heap on every call, a first try included
		out.RequestState = &s
	}
	if len(responses) > 0 {
		out.InputResponses = make(map[string]*pb.InputResponse, len(responses))
	}
	for id, r := range responses {
		p, err := inputResponseProto(r)
		if err != nil {
			return nil, invalidParams("inputResponses[%q]: %v", clip(id), err)
		}
		out.InputResponses[id] = p
	}
	return out, nil
}

func inputResponseProto(r mcp.InputResponse) (*pb.InputResponse, error) {
	switch a := r.(type) {
	case *mcp.ElicitResult:
		e := &pb.ElicitResult{}
		switch a.Action {
		case "accept":
			e.Type = pb.ElicitResult_TYPE_ACCEPT
		case "decline":
			e.Type = pb.ElicitResult_TYPE_DECLINE
		case "cancel":
			e.Type = pb.ElicitResult_TYPE_CANCEL
		default:
			return nil, fmt.Errorf("action %q", a.Action)
		}
		if a.Content != nil {
			st, err := structpb.NewStruct(a.Content)
			if err != nil {
				return nil, fmt.Errorf("content: %v", err)
			}
			e.Content = st
		}
		return &pb.InputResponse{ElicitResult: e}, nil
	case *mcp.CreateMessageResult:
		return samplingResultProto(a.Model, a.StopReason, a.Role, []mcp.Content{a.Content})
	case *mcp.CreateMessageWithToolsResult:
		return samplingResultProto(a.Model, a.StopReason, a.Role, a.Content)
	case *mcp.ListRootsResult:
		roots := make([]*pb.ListRootsResult_Root, 0, len(a.Roots))
		for _, root := range a.Roots {
			if root != nil {
				roots = append(roots, &pb.ListRootsResult_Root{Uri: root.URI, Name: root.Name})
			}
		}
		return &pb.InputResponse{RootListResult: &pb.ListRootsResult{Roots: roots}}, nil
	}
	return nil, fmt.Errorf("an answer of type %T", r)
}

// samplingResultProto is a sampling answer as the binding's result, whose
// message holds one block: the first text, image or audio block (MCP's
// sampling answer to a request without tools has exactly one).
func samplingResultProto(model, stop string, role mcp.Role, content []mcp.Content) (*pb.InputResponse, error) {
	m := &pb.SamplingMessage{Role: pb.Role_ROLE_USER}
	if role == "assistant" {
		m.Role = pb.Role_ROLE_ASSISTANT
	}
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			m.Text = &pb.TextContent{Text: c.Text}
		case *mcp.ImageContent:
			m.Image = &pb.ImageContent{Data: c.Data, MimeType: c.MIMEType}
		case *mcp.AudioContent:
			m.Audio = &pb.AudioContent{Data: c.Data, MimeType: c.MIMEType}
		default:
			continue
		}
		return &pb.InputResponse{SamplingCreateMessageResult: &pb.SamplingCreateMessageResult{Message: m, Model: model, StopReason: stop}}, nil
	}
	return nil, fmt.Errorf("a sampling answer without a text, image or audio block")
}

// retryParams are the multi-round-trip fields of a tools/call,
// prompts/get or resources/read request.
type retryParams struct {
	InputResponses mcp.InputResponseMap `json:"inputResponses"`
	RequestState   string               `json:"requestState"`
}

func (p retryParams) common() (*pb.RequestFields, error) {
	return requestFields(p.InputResponses, p.RequestState)
}
