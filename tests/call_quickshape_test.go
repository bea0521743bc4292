package tests

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestCallQuickShapeValidation: the schema go-sdk generates for a struct
// (ping_me's {"x": int}: type object, one required integer property,
// additionalProperties false) is the kind the core's fast path accepts
// without jsonschema-go (service/core/fastvalidate.go). Against the real
// test upstream over stdio and streamable HTTP, arguments it accepts reach
// the upstream and are answered, and every hostile variant is still
// refused with INVALID_ARGUMENT, ARGUMENTS_INVALID and the field named, on
// CallTool and CallToolStream, without reaching the upstream: a fraction
// where an integer is declared, a string, null, a missing required
// property, an extra property, a case variant of the property, a number
// beyond float64 (1e400), arguments that are not an object.
func TestCallQuickShapeValidation(t *testing.T) {
	t.Parallel()
	p := startCallFixture(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	for _, tr := range callTransports {
		t.Run(tr.name, func(t *testing.T) {
			tool := tr.server + "__ping_me"
			before := upstreamCalls(t, ctx, p.client, tr.server)["ping_me"]
			valid := []*toolsvcv1.CallToolRequest{
				{ArgumentsJson: `{"x": 41}`},
				{ArgumentsJson: `{"x": -0}`},
				{Arguments: &structpb.Struct{Fields: map[string]*structpb.Value{"x": structpb.NewNumberValue(41)}}},
			}
			for _, req := range valid {
				req.Name = tool
				res, err := p.client.CallTool(ctx, req)
				if err != nil || res.GetIsError() {
					t.Fatalf("valid call %v = %v, %v", req, res, err)
				}
				if got := resultText(res); got != "42" && got != "1" {
					t.Errorf("%v answered %q", req, got)
				}
			}
			for _, tc := range []struct {
				in     string
				fields []string
			}{
				{`{"x": 1.5}`, []string{"arguments_json.x"}},
				{`{"x": "41"}`, []string{"arguments_json.x"}},
				{`{"x": null}`, []string{"arguments_json.x"}},
				{`{}`, []string{"arguments_json.x"}},
				{`{"y": 1}`, []string{"arguments_json.y"}}, // jsonschema-go names the extra property first
				{`{"x": 1, "zeta": 1, "alpha": 2}`, []string{"arguments_json.alpha", "arguments_json.zeta"}},
				{`{"x": 1, "X": 2}`, []string{"arguments_json.X"}},
				{`{"x": 1e400}`, []string{"arguments_json.x"}},
				{`[1]`, []string{"arguments_json"}},
			} {
				_, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: tc.in})
				wantStatus(t, err, codes.InvalidArgument, "ARGUMENTS_INVALID", tr.server, tool)
				if got := fieldViolations(err); !slices.Equal(got, tc.fields) {
					t.Errorf("%s: field violations %q, want %q (error %v)", tc.in, got, tc.fields, err)
				}
				s, err := p.client.CallToolStream(ctx, &toolsvcv1.CallToolStreamRequest{Name: tool, ArgumentsJson: tc.in})
				if err == nil {
					_, _, err = readStream(t, s)
				}
				if got := fieldViolations(err); !slices.Equal(got, tc.fields) {
					t.Errorf("%s (stream): field violations %q, want %q (error %v)", tc.in, got, tc.fields, err)
				}
			}
			if n := upstreamCalls(t, ctx, p.client, tr.server)["ping_me"] - before; n != float64(len(valid)) {
				t.Errorf("the upstream received %v ping_me calls, want %d (the valid ones only)", n, len(valid))
			}
		})
	}
}
