package mcpbridge

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge/catalog"
)

// TestPrivateListingCost (TOOLSVC_PRIVATE_COST=N): the memory of N
// principals' per-principal listings (3 tools each, as the end-to-end
// upstream lists) and of each one's view of a shared catalog of 1,000
// tools, read once (one merged snapshot each), then again after 3 changes
// of the shared catalog (the view's history holds up to catalog.PrincipalHistory
// merged snapshots). Sessions are not part of it (see
// TestTokenExchangeSessionCost).
func TestPrivateListingCost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("TOOLSVC_PRIVATE_COST"))
	if n <= 0 {
		t.Skip("set TOOLSVC_PRIVATE_COST=N to measure N principals' listings")
	}
	b := &Bridge{catalog: NewCatalog()}
	b.perUser.Store(1)
	shared := make([]*mcp.Tool, 1000)
	for i := range shared {
		shared[i] = &mcp.Tool{Name: fmt.Sprintf("tool_%04d", i), Description: "a shared tool", InputSchema: map[string]any{"type": "object"}}
	}
	if _, err := b.catalog.SetServer("shared", "shared", shared, true); err != nil {
		t.Fatal(err)
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	base := heap()
	for i := range n {
		p := fmt.Sprintf("principal-%d", i)
		s := &session{principal: p, id: 1, ctx: context.Background()}
		tools := []*mcp.Tool{{Name: "grow", InputSchema: map[string]any{"type": "object"}}, {Name: "mine_" + p, InputSchema: map[string]any{"type": "object"}},
			{Name: "whoami", InputSchema: map[string]any{"type": "object"}}}
		if _, err := b.private.Set(s.principal, s.id, s.ctx.Err, "priv", "priv", tools, nil); err != nil {
			t.Fatal(err)
		}
	}
	listed := heap()
	for i := range n {
		b.Tools(fmt.Sprintf("principal-%d", i)).Current()
	}
	viewed := heap()
	for c := range 3 {
		if _, err := b.catalog.SetServer("shared", "shared", append(shared[:len(shared):len(shared)], &mcp.Tool{Name: fmt.Sprint("extra_", c)}), true); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			b.Tools(fmt.Sprintf("principal-%d", i)).Current()
		}
	}
	changed := heap()
	if h := b.private.History("principal-0"); len(h) != 4 || h[3].Base() != b.catalog.Current() {
		t.Errorf("principal-0's history: %d snapshots, want 4 (the last on the current shared one)", len(h))
	}
	runtime.KeepAlive(b)
	t.Logf("%d principals: listings %.1f KiB each; one view %.1f KiB each; after 3 shared changes %.1f KiB each (history %d)",
		n, kib(listed, base, n), kib(viewed, listed, n), kib(changed, listed, n), catalog.PrincipalHistory)
}

func kib(a, b uint64, n int) float64 { return float64(int64(a)-int64(b)) / float64(n) / 1024 }
