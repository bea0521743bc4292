package mcpbridge

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestListPagesOfEveryKind: tools, resources, templates and prompts of a
// real go-sdk server that pages by two all reach the catalogs through the
// one lister.
func TestListPagesOfEveryKind(t *testing.T) {
	up := newMemUpstream(t)
	defer up.killSessions()
	up.server = mcp.NewServer(&mcp.Implementation{Name: "paged", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
	for i := range 5 {
		addTool(up.server, fmt.Sprintf("t%d", i))
		up.server.AddResource(&mcp.Resource{URI: fmt.Sprintf("paged://r%d", i), Name: "r"}, nil)
		up.server.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: fmt.Sprintf("paged://t%d/{x}", i), Name: "t"}, nil)
		up.server.AddPrompt(&mcp.Prompt{Name: fmt.Sprintf("p%d", i)}, nil)
	}
	b := newTestBridge(t, up.config("pg"))
	eventually(t, "every page of every kind", func() bool {
		r := b.Resources().Current()
		return len(b.Catalog().Current().Tools) == 5 && len(r.Resources) == 5 && len(r.Templates) == 5 && len(r.Prompts) == 5
	})
}

// TestListPagesCursorRules: a cursor seen twice is an error; MethodNotFound
// for the first page means none of that kind, for a later page an error.
func TestListPagesCursorRules(t *testing.T) {
	loop := func(cur string) ([]int, string, error) { return []int{1}, "again", nil }
	if _, err := listPages(t.Context(), "x/list", loop); err == nil || !strings.Contains(err.Error(), `cursor "again" twice`) {
		t.Errorf("cursor loop: %v", err)
	}
	notFound := &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no"}
	none := func(string) ([]int, string, error) { return nil, "", notFound }
	if got, err := listPages(t.Context(), "x/list", none); err != nil || got != nil {
		t.Errorf("MethodNotFound on the first page: %v, %v; want none, no error", got, err)
	}
	later := func(cur string) ([]int, string, error) {
		if cur == "" {
			return []int{1}, "2", nil
		}
		return nil, "", notFound
	}
	if _, err := listPages(t.Context(), "x/list", later); err == nil {
		t.Error("MethodNotFound on a later page was taken for an empty list")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	pages := func(cur string) ([]int, string, error) { return []int{len(cur)}, cur + "x", nil }
	if _, err := listPages(ctx, "x/list", pages); err != context.Canceled {
		t.Errorf("cancelled listing: %v, want context.Canceled", err)
	}
}
