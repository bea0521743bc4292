package mcpgrpc

import (
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
)

func commonWith(t *testing.T, md map[string]any) *pb.RequestFields {
	t.Helper()
	s, err := structpb.NewStruct(md)
	if err != nil {
		t.Fatal(err)
	}
	return &pb.RequestFields{Metadata: s}
}

// TestInputKinds: the kinds of input a client offers are its 2026-07-28
// clientCapabilities in common.metadata, each present or not.
func TestInputKinds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name                       string
		caps                       any
		form, url, sampling, roots bool
		none                       bool
	}{
		{name: "all", caps: map[string]any{"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}}, "sampling": map[string]any{}, "roots": map[string]any{}},
			form: true, url: true, sampling: true, roots: true},
		{name: "elicitation {} is form", caps: map[string]any{"elicitation": map[string]any{}}, form: true},
		{name: "url only", caps: map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}, url: true},
		{name: "nothing offered", caps: map[string]any{}, none: true},
	} {
		in, e := inputOptions(commonWith(t, map[string]any{MetaClientCapabilities: c.caps}))
		if e != nil {
			t.Fatalf("%s: %v", c.name, e)
		}
		if c.none {
			if in != nil {
				t.Errorf("%s: %+v, want not interactive", c.name, in)
			}
			continue
		}
		if in == nil || in.Kinds.Form != c.form || in.Kinds.URL != c.url || in.Kinds.Sampling != c.sampling || in.Kinds.Roots != c.roots {
			t.Errorf("%s: %+v", c.name, in)
		}
	}
	if _, e := inputOptions(commonWith(t, map[string]any{MetaClientCapabilities: "all"})); e == nil ||
		!strings.Contains(e.Violations[0].Field, MetaClientCapabilities) {
		t.Errorf("capabilities that are not an object: %v", e)
	}
}

// TestInputResponses: each answer decoded, a bad one refused naming its
// field.
func TestInputResponses(t *testing.T) {
	t.Parallel()
	content, _ := structpb.NewStruct(map[string]any{"name": "Ada"})
	c := &pb.RequestFields{RequestState: new(string), InputResponses: map[string]*pb.InputResponse{
		"e": {ElicitResult: &pb.ElicitResult{Type: pb.ElicitResult_TYPE_ACCEPT, Content: content}},
		"s": {SamplingCreateMessageResult: &pb.SamplingCreateMessageResult{Model: "m",
			Message: &pb.SamplingMessage{Role: pb.Role_ROLE_ASSISTANT, Text: &pb.TextContent{Text: "hi"}}}},
		"r": {RootListResult: &pb.ListRootsResult{Roots: []*pb.ListRootsResult_Root{{Uri: "file:///w"}}}},
	}}
	*c.RequestState = "st"
	in, e := inputOptions(c)
	if e != nil {
		t.Fatal(e)
	}
	if in.State != "st" || in.Responses["e"].(*mcp.ElicitResult).Content["name"] != "Ada" ||
		in.Responses["s"].(*mcp.CreateMessageWithToolsResult).Content[0].(*mcp.TextContent).Text != "hi" ||
		in.Responses["r"].(*mcp.ListRootsResult).Roots[0].URI != "file:///w" {
		t.Errorf("decoded %+v", in)
	}
	for _, bad := range []struct {
		r     *pb.InputResponse
		field string
	}{
		{&pb.InputResponse{}, `common.input_responses["x"]`},
		{&pb.InputResponse{ElicitResult: &pb.ElicitResult{}}, `common.input_responses["x"].elicit_result.type`},
		{&pb.InputResponse{SamplingCreateMessageResult: &pb.SamplingCreateMessageResult{Message: &pb.SamplingMessage{Text: &pb.TextContent{}}}},
			`common.input_responses["x"].sampling_create_message_result.message.role`},
		{&pb.InputResponse{RootListResult: &pb.ListRootsResult{Roots: []*pb.ListRootsResult_Root{{}}}}, `common.input_responses["x"].root_list_result.roots[0].uri`},
	} {
		_, e := inputOptions(&pb.RequestFields{InputResponses: map[string]*pb.InputResponse{"x": bad.r}})
		if e == nil || len(e.Violations) != 1 || e.Violations[0].Field != bad.field {
			t.Errorf("%v: %v, want a violation of %s", bad.r, e, bad.field)
		}
	}
}

// TestElicitSchema: a form's requestedSchema as the binding's primitive
// schemas.
func TestElicitSchema(t *testing.T) {
	t.Parallel()
	p := &mcp.ElicitParams{Message: "m", RequestedSchema: map[string]any{"type": "object", "required": []any{"name"},
		"properties": map[string]any{
			"name":  map[string]any{"type": "string", "title": "Name", "maxLength": 10, "format": "email"},
			"age":   map[string]any{"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
			"ok":    map[string]any{"type": "boolean", "default": true},
			"color": map[string]any{"type": "string", "enum": []any{"r", "g"}, "enumNames": []any{"Red", "Green"}},
			"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []any{"a", "b"}}},
		}}}
	r := inputRequestToProto(p).GetElicitRequest()
	s := r.GetRequestedSchema()
	if r.GetMessage() != "m" || !slices.Equal(r.GetRequiredFields(), []string{"name"}) ||
		s["name"].GetStringSchema().GetMaxLength() != 10 || s["name"].GetStringSchema().GetFormat() != pb.PrimitiveSchemaDefinition_StringSchema_FORMAT_EMAIL ||
		s["age"].GetNumberSchema().GetIntegerRange().GetMaximum() != 150 || s["age"].GetNumberSchema().GetDefaultInteger() != 30 ||
		!s["ok"].GetBooleanSchema().GetDefault() ||
		!slices.Equal(s["color"].GetEnumSchema().GetEnumNames(), []string{"Red", "Green"}) || s["color"].GetEnumSchema().GetSingleSelect() == nil ||
		!slices.Equal(s["tags"].GetEnumSchema().GetEnumList(), []string{"a", "b"}) || s["tags"].GetEnumSchema().GetMultiSelect() == nil {
		t.Errorf("schema = %v", r)
	}
	u := inputRequestToProto(&mcp.ElicitParams{Mode: "url", Message: "go", URL: "https://x/", ElicitationID: "id1"}).GetElicitRequest()
	if u.GetUrlMode().GetUrl() != "https://x/" || u.GetUrlMode().GetId() != "id1" {
		t.Errorf("url mode = %v", u)
	}
}
