package core

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// hostileSchemas reach themselves without descending into the value: each
// of them overflowed the stack in jsonschema-go's validator (a fatal error
// that ended the process) on the first call before checkSchema.
var hostileSchemas = map[string]string{
	"ref to root":                   `{"$ref": "#"}`,
	"object ref to root":            `{"type": "object", "$ref": "#"}`,
	"defs loop":                     `{"type": "object", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}`,
	"def self-loop behind property": `{"type": "object", "$defs": {"a": {"$ref": "#/$defs/a"}}, "properties": {"x": {"$ref": "#/$defs/a"}}}`,
	"allOf":                         `{"type": "object", "allOf": [{"$ref": "#"}]}`,
	"anyOf":                         `{"type": "object", "anyOf": [{"type": "string"}, {"$ref": "#"}]}`,
	"oneOf":                         `{"type": "object", "oneOf": [{"$ref": "#"}]}`,
	"not":                           `{"type": "object", "not": {"$ref": "#"}}`,
	"if":                            `{"type": "object", "if": {"$ref": "#"}}`,
	"then":                          `{"type": "object", "if": true, "then": {"$ref": "#"}}`,
	"else":                          `{"type": "object", "if": false, "else": {"$ref": "#"}}`,
	"dependentSchemas":              `{"type": "object", "dependentSchemas": {"x": {"$ref": "#"}}}`,
	"anchor loop":                   `{"type": "object", "$defs": {"a": {"$anchor": "A", "allOf": [{"$ref": "#A"}]}}, "$ref": "#A"}`,
	"id loop":                       `{"$id": "https://example.com/root", "type": "object", "$defs": {"a": {"$id": "a.json", "$ref": "root"}}, "$ref": "a.json"}`,
	"dynamicRef loop":               `{"$schema": "https://json-schema.org/draft/2020-12/schema", "$dynamicAnchor": "node", "type": "object", "$dynamicRef": "#node"}`,
	"draft-07 definitions":          `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "definitions": {"a": {"allOf": [{"$ref": "#/definitions/a"}]}}, "properties": {"x": {"$ref": "#/definitions/a"}}}`,
	"pointer with escapes":          `{"type": "object", "$defs": {"a/b": {"anyOf": [{"$ref": "#/$defs/a~1b"}]}}, "properties": {"x": {"$ref": "#/$defs/a~1b"}}}`,
}

// legitimateSchemas recurse only by descending into the value (or not at
// all): they compile and validate as before.
var legitimateSchemas = map[string]struct{ schema, valid, invalid string }{
	"tree": {`{"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#"}}}}`,
		`{"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}`, `{"children": [{"children": [{"name": 1}]}]}`},
	"linked list": {`{"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}, "v": {"type": "integer"}}}}, "$ref": "#/$defs/node"}`,
		`{"v": 1, "next": {"v": 2, "next": {"v": 3}}}`, `{"next": {"next": {"v": "x"}}}`},
	"shared definition": {`{"type": "object", "$defs": {"s": {"type": "string"}}, "properties": {"x": {"$ref": "#/$defs/s"}, "y": {"allOf": [{"$ref": "#/$defs/s"}, {"$ref": "#/$defs/s"}]}}}`,
		`{"x": "a", "y": "b"}`, `{"y": 1}`},
	"additionalProperties": {`{"type": "object", "additionalProperties": {"anyOf": [{"type": "integer"}, {"$ref": "#"}]}}`,
		`{"a": 1, "b": {"c": 2}}`, `{"a": {"b": "x"}}`},
	"dynamic tree": {`{"$schema": "https://json-schema.org/draft/2020-12/schema", "$dynamicAnchor": "node", "type": "object", "properties": {"kids": {"type": "array", "items": {"$dynamicRef": "#node"}}}}`,
		`{"kids": [{"kids": []}]}`, `{"kids": [{"kids": [1]}]}`},
	"draft-07 tree": {`{"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"t": {"type": "object", "properties": {"c": {"type": "array", "items": {"$ref": "#/definitions/t"}}}}}, "$ref": "#/definitions/t"}`,
		`{"c": [{"c": []}]}`, `{"c": [{"c": [true]}]}`},
}

func mustSchema(t testing.TB, text string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatalf("schema %s: %v", text, err)
	}
	return m
}

