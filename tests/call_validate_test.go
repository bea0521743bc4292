package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestCallArgumentValidation: arguments that violate the tool's inputSchema
// (missing required, wrong type, extra property under additionalProperties
// false, nested and array paths) fail with INVALID_ARGUMENT, ErrorInfo
// ARGUMENTS_INVALID and a BadRequest naming the JSON path, and nothing
// reaches the upstream (it counts its calls). Valid arguments_json with an
// integer beyond 2^53 reaches the upstream digit for digit. A server with
// "validateArguments": false gets the call unchecked.
func TestCallArgumentValidation(t *testing.T) {
	t.Parallel()
	p := startCallFixture(t, servers{"loose": goStdio(upstream{ValidateArguments: new(false)})})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	for _, tr := range callTransports {
		t.Run(tr.name, func(t *testing.T) {
			tool := tr.server + "__strict"
			structArgs := func(m map[string]any) *structpb.Struct {
				s, err := structpb.NewStruct(m)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			for _, tc := range []struct {
				name   string
				req    *toolsvcv1.CallToolRequest
				fields []string
			}{
				{"no arguments", &toolsvcv1.CallToolRequest{}, []string{"arguments.count"}},
				{"missing required", &toolsvcv1.CallToolRequest{ArgumentsJson: `{"label": "x"}`}, []string{"arguments_json.count"}},
				{"wrong type", &toolsvcv1.CallToolRequest{ArgumentsJson: `{"count": "seven"}`}, []string{"arguments_json.count"}},
				{"wrong type (Struct)", &toolsvcv1.CallToolRequest{Arguments: structArgs(map[string]any{"count": 1.5})}, []string{"arguments.count"}},
				{"below minimum", &toolsvcv1.CallToolRequest{Arguments: structArgs(map[string]any{"count": -1})}, []string{"arguments.count"}},
				{"extra properties", &toolsvcv1.CallToolRequest{ArgumentsJson: `{"count": 1, "zeta": 1, "alpha": 2}`}, []string{"arguments_json.alpha", "arguments_json.zeta"}},
				{"nested required", &toolsvcv1.CallToolRequest{ArgumentsJson: `{"count": 1, "opts": {}}`}, []string{"arguments_json.opts.flag"}},
				{"nested type", &toolsvcv1.CallToolRequest{ArgumentsJson: `{"count": 1, "opts": {"flag": "yes"}}`}, []string{"arguments_json.opts.flag"}},
				{"array item", &toolsvcv1.CallToolRequest{ArgumentsJson: `{"count": 1, "tags": ["a", "b", 3]}`}, []string{"arguments_json.tags[2]"}},
				{"not an object", &toolsvcv1.CallToolRequest{ArgumentsJson: `[1, 2]`}, []string{"arguments_json"}},
				// A case variant of a declared property, which a
				// case-insensitive upstream would read as it.
				{"case variant", &toolsvcv1.CallToolRequest{ArgumentsJson: `{"count": 1, "COUNT": -5}`}, []string{"arguments_json.COUNT"}},
			} {
				tc.req.Name = tool
				_, err := p.client.CallTool(ctx, tc.req)
				wantStatus(t, err, codes.InvalidArgument, "ARGUMENTS_INVALID", tr.server, tool)
				if got := fieldViolations(err); !slices.Equal(got, tc.fields) {
					t.Errorf("%s: field violations %q, want %q (error %v)", tc.name, got, tc.fields, err)
				}
				// The streaming call validates the same way.
				s, err := p.client.CallToolStream(ctx, &toolsvcv1.CallToolStreamRequest{Name: tool, Arguments: tc.req.GetArguments(), ArgumentsJson: tc.req.GetArgumentsJson()})
				if err == nil {
					_, _, err = readStream(t, s)
				}
				if got := fieldViolations(err); !slices.Equal(got, tc.fields) {
					t.Errorf("%s (stream): field violations %q, want %q (error %v)", tc.name, got, tc.fields, err)
				}
			}
			if n := upstreamCalls(t, ctx, p.client, tr.server)["strict"]; n != 0 {
				t.Fatalf("the upstream received %v strict calls; invalid arguments must not reach it", n)
			}

			// Valid, with an integer beyond 2^53: forwarded exactly.
			in := `{"count": 9007199254740993, "label": "<big>", "opts": {"flag": true}, "tags": ["a"]}`
			res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: in})
			if err != nil || res.GetIsError() {
				t.Fatalf("valid call = %v, %v", res, err)
			}
			var compact bytes.Buffer
			_ = json.Compact(&compact, []byte(in))
			if got := resultText(res); !strings.Contains(got, "9007199254740993") || got != compact.String() {
				t.Errorf("the upstream received %s, want %s", got, compact.String())
			}
			if n := upstreamCalls(t, ctx, p.client, tr.server)["strict"]; n != 1 {
				t.Errorf("the upstream received %v strict calls, want 1", n)
			}
		})
	}

	t.Run("validation off", func(t *testing.T) {
		res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "loose__strict", ArgumentsJson: `{"count": "seven"}`})
		if err != nil {
			t.Fatalf("with validateArguments false: %v, want the call forwarded", err)
		}
		if got := resultText(res); got != `{"count":"seven"}` {
			t.Errorf("the upstream received %s", got)
		}
		if n := upstreamCalls(t, ctx, p.client, "loose")["strict"]; n != 1 {
			t.Errorf("the upstream received %v strict calls, want 1", n)
		}
	})

	t.Run("unknown tool", func(t *testing.T) {
		_, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "s__nope"})
		wantStatus(t, err, codes.NotFound, "TOOL_NOT_FOUND", "", "s__nope")
	})
}

