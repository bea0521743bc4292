package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

func TestProgressQueueNeverBlocksAndKeepsLatest(t *testing.T) {
	q := newProgressQueue()
	// A reader that keeps up gets everything, in order.
	for i := 1; i <= 5; i++ {
		q.put(mcpbridge.Progress{Progress: float64(i)})
	}
	if got := q.take(); len(got) != 5 || got[0].Progress != 1 || got[4].Progress != 5 {
		t.Fatalf("take() = %v, want progress 1..5", got)
	}
	// Nobody reads: every put still returns (a blocking put would hang the
	// test), the backlog stays bounded, and the newest value is kept.
	for i := 1; i <= 10000; i++ {
		q.put(mcpbridge.Progress{Progress: float64(i), Total: 10000})
	}
	got := q.take()
	if len(got) != progressBacklog || got[0].Progress != 1 || got[len(got)-2].Progress != progressBacklog-1 || got[len(got)-1].Progress != 10000 {
		t.Fatalf("take() after 10000 unread puts = %d items (%v ... %v); want %d: 1..%d, then 10000",
			len(got), got[0], got[len(got)-1], progressBacklog, progressBacklog-1)
	}
	if rest := q.take(); len(rest) != 0 {
		t.Fatalf("take() after take() = %v, want empty", rest)
	}
	select {
	case <-q.ready:
	default:
		t.Fatal("no ready signal after puts")
	}
}

var testSchema = map[string]any{
	"type":                 "object",
	"required":             []any{"count"},
	"additionalProperties": false,
	"$defs": map[string]any{
		"Point": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "integer"}}, "required": []any{"x"}},
	},
	"properties": map[string]any{
		"count":   map[string]any{"type": "integer", "maximum": 9007199254740993.0},
		"big":     map[string]any{"type": "integer", "enum": []any{9007199254740993.0}},
		"point":   map[string]any{"$ref": "#/$defs/Point"},
		"points":  map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/Point"}},
		"tags":    map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"pair":    map[string]any{"type": "array", "prefixItems": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}},
		"odd key": map[string]any{"type": "boolean"},
	},
}

