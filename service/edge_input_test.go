package service

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

// nestedJSON is an arguments object nested depth levels deep (the object
// itself is level 1).
func nestedJSON(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
}

// nestedMap is nestedJSON decoded.
func nestedMap(depth int) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(nestedJSON(depth)), &m); err != nil {
		panic(err)
	}
	return m
}

// violationDescription is the description of the BadRequest violation for
// field.
func violationDescription(err error, field string) string {
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				if v.GetField() == field {
					return v.GetDescription()
				}
			}
		}
	}
	return ""
}

// TestArgumentsDepthBound: arguments nested core.MaxArgumentsDepth deep reach
// the upstream; one level more is INVALID_ARGUMENT naming the field and
// the limit, the same for arguments_json, arguments (Struct), CallTool and
// CallToolStream.
func TestArgumentsDepthBound(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1)
	ctx := ctxT(t)
	const tool = "mem__t0000" // inputSchema {"type": "object"}
	structOf := func(depth int) *structpb.Struct {
		s, err := structpb.NewStruct(nestedMap(depth))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, err := f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: nestedJSON(core.MaxArgumentsDepth)}); err != nil {
		t.Fatalf("arguments_json %d deep: %v", core.MaxArgumentsDepth, err)
	}
	if _, err := f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool, Arguments: structOf(core.MaxArgumentsDepth)}); err != nil {
		t.Fatalf("arguments %d deep: %v", core.MaxArgumentsDepth, err)
	}
	for _, tc := range []struct {
		field string
		req   *toolsvcv1.CallToolRequest
	}{
		{"arguments_json", &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: nestedJSON(core.MaxArgumentsDepth + 1)}},
		{"arguments_json", &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: nestedJSON(5000)}},
		{"arguments", &toolsvcv1.CallToolRequest{Name: tool, Arguments: structOf(core.MaxArgumentsDepth + 1)}},
	} {
		_, err := f.client.CallTool(ctx, tc.req)
		wantInvalid(t, err, tc.field)
		if d := violationDescription(err, tc.field); !strings.Contains(d, "deeper than 998 levels") {
			t.Errorf("%s: description %q does not name the limit", tc.field, d)
		}
		if len(status.Convert(err).Message()) > 200 {
			t.Errorf("%s: the message echoes the arguments: %d bytes", tc.field, len(status.Convert(err).Message()))
		}
		stream, err := f.client.CallToolStream(ctx, &toolsvcv1.CallToolStreamRequest{Name: tool, Arguments: tc.req.Arguments, ArgumentsJson: tc.req.ArgumentsJson})
		if err == nil {
			_, err = stream.Recv()
		}
		wantInvalid(t, err, tc.field)
	}
}

// TestArgumentsDuplicateKeys: arguments_json naming a key twice in any
// object is INVALID_ARGUMENT naming the key's path: it would be validated
// as one object (the last value) and forwarded as text the upstream may
// read as another (the first).
func TestArgumentsDuplicateKeys(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1)
	ctx := ctxT(t)
	for in, field := range map[string]string{
		`{"a": 1, "a": 2}`:                     "arguments_json.a",
		`{"a": 1, "\u0061": 2}`:                "arguments_json.a",
		`{"x": [1, {"k": {}, "k": []}]}`:       "arguments_json.x[1].k",
		`{"o": {"p": {"q r": 1, "q r": 1}}}`:   `arguments_json.o.p["q r"]`,
		`{"echo": {"text": "t"}, "echo": "x"}`: "arguments_json.echo",
	} {
		for _, tool := range []string{"mem__t0000", "mem__echo"} {
			_, err := f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: in})
			wantInvalid(t, err, field)
		}
	}
	// The same key in different objects is fine.
	if _, err := f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "mem__t0000", ArgumentsJson: `{"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}]}`}); err != nil {
		t.Fatal(err)
	}
}

