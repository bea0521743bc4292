package core

import (
	"encoding/json"
	"reflect"
	"testing"
)

// quickSchemas are the schemas the fast path's verdict is compared on:
// the validation tests' own (testSchema, the inline and $defs schemas of
// TestValidateNamesEveryBadProperty, the case-variant and map schemas of
// TestValidateRefusesCaseVariants), what go-sdk generates for a struct
// (echo's, optional fields, a pointer's ["null", T], nested structs,
// draft-07), and schemas whose keywords the fast path leaves to
// jsonschema-go. want says whether the fast path may answer for it.
var quickSchemas = []struct {
	schema string
	quick  bool
}{
	{`{"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": false}`, true},
	{`{"type": "object", "properties": {"text": {"type": "string", "description": "what to echo", "title": "Text", "default": "x", "examples": ["a"]}, "n": {"type": "integer"}, "f": {"type": "number"}, "b": {"type": "boolean"}, "p": {"type": ["null", "string"]}, "any": {}, "list": {"type": "array"}, "obj": {"type": "object"}}, "required": ["text", "n"]}`, true},
	{`{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "integer"}, "c": {"type": ["number", "null"]}}, "required": ["b"], "additionalProperties": false}}, "additionalProperties": false}`, true},
	{`{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://example.com/args", "type": "object", "properties": {"a": {"$id": "https://example.com/a", "type": "object", "properties": {"b": {"type": "integer"}}}}}`, true},
	{`{"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}, "opts": {"type": "object", "properties": {"flag": {"type": "boolean"}}}, "n": {"type": "integer"}}}`, false},
	{`{"type": "object", "$defs": {"Tags": {"type": "array", "items": {"type": "string"}}, "Opts": {"type": "object", "properties": {"flag": {"type": "boolean"}}}}, "properties": {"tags": {"$ref": "#/$defs/Tags"}, "opts": {"$ref": "#/$defs/Opts"}, "n": {"type": "integer"}}}`, false},
	{`{"type": "object", "properties": {"text": {"type": "string", "maxLength": 3}, "Kind": {"type": "string"}}}`, false},
	{`{"type": "object", "properties": {"text": {"type": "string"}, "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}`, false},
	{`{"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}`, false},
	{`{"type": "object", "properties": {"k": {"type": "string", "enum": ["a", "b"]}}}`, false},
	{`{"type": "object", "properties": {"s": {"type": "string", "pattern": "^/safe"}}}`, false},
	{`{"type": "object", "properties": {"s": {"type": "string", "format": "email"}}}`, false},
	{`{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": true}`, false},
	{`{"type": "object", "properties": {"a": {"type": "string"}}, "minProperties": 1}`, false},
	{`{"type": "object", "properties": {"a": {"type": "string"}}, "x-vendor": 1}`, false},
	{`{"type": "object", "allOf": [{"properties": {"flag": {"type": "boolean"}}}]}`, false},
	{`{"type": "object"}`, true},
	{`{}`, true},
}

// quickArgs are hostile and ordinary arguments: wrong types at every
// level, integers beyond 2^53 and 2^64, -0, 1.0 and 1e400, nulls, missing
// and extra keys, case variants, deep and empty values.
var quickArgs = []string{
	`{}`, `{"text": "hello"}`, `{"text": ""}`, `{"text": 1}`, `{"text": null}`, `{"text": true}`, `{"text": ["a"]}`, `{"text": {"a": 1}}`,
	`{"text": "hello", "extra": 1}`, `{"text": "hello", "TEXT": "x"}`, `{"Text": "x"}`, `{"text": "x", "n": 1}`, `{"text": "x", "n": 1.0}`,
	`{"text": "x", "n": 1.5}`, `{"text": "x", "n": -0}`, `{"text": "x", "n": -0.0}`, `{"text": "x", "n": 9007199254740993}`,
	`{"text": "x", "n": 18446744073709551615}`, `{"text": "x", "n": 18446744073709551616}`, `{"text": "x", "n": 1e400}`, `{"text": "x", "n": "1"}`,
	`{"text": "x", "n": 2, "f": 2.5, "b": false, "p": null, "any": [1, {"a": null}], "list": [], "obj": {}}`,
	`{"text": "x", "n": 2, "f": "2.5"}`, `{"text": "x", "n": 2, "b": "false"}`, `{"text": "x", "n": 2, "p": 3}`, `{"text": "x", "n": 2, "list": {}}`, `{"text": "x", "n": 2, "obj": []}`,
	`{"a": {"b": 1}}`, `{"a": {"b": 1, "c": null}}`, `{"a": {"b": 1, "c": 2.5}}`, `{"a": {"b": 1.5}}`, `{"a": {"c": 1}}`, `{"a": {"b": 1, "d": 1}}`, `{"a": {"b": "1"}}`, `{"a": []}`, `{"a": null}`, `{"b": 1}`,
	`{"tags": ["a", 3], "opts": {"flag": "yes"}, "n": 1}`, `{"n": 1, "tags": ["x"]}`, `{"labels": {"Text": "a label"}, "text": "ok"}`, `{"labels": {"a": 1}}`,
	`{"k": "a"}`, `{"k": "c"}`, `{"s": "/safe/x"}`, `{"s": "/etc"}`, `{"s": "a@b.c"}`, `{"s": "no"}`, `{"flag": true}`, `{"flag": 1}`, `{"count": 1, "point": {"x": 1}}`, `{"count": 1.5}`,
	`{"count": 12, "point": {"x": 1}, "tags": ["a", "b", "c"], "pair": ["a", 1], "odd key": true}`, `{"a": "x", "b": 2}`, `{"a": 1}`,
	`{"a": {"b": {"c": {"d": {"e": [[[[{}]]]]}}}}}`,
}

