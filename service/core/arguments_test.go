package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/mcpbridge"
	"go.uber.org/goleak"
)

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
	t.Parallel()
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
			got = append(got, v.Field)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("validate(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestValidatePathsUnderID(t *testing.T) {
	t.Parallel()
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
	if len(vs) != 1 || vs[0].Field != "arguments.a.b" {
		t.Fatalf("validate = %v, want arguments.a.b", vs)
	}
}

func TestDecodeArgumentsJSON(t *testing.T) {
	t.Parallel()
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

// TestDecodeArgumentsJSONStrict: what the decoder refuses, and the path a
// duplicate key is named by (escaped names compare by their value, as
// every decoder upstream compares them).
func TestDecodeArgumentsJSONStrict(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"a": 1, "a": 2}`:                           ".a",
		`{"a": 1, "\u0061": 2}`:                      ".a",
		`{"x": [{"b": 1}, {"b": 1, "b": 2}]}`:        ".x[1].b",
		`{"x": {"y": {"odd key": 1, "odd key": 2}}}`: `.x.y["odd key"]`,
	} {
		_, err := decodeArgumentsJSON(in)
		var dup *duplicateKeyError
		if !errors.As(err, &dup) || dup.path != want {
			t.Errorf("decodeArgumentsJSON(%s) = %v, want a duplicate at %s", in, err, want)
		}
	}
	for _, bad := range []string{`{"a": 1,}`, `{"a" 1}`, `{"a": [1,]}`, `{"a": 01}`, `{"a": tru}`, `{'a': 1}`,
		"{\"a\": \"\xff\"}", `{"a": NaN}`, `{"a": 1]`, `{"a": [1}}`, `{"a": "x` + "\n" + `"}`} {
		if m, err := decodeArgumentsJSON(bad); err == nil {
			t.Errorf("decodeArgumentsJSON(%q) = %v, accepted", bad, m)
		}
	}
	m, err := decodeArgumentsJSON(`{"s": "\u00e9\n", "t": true, "f": false, "n": null, "e": {}, "l": [], "neg": -3, "exp": 2E+2}`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"s": "é\n", "t": true, "f": false, "n": nil, "e": map[string]any{}, "l": []any{}, "neg": int64(-3), "exp": 200.0}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("decoded %#v, want %#v", m, want)
	}
}

func TestCompileSchemaUnusable(t *testing.T) {
	t.Parallel()
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

func TestErrorDetails(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err      error
		caller   bool
		code     Code
		reason   string
		retry    time.Duration
		metadata map[string]string
	}{
		{context.DeadlineExceeded, true, DeadlineExceeded, ReasonDeadline, 0, map[string]string{"deadline_source": "caller"}},
		{context.DeadlineExceeded, false, DeadlineExceeded, ReasonDeadline, 0, map[string]string{"deadline_source": "call_timeout"}},
		{context.Canceled, false, Canceled, ReasonCancelled, 0, nil},
		{fmt.Errorf("%w: %q", mcpbridge.ErrToolNotFound, "x"), false, NotFound, ReasonToolNotFound, 0, nil},
		{&mcpbridge.UnavailableError{Server: "srv", Reason: mcpbridge.ReasonCircuitOpen, RetryAfter: 2 * time.Second}, false, Unavailable, ReasonCircuitOpen, 2 * time.Second, nil},
		{&mcpbridge.UnavailableError{Server: "srv", Reason: mcpbridge.ReasonSessionLost}, false, Unavailable, ReasonUpstreamUnavailable, 0, map[string]string{"unavailable_reason": "session_lost"}},
		{fmt.Errorf("call: %w", mcpbridge.ErrOverloaded), false, ResourceExhausted, ReasonOverloaded, 0, nil},
		{mcpbridge.ErrClosed, false, Unavailable, ReasonShuttingDown, 0, nil},
		{&mcpbridge.UpstreamError{Server: "srv", Code: -32000, Message: "boom"}, false, Internal, ReasonUpstreamError, 0, map[string]string{"upstream_code": "-32000"}},
		{&mcpbridge.UpstreamError{Server: "srv", Code: -32602, Message: "bad"}, false, InvalidArgument, ReasonUpstreamError, 0, nil},
		{errors.New("Post http://secret/mcp?token=abc: EOF"), false, Internal, ReasonInternal, 0, nil},
	} {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if tt.caller {
			ctx, cancel = context.WithTimeout(ctx, time.Hour)
		}
		c := &Call{op: &Operation{s: &Core{log: slog.Default()}, kind: OpToolCall, ctx: ctx,
			meta: map[string]string{"tool": "srv__t", "server": "srv"}}, in: CallInput{Name: "srv__t"}}
		e := c.Fail(tt.err).Bounded()
		cancel()
		if e.Code != tt.code {
			t.Errorf("Call.Fail(%v) code = %v, want %v", tt.err, e.Code, tt.code)
		}
		if e.Reason != tt.reason || e.Meta["tool"] != "srv__t" || e.Meta["server"] != "srv" {
			t.Errorf("Call.Fail(%v) = reason %s metadata %v, want reason %s with tool and server", tt.err, e.Reason, e.Meta, tt.reason)
		}
		for k, v := range tt.metadata {
			if e.Meta[k] != v {
				t.Errorf("Call.Fail(%v) metadata %s = %q, want %q", tt.err, k, e.Meta[k], v)
			}
		}
		if e.RetryAfter != tt.retry {
			t.Errorf("Call.Fail(%v) retry after %v, want %v", tt.err, e.RetryAfter, tt.retry)
		}
		if tt.reason == ReasonInternal && e.Message != "internal error" {
			t.Errorf("an unknown error leaked as %q", e.Message)
		}
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
	t.Parallel()
	for _, bad := range []string{`{"a":1}}`, `{"a":1} x`, `{"a":1}]`, `{"a":1} 2`, `{"a":1}{}`} {
		if _, err := decodeArgumentsJSON(bad); err == nil {
			t.Errorf("decodeArgumentsJSON(%q) accepted trailing data", bad)
		}
	}
	if _, err := decodeArgumentsJSON(" {\"a\": 1} \n"); err != nil {
		t.Errorf("surrounding whitespace rejected: %v", err)
	}
}

// BenchmarkValidateOnFreshGoroutine validates arguments the way a gRPC
// handler without stream workers does: on a fresh goroutine whose stack
// already holds about twenty frames (the interceptor chain), and, for
// comparison, on one long-lived goroutine. jsonschema-go's recursion grows
// and copies the fresh goroutine's stack on nearly every call.
func BenchmarkValidateOnFreshGoroutine(b *testing.B) {
	in := `{"count": 12, "point": {"x": 1}, "tags": ["a", "b", "c"], "pair": ["a", 1], "odd key": true}`
	var c schemaCache
	cs := c.get("h", testSchema)
	validate := func() {
		args, err := decodeArgumentsJSON(in)
		if err != nil {
			panic(err)
		}
		if err := cs.validate("arguments_json", args); err != nil {
			panic(err)
		}
	}
	b.Run("goroutine=fresh", func(b *testing.B) {
		done := make(chan struct{})
		b.ReportAllocs()
		for b.Loop() {
			go func() {
				frames(20, validate)
				done <- struct{}{}
			}()
			<-done
		}
	})
	b.Run("goroutine=long-lived", func(b *testing.B) {
		jobs, done := make(chan struct{}), make(chan struct{})
		go func() {
			for range jobs {
				frames(20, validate)
				done <- struct{}{}
			}
		}()
		defer close(jobs)
		b.ReportAllocs()
		for b.Loop() {
			jobs <- struct{}{}
			<-done
		}
	})
}

// frames calls f under n ordinary stack frames.
//
//go:noinline
func frames(n int, f func()) {
	var pad [64]byte // a modest frame, like an interceptor's
	if n == 0 {
		f()
		return
	}
	frames(n-1, f)
	_ = pad
}

// TestJSONNestsDeeper: the byte scan agrees with the nesting of the text,
// whatever strings hold.
func TestJSONNestsDeeper(t *testing.T) {
	t.Parallel()
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
		if JSONNestsDeeper(tc.text, tc.depth) || !JSONNestsDeeper(tc.text, tc.depth-1) {
			t.Errorf("%.40s: depth is not %d", tc.text, tc.depth)
		}
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// nestedJSON is an arguments object nested depth levels deep (the object
// itself is level 1).
func nestedJSON(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
}

// TestValidateNamesEveryBadProperty: jsonschema-go reports the first bad
// property it meets, in random map order; the refusal names every bad
// top-level property, in key order, identically on every call (also when
// the properties' schemas are references into $defs).
func TestValidateNamesEveryBadProperty(t *testing.T) {
	t.Parallel()
	for name, schema := range map[string]string{
		"inline": `{"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}},
			"opts": {"type": "object", "properties": {"flag": {"type": "boolean"}}}, "n": {"type": "integer"}}}`,
		"$defs": `{"type": "object", "$defs": {"Tags": {"type": "array", "items": {"type": "string"}},
			"Opts": {"type": "object", "properties": {"flag": {"type": "boolean"}}}},
			"properties": {"tags": {"$ref": "#/$defs/Tags"}, "opts": {"$ref": "#/$defs/Opts"}, "n": {"type": "integer"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			cs := compileSchema(mustSchema(t, schema))
			if cs.resolved == nil {
				t.Fatalf("not compiled: %s", cs.problem)
			}
			args, err := decodeArgumentsJSON(`{"tags": ["a", 3], "opts": {"flag": "yes"}, "n": 1}`)
			if err != nil {
				t.Fatal(err)
			}
			want := "arguments.opts.flag arguments.tags[1]"
			for range 50 {
				var got []string
				for _, v := range cs.validate("arguments", args).Violations {
					got = append(got, v.Field)
				}
				if strings.Join(got, " ") != want {
					t.Fatalf("violations at %q, want %q", got, want)
				}
			}
			if e := cs.validate("arguments", map[string]any{"n": 1, "tags": []any{"x"}}); e != nil {
				t.Errorf("valid arguments refused: %v", e)
			}
		})
	}
}

