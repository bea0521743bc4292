package mcpgrpc

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
	"github.com/toolsvc/toolsvc/service/core"
)

// The binding's multi-round trips onto the core's interactive calls
// (service/core/interact.go). In: the kinds of input the client can give
// (the 2026-07-28 clientCapabilities in common.metadata, as in a request's
// _meta), its input_responses and the request_state of the previous round.
// Out: input_requests by id and toolsvc's signed state as request_state.
// The core verifies the state (principal, tool or prompt or resource,
// expiry) and checks the answers against what was asked.

// maxCapabilitiesBytes bounds the clientCapabilities value decoded from a
// request's metadata (a real one is a few hundred bytes).
const maxCapabilitiesBytes = 16 << 10

// clientCapabilities is what this wire reads of a ClientCapabilities: the
// kinds of input the client can give, each present or not (MCP: an
// object, {} when it has no options).
type clientCapabilities struct {
	Elicitation *struct {
		Form *json.RawMessage `json:"form"`
		URL  *json.RawMessage `json:"url"`
	} `json:"elicitation"`
	Sampling *json.RawMessage `json:"sampling"`
	Roots    *json.RawMessage `json:"roots"`
}

// inputOptions is the core's view of a request's interactive fields (nil:
// not interactive), or the error of the field at fault.
func inputOptions(c *pb.RequestFields) (*core.InputOptions, *core.Error) {
	var in *core.InputOptions
	if v, ok := c.GetMetadata().GetFields()[MetaClientCapabilities]; ok {
		field := `common.metadata["` + MetaClientCapabilities + `"]`
		raw, err := protojson.Marshal(v)
		if err != nil || len(raw) > maxCapabilitiesBytes {
			return nil, core.InvalidField(field, fmt.Sprintf("must be an MCP ClientCapabilities object of at most %d bytes", maxCapabilitiesBytes))
		}
		var caps clientCapabilities
		if err := json.Unmarshal(raw, &caps); err != nil {
			return nil, core.InvalidField(field, "must be an MCP ClientCapabilities object: "+core.Clip(err.Error()))
		}
		in = &core.InputOptions{}
		if e := caps.Elicitation; e != nil {
			in.Kinds.Form = e.Form != nil || e.URL == nil // {} means form
			in.Kinds.URL = e.URL != nil
		}
		in.Kinds.Sampling = caps.Sampling != nil
		in.Kinds.Roots = caps.Roots != nil
	}
	state, rs := c.GetRequestState(), c.GetInputResponses()
	if state == "" && len(rs) == 0 {
		if in != nil && !in.Kinds.Any() {
			return nil, nil
		}
		return in, nil
	}
	if in == nil {
		in = &core.InputOptions{}
	}
	in.State = state
	if len(rs) > 0 {
		in.Responses = make(map[string]mcp.InputResponse, len(rs))
		ids := make([]string, 0, len(rs))
		for id := range rs {
			ids = append(ids, id)
		}
		sort.Strings(ids) // the first bad answer is the same on every try
		for _, id := range ids {
			a, e := inputResponse(fmt.Sprintf("common.input_responses[%q]", core.Clip(id)), rs[id])
			if e != nil {
				return nil, e
			}
			in.Responses[id] = a
		}
	}
	return in, nil
}