// TestSchemaCheckRefusesHostileSchemas: every schema that recurses without
// consuming input is detected before it is evaluated; the call path then
// forwards unvalidated (resolved nil) instead of overflowing the stack.
func TestSchemaCheckRefusesHostileSchemas(t *testing.T) {
	t.Parallel()
	for name, text := range hostileSchemas {
		t.Run(name, func(t *testing.T) {
			cs := compileSchema(mustSchema(t, text))
			if cs.resolved != nil {
				t.Fatalf("compiled for validation; it must not be evaluated")
			}
			if !strings.Contains(cs.problem, "cannot be evaluated safely") {
				t.Errorf("problem = %q", cs.problem)
			}
			// The path the arguments take must not evaluate it either.
			if vs := cs.validate("arguments", map[string]any{"x": 1}); vs != nil {
				t.Errorf("validate = %v, want nil (not validated)", vs)
			}
		})
	}
}

// TestSchemaCheckKeepsRecursiveSchemas: recursion through properties or
// items (a tree) is legitimate: valid arguments pass, invalid ones are
// named.
func TestSchemaCheckKeepsRecursiveSchemas(t *testing.T) {
	t.Parallel()
	for name, tc := range legitimateSchemas {
		t.Run(name, func(t *testing.T) {
			cs := compileSchema(mustSchema(t, tc.schema))
			if cs.resolved == nil {
				t.Fatalf("not compiled: %s", cs.problem)
			}
			if vs := cs.validate("arguments", mustSchema(t, tc.valid)); vs != nil {
				t.Errorf("valid arguments: %v", vs)
			}
			if vs := cs.validate("arguments", mustSchema(t, tc.invalid)); vs == nil {
				t.Errorf("invalid arguments passed")
			}
		})
	}
}

// TestSchemaCheckBounds: depth, size and in-place fan-out are bounded.
func TestSchemaCheckBounds(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"type": "object", "properties": {"a": `, maxSchemaDepth+1) + `{}` + strings.Repeat(`}}`, maxSchemaDepth+1)
	var wide strings.Builder
	wide.WriteString(`{"type": "object", "properties": {`)
	for i := range maxSchemaNodes {
		fmt.Fprintf(&wide, `"p%d": {"type": "string"},`, i)
	}
	wide.WriteString(`"last": {}}}`)
	// Twenty definitions, each applying the next twice to the same value:
	// 2^20 schemas for one value, with no cycle.
	var doubling strings.Builder
	doubling.WriteString(`{"type": "object", "$defs": {`)
	for i := range 20 {
		fmt.Fprintf(&doubling, `"d%d": {"allOf": [{"$ref": "#/$defs/d%d"}, {"$ref": "#/$defs/d%d"}]},`, i, i+1, i+1)
	}
	doubling.WriteString(`"d20": {"type": "string"}}, "properties": {"x": {"$ref": "#/$defs/d0"}}}`)
	for name, tc := range map[string]struct{ schema, want string }{
		"depth":    {deep, "nest deeper than 128"},
		"size":     {wide.String(), "more than 10000 subschemas"},
		"doubling": {doubling.String(), "more than 10000 subschemas apply to one value"},
	} {
		t.Run(name, func(t *testing.T) {
			cs := compileSchema(mustSchema(t, tc.schema))
			if cs.resolved != nil || !strings.Contains(cs.problem, tc.want) {
				t.Errorf("problem = %q, want it to mention %q", cs.problem, tc.want)
			}
		})
	}
	// Just inside the bounds: compiled.
	ok := strings.Repeat(`{"type": "object", "properties": {"a": `, maxSchemaDepth-1) + `{}` + strings.Repeat(`}}`, maxSchemaDepth-1)
	if cs := compileSchema(mustSchema(t, ok)); cs.resolved == nil {
		t.Errorf("%d levels: %s", maxSchemaDepth-1, cs.problem)
	}
}

// FuzzSchemaCheck: whatever schema an upstream sends, compiling it and
// validating small arguments against it terminates. A schema the check
// lets through that recursed without consuming input would end the fuzz
// process with a fatal stack overflow.
func FuzzSchemaCheck(f *testing.F) {
	for _, s := range hostileSchemas {
		f.Add(s)
	}
	for _, tc := range legitimateSchemas {
		f.Add(tc.schema)
	}
	for _, tc := range multiplyingSchemas {
		f.Add(tc.schema)
	}
	args := []map[string]any{
		{},
		{"x": int64(1), "a": "s", "children": []any{map[string]any{"name": "n"}}},
		{"next": map[string]any{"next": map[string]any{}}, "kids": []any{map[string]any{}}},
	}
	f.Fuzz(func(t *testing.T, text string) {
		var m map[string]any
		if json.Unmarshal([]byte(text), &m) != nil || m == nil {
			return
		}
		cs := compileSchema(m)
		for _, a := range args {
			cs.validate("arguments", a)
		}
	})
}