// TestValidateRefusesCaseVariants: a key that is no declared property but
// differs from one only in letter case is refused naming it (an upstream
// matching names case-insensitively would read it as the property,
// unvalidated), even where the schema allows other properties.
func TestValidateRefusesCaseVariants(t *testing.T) {
	t.Parallel()
	cs := compileSchema(map[string]any{"type": "object", "properties": map[string]any{
		"text": map[string]any{"type": "string", "maxLength": 3}, "Kind": map[string]any{"type": "string"},
		"cfg": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string", "pattern": "^/safe"}}},
		"ref": map[string]any{"$ref": "#/$defs/d"}},
		"$defs": map[string]any{"d": map[string]any{"type": "object", "properties": map[string]any{"deep": map[string]any{"type": "integer"}}}},
		"allOf": []any{map[string]any{"properties": map[string]any{"flag": map[string]any{"type": "boolean"}}}}})
	if cs.resolved == nil {
		t.Fatalf("compileSchema: %s", cs.problem)
	}
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{`{"text": "ok", "other": "x"}`, nil}, // undeclared, no property's case variant: allowed
		{`{"text": "ok", "TEXT": "too long for text"}`, []string{"arguments.TEXT"}},
		{`{"Text": "too long for text"}`, []string{"arguments.Text"}},
		{`{"kind": "x", "KIND": "y", "Kind": "z"}`, []string{"arguments.KIND", "arguments.kind"}},
		{"{\"\u212aind\": \"x\"}", []string{"arguments[\"\u212aind\"]"}}, // the Kelvin sign folds to k
		{`{"text": "long"}`, []string{"arguments.text"}},                 // the schema still applies
		// Nested objects, arrays, and properties declared under $ref and allOf.
		{`{"text": "ok", "cfg": {"PATH": "/etc/passwd"}}`, []string{"arguments.cfg.PATH"}},
		{`{"cfg": {"path": "/safe"}, "list": [{"x": 1}, {"Path": "/etc"}]}`, []string{"arguments.list[1].Path"}},
		{`{"DEEP": 1, "Flag": true}`, []string{"arguments.DEEP", "arguments.Flag"}},
	} {
		args, err := decodeArgumentsJSON(tt.in)
		if err != nil {
			t.Fatalf("decodeArgumentsJSON(%s): %v", tt.in, err)
		}
		var got []string
		for _, v := range violationsOf(cs.validate("arguments", args)) {
			got = append(got, v.Field)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("validate(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// A schema with a map (labels: keys are the caller's data): a nested
	// key that folds like a parameter is the caller's own; the parameters
	// themselves are still checked.
	withMap := compileSchema(map[string]any{"type": "object", "properties": map[string]any{
		"text":   map[string]any{"type": "string"},
		"labels": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}}}})
	if withMap.resolved == nil {
		t.Fatalf("compileSchema: %s", withMap.problem)
	}
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{`{"text": "ok", "labels": {"Text": "a label"}}`, nil},
		{`{"TEXT": "x", "labels": {}}`, []string{"arguments.TEXT"}},
	} {
		args, err := decodeArgumentsJSON(tt.in)
		if err != nil {
			t.Fatalf("decodeArgumentsJSON(%s): %v", tt.in, err)
		}
		var got []string
		for _, v := range violationsOf(withMap.validate("arguments", args)) {
			got = append(got, v.Field)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("validate(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