// inputResponse decodes one answer; field names it in errors.
func inputResponse(field string, r *pb.InputResponse) (mcp.InputResponse, *core.Error) {
	switch {
	case r.GetElicitResult() != nil:
		e := r.GetElicitResult()
		out := &mcp.ElicitResult{}
		switch e.GetType() {
		case pb.ElicitResult_TYPE_ACCEPT:
			out.Action = "accept"
		case pb.ElicitResult_TYPE_DECLINE:
			out.Action = "decline"
		case pb.ElicitResult_TYPE_CANCEL:
			out.Action = "cancel"
		default:
			return nil, core.InvalidField(field+".elicit_result.type", "want TYPE_ACCEPT, TYPE_DECLINE or TYPE_CANCEL")
		}
		if c := e.GetContent(); c != nil {
			raw, err := protojson.Marshal(c)
			if err != nil {
				return nil, core.InvalidField(field+".elicit_result.content", "must be a JSON object")
			}
			// Bounded before it is decoded, like ToolService's content_json.
			if de := core.CheckAnswerJSON(field+".elicit_result.content", string(raw), 2); de != nil {
				return nil, de
			}
			out.Content = c.AsMap()
		}
		return out, nil
	case r.GetSamplingCreateMessageResult() != nil:
		s := r.GetSamplingCreateMessageResult()
		f := field + ".sampling_create_message_result"
		out := &mcp.CreateMessageWithToolsResult{Model: s.GetModel(), StopReason: s.GetStopReason()}
		switch s.GetMessage().GetRole() {
		case pb.Role_ROLE_USER:
			out.Role = "user"
		case pb.Role_ROLE_ASSISTANT:
			out.Role = "assistant"
		default:
			return nil, core.InvalidField(f+".message.role", "required: ROLE_USER or ROLE_ASSISTANT")
		}
		c := samplingContent(s.GetMessage())
		if c == nil {
			return nil, core.InvalidField(f+".message", "set one of text, image, audio")
		}
		out.Content = []mcp.Content{c}
		return out, nil
	case r.GetRootListResult() != nil:
		out := &mcp.ListRootsResult{Roots: make([]*mcp.Root, 0, len(r.GetRootListResult().GetRoots()))}
		for j, root := range r.GetRootListResult().GetRoots() {
			if root.GetUri() == "" {
				return nil, core.InvalidField(fmt.Sprintf("%s.root_list_result.roots[%d].uri", field, j), "required")
			}
			out.Roots = append(out.Roots, &mcp.Root{URI: root.GetUri(), Name: root.GetName()})
		}
		return out, nil
	}
	return nil, core.InvalidField(field, "set one of elicit_result, sampling_create_message_result, root_list_result")
}

func samplingContent(m *pb.SamplingMessage) mcp.Content {
	switch {
	case m.GetText() != nil:
		return &mcp.TextContent{Text: m.GetText().GetText()}
	case m.GetImage() != nil:
		return &mcp.ImageContent{Data: m.GetImage().GetData(), MIMEType: m.GetImage().GetMimeType()}
	case m.GetAudio() != nil:
		return &mcp.AudioContent{Data: m.GetAudio().GetData(), MIMEType: m.GetAudio().GetMimeType()}
	}
	return nil
}

// inputRequestToProto is one request of an input_required in the
// binding's form.
func inputRequestToProto(r mcp.InputRequest) *pb.InputRequest {
	switch p := r.(type) {
	case *mcp.ElicitParams:
		if p.Mode == "url" || (p.Mode == "" && p.URL != "") {
			return &pb.InputRequest{ElicitRequest: &pb.ElicitRequest{Message: p.Message,
				UrlMode: &pb.ElicitRequest_UrlMode{Id: p.ElicitationID, Url: p.URL}}}
		}
		return &pb.InputRequest{ElicitRequest: elicitFormToProto(p)}
	case *mcp.CreateMessageParams:
		out := samplingParams(p.MaxTokens, p.SystemPrompt, p.IncludeContext, p.Temperature, p.StopSequences, p.ModelPreferences)
		for _, m := range p.Messages {
			if m != nil {
				out.Messages = append(out.Messages, samplingMessageToProto(m.Role, m.Content))
			}
		}
		return &pb.InputRequest{SamplingCreateMessage: out}
	case *mcp.CreateMessageWithToolsParams:
		out := samplingParams(p.MaxTokens, p.SystemPrompt, p.IncludeContext, p.Temperature, p.StopSequences, p.ModelPreferences)
		for _, m := range p.Messages {
			if m == nil {
				continue
			}
			// The binding's message holds one block: one message per
			// block, in order.
			for _, c := range m.Content {
				out.Messages = append(out.Messages, samplingMessageToProto(m.Role, c))
			}
		}
		return &pb.InputRequest{SamplingCreateMessage: out}
	case *mcp.ListRootsParams:
		return &pb.InputRequest{ListRootsRequest: &pb.ListRootsRequest{}}
	}
	return &pb.InputRequest{}
}