// rawCodec sends and receives bytes as they are, as content-subtype
// "proto": a client that sends what a broken or hostile peer would.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// TestUndecodableRequests: requests that do not decode (a string that is
// not UTF-8, a Struct nested past protobuf's recursion limit, malformed
// bytes), sent by a real gRPC client over loopback to the server
// NewGRPCServer builds, or one built with nothing but ServerOptions, are
// INVALID_ARGUMENT naming the field, not grpc-go's INTERNAL; unary and
// server-streaming alike.
func TestUndecodableRequests(t *testing.T) {
	t.Parallel()
	t.Run("NewGRPCServer", func(t *testing.T) {
		f := newFixture(t, 1)
		gs, _ := NewGRPCServer(f.svc, GRPCOptions{StreamWorkers: -1})
		testUndecodableRequests(t, gs)
	})
	t.Run("ServerOptions", func(t *testing.T) {
		f := newFixture(t, 1)
		gs := grpc.NewServer(f.svc.ServerOptions()...)
		toolsvcv1.RegisterToolServiceServer(gs, f.svc)
		testUndecodableRequests(t, gs)
	})
}

func testUndecodableRequests(t *testing.T, gs *grpc.Server) {
	ctx := ctxT(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = gs.Serve(lis) }()
	t.Cleanup(func() { gs.Stop(); <-done })
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	str := func(num protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
	}
	msg := func(num protowire.Number, m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
	}
	deep := structpb.NewStructValue(&structpb.Struct{})
	for range 6000 {
		deep = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"a": deep}})
	}
	badString := &structpb.Struct{Fields: map[string]*structpb.Value{"s": structpb.NewStringValue("x")}}
	badStringBytes := bytes.Replace(mustMarshal(t, badString), []byte("x"), []byte("\xff"), 1)
	const tool = "mem__t0000"
	for _, tc := range []struct {
		name, method, field, want string
		req                       []byte
	}{
		{"name not UTF-8", toolsvcv1.ToolService_CallTool_FullMethodName, "name", "not valid UTF-8", str(1, "mem__\xff")},
		{"arguments_json not UTF-8", toolsvcv1.ToolService_CallTool_FullMethodName, "arguments_json", "not valid UTF-8", append(str(1, tool), str(3, "{\"a\": \"\xff\"}")...)},
		{"Struct string not UTF-8", toolsvcv1.ToolService_CallTool_FullMethodName, "arguments", "not valid UTF-8",
			append(str(1, tool), protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), badStringBytes)...)},
		{"Struct too deep", toolsvcv1.ToolService_CallTool_FullMethodName, "arguments", "at most 998 levels", append(str(1, tool), msg(2, deep.GetStructValue())...)},
		{"malformed", toolsvcv1.ToolService_CallTool_FullMethodName, "request", "does not decode as toolsvc.v1.CallToolRequest", []byte{0x0a, 0x7f, 'x'}},
		{"prompt argument not UTF-8", toolsvcv1.ToolService_GetPrompt_FullMethodName, "arguments", "not valid UTF-8",
			append(str(1, "mem__p"), protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), append(str(1, "k"), str(2, "\xff")...))...)},
		{"stream name not UTF-8", toolsvcv1.ToolService_CallToolStream_FullMethodName, "name", "not valid UTF-8", str(1, "mem__\xff")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out []byte
			if strings.HasSuffix(tc.method, "Stream") {
				s, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, tc.method)
				if err == nil {
					if err = s.SendMsg(&tc.req); err == nil {
						_ = s.CloseSend()
						err = s.RecvMsg(&out)
					}
				}
				wantInvalid(t, err, tc.field)
				err = status.Convert(err).Err()
				if d := violationDescription(err, tc.field); !strings.Contains(d, tc.want) {
					t.Errorf("description %q, want it to contain %q", d, tc.want)
				}
				return
			}
			err := conn.Invoke(ctx, tc.method, &tc.req, &out)
			wantInvalid(t, err, tc.field)
			if d := violationDescription(err, tc.field); !strings.Contains(d, tc.want) {
				t.Errorf("description %q, want it to contain %q", d, tc.want)
			}
		})
	}
	// A request that decodes is served as before.
	var out []byte
	if err := conn.Invoke(ctx, toolsvcv1.ToolService_CallTool_FullMethodName, ptr(mustMarshal(t, &toolsvcv1.CallToolRequest{Name: tool})), &out); err != nil {
		t.Fatalf("a well-formed raw request: %v", err)
	}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ptr[T any](v T) *T { return &v }

