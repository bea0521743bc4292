package mcpbridge

import (
	"encoding/json"
	"reflect"
	"testing"

	sjson "github.com/segmentio/encoding/json"
)

// fleetSchema is the bench upstream's generated tool schema
// (tests/bench/upstream), as it sends it.
const fleetSchema = `{"properties":{"id":{"description":"record id","type":"string"},"verbose":{"type":"boolean"}},"required":["id"],"type":"object"}`

// BenchmarkSameJSONAsRelisted is the check attach makes on each tool of a
// re-listing that sent the schema's text unchanged: go-sdk's decoded value
// against the object last checked (the fleet's re-list storm makes 50,000
// of them).
func BenchmarkSameJSONAsRelisted(b *testing.B) {
	last, ok := sameJSON(json.RawMessage(fleetSchema), mustDecode(b, fleetSchema))
	if !ok {
		b.Fatal("the schema does not match itself")
	}
	decoded := mustDecode(b, fleetSchema) // go-sdk's decoder, as in a listing
	raw := json.RawMessage(fleetSchema)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := sameJSONAs(raw, decoded, last); !ok {
			b.Fatal("not the same")
		}
	}
}

func mustDecode(b *testing.B, text string) any {
	var v any
	if _, err := sjson.Parse([]byte(text), &v, sjson.DontMatchCaseInsensitiveStructFields); err != nil {
		b.Fatal(err)
	}
	return v
}

// TestJSONEqualIsDeepEqual: jsonEqual agrees with reflect.DeepEqual on
// every pair of values decoded from these texts by encoding/json and by
// go-sdk's decoder (segmentio), the two that attach compares.
func TestJSONEqualIsDeepEqual(t *testing.T) {
	texts := []string{
		fleetSchema,
		`{"properties":{"id":{"description":"record id","type":"string"},"verbose":{"type":"boolean"}},"required":["id"],"type":"object"}`,
		`{"properties":{"id":{"description":"record id","type":"string"},"verbose":{"type":"boolean"}},"required":["id", "verbose"],"type":"object"}`,
		`{"properties":{"id":{"description":"record ID","type":"string"},"verbose":{"type":"boolean"}},"required":["id"],"type":"object"}`,
		`{"properties":{"id":{"description":"record id","type":"string"}},"required":["id"],"type":"object"}`,
		`{"type":"object","properties":{}}`, `{"type":"object","properties":[]}`, `{"type":"object","properties":null}`,
		`{"type":"object"}`, `{}`, `[]`, `null`, `{"a":null}`, `{"b":null}`, `{"a":[]}`, `{"a":{}}`, `{"a":[1,2]}`, `{"a":[2,1]}`,
		`{"m":10}`, `{"m":10.0}`, `{"m":1e1}`, `{"m":9007199254740993}`, `{"m":9007199254740992}`, `{"m":-0}`, `{"m":0}`,
		`{"m":true}`, `{"m":false}`, `{"m":"true"}`, `{"m":"10"}`, `"s"`, `1`, `true`,
	}
	var values []any
	for _, text := range texts {
		var std any
		if err := json.Unmarshal([]byte(text), &std); err != nil {
			t.Fatal(text, err)
		}
		var seg any
		if _, err := sjson.Parse([]byte(text), &seg, sjson.DontMatchCaseInsensitiveStructFields); err != nil {
			t.Fatal(text, err)
		}
		values = append(values, std, seg)
	}
	for i, a := range values {
		for j, b := range values {
			if got, want := jsonEqual(a, b), reflect.DeepEqual(a, b); got != want {
				t.Errorf("jsonEqual(%s, %s) = %v; reflect.DeepEqual says %v", texts[i/2], texts[j/2], got, want)
			}
		}
	}
}
