package mcpgrpcup

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// resultCases are tools/call answers of every content kind, with the
// shapes where the JSON and go-sdk's decode of it differ from the values
// (empty and absent _meta, empty data, a blob, a link's size, empty
// structured content, numbers, nulls, lists, HTML-escaped text).
func resultCases(t *testing.T) map[string]*pb.CallToolResponse {
	meta := mustStruct(t, map[string]any{"k": "v", "n": 1.5, "nil": nil, "l": []any{1.0, "x", map[string]any{"d": true}}})
	empty := &structpb.Struct{}
	text := func(s string, m *structpb.Struct) *pb.CallToolResponse_Content {
		return &pb.CallToolResponse_Content{Text: &pb.TextContent{Text: s, Metadata: m}}
	}
	return map[string]*pb.CallToolResponse{
		"text":            {Content: []*pb.CallToolResponse_Content{text("hello <&> \u00e9", nil)}},
		"empty text":      {Content: []*pb.CallToolResponse_Content{text("", nil)}},
		"no content":      {},
		"error":           {Content: []*pb.CallToolResponse_Content{text("failed", nil)}, IsError: true},
		"text meta":       {Content: []*pb.CallToolResponse_Content{text("a", meta), text("b", empty)}},
		"structured":      {StructuredContent: mustStruct(t, map[string]any{"n": -0.0, "big": 1e300, "s": "x", "b": false, "z": nil, "l": []any{}, "o": map[string]any{}})},
		"empty structure": {StructuredContent: empty, Content: []*pb.CallToolResponse_Content{text("x", nil)}},
		"image": {Content: []*pb.CallToolResponse_Content{
			{Image: &pb.ImageContent{Data: []byte{0, 1, 2, 255}, MimeType: "image/png", Metadata: meta}},
			{Image: &pb.ImageContent{}},
			{Image: &pb.ImageContent{Metadata: empty}},
		}},
		"audio": {Content: []*pb.CallToolResponse_Content{
			{Audio: &pb.AudioContent{Data: []byte("RIFF"), MimeType: "audio/wav"}},
			{Audio: &pb.AudioContent{Metadata: empty}},
		}},
		"embedded": {Content: []*pb.CallToolResponse_Content{
			{EmbeddedResource: &pb.EmbeddedResource{Contents: &pb.ResourceContents{Uri: "file:///a", MimeType: "text/plain", Text: "t", Metadata: meta}, Metadata: meta}},
			{EmbeddedResource: &pb.EmbeddedResource{Contents: &pb.ResourceContents{Uri: "file:///b", Blob: []byte{9, 8, 7}}, Metadata: empty}},
			{EmbeddedResource: &pb.EmbeddedResource{Contents: &pb.ResourceContents{}}},
			{EmbeddedResource: &pb.EmbeddedResource{}}, // no contents: an empty text block
		}},
		"link": {Content: []*pb.CallToolResponse_Content{
			{ResourceLink: &pb.Resource{Uri: "file:///c", Name: "c", Title: "C", Description: "d", MimeType: "m", Size: 42, Metadata: meta}},
			{ResourceLink: &pb.Resource{Uri: "file:///d", Metadata: empty}},
			{ResourceLink: &pb.Resource{Size: math.MaxInt64}},
		}},
		"unset block": {Content: []*pb.CallToolResponse_Content{{}}},
		"mixed": {StructuredContent: meta, IsError: true, Content: []*pb.CallToolResponse_Content{
			text("a", nil), {Image: &pb.ImageContent{Data: []byte{1}}}, {ResourceLink: &pb.Resource{Uri: "u"}},
		}},
	}
}

// fromWire is r as received: marshalled and unmarshalled by protobuf, as
// grpc-go hands the adapter an answer (empty bytes become nil, and so on).
func fromWire[M proto.Message](t *testing.T, r M) M {
	b, err := proto.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	out := r.ProtoReflect().New().Interface().(M)
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameAsDecoded fails unless got is what go-sdk decodes the JSON of shape
// into (want is a new value of got's type).
func sameAsDecoded[R any](t *testing.T, name string, got *R, shape any) {
	t.Helper()
	raw, err := json.Marshal(shape)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	want := new(R)
	if err := json.Unmarshal(raw, want); err != nil {
		t.Fatalf("%s: go-sdk's decode: %v", name, err)
	}
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.Marshal(got)
		t.Errorf("%s: the value differs from go-sdk's decode of %s:\n got %#v\nwant %#v\n(got encodes as %s)", name, raw, got, want, gj)
	}
}

