package core

import (
	"math"
	"reflect"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// The accepting fast path of argument validation.
//
// Most tools' inputSchemas are what go-sdk (and the other SDKs) generate
// from a struct: an object whose properties each name a type, some of them
// required, often additionalProperties false, and nothing else that
// validates. jsonschema-go validates such arguments by reflection, about 25
// allocations and 2 µs per call on the handler's goroutine for `echo`'s
// one-string schema (docs/benchmarks.md, "CPU per call: toolsvc's own
// interceptors and validation"). For a schema made only of those keywords,
// quickShape holds the same rules as plain Go values, checked without an
// allocation.
//
// It only ever accepts. When quickShape's check passes, jsonschema-go's
// verdict on the same arguments is "valid" (the checks are its own, read
// from its source: the same type of a value, "number" admitting integers,
// a float64 without a fraction an integer; required; properties;
// additionalProperties false refusing any other key; every other keyword
// of these subschemas an annotation). When it does not pass, or the
// schema has any other keyword, jsonschema-go validates as before, so
// every refusal, its message and its field paths are what they were. The
// checks before it (the cost budget, case variants) run unchanged.
// TestQuickShapeSameVerdict and FuzzQuickShapeSameVerdict hold the two
// verdicts side by side.

// quickShape is one subschema's validating keywords, or nil when the
// subschema has any keyword quickShape does not check.
type quickShape struct {
	types      []string // the JSON types admitted; nil: any
	properties map[string]*quickShape
	required   []string
	closed     bool // additionalProperties: false
}

// maxQuickDepth bounds how deep quickShape follows nested properties: a
// deeper schema is validated by jsonschema-go (the recursion of both is
// bounded by the schema, which checkSchema bounds; this keeps the fast
// path's own stack small).
const maxQuickDepth = 16

// newQuickShape is s as a quickShape, or nil.
func newQuickShape(s *jsonschema.Schema, depth int) *quickShape {
	if s == nil || depth > maxQuickDepth {
		return nil
	}
	// Everything but the keywords checked here and the annotations must
	// be unset. A copy with those cleared must be the zero Schema, so a
	// keyword jsonschema-go adds in a later version turns the fast path
	// off for the schemas that use it, not on.
	rest := *s
	rest.ID, rest.Schema, rest.Comment = "", "", ""
	rest.Title, rest.Description, rest.Default, rest.Deprecated, rest.ReadOnly, rest.WriteOnly, rest.Examples = "", "", nil, false, false, false, nil
	rest.PropertyOrder = nil
	rest.Type, rest.Types = "", nil
	rest.Properties, rest.Required, rest.AdditionalProperties = nil, nil, nil
	if !reflect.ValueOf(rest).IsZero() {
		return nil
	}
	q := &quickShape{required: s.Required}
	switch {
	case s.Type != "":
		q.types = []string{s.Type}
	case s.Types != nil:
		q.types = s.Types
	}
	if ap := s.AdditionalProperties; ap != nil {
		if !isFalseSchema(ap) {
			return nil
		}
		q.closed = true
	}
	if len(s.Properties) > 0 {
		q.properties = make(map[string]*quickShape, len(s.Properties))
		for name, p := range s.Properties {
			if q.properties[name] = newQuickShape(p, depth+1); q.properties[name] == nil {
				return nil
			}
		}
	}
	return q
}

// isFalseSchema reports whether s is the schema false (jsonschema-go's
// {"not": {}}).
func isFalseSchema(s *jsonschema.Schema) bool {
	rest := *s
	rest.Not = nil
	return s.Not != nil && reflect.ValueOf(*s.Not).IsZero() && reflect.ValueOf(rest).IsZero()
}

// accepts reports whether v certainly satisfies q: false means "ask
// jsonschema-go", not "invalid".
func (q *quickShape) accepts(v any) bool {
	if q.types != nil {
		t, ok := quickType(v)
		if !ok || !(slices.Contains(q.types, t) || t == "integer" && slices.Contains(q.types, "number")) {
			return false
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		// properties, required and additionalProperties apply to objects
		// only; a value of another kind the arguments' decoders do not
		// produce is left to jsonschema-go.
		_, known := quickType(v)
		return known
	}
	for _, r := range q.required {
		if _, ok := m[r]; !ok {
			return false
		}
	}
	for k, x := range m {
		p := q.properties[k]
		if p == nil {
			if q.closed {
				return false
			}
			continue
		}
		if !p.accepts(x) {
			return false
		}
	}
	return true
}

// quickType is jsonschema-go's JSON type of a decoded argument value (its
// jsonType), for the types the arguments' decoders produce; ok is false
// for any other.
func quickType(v any) (string, bool) {
	switch v := v.(type) {
	case nil:
		return "null", true
	case string:
		return "string", true
	case bool:
		return "boolean", true
	case int64, uint64, int:
		return "integer", true
	case float64:
		if _, f := math.Modf(v); f == 0 {
			return "integer", true
		}
		return "number", true
	case map[string]any:
		return "object", true
	case []any:
		return "array", true
	}
	return "", false
}
