package core

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// violationsOf is the field violations of a validate result (nil: valid).
func violationsOf(e *Error) []FieldViolation {
	if e == nil {
		return nil
	}
	return e.Violations
}

// nestedMap is {"a": {"a": …{}…}}, depth levels of objects.
func nestedMap(depth int) map[string]any {
	m := map[string]any{}
	for range depth - 1 {
		m = map[string]any{"a": m}
	}
	return m
}

// nestedArrays is {"a": [[…[]…]]} with depth levels of arrays under "a".
func nestedArrays(depth int) map[string]any {
	var v any = []any{}
	for range depth - 1 {
		v = []any{v}
	}
	return map[string]any{"a": v}
}

// costOf is what the walk counts for args against the compiled schema.
func costOf(t testing.TB, cs *compiledSchema, args map[string]any) uint64 {
	t.Helper()
	w := &costWalk{m: cs.cost, counts: make([]uint64, len(cs.cost.nodes)), mark: make([]uint32, len(cs.cost.nodes)), limit: costCap}
	w.root[0] = weighted{0, 1}
	if e := w.walk(args, w.root[:], 0); e != nil {
		t.Fatalf("walk stopped at %q with no limit", e.path)
	}
	return w.total
}

// multiplyingSchemas apply two (or more) schemas to the same member at every
// level of nesting, each descending again: validating arguments nested d
// levels applies 2^d schemas or more. Each is a legal schema that
// checkSchema accepts (its recursion consumes input); args builds arguments
// nested depth levels.
var multiplyingSchemas = map[string]struct {
	schema string
	args   func(depth int) map[string]any
}{
	"anyOf items": {`{"type": "object", "properties": {"a": {"$ref": "#/$defs/t"}},
		"$defs": {"t": {"anyOf": [{"items": {"$ref": "#/$defs/t"}}, {"items": {"$ref": "#/$defs/t"}}]}}}`, nestedArrays},
	"allOf properties": {`{"allOf": [{"properties": {"a": {"$ref": "#"}}}, {"properties": {"a": {"$ref": "#"}}}]}`, nestedMap},
	"oneOf properties": {`{"oneOf": [{"properties": {"a": {"$ref": "#"}}}, {"required": ["b"], "properties": {"a": {"$ref": "#"}}}]}`, nestedMap},
	"if then else": {`{"if": {"properties": {"a": {"$ref": "#"}}}, "then": {"properties": {"a": {"$ref": "#"}}},
		"else": {"properties": {"a": {"$ref": "#"}}}}`, nestedMap},
	"not":                              {`{"properties": {"a": {"$ref": "#"}}, "not": {"required": ["b"], "properties": {"a": {"$ref": "#"}}}}`, nestedMap},
	"dependentSchemas":                 {`{"properties": {"a": {"$ref": "#"}}, "dependentSchemas": {"a": {"properties": {"a": {"$ref": "#"}}}}}`, nestedMap},
	"properties and patternProperties": {`{"properties": {"a": {"$ref": "#"}}, "patternProperties": {"^a$": {"$ref": "#"}}}`, nestedMap},
	// The first branch descends into "a" and then fails, so "a" is not
	// evaluated and unevaluatedProperties descends again.
	"anyOf and unevaluatedProperties": {`{"anyOf": [{"required": ["b"], "properties": {"a": {"$ref": "#"}}}, {}],
		"unevaluatedProperties": {"$ref": "#"}}`, nestedMap},
	"items and contains": {`{"type": "object", "properties": {"a": {"$ref": "#/$defs/t"}},
		"$defs": {"t": {"items": {"$ref": "#/$defs/t"}, "contains": {"$ref": "#/$defs/t"}, "minContains": 0}}}`, nestedArrays},
	"prefixItems and contains": {`{"type": "object", "properties": {"a": {"$ref": "#/$defs/t"}},
		"$defs": {"t": {"prefixItems": [{"$ref": "#/$defs/t"}], "contains": {"$ref": "#/$defs/t"}, "minContains": 0}}}`, nestedArrays},
	"anyOf and unevaluatedItems": {`{"type": "object", "properties": {"a": {"$ref": "#/$defs/t"}},
		"$defs": {"t": {"anyOf": [{"prefixItems": [{"$ref": "#/$defs/t"}], "minItems": 5}, {}], "unevaluatedItems": {"$ref": "#/$defs/t"}}}}`, nestedArrays},
	"dynamicRef": {`{"$schema": "https://json-schema.org/draft/2020-12/schema", "$dynamicAnchor": "n",
		"anyOf": [{"properties": {"a": {"$dynamicRef": "#n"}}}, {"properties": {"a": {"$dynamicRef": "#n"}}}]}`, nestedMap},
	"draft-07 items, array and single": {`{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
		"properties": {"a": {"$ref": "#/definitions/t"}},
		"definitions": {"t": {"anyOf": [{"items": [{"$ref": "#/definitions/t"}]}, {"items": [{}], "additionalItems": false},
			{"items": {"$ref": "#/definitions/t"}}]}}}`, nestedArrays},
	"shared definition": {`{"$defs": {"t": {"type": "object", "properties": {"a": {"allOf": [{"$ref": "#/$defs/t"}, {"$ref": "#/$defs/t"}]}}}},
		"$ref": "#/$defs/t"}`, nestedMap},
}