// TestCallSizeLimits: a request or a result over the configured limits
// fails with RESOURCE_EXHAUSTED naming the limit and its value; nothing
// over-size reaches the upstream, and the session serves the next call
// without reconnecting.
func TestCallSizeLimits(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	p := startCallFixture(t, nil, "--max-request-bytes", fmt.Sprint(limit), "--max-response-bytes", fmt.Sprint(limit))
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	for _, tr := range callTransports {
		t.Run(tr.name, func(t *testing.T) {
			echo := tr.server + "__echo"
			_, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: echo, ArgumentsJson: fmt.Sprintf(`{"text": %q}`, strings.Repeat("x", limit+1))})
			ei := wantStatus(t, err, codes.ResourceExhausted, "REQUEST_TOO_LARGE", "", echo)
			if ei.GetMetadata()["limit_bytes"] != fmt.Sprint(limit) || !strings.Contains(err.Error(), fmt.Sprint(limit)) || !strings.Contains(err.Error(), "max-request-bytes") {
				t.Errorf("over-size request: %v, metadata %v; want the limit named with its value", err, ei.GetMetadata())
			}
			if n := upstreamCalls(t, ctx, p.client, tr.server)["echo"]; n != 0 {
				t.Errorf("the upstream received %v echo calls, want 0", n)
			}

			big := tr.server + "__big"
			_, err = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: big, ArgumentsJson: fmt.Sprintf(`{"bytes": %d}`, limit+1)})
			ei = wantStatus(t, err, codes.ResourceExhausted, "RESPONSE_TOO_LARGE", tr.server, big)
			if ei.GetMetadata()["limit_bytes"] != fmt.Sprint(limit) || !strings.Contains(err.Error(), "max-response-bytes") {
				t.Errorf("over-size response: %v, metadata %v; want the limit named with its value", err, ei.GetMetadata())
			}
			s, err := p.client.CallToolStream(ctx, &toolsvcv1.CallToolStreamRequest{Name: big, ArgumentsJson: fmt.Sprintf(`{"bytes": %d}`, limit+1)})
			if err == nil {
				_, _, err = readStream(t, s)
			}
			wantStatus(t, err, codes.ResourceExhausted, "RESPONSE_TOO_LARGE", tr.server, big)

			// The session is fine: the next calls work, on the same session.
			res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: big, ArgumentsJson: `{"bytes": 1000}`})
			if err != nil || len(resultText(res)) != 1000 {
				t.Fatalf("a call under the limit after the over-size ones = %v", err)
			}
			res, err = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: echo, ArgumentsJson: `{"text": "ok"}`})
			if err != nil || resultText(res) != "ok" {
				t.Fatalf("echo after the over-size calls = %v, %v", res, err)
			}
			if st := serverStatus(t, ctx, p.client, tr.server); st.GetConnectCount() != 1 {
				t.Errorf("connect_count = %d, want 1 (no reconnect)", st.GetConnectCount())
			}
		})
	}
}

// TestCallTooLargeForUpstream: a call within toolsvc's request bound that
// the HTTP upstream refuses as too large for it (go-sdk's handler bounds a
// body at 4 MiB, the JSON-RPC envelope included; toolsvc's bound counts
// the name and arguments) fails alone with RESOURCE_EXHAUSTED /
// REQUEST_TOO_LARGE naming the upstream, and the upstream's session —
// every other caller's calls on it — goes on without a reconnect. It
// ended the session before (found by the hostile-peer audit).
func TestCallTooLargeForUpstream(t *testing.T) {
	t.Parallel()
	p := startCallFixture(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	_, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "h__echo", ArgumentsJson: fmt.Sprintf(`{"text": %q}`, strings.Repeat("x", 4<<20-64))})
	ei := wantStatus(t, err, codes.ResourceExhausted, "REQUEST_TOO_LARGE", "h", "h__echo")
	if md := ei.GetMetadata(); md["limit"] != "upstream" || md["http_status"] != "413" {
		t.Errorf("metadata %v, want limit upstream and http_status 413", md)
	}
	res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "h__echo", ArgumentsJson: `{"text": "ok"}`})
	if err != nil || resultText(res) != "ok" {
		t.Fatalf("echo after the refused call = %v, %v", res, err)
	}
	if st := serverStatus(t, ctx, p.client, "h"); st.GetConnectCount() != 1 {
		t.Errorf("connect_count = %d, want 1 (no reconnect)", st.GetConnectCount())
	}
}