func samplingParams(maxTokens int64, system, include string, temp float64, stop []string, prefs *mcp.ModelPreferences) *pb.SamplingCreateMessageRequest {
	out := &pb.SamplingCreateMessageRequest{MaxTokens: int32(min(max(maxTokens, 0), 1<<31-1)), SystemPrompt: system, StopSequence: stop}
	switch include {
	case "thisServer":
		out.IncludeContext = pb.SamplingCreateMessageRequest_THIS_SERVER
	case "allServers":
		out.IncludeContext = pb.SamplingCreateMessageRequest_ALL_SERVERS
	}
	if temp != 0 {
		t := float32(temp)
		out.Temperature = &t
	}
	if prefs != nil {
		mp := &pb.SamplingCreateMessageRequest_ModelPreferences{}
		for _, h := range prefs.Hints {
			if h != nil {
				mp.Hints = append(mp.Hints, &pb.SamplingCreateMessageRequest_ModelPreferences_ModelHint{Name: h.Name})
			}
		}
		if prefs.IntelligencePriority != 0 {
			v := float32(prefs.IntelligencePriority)
			mp.IntelligencePriority = &v
		}
		if prefs.SpeedPriority != 0 {
			v := float32(prefs.SpeedPriority)
			mp.SpeedPriority = &v
		}
		if prefs.CostPriority != 0 {
			v := float32(prefs.CostPriority)
			mp.CostPriority = &v
		}
		out.ModelPreferences = mp
	}
	return out
}

func samplingMessageToProto(role mcp.Role, c mcp.Content) *pb.SamplingMessage {
	m := &pb.SamplingMessage{Role: roleToProto(role)}
	switch c := c.(type) {
	case *mcp.TextContent:
		m.Text = &pb.TextContent{Text: c.Text}
	case *mcp.ImageContent:
		m.Image = &pb.ImageContent{Data: c.Data, MimeType: c.MIMEType}
	case *mcp.AudioContent:
		m.Audio = &pb.AudioContent{Data: c.Data, MimeType: c.MIMEType}
	default:
		// A block the binding has no message for (tool use, tool
		// result): its JSON as text rather than lost.
		raw, _ := json.Marshal(c)
		m.Text = &pb.TextContent{Text: string(raw)}
	}
	return m
}

// elicitSchema is the part of an elicitation's requestedSchema (a flat
// object of primitive properties, as MCP restricts it) the binding can
// carry.
type elicitSchema struct {
	Properties map[string]elicitProperty `json:"properties"`
	Required   []string                  `json:"required"`
}

