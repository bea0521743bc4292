package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestConsoleCatalogChangesMidLoad: the Catalog loads a large list in
// blocks of 1,000, all of one revision. The page's second block is held
// in the browser (Fetch interception) while the upstream changes a tool
// (tools/list_changed, a new revision); released, that block is of the
// new revision, so the page starts the list again and ends up holding
// the whole list of the new revision — never a mix of two revisions,
// never a whole listing in one answer.
func TestConsoleCatalogChangesMidLoad(t *testing.T) {
	t.Parallel()
	const n = 2_500 // three blocks
	p := startManyTools(t, n+1, nil, "-tools", fmt.Sprint(n))
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	revision := func() string {
		resp, err := p.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: 1})
		if err != nil {
			t.Fatalf("ListTools: %v", err)
		}
		return resp.GetRevision()
	}
	before := revision()

	b := newBrowser(t)
	paused := make(chan fetch.RequestID, 64) // never full: the page asks for a few blocks
	if err := chromedp.Listen(b.ctx, func(ev any) {
		if ev, ok := ev.(*fetch.EventRequestPaused); ok {
			paused <- ev.RequestID // runs on the tab's reader: only hands it over
		}
	}); err != nil {
		t.Fatalf("listening: %v", err)
	}
	if _, err := chromedp.Call(b.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
		{URLPattern: "*/ui/api/tools?offset=1000&limit=1000"}}}); err != nil {
		t.Fatalf("Fetch.enable: %v", err)
	}
	b.run(t, "loading the Catalog", chromedp.Navigate("http://"+p.adminAddr+"/ui/#/catalog"))
	next := func(what string) fetch.RequestID {
		select {
		case id := <-paused:
			return id
		case <-time.After(2 * time.Minute):
			t.Fatalf("%s: no request for the second block was made", what)
			return ""
		}
	}
	held := next("the first load")

	// The catalog changes while the second block waits.
	if _, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "many__bump", ArgumentsJson: "{}"}); err != nil {
		t.Fatalf("calling many__bump: %v", err)
	}
	eventually(t, time.Minute, "the catalog's new revision", func() bool { return revision() != before })
	if _, err := chromedp.Call(b.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: held}); err != nil {
		t.Fatalf("releasing the held block: %v", err)
	}
	// The list starts again: its second block is let through this time.
	again := next("the restarted load")
	if _, err := chromedp.Call(b.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: again}); err != nil {
		t.Fatalf("releasing the restarted load's block: %v", err)
	}
	go func() { // any later one (the event stream's revision may ask again)
		for {
			select {
			case id := <-paused:
				_, _ = chromedp.Call(b.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id})
			case <-b.ctx.Done(): // the browser closed at the test's end
				return
			}
		}
	}()

	b.waitJS(t, "every row held", fmt.Sprintf(`(document.getElementById('count') || {}).textContent === '%d of %d tools'`, n+1, n+1))
	b.waitJS(t, "tool00000 at its new version", `(() => { const r = document.querySelector('#tool-list [data-tool="many__tool00000"] .desc');
		return !!r && r.textContent === 'generated tool number 0, version 1' })()`)
	var loads struct {
		First int      `json:"first"`
		Whole []string `json:"whole"`
	}
	evalInto(t, b, `(() => { const es = performance.getEntriesByType('resource').map(e => e.name.replace(location.origin, ''));
		return {first: es.filter(n => n === '/ui/api/tools?offset=0&limit=1000').length,
			whole: es.filter(n => n.startsWith('/ui/api/tools') && !n.includes('limit='))} })()`, &loads)
	if loads.First < 2 || len(loads.Whole) != 0 {
		t.Errorf("the list's first block was asked for %d times and the whole list %d times (%q); want at least 2 (a restart) and none",
			loads.First, len(loads.Whole), loads.Whole)
	}
	b.noProblems(t)
}
