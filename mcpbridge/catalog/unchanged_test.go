package catalog

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"
)

// TestUnchangedToolsBuildNoEntry: a server listing its tools again with
// nothing changed (most of a re-list storm: 500 upstreams each re-listing
// 100 tools to add one) keeps each tool's entry without building a new
// one to compare and discard: a few allocations a listing for its maps,
// none per tool for the entry, its schema hash's input and hex text (that
// was 3 allocations a tool, 260 bytes). A changed title, annotation or
// _meta is still a new entry.
func TestUnchangedToolsBuildNoEntry(t *testing.T) {
	const n = 100
	list := func(title string) []*mcp.Tool {
		tools := make([]*mcp.Tool, n)
		for i := range tools {
			tools[i] = &mcp.Tool{Name: fmt.Sprintf("t%03d", i), Title: title, Description: "d",
				InputSchema:  json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`),
				OutputSchema: json.RawMessage(`{"type":"object"}`),
				Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true}, Meta: mcp.Meta{"k": "v", "n": map[string]any{"a": []any{1.0, "x", true, nil}}}}
		}
		return tools
	}
	c := NewCatalog()
	if _, err := c.SetServer("s", "s", list("T"), true); err != nil {
		t.Fatal(err)
	}
	before, _ := c.Current().Lookup("s__t000")
	same := list("T")
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := c.SetServer("s", "s", same, true); err != nil {
			t.Fatal(err)
		}
	})
	if after, _ := c.Current().Lookup("s__t000"); after != before {
		t.Fatal("an unchanged tool got a new entry")
	}
	t.Logf("%.0f allocations for a listing of %d unchanged tools", allocs, n)
	if allocs > n {
		t.Errorf("a listing of %d unchanged tools made %.0f allocations (want at most one a tool: no entry built)", n, allocs)
	}
	for _, change := range []func(*mcp.Tool){
		func(x *mcp.Tool) { x.Title = "U" },
		func(x *mcp.Tool) { x.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: false} },
		func(x *mcp.Tool) { x.Meta = mcp.Meta{"k": "w"} },
		func(x *mcp.Tool) { x.Meta = nil },
	} {
		tools := list("T")
		change(tools[0])
		if _, err := c.SetServer("s", "s", tools, true); err != nil {
			t.Fatal(err)
		}
		if after, _ := c.Current().Lookup("s__t000"); after == before {
			t.Errorf("a changed tool (%+v) kept its entry", tools[0])
		}
		if _, err := c.SetServer("s", "s", list("T"), true); err != nil {
			t.Fatal(err)
		}
		before, _ = c.Current().Lookup("s__t000")
	}
}

// fleetSchema is the bench upstream's generated tool schema
// (tests/bench/upstream), as it sends it.
const fleetSchema = `{"properties":{"id":{"description":"record id","type":"string"},"verbose":{"type":"boolean"}},"required":["id"],"type":"object"}`

// TestJSONEqualIsDeepEqual: jsonEqual agrees with reflect.DeepEqual on
// every pair of values decoded from these texts by encoding/json and by
// go-sdk's decoder (segmentio): a tool's _meta comes from the latter.
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
