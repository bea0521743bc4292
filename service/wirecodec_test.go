package service

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// TestWireCodec: pre-encoded events and pages marshal to exactly what the
// proto codec would produce, without a copy; other messages go to the
// proto codec unchanged.
func TestWireCodec(t *testing.T) {
	t.Parallel()
	c := newWireCodec()
	tl := &mcpbridge.Tool{Name: "a__x", Server: "a", OriginalName: "x", InputSchema: map[string]any{"type": "object"},
		InputSchemaJSON: []byte(`{"type":"object"}`)}
	ev := preEncode(&toolsvcv1.WatchCatalogResponse{Revision: "r", Event: &toolsvcv1.WatchCatalogResponse_Snapshot{
		Snapshot: &toolsvcv1.CatalogSnapshot{Tools: []*toolsvcv1.Tool{toolToProto(tl)}}}})
	page := encodedListPage([]*wireTool{newWireTool(tl, formatJSON)}, "next", "rev")
	plain := &toolsvcv1.ListToolsResponse{Revision: "rev", Tools: []*toolsvcv1.Tool{toolToWire(tl, formatJSON)}}
	for name, m := range map[string]proto.Message{"event": ev, "page": page, "plain": plain} {
		want, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if b := got.Materialize(); !bytes.Equal(b, want) {
			t.Errorf("%s: codec %x, proto %x", name, b, want)
		}
		if u := m.ProtoReflect().GetUnknown(); len(u) > 0 && (len(got) != 1 || &got[0].ReadOnlyData()[0] != &u[0]) {
			t.Errorf("%s: pre-encoded bytes were copied", name)
		}
	}
	// A page decodes as the response it stands for.
	b, _ := c.Marshal(page)
	var out toolsvcv1.ListToolsResponse
	if err := c.Unmarshal(b, &out); err != nil || out.GetRevision() != "rev" || out.GetNextPageToken() != "next" ||
		out.GetTools()[0].GetInputSchemaJson() != `{"type":"object"}` {
		t.Fatalf("page decoded to %v, %v", &out, err)
	}
}

// toolToProto is a tool with Struct schemas (the default format), as the
// service sends it: the tests' expected value.
func toolToProto(t *mcpbridge.Tool) *toolsvcv1.Tool { return toolToWire(t, formatStruct) }
