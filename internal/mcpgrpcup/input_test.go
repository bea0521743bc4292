package mcpgrpcup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// asker answers every CallTool without request_state with ask (the tool's
// name picks it), and records the retry's common fields.
type asker struct {
	pb.UnimplementedMcpServer
	ask   map[string]*pb.ResponseFields
	retry chan *pb.RequestFields
}

func (s *asker) ListTools(context.Context, *pb.ListToolsRequest) (*pb.ListToolsResponse, error) {
	return &pb.ListToolsResponse{Tools: []*pb.Tool{{Name: "ask"}}}, nil
}

func (s *asker) CallTool(_ context.Context, req *pb.CallToolRequest) (*pb.CallToolResponse, error) {
	if req.GetCommon().GetRequestState() != "" {
		s.retry <- req.GetCommon()
		return &pb.CallToolResponse{Content: []*pb.CallToolResponse_Content{{Text: &pb.TextContent{Text: "done"}}}}, nil
	}
	a, ok := s.ask[req.GetRequest().GetName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no tool %q", req.GetRequest().GetName())
	}
	return &pb.CallToolResponse{Common: a}, nil
}

func ptr[T any](v T) *T { return &v }

// connectManual is a go-sdk session over the transport that continues its
// calls itself, as the bridge's (its automatic retry off).
func connectManual(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	tr, err := Factory(mcpbridge.ServerConfig{Name: "g", Transport: mcpbridge.TransportGRPC, URL: url}, 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}).
		Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: mcpbridge.DefaultProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestInputRequestsRoundTrip: each kind of the binding's input request