// trailerBytes is the size of a status as it travels in trailers: the
// message and the encoded details.
func trailerBytes(err error) int {
	return len(status.Convert(err).Message()) + proto.Size(status.Convert(err).Proto())
}

// TestCallerTextNotEchoedWhole: a name longer than any exposed name is
// INVALID_ARGUMENT naming the field and the limit without echoing it; any
// other caller text (an unknown URI or server) is echoed cut to 128 bytes,
// so no status grows with the request.
func TestCallerTextNotEchoedWhole(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1)
	ctx := ctxT(t)
	long := strings.Repeat("x", 1<<20)
	_, err := f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: long})
	t.Logf("1 MiB tool name: status %v, %d bytes", status.Code(err), trailerBytes(err))
	wantInvalid(t, err, "name")
	if d := violationDescription(err, "name"); !strings.Contains(d, "longer than any exposed tool name (at most 64)") {
		t.Errorf("description %q", d)
	}
	if n := trailerBytes(err); n > 1024 || strings.Contains(status.Convert(err).String(), "xxxxxxxxxxxxxxxx") {
		t.Errorf("status of a 1 MiB name: %d bytes, echoes the name", n)
	}
	_, err = f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: long[:65]})
	wantInvalid(t, err, "name")
	// The longest possible name is looked up (and not found).
	_, err = f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: long[:64]})
	if status.Code(err) != codes.NotFound {
		t.Errorf("a 64-byte unknown name: %v, want NOT_FOUND", err)
	}
	stream, err := f.client.CallToolStream(ctx, &toolsvcv1.CallToolStreamRequest{Name: long})
	if err == nil {
		_, err = stream.Recv()
	}
	wantInvalid(t, err, "name")

	_, err = f.client.GetPrompt(ctx, &toolsvcv1.GetPromptRequest{Name: long})
	wantInvalid(t, err, "name")
	if n := trailerBytes(err); n > 1024 {
		t.Errorf("GetPrompt status: %d bytes", n)
	}
	for what, call := range map[string]func() error{
		"uri": func() error {
			_, err := f.client.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Uri: "file:///" + long})
			return err
		},
		"server": func() error {
			_, err := f.client.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Server: long, Uri: "file:///a"})
			return err
		},
		"servers": func() error {
			_, err := f.client.ListResources(ctx, &toolsvcv1.ListResourcesRequest{Servers: []string{long}})
			return err
		},
	} {
		err := call()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		if n := trailerBytes(err); n > 2048 {
			t.Errorf("%s: status is %d bytes (%v…)", what, n, status.Convert(err).Message()[:80])
		}
	}
}

// TestViolationsBounded: a status carries at most maxViolations field
// violations, the last counting the rest (additionalProperties: false with
// 300,000 extra keys made a 28 MB status).
func TestViolationsBounded(t *testing.T) {
	t.Parallel()
	var vs []core.FieldViolation
	for i := range 300 {
		vs = append(vs, core.Violation(fmt.Sprintf("arguments_json.k%d", i), "property is not allowed"))
	}
	st := grpcStatus(core.InvalidArguments(vs...))
	var got []*errdetails.BadRequest_FieldViolation
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			got = br.GetFieldViolations()
		}
	}
	if len(got) != core.MaxViolations || got[len(got)-1].GetDescription() != "and 281 more violations" || got[0].GetField() != "arguments_json.k0" {
		t.Fatalf("%d violations, last %v; want %d ending with \"and 281 more violations\"", len(got), got[len(got)-1], core.MaxViolations)
	}
}
