package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestRewriteListenKinds(t *testing.T) {
	t.Parallel()
	for uri, want := range map[string]string{
		"toolsvc-listen:1":     `{"toolsListChanged":true}`,
		"toolsvc-listen:2/t":   `{"toolsListChanged":true}`,
		"toolsvc-listen:3/trp": `{"promptsListChanged":true,"resourcesListChanged":true,"toolsListChanged":true}`,
	} {
		in, _ := json.Marshal(map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{uri}}})
		out, ok := rewriteListen(in)
		if !ok {
			t.Fatalf("%s: not rewritten", uri)
		}
		var p map[string]json.RawMessage
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatal(err)
		}
		if string(p["notifications"]) != want {
			t.Errorf("%s: notifications = %s, want %s", uri, p["notifications"], want)
		}
	}
	if _, ok := rewriteListen(json.RawMessage(`{"notifications":{"resourceSubscriptions":["file:///x"]}}`)); ok {
		t.Error("a real resource subscription was rewritten")
	}
}

func TestListensForListChanged(t *testing.T) {
	t.Parallel()
	for params, want := range map[string]bool{
		`{"notifications":{"toolsListChanged":true}}`:                                           true,
		`{"notifications":{"promptsListChanged":true}}`:                                         true,
		`{"notifications":{"resourceSubscriptions":["py://note"]}}`:                             false,
		`{"_meta":{},"notifications":{"resourceSubscriptions":["x"],"toolsListChanged":false}}`: false,
		`not json`: true,
	} {
		if got := listensForListChanged(json.RawMessage(params)); got != want {
			t.Errorf("listensForListChanged(%s) = %v, want %v", params, got, want)
		}
	}
}

// TestBridgeResourceSubscriptions: one upstream subscription per URI and
// session, shared by its subscribers; resources/updated reaches each; the
// last subscriber leaving unsubscribes; the session's death ends them.
// (Unit test over go-sdk's in-memory transport; the end-to-end tests are
// tests/resources_test.go.)
func TestBridgeResourceSubscriptions(t *testing.T) {
	t.Parallel()
	var subs, unsubs atomic.Int32
	up := newMemUpstream(t)
	defer up.killSessions()
	up.server = mcp.NewServer(&mcp.Implementation{Name: "mem", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { subs.Add(1); return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { unsubs.Add(1); return nil },
	})
	up.server.AddResource(&mcp.Resource{URI: "mem://r", Name: "r"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "r"}}}, nil
	})
	b := newTestBridge(t, up.config("mem"))
	if len(b.Resources().Current().Resources) != 1 {
		t.Fatalf("resources = %v", b.Resources().Current().Resources)
	}
	a, err := b.SubscribeResource(t.Context(), "", "mem://r")
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.SubscribeResource(t.Context(), "mem", "mem://r")
	if err != nil {
		t.Fatal(err)
	}
	if subs.Load() != 1 {
		t.Fatalf("upstream subscriptions = %d, want 1 for two subscribers", subs.Load())
	}
	if err := up.server.ResourceUpdated(t.Context(), &mcp.ResourceUpdatedNotificationParams{URI: "mem://r"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*ResourceSubscription{a, c} {
		select {
		case <-s.Updated:
		case <-time.After(defaultTestTimeout):
			t.Fatal("resources/updated did not reach a subscriber")
		}
	}
	a.Close()
	if unsubs.Load() != 0 {
		t.Fatal("unsubscribed while a subscriber remains")
	}
	c.Close()
	if unsubs.Load() != 1 {
		t.Fatalf("upstream unsubscriptions = %d after the last subscriber left, want 1", unsubs.Load())
	}
	d, err := b.SubscribeResource(t.Context(), "mem", "mem://r")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	up.killSessions()
	select {
	case <-d.Done:
	case <-time.After(defaultTestTimeout):
		t.Fatal("a subscription outlived its session")
	}
	if !errors.Is(d.Err(), ErrUnavailable) {
		t.Fatalf("Err() = %v, want ErrUnavailable", d.Err())
	}
}

// TestBarePromptNames: a bareNames server (names prefix "") exposes its
// prompts under their sanitised names; a second server's prompt that maps
// to the same name gets a hash suffix.
func TestBarePromptNames(t *testing.T) {
	t.Parallel()
	c := NewResourceCatalog()
	c.SetServer("a", "", nil, nil, []*mcp.Prompt{{Name: "p q"}}, [3]bool{})
	c.SetServer("b", "", nil, nil, []*mcp.Prompt{{Name: "p q"}}, [3]bool{})
	p, ok := c.Current().LookupPrompt("p_q")
	if !ok || p.Server != "a" || p.P.Name != "p q" {
		t.Fatalf("prompt p_q = %+v, want server a's", p)
	}
	if len(c.Current().Prompts) != 2 || c.Current().Prompts[1].Name == "p_q" || !ValidExposedName(c.Current().Prompts[1].Name) {
		t.Fatalf("prompts = %+v, want a distinct valid name for b's", c.Current().Prompts)
	}
}
