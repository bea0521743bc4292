package mcpbridge

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestListPagesOfEveryKind: tools, resources, templates and prompts of a
// real go-sdk server that pages by two all reach the catalogs through the
// one lister.
func TestListPagesOfEveryKind(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	type page struct {
		items []int
		next  string
	}
	list := func(ctx context.Context, call func(cur string) (page, error)) ([]int, error) {
		return listPages(ctx, "x/list", call, func(p page) ([]int, string) { return p.items, p.next })
	}
	loop := func(string) (page, error) { return page{[]int{1}, "again"}, nil }
	if _, err := list(t.Context(), loop); err == nil || !strings.Contains(err.Error(), `cursor "again" twice`) {
		t.Errorf("cursor loop: %v", err)
	}
	notFound := &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no"}
	none := func(string) (page, error) { return page{}, notFound }
	if got, err := list(t.Context(), none); err != nil || got != nil {
		t.Errorf("MethodNotFound on the first page: %v, %v; want none, no error", got, err)
	}
	later := func(cur string) (page, error) {
		if cur == "" {
			return page{[]int{1}, "2"}, nil
		}
		return page{}, notFound
	}
	if _, err := list(t.Context(), later); err == nil {
		t.Error("MethodNotFound on a later page was taken for an empty list")
	}
	pages := func(cur string) (page, error) { return page{[]int{len(cur)}, cur + "x"}, nil }
	if got, err := list(t.Context(), func(cur string) (page, error) {
		if len(cur) == 3 {
			return page{[]int{3}, ""}, nil
		}
		return pages(cur)
	}); err != nil || !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Errorf("four pages: %v, %v", got, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := list(ctx, pages); err != context.Canceled {
		t.Errorf("cancelled listing: %v, want context.Canceled", err)
	}
}
