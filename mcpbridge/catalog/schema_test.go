package catalog

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestCompactJSON: text with whitespace outside its strings is not compact;
// whitespace inside strings (escaped quotes included) does not count.
func TestCompactJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		text string
		want bool
	}{
		{`{"type":"object","properties":{}}`, true},
		{`{"a":"x y","b":"\" \\"}`, true},
		{`{"a":"\"","b" :1}`, false},
		{`{"a": 1}`, false},
		{"{\"a\":1}\n", false},
		{"{\"a\":\t1}", false},
		{`null`, true},
	} {
		if got := compactJSON([]byte(c.text)); got != c.want {
			t.Errorf("compactJSON(%q) = %v, want %v", c.text, got, c.want)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(c.text)); err == nil && c.want && buf.String() != c.text {
			t.Errorf("%q: called compact, json.Compact makes it %q", c.text, buf.String())
		}
	}
}

// TestSchemaObjectCompactsOnce: a schema's text is compacted when it has
// spaces and kept as it is when it has none; either way the object is
// decoded from it.
func TestSchemaObjectCompactsOnce(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{`{"type": "object", "properties": {"a": {"type": "string"}}}`, `{"type":"object","properties":{"a":{"type":"string"}}}`} {
		text, obj, same, err := schemaObject(json.RawMessage(raw), nil)
		if err != nil || same {
			t.Fatalf("%s: same %v, error %v", raw, same, err)
		}
		if string(text) != `{"type":"object","properties":{"a":{"type":"string"}}}` {
			t.Errorf("%s: text %s", raw, text)
		}
		if obj["type"] != "object" || obj["properties"].(map[string]any)["a"] == nil {
			t.Errorf("%s: object %v", raw, obj)
		}
		if _, _, same, _ := schemaObject(json.RawMessage(raw), text); !same {
			t.Errorf("%s: not the same as its own text", raw)
		}
	}
	if _, _, _, err := schemaObject(json.RawMessage(`[1]`), nil); err == nil {
		t.Error("an array schema was taken")
	}
	if text, obj, _, err := schemaObject(json.RawMessage(`null`), nil); err != nil || text != nil || obj != nil {
		t.Errorf("null: %s %v %v", text, obj, err)
	}
}
