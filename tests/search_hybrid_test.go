package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestSearchHybridEndToEnd: the hybrid ranking (the default) and the
// lexical fallback (--search-ranker lexical) in a real toolsvc, over the
// tools of the MCP reference server (server-everything, TypeScript SDK).
// A query in words the tool it means does not use ("shrink a document"
// for gzip-file-as-resource, "Compresses a single file…") ranks that tool
// first through the embedded model's similarity, where the lexical
// ranking alone puts a tool that merely shares a word first; the front
// door's progressive-discovery search_tools ranks exactly as gRPC
// SearchTools. An operator's searchAliases for a tool are searched with
// its text, by either ranking. A query of more than 32 distinct words is
// ranked on its words the catalog's tools use rarest, not its first 32,
// so a request after a long preamble is found by either ranking.
func TestSearchHybridEndToEnd(t *testing.T) {
	t.Parallel()
	entry := nodePath(t, everythingEntry)
	conf := cfg{Servers: servers{
		"everything": upstream{Command: "node", Args: []string{entry, "stdio"},
			SearchAliases: map[string][]string{"get-tiny-image": {"company emblem"}}},
	}}
	hybrid := startToolsvc(t, conf, "--mcp-listen", "127.0.0.1:0", "--mcp-discovery", "progressive")
	lexical := startToolsvc(t, conf, "--search-ranker", "lexical")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	for _, p := range []*toolsvcProc{hybrid, lexical} {
		if st := serverStatus(t, ctx, p.client, "everything"); st.GetState() != toolsvcv1.ServerState_SERVER_STATE_READY {
			t.Fatalf("everything: %v", st)
		}
	}
	search := func(p *toolsvcProc, q string) []string {
		t.Helper()
		res, err := p.client.SearchTools(ctx, &toolsvcv1.SearchToolsRequest{Query: q, Limit: 3})
		if err != nil {
			t.Fatalf("SearchTools(%q): %v", q, err)
		}
		var names []string
		for _, r := range res.GetResults() {
			names = append(names, r.GetTool().GetName())
		}
		return names
	}

	const query, want = "shrink a document", "everything__gzip-file-as-resource"
	if got := search(lexical, query); len(got) == 0 || got[0] == want {
		t.Errorf("lexical SearchTools(%q) = %v: want another tool first (%s shares no word with the query)", query, got, want)
	}
	if got := search(hybrid, query); len(got) == 0 || got[0] != want {
		t.Errorf("hybrid SearchTools(%q) = %v, want %s first", query, got, want)
	}
	// Lexical matches still lead in the hybrid ranking.
	for _, q := range []string{"parrot back the message", "tiny image"} {
		h, l := search(hybrid, q), search(lexical, q)
		if len(h) == 0 || len(l) == 0 || h[0] != l[0] {
			t.Errorf("SearchTools(%q): hybrid %v, lexical %v: want the same first tool", q, h, l)
		}
	}

	// The configured alias: words no tool of the server uses.
	for _, p := range []*toolsvcProc{hybrid, lexical} {
		if got := search(p, "company emblem"); len(got) == 0 || got[0] != "everything__get-tiny-image" {
			t.Errorf("SearchTools(company emblem) = %v, want everything__get-tiny-image first (its searchAliases)", got)
		}
	}

	// A long message whose request comes last: 40 words no tool uses,
	// then the request. Ranked on its first 32 words it matched nothing.
	var preamble []string
	for i := range 40 {
		preamble = append(preamble, fmt.Sprintf("zq%d", i))
	}
	long := strings.Join(preamble, " ") + " then gzip that file as a resource"
	for _, p := range []*toolsvcProc{hybrid, lexical} {
		if got := search(p, long); len(got) == 0 || got[0] != "everything__gzip-file-as-resource" {
			t.Errorf("SearchTools(%d-word message) = %v, want everything__gzip-file-as-resource first", len(strings.Fields(long)), got)
		}
	}

	// The front door's search_tools is the same operation: same order.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "search-hybrid", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + hybrid.mcpAddr + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, q := range []string{query, "parrot back the message", long} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": q, "limit": 3}})
		if err != nil || res.IsError {
			t.Fatalf("search_tools(%q) = %v, %v", q, res, err)
		}
		var found struct{ Tools []struct{ Name string } }
		if err := json.Unmarshal([]byte(callText(t, res)), &found); err != nil {
			t.Fatalf("search_tools(%q) answered %q: %v", q, callText(t, res), err)
		}
		var names []string
		for _, f := range found.Tools {
			names = append(names, f.Name)
		}
		if g := search(hybrid, q); !slices.Equal(names, g) {
			t.Errorf("search_tools(%q) = %v, SearchTools %v: want the same ranking", q, names, g)
		}
	}
}