// TestValidationCostRefusesMultiplyingSchemas: arguments 40 levels deep
// against a schema that doubles per level (2^40 schema applications, hours
// of a CPU) are refused with ARGUMENTS_INVALID naming the field and the
// limit, without the validator ever running (the compiled schema's
// validator is swapped for one that refuses everything, so reaching it
// would give another answer). A few levels still validate.
func TestValidationCostRefusesMultiplyingSchemas(t *testing.T) {
	t.Parallel()
	refuseAll, err := (&jsonschema.Schema{Not: &jsonschema.Schema{}}).Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range multiplyingSchemas {
		t.Run(name, func(t *testing.T) {
			cs := compileSchema(mustSchema(t, tc.schema))
			if cs.resolved == nil {
				t.Fatalf("not compiled: %s", cs.problem)
			}
			if err := cs.validate("arguments", tc.args(6)); err != nil {
				t.Fatalf("6 levels: %v", err)
			}
			if c := costOf(t, cs, tc.args(12)); c < 1<<12 {
				t.Errorf("12 levels cost %d, want at least 2^12", c)
			}
			cs.resolved = refuseAll
			e := cs.validate("arguments", tc.args(40))
			if e == nil || e.Meta["limit"] != limitValidationSteps || e.Reason != ReasonArgumentsInvalid || e.Code != InvalidArgument {
				t.Fatalf("40 levels: %+v, want the validation budget refusal", e)
			}
			if vs := violationsOf(e); len(vs) != 1 || vs[0].Field != "arguments" || !strings.Contains(vs[0].Description, "arguments.a") {
				t.Errorf("violations = %v, want one on arguments naming where", vs)
			}
		})
	}
}

// TestValidationCostCount: the walk's count is the validator's work when
// every branch is evaluated: a step per schema application, and one per
// entry of the keywords it loops over. Root allOf of two branches that
// both descend into "a" through {"$ref": "#"}: the arguments object costs 5
// (the root, its two branches with one property each); at level i ≥ 1 the
// value is reached 2^i times, each costing 6 (the $ref, then 5 again); d
// levels cost 5 + 6(2^d - 2).
func TestValidationCostCount(t *testing.T) {
	t.Parallel()
	cs := compileSchema(mustSchema(t, multiplyingSchemas["allOf properties"].schema))
	for _, d := range []int{1, 2, 10, 20} {
		if got, want := costOf(t, cs, nestedMap(d)), uint64(5+6*(1<<d-2)); got != want {
			t.Errorf("depth %d: cost %d, want %d", d, got, want)
		}
	}
	// propertyNames applies to each key; additionalProperties only where
	// neither properties nor a pattern applied.
	cs = compileSchema(mustSchema(t, `{"propertyNames": {"anyOf": [{"maxLength": 3}, {"pattern": "^x"}]},
		"properties": {"p": {"type": "integer"}}, "patternProperties": {"^q": {"type": "integer"}},
		"additionalProperties": {"allOf": [{"type": "string"}, {"minLength": 1}]}}`))
	args := map[string]any{"p": 1, "q1": 2, "q2": 3, "r": "s"}
	// root 2 (one property); names 4 × 3; the pattern matched 4 times; p,
	// q1, q2 1 each; r 3.
	if got, want := costOf(t, cs, args), uint64(2+12+4+3+3); got != want {
		t.Errorf("cost %d, want %d", got, want)
	}
	// The count saturates instead of overflowing.
	if got := costOf(t, compileSchema(mustSchema(t, multiplyingSchemas["allOf properties"].schema)), nestedMap(MaxArgumentsDepth)); got != costCap {
		t.Errorf("998 levels: cost %d, want the cap %d", got, uint64(costCap))
	}
}

