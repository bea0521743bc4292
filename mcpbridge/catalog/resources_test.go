package catalog

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func signalled(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestResourceCatalogRevisions(t *testing.T) {
	t.Parallel()
	c := NewResourceCatalog()
	sub := c.Subscribe()
	defer sub.Close()
	ch := sub.C()
	empty := c.Current().Revision

	// A tools-only upstream (nothing to list) publishes nothing and
	// signals nobody (docs/upstream-behaviour.md §3).
	c.SetServer("a", "a", nil, nil, nil, [3]bool{})
	if signalled(ch) || c.Current().Revision != empty {
		t.Fatal("a tools-only server changed the resource catalog")
	}

	res := []*mcp.Resource{{URI: "x://2", Name: "two"}, {URI: "x://1", Name: "one"}}
	prompts := []*mcp.Prompt{{Name: "p q", Arguments: []*mcp.PromptArgument{{Name: "n", Required: true}}}}
	c.SetServer("a", "a", res, nil, prompts, [3]bool{})
	if !signalled(ch) {
		t.Fatal("no signal for a change")
	}
	rev := c.Current().Revision
	if rev == empty || c.Current().Resources[0].R.URI != "x://1" {
		t.Fatalf("snapshot %+v", c.Current())
	}
	if p, ok := c.Current().LookupPrompt("a__p_q"); !ok || p.P.Name != "p q" {
		t.Fatalf("prompt names: %+v", c.Current().Prompts)
	}
	// The same content again: same revision, no signal.
	c.SetServer("a", "a", []*mcp.Resource{res[1], res[0]}, nil, prompts, [3]bool{})
	if signalled(ch) || c.Current().Revision != rev {
		t.Fatal("re-listing the same content made a new revision")
	}
	// Content-derived: another catalog (another replica) agrees.
	c2 := NewResourceCatalog()
	c2.SetServer("a", "a", []*mcp.Resource{res[1], res[0]}, nil, prompts, [3]bool{})
	if c2.Current().Revision != rev {
		t.Fatalf("replicas disagree: %s vs %s", c2.Current().Revision, rev)
	}
	// A failed list keeps the previous one of that kind.
	c.SetServer("a", "a", nil, nil, nil, [3]bool{true, false, true})
	if len(c.Current().Resources) != 2 || len(c.Current().Prompts) != 1 || c.Current().Revision != rev {
		t.Fatal("keep flags lost the previous lists")
	}
	// Capability lost (docs/upstream-behaviour.md §3): everything goes, in a new revision.
	c.SetServer("a", "a", nil, nil, nil, [3]bool{})
	if !signalled(ch) || c.Current().Revision != empty {
		t.Fatal("losing the capability did not empty the catalog")
	}
	if _, ok := c.Snapshot(rev); !ok {
		t.Fatal("a recent revision is not retained for page tokens")
	}
}

func TestResourceServerInference(t *testing.T) {
	t.Parallel()
	c := NewResourceCatalog()
	c.SetServer("a", "a", []*mcp.Resource{{URI: "x://same"}}, []*mcp.ResourceTemplate{{URITemplate: "file:///{path}"}}, nil, [3]bool{})
	c.SetServer("b", "b", []*mcp.Resource{{URI: "x://same"}}, []*mcp.ResourceTemplate{{URITemplate: "b://items/{id}"}}, nil, [3]bool{})
	s := c.Current()
	for uri, want := range map[string]string{"x://same": "a,b", "file:///etc": "a", "b://items/7": "b", "c://no": ""} {
		got := ""
		for i, n := range s.ServersFor(uri) {
			if i > 0 {
				got += ","
			}
			got += n
		}
		if got != want {
			t.Errorf("ServersFor(%q) = %q, want %q", uri, got, want)
		}
	}
}
