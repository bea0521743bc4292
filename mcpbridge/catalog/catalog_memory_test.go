package catalog

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bigServerTools is a tools/list result of n tools as a transport delivers
// it: schemas as raw JSON (as the bridge's taps deliver them), about 300 bytes each. Tool 0's
// description carries version, and its schema a description of
// schemaBytes bytes.
func bigServerTools(n, version, schemaBytes int) []*mcp.Tool {
	ts := make([]*mcp.Tool, n)
	for i := range ts {
		schema := fmt.Sprintf(`{"type":"object","properties":{"path":{"type":"string","description":"the path of item %d"},"limit":{"type":"integer","minimum":1,"maximum":1000},"recursive":{"type":"boolean"}},"required":["path"]}`, i)
		desc := fmt.Sprintf("generated tool number %d", i)
		if i == 0 {
			desc = fmt.Sprintf("tool 0, version %d", version)
			schema = fmt.Sprintf(`{"type":"object","description":%q,"properties":{"v":{"const":%d}}}`, strings.Repeat("s", schemaBytes), version)
		}
		ts[i] = &mcp.Tool{Name: fmt.Sprintf("t%05d", i), Description: desc, InputSchema: json.RawMessage(schema)}
	}
	return ts
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestCatalogHistorySharesTools: 200 revisions of one tool in a 2,000-tool
// catalog (with TOOLSVC_FULL_HISTORY_TEST=1: 1,000 revisions in a
// 20,000-tool catalog, the figure of docs/security.md, about 2.5 minutes
// without -race and far longer with it). Every revision reuses the
// unchanged entries (the same immutable *Tool), so the history costs the
// changed tool's versions and one slice of pointers per remembered
// snapshot, within the byte budget. The live heap before and after is
// logged (go test -v -run TestCatalogHistorySharesTools ./mcpbridge).
func TestCatalogHistorySharesTools(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a large catalog hundreds of times")
	}
	n, revisions := 2_000, 200
	if os.Getenv("TOOLSVC_FULL_HISTORY_TEST") == "1" {
		n, revisions = 20_000, 1_000
	}
	for _, schemaBytes := range []int{100, 60 << 10} {
		t.Run(fmt.Sprintf("schema %d bytes", schemaBytes), func(t *testing.T) {
			c := NewCatalog()
			if _, err := c.SetServer("small", "small", numberedTools(2, "x"), true); err != nil {
				t.Fatal(err)
			}
			if _, err := c.SetServer("big", "big", bigServerTools(n, 0, schemaBytes), true); err != nil {
				t.Fatal(err)
			}
			before := liveHeap()
			prev := c.Current()
			list := bigServerTools(n, 0, schemaBytes)
			for v := 1; v <= revisions; v++ {
				list = append([]*mcp.Tool{bigServerTools(1, v, schemaBytes)[0]}, list[1:]...)
				if _, err := c.SetServer("big", "big", list, true); err != nil {
					t.Fatal(err)
				}
				cur := c.Current()
				if cur == prev {
					t.Fatalf("revision %d published nothing", v)
				}
				for i, tl := range cur.Tools {
					if tl.OriginalName != "t00000" && tl != prev.Tools[i] {
						t.Fatalf("revision %d: unchanged tool %s is a new entry, want the previous revision's", v, tl.Name)
					}
				}
				prev = cur
			}
			after := liveHeap()
			hist := c.History()
			t.Logf("%d revisions of one tool (schema %d B) in a %d-tool catalog: live heap %.1f MiB -> %.1f MiB; %d snapshots remembered, %.1f MiB beyond the current one (budget %d MiB)",
				revisions, schemaBytes, n+2, float64(before)/(1<<20), float64(after)/(1<<20), len(hist), float64(c.historyBytes())/(1<<20), historyBytes>>20)
			if got := c.historyBytes(); got > historyBytes {
				t.Fatalf("history accounts %d bytes, over the %d-byte budget", got, historyBytes)
			}
			// The heap grew by the history (within its budget) and the
			// service-free catalog's own state, not by whole catalogs.
			if grew := int64(after) - int64(before); grew > int64(historyBytes) {
				t.Fatalf("live heap grew %d MiB over %d revisions, more than the %d MiB history budget", grew>>20, revisions, historyBytes>>20)
			}
		})
	}
}

// TestCatalogHistoryByteBudget: past historyBytes beyond the current
// snapshot the oldest snapshots are forgotten (their revisions no longer
// resumable), the current one always kept; the accounting returns to zero
// with the current snapshot alone.
func TestCatalogHistoryByteBudget(t *testing.T) {
	defer func(old int) { historyBytes = old }(historyBytes)
	c := NewCatalog()
	c.SetServer("big", "big", bigServerTools(200, 0, 10<<10), true)
	historyBytes = 5 * (40 << 10) // about five versions of tool 0 (10 KB of schema text, more decoded)
	var revs []string
	for v := 1; v <= 40; v++ {
		c.SetServer("big", "big", bigServerTools(200, v, 10<<10), true)
		revs = append(revs, c.Current().Revision)
	}
	h := c.History()
	if len(h) < 2 || len(h) > 10 || h[len(h)-1] != c.Current() || c.historyBytes() > historyBytes {
		t.Fatalf("history: %d snapshots, %d bytes accounted (budget %d), want a few ending with the current one", len(h), c.historyBytes(), historyBytes)
	}
	if _, ok := c.Snapshot(revs[0]); ok {
		t.Fatal("the oldest revision is still remembered past the byte budget")
	}
	if _, ok := c.Snapshot(revs[len(revs)-2]); !ok {
		t.Fatal("the previous revision was forgotten")
	}
	historyBytes = 1
	c.SetServer("big", "big", bigServerTools(200, 41, 10<<10), true)
	if h := c.History(); len(h) != 1 || h[0] != c.Current() {
		t.Fatalf("over-budget snapshot: history %d, want just the current one", len(h))
	}
	if got := c.historyBytes(); got != 0 {
		t.Fatalf("history of the current snapshot alone accounts %d bytes beyond it, want 0", got)
	}
}
