package mcpfront

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// metaCases are _meta values of a 2026-07-28 request's client information
// and capabilities: the usual ones, and the ones where a re-encoding could
// read differently (escapes, invalid UTF-8, U+2028, numbers at the format
// cut-offs and beyond 2^53, nested and null values, the wrong types, keys in
// another case).
var metaCases = []string{
	`{}`,
	`{"name":"bench","version":"1"}`,
	`{"name":"a<b>&c\"\\\n\t\u0001\u2028\u2029é😀","version":"1","title":"","websiteUrl":"https://x/?a=1&b=2","icons":[{"src":"data:x","sizes":["48x48"],"mimeType":"image/png"}]}`,
	"{\"name\":\"bad \xff\xfe utf-8 \xed\xa0\x80\",\"version\":\"\xc3\"}",
	`{"name":5,"version":"1"}`,
	`{"name":null,"version":"1","extra":{"deep":[1,2,{"x":null}]}}`,
	`{"Name":"case","VERSION":"2"}`,
	`{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{},"url":{}}}`,
	`{"roots":{"listChanged":"yes"}}`,
	`{"experimental":{"a":{"n":100,"f":1e21,"g":1e-7,"h":0.000001,"i":9007199254740993,"j":-0,"k":1.5e300,"s":"\u003c"}},"roots":null}`,
	`{"experimental":{"a":[true,false,null,"x",[],{}]},"extensions":{"io.x/y":{"k":[1]}}}`,
	`{"tasks":{"list":{},"cancel":{},"requests":{"sampling":{"createMessage":{}}}}}`,
	`[1,2]`,
	`"x"`,
	`7`,
}

// TestMetaValuesReadAsBefore: a 2026-07-28 request's client information
// and capabilities, read out of its decoded _meta, are what go-sdk read
// before the go-sdk patch's tenth part: encoding/json's re-encoding of the
// value, decoded (the value as json.RawMessage takes that path still),
// against segmentio's re-encoding of the decoded tree (the path of a
// decoded request now).
func TestMetaValuesReadAsBefore(t *testing.T) {
	for _, v := range metaCases {
		var tree any
		if err := json.Unmarshal([]byte(v), &tree); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		old, err := json.Marshal(tree)
		if err != nil {
			t.Fatal(err)
		}
		req := func(val any) *mcp.CallToolRequest {
			return &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t", Meta: mcp.Meta{
				"io.modelcontextprotocol/clientInfo": val, "io.modelcontextprotocol/clientCapabilities": val}}}
		}
		now, before := req(tree), req(json.RawMessage(old))
		if got, want := now.ClientInfo(), before.ClientInfo(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: client info %+v, before %+v", v, got, want)
		}
		if got, want := now.ClientCapabilities(), before.ClientCapabilities(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: capabilities %+v, before %+v", v, got, want)
		}
	}
}

// BenchmarkMetaClientCapabilities: reading a decoded 2026-07-28 _meta's
// client information and capabilities (go-sdk's decodeMetaValue, run on
// every such request by validateRequestMeta and again by the front door's
// ClientCapabilities), for go-sdk's client's declaration.
func BenchmarkMetaClientCapabilities(b *testing.B) {
	var info, caps any
	_ = json.Unmarshal([]byte(metaCases[1]), &info)
	_ = json.Unmarshal([]byte(metaCases[7]), &caps)
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t", Meta: mcp.Meta{
		"io.modelcontextprotocol/clientInfo": info, "io.modelcontextprotocol/clientCapabilities": caps}}}
	b.ReportAllocs()
	for b.Loop() {
		if req.ClientInfo() == nil || req.ClientCapabilities() == nil {
			b.Fatal("not read")
		}
	}
}
