package service

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

func addSearchTools(t *testing.T, f *fixture) {
	t.Helper()
	no := false
	for _, tl := range []*mcp.Tool{
		{Name: "send_email", Description: "Send an email message to a recipient.",
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{"to": map[string]any{"type": "string", "description": "Recipient address"}}}},
		{Name: "read_inbox", Description: "List the newest messages of the mailbox.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &no},
			InputSchema: map[string]any{"type": "object"}},
		{Name: "deleteMessage", Description: "Remove a message for good.", InputSchema: map[string]any{"type": "object"}},
	} {
		f.upstream.AddTool(tl, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	waitForTool(t, f, "mem__deleteMessage", true)
}

// waitForTool waits until the catalog has (or lacks) the tool.
func waitForTool(t *testing.T, f *fixture, name string, present bool) {
	t.Helper()
	deadline := time.Now().Add(defaultTestTimeout)
	for {
		_, ok := f.bridge.Catalog().Current().Lookup(name)
		if ok == present {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tool %s present=%v never happened", name, present)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func resultNames(r *toolsvcv1.SearchToolsResponse) []string {
	var out []string
	for _, x := range r.GetResults() {
		out = append(out, x.GetTool().GetName())
	}
	return out
}

func TestSearchTools(t *testing.T) {
	f := newFixture(t, 30)
	addSearchTools(t, f)
	ctx := ctxT(t)

	resp, err := f.client.SearchTools(ctx, &toolsvcv1.SearchToolsRequest{Query: "mail someone a note"})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultNames(resp); len(got) == 0 || got[0] != "mem__send_email" {
		t.Fatalf("results %v, want mem__send_email first", got)
	}
	lt, err := f.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetRevision() != lt.GetRevision() {
		t.Errorf("revision %s, ListTools %s", resp.GetRevision(), lt.GetRevision())
	}
	var listed *toolsvcv1.Tool
	for _, tl := range lt.GetTools() {
		if tl.GetName() == "mem__send_email" {
			listed = tl
		}
	}
	if !proto.Equal(resp.GetResults()[0].GetTool(), listed) {
		t.Errorf("search result tool %v\nListTools tool %v", resp.GetResults()[0].GetTool(), listed)
	}
	for i := 1; i < len(resp.GetResults()); i++ {
		if resp.GetResults()[i].GetScore() > resp.GetResults()[i-1].GetScore() {
			t.Errorf("results out of order: %v", resp.GetResults())
		}
	}

	// The same request gets the same answer.
	again, err := f.client.SearchTools(ctx, &toolsvcv1.SearchToolsRequest{Query: "mail someone a note"})
	if err != nil || !proto.Equal(again, resp) {
		t.Errorf("a second search differs: %v, %v", again, err)
	}

	// Filters.
	yes := true
	ro, err := f.client.SearchTools(ctx, &toolsvcv1.SearchToolsRequest{Query: "messages", Hints: &toolsvcv1.ToolHintFilter{ReadOnly: &yes}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultNames(ro); !slices.Equal(got, []string{"mem__read_inbox"}) {
		t.Errorf("read-only results %v", got)
	}
	destructive, err := f.client.SearchTools(ctx, &toolsvcv1.SearchToolsRequest{Query: "message", Hints: &toolsvcv1.ToolHintFilter{Destructive: &yes}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultNames(destructive); slices.Contains(got, "mem__read_inbox") || !slices.Contains(got, "mem__deleteMessage") {
		t.Errorf("destructive results %v (an unset hint is destructive)", got)
	}
	glob, err := f.client.SearchTools(ctx, &toolsvcv1.SearchToolsRequest{Query: "message email", NameGlob: "mem__[rd]*", Servers: []string{"mem"},
		SchemaFormat: toolsvcv1.SchemaFormat_SCHEMA_FORMAT_JSON})
	if err != nil {
		t.Fatal(err)
	}
	got := resultNames(glob)
	slices.Sort(got)
	if !slices.Equal(got, []string{"mem__deleteMessage", "mem__read_inbox"}) {
		t.Errorf("glob results %v", got)
	}
	for _, r := range glob.GetResults() {
		if r.GetTool().GetInputSchemaJson() == "" || r.GetTool().GetInputSchema() != nil {
			t.Errorf("SCHEMA_FORMAT_JSON result %v", r.GetTool())
		}
	}
	if one, err := f.client.SearchTools(ctx, &toolsvcv1.SearchToolsRequest{Query: "message", Limit: 1}); err != nil || len(one.GetResults()) != 1 {
		t.Errorf("limit 1: %v, %v", one, err)
	}

	// The index follows the catalog.
	f.upstream.RemoveTools("send_email") // the upstream pushes list_changed
	waitForTool(t, f, "mem__send_email", false)
	after, err := f.client.SearchTools(ctx, &toolsvcv1.SearchToolsRequest{Query: "mail someone a note"})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(resultNames(after), "mem__send_email") || after.GetRevision() == resp.GetRevision() {
		t.Errorf("after removal: %v at %s (before %s)", resultNames(after), after.GetRevision(), resp.GetRevision())
	}
}

func TestSearchToolsInvalid(t *testing.T) {
	f := newFixture(t, 3)
	ctx := ctxT(t)
	for _, tc := range []struct {
		name  string
		req   *toolsvcv1.SearchToolsRequest
		code  codes.Code
		field string
	}{
		{"empty query", &toolsvcv1.SearchToolsRequest{}, codes.InvalidArgument, "query"},
		{"long query", &toolsvcv1.SearchToolsRequest{Query: strings.Repeat("a", 1025)}, codes.InvalidArgument, "query"},
		{"negative limit", &toolsvcv1.SearchToolsRequest{Query: "x", Limit: -1}, codes.InvalidArgument, "limit"},
		{"bad glob", &toolsvcv1.SearchToolsRequest{Query: "x", NameGlob: "mem__["}, codes.InvalidArgument, "name_glob"},
		{"unknown server", &toolsvcv1.SearchToolsRequest{Query: "x", Servers: []string{"mem", "nope"}}, codes.NotFound, "servers[1]"},
		{"bad format", &toolsvcv1.SearchToolsRequest{Query: "x", SchemaFormat: 99}, codes.InvalidArgument, "schema_format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.client.SearchTools(ctx, tc.req)
			if status.Code(err) != tc.code || violationDescription(err, tc.field) == "" {
				t.Errorf("error %v: want %v naming field %q", err, tc.code, tc.field)
			}
		})
	}
	// A long limit is clamped, not refused.
	if _, err := f.client.SearchTools(ctx, &toolsvcv1.SearchToolsRequest{Query: "t0001", Limit: 100000}); err != nil {
		t.Errorf("limit 100000: %v", err)
	}
}

// TestPrepareSearch: core.PrepareSearch brings the search index to the
// catalog without a search (what the console calls when a page opens),
// again after a change, and a search then ranks on what it prepared.
func TestPrepareSearch(t *testing.T) {
	f := newFixture(t, 30)
	c := f.svc.core
	if c.SearchPrepared() {
		t.Fatal("the index is prepared before anything asked for it")
	}
	c.PrepareSearch()
	if !c.SearchPrepared() {
		t.Fatal("PrepareSearch left the index behind the catalog")
	}
	addSearchTools(t, f)
	if c.SearchPrepared() {
		t.Fatal("the index is reported current after the catalog changed")
	}
	c.PrepareSearch()
	if !c.SearchPrepared() {
		t.Fatal("PrepareSearch did not follow the catalog's change")
	}
	resp, err := f.client.SearchTools(ctxT(t), &toolsvcv1.SearchToolsRequest{Query: "mail someone a note"})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultNames(resp); len(got) == 0 || got[0] != "mem__send_email" {
		t.Fatalf("results %v, want mem__send_email first", got)
	}
}

// TestSearchQueryOfDroppedWords: a query the index cannot rank (a lone
// letter, stop words only: its analysis drops them) is matched against
// the tool names, on every wire, once the index is built as before it.
func TestSearchQueryOfDroppedWords(t *testing.T) {
	f := newFixture(t, 30)
	addSearchTools(t, f)
	ctx := ctxT(t)
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"s", []string{"mem__deleteMessage", "mem__send_email"}}, // by name, all matching one word
		{"I", []string{"mem__read_inbox", "mem__send_email"}},
		{"the", nil}, // a stop word no name holds: nothing, as before
	} {
		resp, err := f.client.SearchTools(ctx, &toolsvcv1.SearchToolsRequest{Query: tc.query})
		if err != nil {
			t.Fatalf("SearchTools(%q): %v", tc.query, err)
		}
		if got := resultNames(resp); !slices.Equal(got, tc.want) {
			t.Errorf("SearchTools(%q) = %v, want %v", tc.query, got, tc.want)
		}
	}
}