// reaches go-sdk as the 2026-07-28 input_required it decodes (form with
// every primitive, URL, sampling, roots), with the upstream's state; the
// retry's answers of each kind reach the upstream in common, by the same
// ids, with that state.
func TestInputRequestsRoundTrip(t *testing.T) {
	form := &pb.ElicitRequest{Message: "who?", RequiredFields: []string{"name"}, RequestedSchema: map[string]*pb.PrimitiveSchemaDefinition{
		"name":  {StringSchema: &pb.PrimitiveSchemaDefinition_StringSchema{Title: "Name", MaxLength: ptr[uint64](20), Format: pb.PrimitiveSchemaDefinition_StringSchema_FORMAT_EMAIL}},
		"age":   {NumberSchema: &pb.PrimitiveSchemaDefinition_NumberSchema{IntegerRange: &pb.PrimitiveSchemaDefinition_NumberSchema_IntegerRange{Minimum: ptr[int64](0), Maximum: ptr[int64](150)}}},
		"ok":    {BooleanSchema: &pb.PrimitiveSchemaDefinition_BooleanSchema{Default: true}},
		"color": {EnumSchema: &pb.PrimitiveSchemaDefinition_EnumSchema{EnumList: []string{"red", "blue"}, SingleSelect: &pb.PrimitiveSchemaDefinition_EnumSchema_SingleSelect{DefaultItem: ptr("red")}}},
		"tags":  {EnumSchema: &pb.PrimitiveSchemaDefinition_EnumSchema{EnumList: []string{"a", "b"}, MultiSelect: &pb.PrimitiveSchemaDefinition_EnumSchema_MultiSelect{MaxItems: ptr[uint32](2)}}},
	}}
	srv := &asker{retry: make(chan *pb.RequestFields, 1), ask: map[string]*pb.ResponseFields{"ask": {
		ResultType: pb.ResultType_RESULT_TYPE_INPUT_REQUIRED, RequestState: ptr("up-state"),
		InputRequests: map[string]*pb.InputRequest{
			"form": {ElicitRequest: form},
			"url":  {ElicitRequest: &pb.ElicitRequest{Message: "log in", UrlMode: &pb.ElicitRequest_UrlMode{Id: "e1", Url: "https://login.example/x"}}},
			"llm": {SamplingCreateMessage: &pb.SamplingCreateMessageRequest{MaxTokens: 9, SystemPrompt: "be brief", Temperature: ptr[float32](0.5),
				Messages: []*pb.SamplingMessage{{Role: pb.Role_ROLE_USER, Text: &pb.TextContent{Text: "hi"}}}}},
			"roots": {ListRootsRequest: &pb.ListRootsRequest{}},
		}}}}
	url, _ := serve(t, srv)
	cs := connectManual(t, url)
	ctx := t.Context()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
	if err != nil || !res.NeedsInput() || len(res.InputRequests) != 4 || res.RequestState != "up-state" || len(res.Content) != 0 {
		t.Fatalf("CallTool(ask) = %+v, %v; want input_required with 4 requests and the upstream's state", res, err)
	}
	f, ok := res.InputRequests["form"].(*mcp.ElicitParams)
	if !ok || f.Message != "who?" || f.Mode != "form" {
		t.Fatalf("form = %#v", res.InputRequests["form"])
	}
	raw, _ := json.Marshal(f.RequestedSchema)
	var schema map[string]any
	_ = json.Unmarshal(raw, &schema)
	props, _ := schema["properties"].(map[string]any)
	for field, want := range map[string]string{
		"name":  `{"format":"email","maxLength":20,"title":"Name","type":"string"}`,
		"age":   `{"maximum":150,"minimum":0,"type":"integer"}`,
		"ok":    `{"default":true,"type":"boolean"}`,
		"color": `{"default":"red","enum":["red","blue"],"type":"string"}`,
		"tags":  `{"items":{"enum":["a","b"],"type":"string"},"maxItems":2,"type":"array"}`,
	} {
		if got, _ := json.Marshal(props[field]); string(got) != want {
			t.Errorf("schema of %s = %s, want %s", field, got, want)
		}
	}
	if fmt.Sprint(schema["required"]) != "[name]" || schema["type"] != "object" {
		t.Errorf("schema = %s", raw)
	}
	if u, ok := res.InputRequests["url"].(*mcp.ElicitParams); !ok || u.Mode != "url" || u.URL != "https://login.example/x" || u.ElicitationID != "e1" {
		t.Errorf("url = %#v", res.InputRequests["url"])
	}
	s, ok := res.InputRequests["llm"].(*mcp.CreateMessageWithToolsParams)
	if !ok || s.MaxTokens != 9 || s.SystemPrompt != "be brief" || s.Temperature != 0.5 || len(s.Messages) != 1 || s.Messages[0].Role != "user" ||
		s.Messages[0].Content[0].(*mcp.TextContent).Text != "hi" {
		t.Errorf("llm = %#v", res.InputRequests["llm"])
	}
	if _, ok := res.InputRequests["roots"].(*mcp.ListRootsParams); !ok {
		t.Errorf("roots = %#v", res.InputRequests["roots"])
	}

	done, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}, RequestState: res.RequestState,
		InputResponses: mcp.InputResponseMap{
			"form":  &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "a@b.c", "age": 7.0}},
			"url":   &mcp.ElicitResult{Action: "decline"},
			"llm":   &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "m", StopReason: "endTurn", Content: []mcp.Content{&mcp.TextContent{Text: "yo"}}},
			"roots": &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///w", Name: "w"}}},
		}})
	if err != nil || done.NeedsInput() || done.Content[0].(*mcp.TextContent).Text != "done" {
		t.Fatalf("retry = %+v, %v", done, err)
	}
	got := <-srv.retry
	want := &pb.RequestFields{RequestState: ptr("up-state"), InputResponses: map[string]*pb.InputResponse{
		"form": {ElicitResult: &pb.ElicitResult{Type: pb.ElicitResult_TYPE_ACCEPT, Content: mustStruct(t, map[string]any{"name": "a@b.c", "age": 7.0})}},
		"url":  {ElicitResult: &pb.ElicitResult{Type: pb.ElicitResult_TYPE_DECLINE}},
		"llm": {SamplingCreateMessageResult: &pb.SamplingCreateMessageResult{Model: "m", StopReason: "endTurn",
			Message: &pb.SamplingMessage{Role: pb.Role_ROLE_ASSISTANT, Text: &pb.TextContent{Text: "yo"}}}},
		"roots": {RootListResult: &pb.ListRootsResult{Roots: []*pb.ListRootsResult_Root{{Uri: "file:///w", Name: "w"}}}},
	}}
	if !proto.Equal(got, want) {
		t.Errorf("the retry's common fields:\n%s\nwant\n%s", protojson.Format(got), protojson.Format(want))
	}
}

