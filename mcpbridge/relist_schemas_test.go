package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
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

// TestBadSchemasRefusedAsText: schemas that come as text are refused as
// when go-sdk decoded them: a tool whose inputSchema or outputSchema is
// not a JSON object is skipped with a warning naming the schema, a null
// one is no schema, on the first listing and on a re-list (the text then
// compared with the last), and a listing nested past go-sdk's 1,000
// levels fails whole, the last good one staying published. A real go-sdk
// server over streamable HTTP sends them (its AddTool would refuse them:
// they are put in its answer).
func TestBadSchemasRefusedAsText(t *testing.T) {
	t.Parallel()
	obj := json.RawMessage(`{"type":"object"}`)
	tools := []*mcp.Tool{
		{Name: "fine", InputSchema: obj},
		{Name: "array", InputSchema: json.RawMessage(`[{"type":"object"}]`)},
		{Name: "text", InputSchema: json.RawMessage(`"object"`)},
		{Name: "out5", InputSchema: obj, OutputSchema: json.RawMessage(`5`)},
		{Name: "nulls", InputSchema: json.RawMessage(`null`), OutputSchema: json.RawMessage(`null`)},
	}
	var deep atomic.Bool
	srv := mcp.NewServer(&mcp.Implementation{Name: "bad", Version: "1"}, nil)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/list" {
				return next(ctx, method, req)
			}
			if deep.Load() {
				nested := strings.Repeat(`{"not":`, 1100) + `{}` + strings.Repeat(`}`, 1100)
				return &mcp.ListToolsResult{Tools: append(slices.Clone(tools), &mcp.Tool{Name: "deep", InputSchema: json.RawMessage(nested)})}, nil
			}
			return &mcp.ListToolsResult{Tools: tools}, nil
		}
	})
	url := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	b := newTestBridge(t, ServerConfig{Name: "h", Transport: TransportStreamableHTTP, URL: url, PingInterval: -1})
	waitFor(t, b, "h__fine", func(s *Snapshot) bool { _, ok := s.Lookup("h__fine"); return ok })
	for round := range 2 {
		snap := b.Catalog().Current()
		for _, name := range []string{"array", "text", "out5"} {
			if _, ok := snap.Lookup("h__" + name); ok {
				t.Errorf("round %d: tool %s with a schema that is not an object is exposed", round, name)
			}
		}
		if tl, ok := snap.Lookup("h__nulls"); !ok || tl.InputSchemaJSON != nil || tl.OutputSchemaJSON != nil {
			t.Errorf("round %d: tool nulls: %v, %+v; want it exposed without schemas", round, ok, tl)
		}
		st, _ := b.Server("h")
		for _, want := range []string{`tool "array" skipped: inputSchema: not a JSON object`, `tool "text" skipped: inputSchema: not a JSON object`,
			`tool "out5" skipped: outputSchema: not a JSON object`} {
			if !slices.Contains(st.Warnings, want) {
				t.Errorf("round %d: warnings %q lack %q", round, st.Warnings, want)
			}
		}
		if _, err := b.Refresh(t.Context(), "h"); err != nil {
			t.Fatal(err)
		}
	}
	deep.Store(true)
	if _, err := b.Refresh(t.Context(), "h"); err == nil || !strings.Contains(err.Error(), "depth") {
		t.Errorf("a listing nested 1,100 levels: %v, want it refused for its depth", err)
	}
	if _, ok := b.Catalog().Current().Lookup("h__fine"); !ok {
		t.Error("the last good listing is no longer published")
	}
}
