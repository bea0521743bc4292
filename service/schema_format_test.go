package service

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service/core"
)

// exactSchema tells 10 from 10.0 and holds an integer beyond 2^53 (2^53+1
// is not a double); keys are not in sorted order. Whitespace is compacted.
const (
	exactSchemaSent = `{"type": "object", "properties": {"n": {"type": "integer", "maximum": 9007199254740993, "default": 10},
	                   "x": {"type": "number", "minimum": 10.0}}, "additionalProperties": false}`
	exactSchema = `{"type":"object","properties":{"n":{"type":"integer","maximum":9007199254740993,"default":10},"x":{"type":"number","minimum":10.0}},"additionalProperties":false}`
	exactOutput = `{"type":"object","properties":{"big":{"const":18446744073709551617}}}`
)

// TestSchemaFormatJSON: a real go-sdk upstream sends schemas as raw JSON;
// with SCHEMA_FORMAT_JSON, ListTools and WatchCatalog return that text
// exactly (and no Struct); by default the Struct form is unchanged.
func TestSchemaFormatJSON(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, nil, map[string][]string{"a": {"plain"}})
	f.servers["a"].srv.AddTool(&mcp.Tool{Name: "exact", InputSchema: json.RawMessage(exactSchemaSent), OutputSchema: json.RawMessage(exactOutput)}, noop)
	f.waitCatalog(t, "a__exact", func(s *mcpbridge.Snapshot) bool { _, ok := s.Lookup("a__exact"); return ok })
	ctx := ctxT(t)

	check := func(where string, tl *toolsvcv1.Tool) {
		t.Helper()
		if tl.GetInputSchemaJson() != exactSchema || tl.GetOutputSchemaJson() != exactOutput {
			t.Errorf("%s: schemas %s / %s, want exactly %s / %s", where, tl.GetInputSchemaJson(), tl.GetOutputSchemaJson(), exactSchema, exactOutput)
		}
		if tl.GetInputSchema() != nil || tl.GetOutputSchema() != nil {
			t.Errorf("%s: JSON format also filled the Struct schemas", where)
		}
	}
	find := func(ts []*toolsvcv1.Tool, name string) *toolsvcv1.Tool {
		for _, tl := range ts {
			if tl.GetName() == name {
				return tl
			}
		}
		t.Fatalf("no %s in %v", name, toolNames(ts))
		return nil
	}
	list, err := f.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{SchemaFormat: toolsvcv1.SchemaFormat_SCHEMA_FORMAT_JSON})
	if err != nil {
		t.Fatal(err)
	}
	check("ListTools", find(list.GetTools(), "a__exact"))
	if p := find(list.GetTools(), "a__plain"); p.GetInputSchemaJson() != `{"type":"object"}` {
		t.Errorf("plain tool: %q", p.GetInputSchemaJson())
	}

	for _, ff := range []toolsvcv1.SchemaFormat{toolsvcv1.SchemaFormat_SCHEMA_FORMAT_UNSPECIFIED, toolsvcv1.SchemaFormat_SCHEMA_FORMAT_STRUCT} {
		def, err := f.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{SchemaFormat: ff})
		if err != nil {
			t.Fatal(err)
		}
		tl := find(def.GetTools(), "a__exact")
		if tl.GetInputSchemaJson() != "" || tl.GetInputSchema().GetFields()["type"].GetStringValue() != "object" || def.GetRevision() != list.GetRevision() {
			t.Errorf("format %v: %v (revision %s), want the Struct form of the same revision %s", ff, tl, def.GetRevision(), list.GetRevision())
		}
	}

	st, err := f.client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{SchemaFormat: toolsvcv1.SchemaFormat_SCHEMA_FORMAT_JSON})
	if err != nil {
		t.Fatal(err)
	}
	snap := recvT(t, st)
	check("WatchCatalog snapshot", find(snap.GetSnapshot().GetTools(), "a__exact"))
	if snap.GetRevision() != list.GetRevision() {
		t.Errorf("watch revision %s with JSON schemas, ListTools %s: the format must not change revisions", snap.GetRevision(), list.GetRevision())
	}
	f.servers["a"].srv.AddTool(&mcp.Tool{Name: "exact", Description: "v2", InputSchema: json.RawMessage(exactSchemaSent), OutputSchema: json.RawMessage(exactOutput)}, noop)
	ch := recvUntil(t, st, hasChanges)
	check("WatchCatalog changes", find(ch.GetChanges().GetUpserted(), "a__exact"))

	for _, req := range []any{
		&toolsvcv1.ListToolsRequest{SchemaFormat: 7},
		&toolsvcv1.WatchCatalogRequest{SchemaFormat: 7},
	} {
		var err error
		switch r := req.(type) {
		case *toolsvcv1.ListToolsRequest:
			_, err = f.client.ListTools(ctx, r)
		case *toolsvcv1.WatchCatalogRequest:
			var s toolsvcv1.ToolService_WatchCatalogClient
			if s, err = f.client.WatchCatalog(ctx, r); err == nil {
				_, err = s.Recv()
			}
		}
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%T with an unknown schema_format: %v, want INVALID_ARGUMENT", req, err)
		}
		wantInvalid(t, err, "schema_format")
	}
}