// TestInputRequestsBounded: what the bridge must not pass on is refused as
// a malformed answer (mcpbridge.MalformedAnswer) naming the field at fault.
func TestInputRequestsBounded(t *testing.T) {
	many := map[string]*pb.InputRequest{}
	for i := range maxInputRequests + 1 {
		many[fmt.Sprint(i)] = &pb.InputRequest{ListRootsRequest: &pb.ListRootsRequest{}}
	}
	roots := map[string]*pb.InputRequest{"r": {ListRootsRequest: &pb.ListRootsRequest{}}}
	ir := func(state *string, reqs map[string]*pb.InputRequest) *pb.ResponseFields {
		return &pb.ResponseFields{ResultType: pb.ResultType_RESULT_TYPE_INPUT_REQUIRED, RequestState: state, InputRequests: reqs}
	}
	cases := map[string]struct {
		ask  *pb.ResponseFields
		want string
	}{
		"none":      {ir(ptr("s"), nil), "without input_requests"},
		"many":      {ir(ptr("s"), many), "257 input_requests, over the 256 allowed"},
		"state":     {ir(ptr(strings.Repeat("s", maxRequestState+1)), roots), "request_state of 65537 bytes"},
		"nokind":    {ir(nil, map[string]*pb.InputRequest{"q": {}}), `input_requests["q"]: set exactly one of`},
		"twokinds":  {ir(nil, map[string]*pb.InputRequest{"q": {ListRootsRequest: &pb.ListRootsRequest{}, ElicitRequest: &pb.ElicitRequest{}}}), `input_requests["q"]: set exactly one of`},
		"emptyid":   {ir(nil, map[string]*pb.InputRequest{"": {ListRootsRequest: &pb.ListRootsRequest{}}}), `input_requests[""]: an id of 1 to 256 bytes`},
		"big":       {ir(nil, map[string]*pb.InputRequest{"b": {ElicitRequest: &pb.ElicitRequest{Message: strings.Repeat("x", maxInputRequestBytes)}}}), `input_requests["b"]: 1048584 bytes, over the 1048576 allowed`},
		"nourl":     {ir(nil, map[string]*pb.InputRequest{"u": {ElicitRequest: &pb.ElicitRequest{UrlMode: &pb.ElicitRequest_UrlMode{}}}}), `input_requests["u"]: elicit_request.url_mode.url: required`},
		"required":  {ir(nil, map[string]*pb.InputRequest{"f": {ElicitRequest: &pb.ElicitRequest{RequiredFields: []string{"x"}}}}), `required_fields: "x" is not in requested_schema`},
		"nopropty":  {ir(nil, map[string]*pb.InputRequest{"f": {ElicitRequest: &pb.ElicitRequest{RequestedSchema: map[string]*pb.PrimitiveSchemaDefinition{"x": {}}}}}), `requested_schema["x"]: set one of`},
		"emptyenum": {ir(nil, map[string]*pb.InputRequest{"f": {ElicitRequest: &pb.ElicitRequest{RequestedSchema: map[string]*pb.PrimitiveSchemaDefinition{"x": {EnumSchema: &pb.PrimitiveSchemaDefinition_EnumSchema{}}}}}}), `enum_list: required`},
		"nomsgs":    {ir(nil, map[string]*pb.InputRequest{"s": {SamplingCreateMessage: &pb.SamplingCreateMessageRequest{}}}), `sampling_create_message.messages: required`},
		"noblock":   {ir(nil, map[string]*pb.InputRequest{"s": {SamplingCreateMessage: &pb.SamplingCreateMessageRequest{Messages: []*pb.SamplingMessage{{}}}}}), `messages[0]: set one of text, image, audio`},
	}
	srv := &asker{ask: map[string]*pb.ResponseFields{}, retry: make(chan *pb.RequestFields, 1)}
	for name, c := range cases {
		srv.ask[name] = c.ask
	}
	url, _ := serve(t, srv)
	cs := connectManual(t, url)
	for name, c := range cases {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		var we *jsonrpc.Error
		if !asJSONRPC(err, &we) || we.Code != mcpbridge.MalformedAnswer("").Code || !strings.Contains(we.Message, c.want) {
			t.Errorf("%s: %v; want a malformed answer naming %q", name, err, c.want)
		}
	}
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func asJSONRPC(err error, we **jsonrpc.Error) bool { return errors.As(err, we) }