type elicitProperty struct {
	Type        string   `json:"type"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	MinLength   *uint64  `json:"minLength"`
	MaxLength   *uint64  `json:"maxLength"`
	Format      string   `json:"format"`
	Minimum     *float64 `json:"minimum"`
	Maximum     *float64 `json:"maximum"`
	Default     any      `json:"default"`
	Enum        []string `json:"enum"`
	EnumNames   []string `json:"enumNames"`
	OneOf       []struct {
		Const string `json:"const"`
		Title string `json:"title"`
	} `json:"oneOf"`
	Items *elicitProperty `json:"items"`
}

// elicitFormToProto is a form elicitation: its requestedSchema's
// properties as the binding's primitive schemas.
func elicitFormToProto(p *mcp.ElicitParams) *pb.ElicitRequest {
	out := &pb.ElicitRequest{Message: p.Message, RequestedSchema: map[string]*pb.PrimitiveSchemaDefinition{}}
	var s elicitSchema
	if raw, err := json.Marshal(p.RequestedSchema); err == nil {
		_ = json.Unmarshal(raw, &s)
	}
	out.RequiredFields = s.Required
	for name, prop := range s.Properties {
		out.RequestedSchema[name] = primitiveToProto(prop)
	}
	return out
}

func primitiveToProto(p elicitProperty) *pb.PrimitiveSchemaDefinition {
	enum := func(values, names []string) *pb.PrimitiveSchemaDefinition_EnumSchema {
		return &pb.PrimitiveSchemaDefinition_EnumSchema{Title: p.Title, Description: p.Description, EnumList: values, EnumNames: names}
	}
	switch {
	case p.Type == "array" && p.Items != nil:
		values, names := p.Items.Enum, p.Items.EnumNames
		for _, o := range p.Items.OneOf {
			values, names = append(values, o.Const), append(names, o.Title)
		}
		e := enum(values, names)
		e.MultiSelect = &pb.PrimitiveSchemaDefinition_EnumSchema_MultiSelect{}
		if d, ok := p.Default.([]any); ok {
			for _, v := range d {
				if s, ok := v.(string); ok {
					e.MultiSelect.DefaultItems = append(e.MultiSelect.DefaultItems, s)
				}
			}
		}
		return &pb.PrimitiveSchemaDefinition{EnumSchema: e}
	case len(p.Enum) > 0 || len(p.OneOf) > 0:
		values, names := p.Enum, p.EnumNames
		for _, o := range p.OneOf {
			values, names = append(values, o.Const), append(names, o.Title)
		}
		e := enum(values, names)
		e.SingleSelect = &pb.PrimitiveSchemaDefinition_EnumSchema_SingleSelect{}
		if d, ok := p.Default.(string); ok {
			e.SingleSelect.DefaultItem = &d
		}
		return &pb.PrimitiveSchemaDefinition{EnumSchema: e}
	case p.Type == "boolean":
		d, _ := p.Default.(bool)
		return &pb.PrimitiveSchemaDefinition{BooleanSchema: &pb.PrimitiveSchemaDefinition_BooleanSchema{Title: p.Title, Description: p.Description, Default: d}}
	case p.Type == "number" || p.Type == "integer":
		n := &pb.PrimitiveSchemaDefinition_NumberSchema{Title: p.Title, Description: p.Description}
		d, hasDefault := p.Default.(float64)
		if p.Type == "integer" {
			r := &pb.PrimitiveSchemaDefinition_NumberSchema_IntegerRange{}
			if p.Minimum != nil {
				v := int64(*p.Minimum)
				r.Minimum = &v
			}
			if p.Maximum != nil {
				v := int64(*p.Maximum)
				r.Maximum = &v
			}
			n.IntegerRange = r
			if hasDefault {
				v := int64(d)
				n.DefaultInteger = &v
			}
		} else {
			n.DoubleRange = &pb.PrimitiveSchemaDefinition_NumberSchema_DoubleRange{Minimum: p.Minimum, Maximum: p.Maximum}
			if hasDefault {
				n.DefaultNumber = &d
			}
		}
		return &pb.PrimitiveSchemaDefinition{NumberSchema: n}
	}
	s := &pb.PrimitiveSchemaDefinition_StringSchema{Title: p.Title, Description: p.Description, MinLength: p.MinLength, MaxLength: p.MaxLength}
	switch p.Format {
	case "email":
		s.Format = pb.PrimitiveSchemaDefinition_StringSchema_FORMAT_EMAIL
	case "uri":
		s.Format = pb.PrimitiveSchemaDefinition_StringSchema_FORMAT_URI
	case "date":
		s.Format = pb.PrimitiveSchemaDefinition_StringSchema_FORMAT_DATE
	case "date-time":
		s.Format = pb.PrimitiveSchemaDefinition_StringSchema_FORMAT_DATE_TIME
	}
	if d, ok := p.Default.(string); ok {
		s.DefaultValue = &d
	}
	return &pb.PrimitiveSchemaDefinition{StringSchema: s}
}