// TestValidationCostBoundsTheWalk: 4,000 sibling schemas applied to one
// object of 2,000 keys none of them names cost the validator little, but
// examining every key against every schema is 8M visits: the walk counts
// its own visits and stops at the budget instead of running on.
func TestValidationCostBoundsTheWalk(t *testing.T) {
	t.Parallel()
	var schema strings.Builder
	schema.WriteString(`{"type": "object", "allOf": [`)
	for i := range 4000 {
		if i > 0 {
			schema.WriteString(",")
		}
		fmt.Fprintf(&schema, `{"properties": {"x%d": {}}}`, i)
	}
	schema.WriteString(`]}`)
	cs := compileSchema(mustSchema(t, schema.String()))
	if cs.resolved == nil {
		t.Fatalf("not compiled: %s", cs.problem)
	}
	args := map[string]any{}
	for i := range 2000 {
		args["k"+strconv.Itoa(i)] = int64(i)
	}
	if _, over := cs.cost.exceeds(args, maxValidationSteps); !over {
		t.Errorf("8M visits within the budget")
	}
	if _, over := cs.cost.exceeds(map[string]any{"x1": int64(1), "k": int64(2)}, maxValidationSteps); over {
		t.Errorf("two keys refused")
	}
}

// TestValidationCostKeepsRecursiveSchemas: schemas that recurse by
// descending into the value cost what the arguments hold: a binary tree
// 500 levels deep, a list of 20,000 children, nested pattern properties
// validate, and real violations deep inside are still named.
func TestValidationCostKeepsRecursiveSchemas(t *testing.T) {
	t.Parallel()
	tree := `{"type": "object", "required": ["v"], "properties": {"v": {"type": "integer"}, "left": {"$ref": "#"}, "right": {"$ref": "#"}}}`
	// want is the start of the path the violation names and the end of its
	// description (locate follows a $ref to the root for one level).
	deepTree := func(bad bool) (map[string]any, string) {
		node := map[string]any{"v": int64(0)}
		path := ""
		if bad {
			node["v"] = "x"
		}
		for i := range 499 {
			side, other := "left", "right"
			if i%2 == 1 {
				side, other = other, side
			}
			node = map[string]any{"v": int64(i), side: node, other: map[string]any{"v": int64(1)}}
			path = "." + side + path
		}
		return node, "arguments.left|want \"integer\""
	}
	list := func(bad bool) (map[string]any, string) {
		kids := make([]any, 20_000)
		for i := range kids {
			kids[i] = map[string]any{"name": "n" + strconv.Itoa(i)}
		}
		if bad {
			kids[len(kids)-1] = map[string]any{"name": 7}
		}
		return map[string]any{"name": "root", "children": kids}, "arguments.children[]|want \"string\""
	}
	patterns := func(bad bool) (map[string]any, string) {
		m := map[string]any{"s_0": "a", "n_0": int64(1)}
		for i := range 200 {
			m = map[string]any{"s_" + strconv.Itoa(i): "x", "n_" + strconv.Itoa(i): int64(i), "sub": m}
		}
		if bad {
			inner := m
			for range 200 {
				inner = inner["sub"].(map[string]any)
			}
			inner["n_0"] = "one"
		}
		return m, "arguments|want \"integer\""
	}
	for name, tc := range map[string]struct {
		schema string
		args   func(bad bool) (map[string]any, string)
	}{
		"binary tree 500 deep": {tree, deepTree},
		"20,000 children": {`{"type": "object", "properties": {"name": {"type": "string"},
			"children": {"type": "array", "items": {"$ref": "#"}}}}`, list},
		"pattern properties 200 deep": {`{"type": "object", "patternProperties": {"^s_": {"type": "string"}, "^n_": {"type": "integer"}},
			"additionalProperties": {"$ref": "#"}}`, patterns},
	} {
		t.Run(name, func(t *testing.T) {
			cs := compileSchema(mustSchema(t, tc.schema))
			if cs.resolved == nil {
				t.Fatalf("not compiled: %s", cs.problem)
			}
			good, _ := tc.args(false)
			if c := costOf(t, cs, good); c > maxValidationSteps/10 {
				t.Errorf("cost %d, want it far under the budget", c)
			}
			if err := cs.validate("arguments", good); err != nil {
				t.Errorf("valid arguments: %v", err)
			}
			bad, want := tc.args(true)
			field, desc, _ := strings.Cut(want, "|")
			vs := violationsOf(cs.validate("arguments", bad))
			if len(vs) != 1 || !strings.HasPrefix(vs[0].Field, field) || !strings.HasSuffix(vs[0].Description, desc) {
				t.Errorf("violations = %v, want one at %s… ending %s", vs, field, desc)
			}
		})
	}
}

