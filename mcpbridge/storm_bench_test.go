package mcpbridge

import (
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"
)

// stormListResult is a tools/list result as tests/node/storm_server.mjs
// answers after a storm of n: its three tools and n stormed ones.
func stormListResult(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"tools":[{"name":"echo","description":"Return text.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}},` +
		`{"name":"storm","description":"Register count tools, one list_changed each.","inputSchema":{"type":"object","properties":{"count":{"type":"integer"}}}},` +
		`{"name":"stats","description":"Counters.","inputSchema":{"type":"object","properties":{}}}`)
	for i := range n {
		fmt.Fprintf(&b, `,{"name":"storm_%d","description":"stormed","inputSchema":{"type":"object","properties":{}}}`, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkStormRelist is toolsvc's part of the re-list after the storm
// (tests/bench storm phase): the task support read from the result, the
// schemas (as go-sdk hands them over, text: mcp.WithRawToolSchemas)
// attached, and a catalog built from 10,003 new tools (go-sdk's own
// decoding of the result is done once, outside the loop).
func BenchmarkStormRelist(b *testing.B) {
	result := stormListResult(10000)
	listed := toolsAsText(b, result)
	b.ReportAllocs()
	for b.Loop() {
		var r rawSchemas
		r.record(result)
		tools := r.attach(listed)
		c := NewCatalog()
		if n, err := c.SetServerTasks("storm", "storm", tools, r.taskSupport(tools), true); err != nil || n != len(listed) {
			b.Fatal(n, err)
		}
	}
}

// BenchmarkStormListDecode is go-sdk's decoding of the same result (its
// internal/json: segmentio, exact keys), for scale.
func BenchmarkStormListDecode(b *testing.B) {
	result := stormListResult(10000)
	b.ReportAllocs()
	for b.Loop() {
		var lr mcp.ListToolsResult
		if _, err := sjson.Parse(result, &lr, sjson.DontMatchCaseInsensitiveStructFields); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStormRelistAgain is the same re-list once more, nothing changed
// (a second list after a long storm, or a backstop re-list): into the same
// session's raw schemas and the same catalog.
func BenchmarkStormRelistAgain(b *testing.B) {
	result := stormListResult(10000)
	var r rawSchemas
	c := NewCatalog()
	r.record(result)
	first := r.attach(toolsAsText(b, result))
	if _, err := c.SetServerTasks("storm", "storm", first, nil, true); err != nil {
		b.Fatal(err)
	}
	again := toolsAsText(b, result)
	b.ReportAllocs()
	for b.Loop() {
		r.record(result)
		tools := r.attach(again)
		if n, err := c.SetServerTasks("storm", "storm", tools, r.taskSupport(tools), true); err != nil || n != len(again) {
			b.Fatal(n, err)
		}
	}
}