// TestListToolsPreEncodedPages: pages assembled from cached encodings decode
// to what the edge served before (per principal, per format, page by
// page), and an unfiltered page is built once per revision.
func TestListToolsPreEncodedPages(t *testing.T) {
	t.Parallel()
	auth := core.NewAuthorizer([]core.Rule{{Principal: "alice", Allow: []string{"a__*"}, Deny: []string{"a__y"}}}, nil)
	f := newWatchFixture(t, &serverOpts{Authorizer: auth}, map[string][]string{"a": {"x", "y", "z", "w"}, "b": {"x"}})
	decode := func(r *toolsvcv1.ListToolsResponse) *toolsvcv1.ListToolsResponse {
		b, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var out toolsvcv1.ListToolsResponse
		if err := proto.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return &out
	}
	var listNames func(context.Context, *Server, toolsvcv1.SchemaFormat) string
	list := func(ctx context.Context, format toolsvcv1.SchemaFormat) (names string) {
		return listNames(ctx, f.svc, format)
	}
	listNames = func(ctx context.Context, svc *Server, format toolsvcv1.SchemaFormat) (names string) {
		tok := ""
		for {
			r, err := svc.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: 1, PageToken: tok, SchemaFormat: format})
			if err != nil {
				t.Fatal(err)
			}
			page := decode(r)
			for _, tl := range page.GetTools() {
				want := toolToWire(mustLookup(t, f, tl.GetName()), map[toolsvcv1.SchemaFormat]schemaFormat{
					toolsvcv1.SchemaFormat_SCHEMA_FORMAT_STRUCT: formatStruct, toolsvcv1.SchemaFormat_SCHEMA_FORMAT_JSON: formatJSON}[format])
				if !proto.Equal(tl, want) {
					t.Fatalf("%s: %v, want %v", tl.GetName(), tl, want)
				}
				names += tl.GetName() + " "
			}
			if tok = page.GetNextPageToken(); tok == "" {
				return names
			}
		}
	}
	alice := core.WithPrincipal(context.Background(), core.Principal{Name: "alice", Method: "token"})
	for _, format := range []toolsvcv1.SchemaFormat{toolsvcv1.SchemaFormat_SCHEMA_FORMAT_STRUCT, toolsvcv1.SchemaFormat_SCHEMA_FORMAT_JSON} {
		if got := list(alice, format); got != "a__w a__x a__z " {
			t.Errorf("alice, %v: %q", format, got)
		}
	}
	open := newServer(f.bridge, nil) // no auth: everyone sees everything
	if got := listNames(context.Background(), open, toolsvcv1.SchemaFormat_SCHEMA_FORMAT_JSON); got != "a__w a__x a__y a__z b__x " {
		t.Errorf("everyone: %q", got)
	}
	r1, _ := open.ListTools(context.Background(), &toolsvcv1.ListToolsRequest{})
	r2, _ := open.ListTools(context.Background(), &toolsvcv1.ListToolsRequest{})
	if r1 != r2 {
		t.Error("the same unfiltered page was built twice for one revision")
	}
}

func mustLookup(t *testing.T, f *watchFixture, name string) *mcpbridge.Tool {
	t.Helper()
	tl, ok := f.bridge.Catalog().Current().Lookup(name)
	if !ok {
		t.Fatalf("no %s", name)
	}
	return tl
}
