package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// schemaServer is a go-sdk server with n tools whose input schemas have
// props string properties each, sent as raw JSON (the server's encoding
// then costs the same whatever the schema's shape).
func schemaServer(n, props int) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "schemas", Version: "1"}, nil)
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for j := range props {
		if j > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%02d":{"type":"string","description":"property %d","minLength":1}`, j, j)
	}
	b.WriteString(`},"required":["p00"]}`)
	schema := json.RawMessage(b.String())
	for i := range n {
		srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%03d", i), InputSchema: schema},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	return srv
}

// TestRelistKeepsUnchangedSchemasAsText: a re-list of tools whose schemas
// did not change decodes none of them into Go values: the schemas are
// compared as the text the upstream sent (issue 45: a 500-upstream
// re-list storm spent most of its CPU and allocation decoding every
// schema into map[string]any, then parsing it again for its text).
// Measured as the allocations of a re-list of 200 tools of 30 properties
// against 200 tools of one property, from real go-sdk upstreams over
// streamable HTTP: decoding the schemas made tens of allocations a
// property; kept as text, a schema is one copy whatever its size. Not
// parallel: the allocation counts are the process's.
func TestRelistKeepsUnchangedSchemasAsText(t *testing.T) {
	const n = 200
	perRelist := func(props int) uint64 {
		srv := schemaServer(n, props)
		url := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: true}))
		name := fmt.Sprintf("s%d", props)
		b := newTestBridge(t, ServerConfig{Name: name, Transport: TransportStreamableHTTP, URL: url, PingInterval: -1})
		last := fmt.Sprintf("%s__t%03d", name, n-1)
		waitFor(t, b, last, func(s *Snapshot) bool { _, ok := s.Lookup(last); return ok })
		relist := func() {
			if _, err := b.Refresh(t.Context(), name); err != nil {
				t.Fatal(err)
			}
		}
		relist() // the first re-list checks what the listing decoded
		const rounds = 5
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range rounds {
			relist()
		}
		runtime.ReadMemStats(&after)
		tl, _ := b.Catalog().Current().Lookup(name + "__t000")
		if got := len(tl.InputSchema["properties"].(map[string]any)); got != props {
			t.Fatalf("the catalog's schema has %d properties, want %d", got, props)
		}
		return (after.Mallocs - before.Mallocs) / rounds
	}
	narrow, wide := perRelist(1), perRelist(30)
	t.Logf("allocations per re-list of %d unchanged tools: %d with 1 property a schema, %d with 30", n, narrow, wide)
	// Kept as text, the two differ by the larger responses' buffers only;
	// decoded, by 29 properties × n tools × several allocations.
	if wide > narrow+n*2 {
		t.Errorf("a re-list of %d unchanged schemas of 30 properties made %d allocations, of 1 property %d: %.1f more a tool (want under 2): the schemas were decoded",
			n, wide, narrow, float64(wide-narrow)/n)
	}
}