func TestValidateNamesPaths(t *testing.T) {
	cs := compileSchema(testSchema)
	if cs.resolved == nil {
		t.Fatalf("compileSchema: %s", cs.problem)
	}
	for _, tt := range []struct {
		in   string
		want []string // field violations; nil: valid
	}{
		{`{"count": 1}`, nil},
		{`{}`, []string{"arguments_json.count"}},
		{`{"count": 1.5}`, []string{"arguments_json.count"}},
		{`{"count": 1, "b": 1, "a": 2}`, []string{"arguments_json.a", "arguments_json.b"}},
		{`{"count": 1, "point": {}}`, []string{"arguments_json.point.x"}},
		{`{"count": 1, "point": {"x": "1"}}`, []string{"arguments_json.point.x"}},
		{`{"count": 1, "tags": ["a", 2, "c"]}`, []string{"arguments_json.tags[1]"}},
		// An items schema with a $ref cannot be checked on its own: the
		// array is named instead of the element.
		{`{"count": 1, "points": [{"x": 1}, {}]}`, []string{"arguments_json.points[].x"}},
		{`{"count": 1, "pair": ["a", "b"]}`, []string{"arguments_json.pair[1]"}},
		{`{"count": 1, "odd key": 3}`, []string{`arguments_json["odd key"]`}},
		// Integers beyond 2^53 are exact on the instance side: 2^53+1 is
		// over the maximum (which, a float64 in the schema, is 2^53); as a
		// float64 the instance would have rounded to 2^53 and passed.
		{`{"count": 9007199254740992}`, nil},
		{`{"count": 9007199254740993}`, []string{"arguments_json.count"}},
		// Schema-side numbers are float64 (the catalog decodes schemas so):
		// the enum's 2^53+1 is 2^53.
		{`{"count": 1, "big": 9007199254740992}`, nil},
		{`{"count": 1, "big": 9007199254740993}`, []string{"arguments_json.big"}},
		{`{"count": 18446744073709551615}`, []string{"arguments_json.count"}},
	} {
		args, err := decodeArgumentsJSON(tt.in)
		if err != nil {
			t.Fatalf("decodeArgumentsJSON(%s): %v", tt.in, err)
		}
		var got []string
		for _, v := range violationsOf(cs.validate("arguments_json", args)) {
			got = append(got, v.GetField())
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("validate(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestValidatePathsUnderID(t *testing.T) {
	cs := compileSchema(map[string]any{
		"$id":  "https://example.com/args",
		"type": "object",
		"properties": map[string]any{
			"a": map[string]any{"$id": "https://example.com/a", "type": "object", "properties": map[string]any{"b": map[string]any{"type": "integer"}}},
		},
	})
	if cs.resolved == nil {
		t.Fatal(cs.problem)
	}
	args, _ := decodeArgumentsJSON(`{"a": {"b": "x"}}`)
	vs := violationsOf(cs.validate("arguments", args))
	if len(vs) != 1 || vs[0].GetField() != "arguments.a.b" {
		t.Fatalf("validate = %v, want arguments.a.b", vs)
	}
}

func TestDecodeArgumentsJSON(t *testing.T) {
	m, err := decodeArgumentsJSON(`{"a": 9007199254740993, "b": 18446744073709551615, "c": 1.5, "d": [1e400]}`)
	if err != nil {
		t.Fatal(err)
	}
	if m["a"] != int64(9007199254740993) || m["b"] != uint64(18446744073709551615) || m["c"] != 1.5 {
		t.Errorf("decoded numbers = %#v", m)
	}
	for _, bad := range []string{`[1]`, `null`, `{"a":1} {}`, `{`, `"s"`} {
		if _, err := decodeArgumentsJSON(bad); err == nil {
			t.Errorf("decodeArgumentsJSON(%s) accepted it", bad)
		}
	}
}

func TestCompileSchemaUnusable(t *testing.T) {
	for _, s := range []map[string]any{
		nil,
		{"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"},
		{"type": "object", "properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/missing"}}},
	} {
		if cs := compileSchema(s); cs.resolved != nil || cs.problem == "" {
			t.Errorf("compileSchema(%v) = usable; want it skipped with a reason", s)
		}
	}
	var c schemaCache
	a, b := c.get("h1", testSchema), c.get("h1", testSchema)
	if a != b {
		t.Error("the same schema hash compiled twice")
	}
}

// TestCallToolSchemaEdge: over a real in-memory upstream, a schema
// violation never reaches it, and a tool whose schema cannot be compiled is
// called unchecked.
func TestCallToolSchemaEdge(t *testing.T) {
	f := newFixture(t, 0)
	ctx := ctxT(t)
	calls := 0
	f.upstream.AddTool(&mcp.Tool{Name: "old", InputSchema: map[string]any{"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "required": []any{"a"}}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls++
			return &mcp.CallToolResult{}, nil
		})
	waitTool(t, ctx, f, "mem__old")
	if _, err := f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "mem__old"}); err != nil {
		t.Fatalf("a tool with an unsupported schema draft: %v, want the call forwarded", err)
	}
	_, err := f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "mem__echo", ArgumentsJson: `{"text": 3}`})
	wantInvalid(t, err, "arguments_json.text")
	if calls != 1 {
		t.Errorf("upstream calls = %d, want 1", calls)
	}
}

func waitTool(t *testing.T, ctx context.Context, f *fixture, name string) {
	t.Helper()
	sub := f.bridge.Catalog().Subscribe()
	defer sub.Close()
	for {
		if _, ok := f.bridge.Catalog().Current().Lookup(name); ok {
			return
		}
		select {
		case <-sub.C():
		case <-ctx.Done():
			t.Fatalf("%s never reached the catalog", name)
		}
	}
}