// TestCallResultValueMatchesJSON: the value the adapter hands go-sdk for
// a tools/call, prompts/get, resources/read or completion/complete answer
// is exactly what go-sdk decoded from the JSON the adapter sent before
// (callToolJSON, promptJSON, readJSON), for every content kind; and a
// result that must go as JSON (nested deeper than maxValueDepth, a number
// that is not finite, a link's size beyond an int64) is not built as a
// value.
func TestCallResultValueMatchesJSON(t *testing.T) {
	for name, r := range resultCases(t) {
		r := fromWire(t, r)
		got := callResultValue(r)
		if got == nil {
			t.Errorf("%s: not built as a value", name)
			continue
		}
		sameAsDecoded(t, name, got, callToolJSON(r))
		// The same blocks as a prompt's messages, and the embedded
		// resources' contents as a read's.
		p := &pb.GetPromptResponse{Description: name}
		rd := &pb.ReadResourceResponse{}
		for i, b := range r.GetContent() {
			p.Messages = append(p.Messages, &pb.PromptMessage{Role: pb.Role(i % 3), Text: b.GetText(), Image: b.GetImage(), Audio: b.GetAudio(),
				EmbeddedResource: b.GetEmbeddedResource(), ResourceLink: b.GetResourceLink()})
			if c := b.GetEmbeddedResource().GetContents(); c != nil {
				rd.Resource = append(rd.Resource, c)
			}
		}
		p, rd = fromWire(t, p), fromWire(t, rd)
		if v := promptResultValue(p); v == nil {
			t.Errorf("%s: prompt not built as a value", name)
		} else {
			sameAsDecoded(t, name+" (prompt)", v, promptJSON(p))
		}
		if v := readResultValue(rd); v == nil {
			t.Errorf("%s: read not built as a value", name)
		} else {
			sameAsDecoded(t, name+" (read)", v, readJSON(rd))
		}
	}
	for name, r := range map[string]*pb.CompletionResponse{
		"none":  {},
		"some":  {Values: []string{"a", "b"}, HasMore: true, TotalMatches: ptr[int64](9)},
		"zero":  {Values: []string{"a"}, TotalMatches: ptr[int64](0)},
		"empty": {Values: []string{""}},
	} {
		r := fromWire(t, r)
		// What the adapter sent before.
		comp := map[string]any{"values": append([]string{}, r.GetValues()...)}
		if r.GetHasMore() {
			comp["hasMore"] = true
		}
		if r.TotalMatches != nil {
			comp["total"] = r.GetTotalMatches()
		}
		sameAsDecoded(t, name+" (completion)", completeResultValue(r), map[string]any{"completion": comp})
	}
	for name, r := range map[string]*pb.CallToolResponse{
		"deep structured":   {StructuredContent: nested(maxValueDepth + 1)},
		"deep text meta":    {Content: []*pb.CallToolResponse_Content{{Text: &pb.TextContent{Metadata: nested(maxValueDepth + 1)}}}},
		"deep list":         {StructuredContent: &structpb.Struct{Fields: map[string]*structpb.Value{"l": deepList(maxValueDepth)}}},
		"deep resource":     {Content: []*pb.CallToolResponse_Content{{EmbeddedResource: &pb.EmbeddedResource{Contents: &pb.ResourceContents{Metadata: nested(maxValueDepth + 1)}}}}},
		"NaN":               {StructuredContent: &structpb.Struct{Fields: map[string]*structpb.Value{"x": structpb.NewNumberValue(math.NaN())}}},
		"infinity in meta":  {Content: []*pb.CallToolResponse_Content{{Image: &pb.ImageContent{Metadata: &structpb.Struct{Fields: map[string]*structpb.Value{"x": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewNumberValue(math.Inf(-1))}})}}}}}},
		"size beyond int64": {Content: []*pb.CallToolResponse_Content{{ResourceLink: &pb.Resource{Uri: "u", Size: math.MaxInt64 + 1}}}},
	} {
		if v := callResultValue(fromWire(t, r)); v != nil {
			t.Errorf("%s: built as a value, want JSON", name)
		}
	}
	deep := &pb.ResourceContents{Uri: "u", Metadata: nested(maxValueDepth + 1)}
	if readResultValue(fromWire(t, &pb.ReadResourceResponse{Resource: []*pb.ResourceContents{deep}})) != nil {
		t.Error("a read with deep _meta: built as a value, want JSON")
	}
	if promptResultValue(fromWire(t, &pb.GetPromptResponse{Messages: []*pb.PromptMessage{{EmbeddedResource: &pb.EmbeddedResource{Contents: deep}}}})) != nil {
		t.Error("a prompt with deep _meta: built as a value, want JSON")
	}
	if callResultValue(fromWire(t, &pb.CallToolResponse{StructuredContent: nested(maxValueDepth)})) == nil {
		t.Error("structured content nested maxValueDepth levels: not built as a value")
	}
}

