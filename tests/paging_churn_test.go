package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/catalogwatch"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestListToolsFinishesWhileTheCatalogMoves: a paged ListTools that began
// on a revision finishes on it although the catalog moves on between its
// pages by more revisions than the history remembers (128): its page
// tokens pin the revision. Before, the page after 140 changes of a real
// upstream's tool was INVALID_ARGUMENT "no longer retained" — under a
// refresh storm a listing of a large catalog could never finish.
func TestListToolsFinishesWhileTheCatalogMoves(t *testing.T) {
	t.Parallel()
	const n = 300
	p := startManyTools(t, n+1, nil, "-tools", fmt.Sprint(n)) // + bump
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	first, err := p.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: 40}) // 8 pages
	if err != nil || first.GetNextPageToken() == "" {
		t.Fatalf("first page: %v, %v", first, err)
	}
	rev := first.GetRevision()

	changes := make(chan string, 256)
	w := catalogwatch.New(p.client, catalogwatch.Options{OnEvent: func(ev catalogwatch.Event) {
		if ev.Kind == catalogwatch.Changes {
			select {
			case changes <- ev.Revision:
			case <-ctx.Done():
			}
		}
	}})
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	eventually(t, time.Minute, "the watch holds the catalog", func() bool { return len(w.Tools()) == n+1 })
	const bumps = 140 // past the history's 128 revisions, over 7 pages
	bump := func(i int) {
		t.Helper()
		if _, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "many__bump"}); err != nil {
			t.Fatalf("bump %d: %v", i, err)
		}
		select {
		case <-changes:
		case err := <-done:
			t.Fatalf("watch ended: %v", err)
		case <-time.After(time.Minute):
			t.Fatalf("bump %d: no catalog change within 1m", i)
		}
	}
	// The listing goes on while the catalog moves: between two pages, 20
	// changes; after 140 the revision it began on is past the history.
	seen := len(first.GetTools())
	descr := ""
	for _, tl := range first.GetTools() {
		if tl.GetName() == "many__tool00000" {
			descr = tl.GetDescription()
		}
	}
	moved := 0
	for tok := first.GetNextPageToken(); tok != ""; {
		for range bumps / 7 {
			bump(moved)
			moved++
		}
		page, err := p.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: 40, PageToken: tok})
		if err != nil {
			t.Fatalf("page after %d tools, %d revisions later: %v", seen, moved, err)
		}
		if page.GetRevision() != rev {
			t.Fatalf("page after %d tools from revision %s, the listing began on %s", seen, page.GetRevision(), rev)
		}
		seen += len(page.GetTools())
		tok = page.GetNextPageToken()
	}
	if seen != n+1 || descr != "generated tool number 0, version 0" || moved < bumps {
		t.Fatalf("listing: %d tools, many__tool00000 %q; want %d tools of the first revision", seen, descr, n+1)
	}
	if got, _ := w.Lookup("many__tool00000"); got.GetDescription() != fmt.Sprintf("generated tool number 0, version %d", moved) {
		t.Fatalf("after %d bumps many__tool00000 = %q", moved, got.GetDescription())
	}
	cancel()
	<-done
}