func TestErrorDetails(t *testing.T) {
	for _, tt := range []struct {
		err      error
		caller   bool
		code     codes.Code
		reason   string
		retry    time.Duration
		metadata map[string]string
	}{
		{context.DeadlineExceeded, true, codes.DeadlineExceeded, ReasonDeadline, 0, map[string]string{"deadline_source": "caller"}},
		{context.DeadlineExceeded, false, codes.DeadlineExceeded, ReasonDeadline, 0, map[string]string{"deadline_source": "call_timeout"}},
		{context.Canceled, false, codes.Canceled, ReasonCancelled, 0, nil},
		{fmt.Errorf("%w: %q", mcpbridge.ErrToolNotFound, "x"), false, codes.NotFound, ReasonToolNotFound, 0, nil},
		{&mcpbridge.UnavailableError{Server: "srv", Reason: mcpbridge.ReasonCircuitOpen, RetryAfter: 2 * time.Second}, false, codes.Unavailable, ReasonCircuitOpen, 2 * time.Second, nil},
		{&mcpbridge.UnavailableError{Server: "srv", Reason: mcpbridge.ReasonSessionLost}, false, codes.Unavailable, ReasonUpstreamUnavailable, 0, map[string]string{"unavailable_reason": "session_lost"}},
		{fmt.Errorf("call: %w", mcpbridge.ErrOverloaded), false, codes.ResourceExhausted, ReasonOverloaded, 0, nil},
		{mcpbridge.ErrClosed, false, codes.Unavailable, ReasonShuttingDown, 0, nil},
		{&mcpbridge.UpstreamError{Server: "srv", Code: -32000, Message: "boom"}, false, codes.Internal, ReasonUpstreamError, 0, map[string]string{"upstream_code": "-32000"}},
		{&mcpbridge.UpstreamError{Server: "srv", Code: -32602, Message: "bad"}, false, codes.InvalidArgument, ReasonUpstreamError, 0, nil},
		{errors.New("Post http://secret/mcp?token=abc: EOF"), false, codes.Internal, ReasonInternal, 0, nil},
	} {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if tt.caller {
			ctx, cancel = context.WithTimeout(ctx, time.Hour)
		}
		c := &Call{operation: &operation{s: &Server{log: slog.Default()}, kind: opToolCall, ctx: ctx,
			meta: map[string]string{"tool": "srv__t", "server": "srv"}}, in: CallInput{Name: "srv__t"}}
		st := grpcStatus(c.Fail(tt.err))
		cancel()
		if st.Code() != tt.code {
			t.Errorf("Call.Fail(%v) code = %v, want %v", tt.err, st.Code(), tt.code)
		}
		var info *errdetails.ErrorInfo
		var retry *errdetails.RetryInfo
		for _, d := range st.Details() {
			switch d := d.(type) {
			case *errdetails.ErrorInfo:
				info = d
			case *errdetails.RetryInfo:
				retry = d
			}
		}
		if info == nil || info.GetReason() != tt.reason || info.GetDomain() != ErrorDomain ||
			info.GetMetadata()["tool"] != "srv__t" || info.GetMetadata()["server"] != "srv" {
			t.Errorf("Call.Fail(%v) ErrorInfo = %v, want reason %s with tool and server", tt.err, info, tt.reason)
		}
		for k, v := range tt.metadata {
			if info.GetMetadata()[k] != v {
				t.Errorf("Call.Fail(%v) metadata %s = %q, want %q", tt.err, k, info.GetMetadata()[k], v)
			}
		}
		switch {
		case tt.retry == 0 && retry != nil:
			t.Errorf("Call.Fail(%v) has RetryInfo %v, want none", tt.err, retry)
		case tt.retry != 0 && retry.GetRetryDelay().AsDuration() != tt.retry:
			t.Errorf("Call.Fail(%v) RetryInfo = %v, want %v", tt.err, retry, tt.retry)
		}
		if tt.reason == ReasonInternal && st.Message() != "internal error" {
			t.Errorf("an unknown error leaked as %q", st.Message())
		}
	}
	// Field errors carry ErrorInfo and BadRequest.
	st := status.Convert(invalidArgument("page_token", "malformed"))
	var reason string
	var fields []string
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			reason = d.GetReason()
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				fields = append(fields, v.GetField())
			}
		}
	}
	if reason != ReasonRequestInvalid || !slices.Equal(fields, []string{"page_token"}) {
		t.Errorf("invalidArgument: reason %q fields %q", reason, fields)
	}
}

func BenchmarkValidateArguments(b *testing.B) {
	var c schemaCache
	in := `{"count": 12, "point": {"x": 1}, "tags": ["a", "b", "c"], "pair": ["a", 1], "odd key": true}`
	for b.Loop() {
		args, err := decodeArgumentsJSON(in)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.get("h", testSchema).validate("arguments_json", args); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDecodeArgumentsJSONTrailingData(t *testing.T) {
	for _, bad := range []string{`{"a":1}}`, `{"a":1} x`, `{"a":1}]`, `{"a":1} 2`, `{"a":1}{}`} {
		if _, err := decodeArgumentsJSON(bad); err == nil {
			t.Errorf("decodeArgumentsJSON(%q) accepted trailing data", bad)
		}
	}
	if _, err := decodeArgumentsJSON(" {\"a\": 1} \n"); err != nil {
		t.Errorf("surrounding whitespace rejected: %v", err)
	}
}
