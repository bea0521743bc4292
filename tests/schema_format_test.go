package tests

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestSchemaFormatJSONEndToEnd: a tool whose schema tells 10 from 10.0 and
// holds an integer beyond 2^53, registered on the test upstream over stdio
// and streamable HTTP, comes out of the toolsvc binary with
// SCHEMA_FORMAT_JSON exactly as the upstream sent it (whitespace
// compacted), from ListTools and WatchCatalog; the default is Struct.
func TestSchemaFormatJSONEndToEnd(t *testing.T) {
	t.Parallel()
	const (
		sent = `{"type": "object", "properties": {"n": {"type": "integer", "maximum": 9007199254740993, "default": 10},
		        "x": {"type": "number", "minimum": 10.0}}}`
		want = `{"type":"object","properties":{"n":{"type":"integer","maximum":9007199254740993,"default":10},"x":{"type":"number","minimum":10.0}}}`
	)
	p := startCallFixture(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	jsonFmt := toolsvcv1.SchemaFormat_SCHEMA_FORMAT_JSON
	for _, tr := range callTransports {
		t.Run(tr.name, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"name": "exact", "schema": sent})
			if _, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tr.server + "__add_tool", ArgumentsJson: string(args)}); err != nil {
				t.Fatal(err)
			}
			name := tr.server + "__exact"
			find := func(ts []*toolsvcv1.Tool) *toolsvcv1.Tool {
				for _, tl := range ts {
					if tl.GetName() == name {
						return tl
					}
				}
				return nil
			}
			var got *toolsvcv1.Tool
			for got == nil {
				resp, err := p.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: 1000, SchemaFormat: jsonFmt})
				if err != nil {
					t.Fatal(err)
				}
				if got = find(resp.GetTools()); got == nil {
					if ctx.Err() != nil {
						t.Fatalf("%s never appeared", name)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			if got.GetInputSchemaJson() != want || got.GetInputSchema() != nil {
				t.Fatalf("ListTools JSON: %q (Struct %v), want exactly %s", got.GetInputSchemaJson(), got.GetInputSchema(), want)
			}
			def, err := p.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if d := find(def.GetTools()); d.GetInputSchemaJson() != "" || d.GetInputSchema().GetFields()["type"].GetStringValue() != "object" {
				t.Fatalf("default format: %v", d)
			}
			st, err := p.client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{Servers: []string{tr.server}, SchemaFormat: jsonFmt})
			if err != nil {
				t.Fatal(err)
			}
			m, err := st.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if w := find(m.GetSnapshot().GetTools()); w.GetInputSchemaJson() != want {
				t.Fatalf("WatchCatalog JSON snapshot: %v", w)
			}
		})
	}
}
