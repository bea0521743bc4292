package service

import (
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// nestedJSON is an arguments object nested depth levels deep (the object
// itself is level 1).
func nestedJSON(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
}

func nestedMap(depth int) map[string]any {
	m := map[string]any{}
	for range depth - 1 {
		m = map[string]any{"a": m}
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

// TestArgumentsDepthBound: arguments nested MaxArgumentsDepth deep reach
// the upstream; one level more is INVALID_ARGUMENT naming the field and
// the limit, the same for arguments_json, arguments (Struct), CallTool and
// CallToolStream.
func TestArgumentsDepthBound(t *testing.T) {
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
	if _, err := f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: nestedJSON(MaxArgumentsDepth)}); err != nil {
		t.Fatalf("arguments_json %d deep: %v", MaxArgumentsDepth, err)
	}
	if _, err := f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool, Arguments: structOf(MaxArgumentsDepth)}); err != nil {
		t.Fatalf("arguments %d deep: %v", MaxArgumentsDepth, err)
	}
	for _, tc := range []struct {
		field string
		req   *toolsvcv1.CallToolRequest
	}{
		{"arguments_json", &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: nestedJSON(MaxArgumentsDepth + 1)}},
		{"arguments_json", &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: nestedJSON(5000)}},
		{"arguments", &toolsvcv1.CallToolRequest{Name: tool, Arguments: structOf(MaxArgumentsDepth + 1)}},
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

// TestJSONNestsDeeper: the byte scan agrees with the nesting of the text,
// whatever strings hold.
func TestJSONNestsDeeper(t *testing.T) {
	for _, tc := range []struct {
		text  string
		depth int
	}{
		{`{}`, 1},
		{`{"a": [1, {"b": []}]}`, 4},
		{`{"a": "[[[[{{{{"}`, 1},
		{`{"a": "\"[[[["}`, 1},
		{`{"a\\": [[]]}`, 3},
		{nestedJSON(998), 998},
	} {
		if jsonNestsDeeper(tc.text, tc.depth) || !jsonNestsDeeper(tc.text, tc.depth-1) {
			t.Errorf("%.40s: depth is not %d", tc.text, tc.depth)
		}
	}
}
