package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestListChangedStorm: an upstream (TypeScript SDK, low-level Server: one
// notification per change, no debounce) pushes 1,000 list_changed in a
// burst. toolsvc must list at most twice for it (counted by the upstream)
// and end with the complete catalog.
//
// Serial: the list count depends on the storm arriving within the
// debounce window, which other tests' load would stretch.
func TestListChangedStorm(t *testing.T) {
	script := filepath.Join(bin.nodeDir, "storm_server.mjs")
	if _, err := os.Stat(filepath.Join(bin.nodeDir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatalf("TypeScript SDK not installed in %s (scripts/test.sh runs npm ci there): %v", bin.nodeDir, err)
	}
	p := startToolsvc(t, cfg{RefreshInterval: "1h", Servers: servers{"storm": {Command: "node", Args: []string{script}}}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()

	listCalls := func() int {
		t.Helper()
		res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "storm__stats"})
		if err != nil {
			t.Fatalf("CallTool(storm__stats) = %v", err)
		}
		return int(res.GetStructuredContent().GetFields()["list_calls"].GetNumberValue())
	}
	before := listCalls()
	w := startWatch(t, ctx, p.client, "")
	w.next(t, 10*time.Second) // snapshot

	const n = 1000
	args, _ := structpb.NewStruct(map[string]any{"count": n})
	start := time.Now()
	res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "storm__storm", Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(storm__storm) = %v", err)
	}
	if got := resultText(res); got != fmt.Sprintf("stormed %d", n) {
		t.Fatalf("storm result %q", got)
	}
	last := fmt.Sprintf("storm__storm_%d", n-1)
	w.waitUpsert(t, last, 20*time.Second)
	complete := time.Since(start)
	// Give any straggling refresh time to happen before counting: the
	// debounce is 50 ms, its cap 500 ms.
	time.Sleep(1500 * time.Millisecond)
	lists := listCalls() - before

	tools, _ := listAll(t, ctx, p.client, 0)
	got := 0
	for _, tool := range tools {
		if tool.GetServer() == "storm" {
			got++
		}
	}
	if want := 3 + n; got != want {
		t.Errorf("catalog has %d storm tools, want %d", got, want)
	}
	if lists > 2 {
		t.Errorf("the storm of %d list_changed caused %d upstream tools/list calls, want at most 2", n, lists)
	}
	t.Logf("storm of %d notifications: %d tools/list calls, catalog complete on the watch %v after the call started",
		n, lists, complete.Round(time.Millisecond))
}