// deepList is a list nested depth levels ([[…[true]…]]).
func deepList(depth int) *structpb.Value {
	v := structpb.NewBoolValue(true)
	for range depth {
		v = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{v}})
	}
	return v
}

// answers serves each tool's answer: the tool named after a case answers
// with it.
type answers struct {
	toolsOnly
	by map[string]*pb.CallToolResponse
}

func (s *answers) CallTool(ctx context.Context, req *pb.CallToolRequest) (*pb.CallToolResponse, error) {
	if r, ok := s.by[req.GetRequest().GetName()]; ok {
		return r, nil
	}
	if req.GetRequest().GetName() == "fail" {
		return nil, status.Error(codes.InvalidArgument, "no such thing")
	}
	return s.toolsOnly.CallTool(ctx, req)
}

// recordingTransport records the responses its connection hands go-sdk
// (directly, as the bridge's taps see them).
type recordingTransport struct {
	mcp.Transport
	mu    sync.Mutex
	resps []*jsonrpc.Response
}

func (t *recordingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recordingConn{Connection: c, t: t}, nil
}

type recordingConn struct {
	mcp.Connection
	t *recordingTransport
}

func (c *recordingConn) BindResponses(deliver func(*jsonrpc.Response) bool) {
	c.Connection.(mcp.DirectConnection).BindResponses(func(r *jsonrpc.Response) bool {
		c.t.mu.Lock()
		c.t.resps = append(c.t.resps, r)
		c.t.mu.Unlock()
		return deliver(r)
	})
}

func (t *recordingTransport) last() *jsonrpc.Response {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.resps[len(t.resps)-1]
}

// TestCallResultNotEncoded: a real gRPC upstream's tools/call answer
// reaches go-sdk's waiting call as go-sdk's value, with no JSON (the
// response's Result is empty), and the caller gets what the JSON would
// have decoded into; an answer that must go as JSON (structured content
// nested deeper than maxValueDepth) still does, and is delivered whole;
// an RPC's status is the same JSON-RPC error as before. Before: every
// answer was JSON, encoded by the adapter and decoded by go-sdk.
func TestCallResultNotEncoded(t *testing.T) {
	by := resultCases(t)
	by["deep"] = &pb.CallToolResponse{StructuredContent: nested(maxValueDepth + 10)}
	url, _ := serve(t, &answers{by: by})
	gt, err := Factory(mcpbridge.ServerConfig{Name: "g", Transport: mcpbridge.TransportGRPC, URL: url}, 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	rt := &recordingTransport{Transport: gt}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, rt, &mcp.ClientSessionOptions{ProtocolVersion: mcpbridge.DefaultProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	for name, r := range by {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		resp := rt.last()
		raw, _ := json.Marshal(callToolJSON(fromWire(t, r)))
		want := new(mcp.CallToolResult)
		if err := json.Unmarshal(raw, want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(res, want) {
			t.Errorf("%s: got %#v, want %#v", name, res, want)
		}
		_, decoded := mcp.DecodedResult(resp)
		switch {
		case name == "deep" && (decoded || len(resp.Result) == 0):
			t.Errorf("%s: sent as a value (%v) with %d bytes of JSON, want JSON", name, decoded, len(resp.Result))
		case name != "deep" && (!decoded || resp.Result != nil):
			t.Errorf("%s: sent with %d bytes of JSON, want go-sdk's value", name, len(resp.Result))
		}
	}
	// An RPC's status is mapped as before (wireError): a JSON-RPC error,
	// never a value.
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fail", Arguments: map[string]any{}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || we.Message != "grpc upstream: InvalidArgument: no such thing" {
		t.Fatalf("a status from the upstream: %v, want invalid params with its code and message", err)
	}
	if _, decoded := mcp.DecodedResult(rt.last()); decoded {
		t.Fatal("an error answered with a value")
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after"}}); err != nil ||
		res.Content[0].(*mcp.TextContent).Text != "after" {
		t.Fatalf("a call after them: %v, %v", res, err)
	}
}