// verdicts validates args against cs with and without its fast path and
// reports both, and whether the fast path answered.
func verdicts(cs *compiledSchema, args map[string]any) (fast, full *Error, answered bool) {
	answered = cs.quick != nil && cs.quick.accepts(args)
	fast = cs.validate("arguments", args)
	full = withoutQuick(cs).validate("arguments", args)
	return fast, full, answered
}

// TestQuickShapeSameVerdict: over the schemas and arguments above, decoded
// as arguments_json (integers exact) and as a Struct's values (every
// number a float64), validation with the fast path gives the identical
// *Error (nil, or the same refusal) as jsonschema-go alone, the fast path
// accepts only what jsonschema-go accepts, and it answers for the schemas
// it is meant for.
func TestQuickShapeSameVerdict(t *testing.T) {
	t.Parallel()
	answered := 0
	for _, s := range append(quickSchemas, struct {
		schema string
		quick  bool
	}{mustJSON(t, testSchema), false}) {
		cs := compileSchema(mustSchema(t, s.schema))
		if cs.resolved == nil {
			t.Fatalf("schema %s: %s", s.schema, cs.problem)
		}
		if (cs.quick != nil) != s.quick {
			t.Errorf("schema %s: fast path %v, want %v", s.schema, cs.quick != nil, s.quick)
		}
		for _, in := range quickArgs {
			exact, err := decodeArgumentsJSON(in)
			if err != nil {
				t.Fatalf("decodeArgumentsJSON(%s): %v", in, err)
			}
			var floats map[string]any
			if err := json.Unmarshal([]byte(in), &floats); err != nil && in != `{"text": "x", "n": 1e400}` {
				t.Fatalf("json.Unmarshal(%s): %v", in, err)
			}
			for _, args := range []map[string]any{exact, floats} {
				if args == nil {
					continue
				}
				fast, full, ok := verdicts(cs, args)
				if !reflect.DeepEqual(fast, full) {
					t.Errorf("schema %s, arguments %s: %v with the fast path, %v without", s.schema, in, fast, full)
				}
				if ok {
					answered++
					if err := cs.resolved.Validate(args); err != nil {
						t.Errorf("schema %s, arguments %s: the fast path accepted what jsonschema-go refuses: %v", s.schema, in, err)
					}
				}
			}
		}
	}
	if answered < 50 {
		t.Errorf("the fast path answered %d times; the schemas above are meant to use it more", answered)
	}
}

// FuzzQuickShapeSameVerdict is TestQuickShapeSameVerdict over arguments
// the fuzzer writes.
func FuzzQuickShapeSameVerdict(f *testing.F) {
	for i := range quickSchemas {
		for _, in := range quickArgs {
			f.Add(uint8(i), in)
		}
	}
	compiled := make([]*compiledSchema, len(quickSchemas))
	for i, s := range quickSchemas {
		compiled[i] = compileSchema(mustSchema(f, s.schema))
	}
	f.Fuzz(func(t *testing.T, i uint8, in string) {
		cs := compiled[int(i)%len(compiled)]
		if JSONNestsDeeper(in, MaxArgumentsDepth) {
			return
		}
		args, err := decodeArgumentsJSON(in)
		if err != nil {
			return
		}
		fast, full, ok := verdicts(cs, args)
		if !reflect.DeepEqual(fast, full) {
			t.Fatalf("arguments %s: %v with the fast path, %v without", in, fast, full)
		}
		if ok {
			if err := cs.resolved.Validate(args); err != nil {
				t.Fatalf("arguments %s: the fast path accepted what jsonschema-go refuses: %v", in, err)
			}
		}
	})
}

// withoutQuick is cs without its fast path.
func withoutQuick(cs *compiledSchema) *compiledSchema {
	return &compiledSchema{resolved: cs.resolved, cost: cs.cost, problem: cs.problem, declared: cs.declared, folded: cs.folded, freeForm: cs.freeForm}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// BenchmarkValidateEcho is the arguments of the bench's echo tool decoded
// and validated against the schema go-sdk generates for it, by
// jsonschema-go alone and with the fast path.
func BenchmarkValidateEcho(b *testing.B) {
	cs := compileSchema(map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}},
		"required": []any{"text"}, "additionalProperties": false})
	slow := withoutQuick(cs)
	for _, c := range []struct {
		name string
		cs   *compiledSchema
	}{{"jsonschema", slow}, {"quick", cs}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				args, err := decodeArgumentsJSON(`{"text": "hello"}`)
				if err != nil {
					b.Fatal(err)
				}
				if err := c.cs.validate("arguments_json", args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