// TestValidationCostError: the refusal as the caller sees it.
func TestValidationCostError(t *testing.T) {
	t.Parallel()
	e := costError("arguments_json", ".a[0][0]").Bounded()
	if e.Code != InvalidArgument || e.Reason != ReasonArgumentsInvalid {
		t.Fatalf("code %v reason %s", e.Code, e.Reason)
	}
	if e.Meta["limit"] != "max_validation_steps" || e.Meta["max_validation_steps"] != fmt.Sprint(maxValidationSteps) ||
		len(e.Violations) != 1 || e.Violations[0].Field != "arguments_json" {
		t.Errorf("metadata %v, violations %v", e.Meta, e.Violations)
	}
	if !strings.Contains(e.Message, "arguments_json.a[0][0]") {
		t.Errorf("message %q does not say where", e.Message)
	}
}

// BenchmarkValidationCost is the walk alone: on BenchmarkValidateArguments's
// call, and on the largest arguments the default request limit admits.
func BenchmarkValidationCost(b *testing.B) {
	typical, err := decodeArgumentsJSON(`{"count": 12, "point": {"x": 1}, "tags": ["a", "b", "c"], "pair": ["a", 1], "odd key": true}`)
	if err != nil {
		b.Fatal(err)
	}
	ints := make([]any, 2<<20)
	for i := range ints {
		ints[i] = int64(0)
	}
	for _, bc := range []struct {
		name   string
		schema map[string]any
		args   map[string]any
	}{
		{"typical", testSchema, typical},
		{"4 MiB of integers", mustSchema(b, `{"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}`), map[string]any{"a": ints}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cs := compileSchema(bc.schema)
			b.ReportAllocs()
			for b.Loop() {
				if _, over := cs.cost.exceeds(bc.args, maxValidationSteps); over {
					b.Fatal("over")
				}
			}
		})
	}
}

// BenchmarkValidatorPerMillion measures jsonschema-go's Validate per step,
// as the walk counts them, to size maxValidationSteps: the ns/step figure
// times a million is the time the budget allows.
func BenchmarkValidatorPerMillion(b *testing.B) {
	kids := make([]any, 50_000)
	for i := range kids {
		kids[i] = map[string]any{"name": "n" + strconv.Itoa(i), "size": int64(i)}
	}
	var wide strings.Builder
	wide.WriteString(`{"type": "array", "items": {"type": "object", "properties": {`)
	for i := range 1000 {
		fmt.Fprintf(&wide, `"p%d": {"type": "string"},`, i)
	}
	wide.WriteString(`"last": {}}}}`)
	ints := make([]any, 2<<20) // the largest arguments_json under the 4 MiB request limit: [0,0,…]
	for i := range ints {
		ints[i] = int64(0)
	}
	empties := make([]any, 1000)
	for i := range empties {
		empties[i] = map[string]any{}
	}
	for name, tc := range map[string]struct {
		schema string
		args   map[string]any
	}{
		"allOf doubling, 16 levels": {multiplyingSchemas["allOf properties"].schema, nestedMap(16)},
		"anyOf items, 16 levels":    {multiplyingSchemas["anyOf items"].schema, nestedArrays(16)},
		"50,000 children": {`{"type": "object", "required": ["name"], "additionalProperties": false, "properties": {"name": {"type": "string", "minLength": 1},
			"size": {"type": "integer", "minimum": 0}, "children": {"type": "array", "items": {"$ref": "#"}}}}`,
			map[string]any{"name": "root", "children": kids}},
		"4 MiB of integers": {`{"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}`,
			map[string]any{"a": ints}},
		"1,000-property node, 1,000 empty objects": {`{"type": "object", "properties": {"a": ` + wide.String() + `}}`,
			map[string]any{"a": empties}},
	} {
		b.Run(name, func(b *testing.B) {
			cs := compileSchema(mustSchema(b, tc.schema))
			if cs.resolved == nil {
				b.Fatal(cs.problem)
			}
			n := costOf(b, cs, tc.args)
			for b.Loop() {
				if err := cs.resolved.Validate(tc.args); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/step")
			b.ReportMetric(float64(n), "steps")
		})
	}
}
