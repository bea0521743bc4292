package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// TestRefreshStormHungUpstreamHoldsNoTurn: the bridge's refresh work runs
// in turns of a replica-wide limit (one on 2 cores: mcpbridge/refreshwork.go),
// taken once a listing's response has arrived. An upstream whose re-list
// does not answer must hold no turn: while its tools/list hangs, three other
// upstreams that announce list_changed are re-listed. Four testserver
// processes over streamable HTTP; the hung listing has an hour to answer, so
// it neither times out nor ends meanwhile.
func TestRefreshStormHungUpstreamHoldsNoTurn(t *testing.T) {
	t.Parallel()
	var servers []mcpbridge.ServerConfig
	for _, name := range []string{"slow", "a", "b", "c"} {
		servers = append(servers, mcpbridge.ServerConfig{
			Name: name, Transport: mcpbridge.TransportStreamableHTTP, URL: startHTTPUpstream(t),
			RefreshTimeout: time.Hour, PingInterval: -1,
		})
	}
	b, err := mcpbridge.New(mcpbridge.Config{RefreshInterval: time.Hour, Servers: servers})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	select {
	case <-b.Ready():
	case <-ctx.Done():
		t.Fatal("bridge not ready")
	}
	call := func(name string, args any) string {
		t.Helper()
		res, err := b.CallTool(ctx, name, args, nil)
		if err != nil || res.IsError {
			t.Fatalf("CallTool(%s) = %v, %v", name, res, err)
		}
		return fmt.Sprint(res.StructuredContent)
	}
	listCalls := call("slow__stats", nil)
	call("slow__set_slow_list", map[string]any{"ms": time.Hour.Milliseconds()})
	call("slow__add_tool", map[string]any{"name": "late"}) // list_changed: a re-list that hangs
	eventually(t, defaultTestTimeout, "slow's re-list to reach its upstream", func() bool {
		return call("slow__stats", nil) != listCalls
	})
	for _, name := range []string{"a", "b", "c"} {
		call(name+"__add_tool", map[string]any{"name": "added"})
	}
	eventually(t, defaultTestTimeout, "a, b and c re-listed while slow's re-list hangs", func() bool {
		cur := b.Catalog().Current()
		for _, name := range []string{"a__added", "b__added", "c__added"} {
			if _, ok := cur.Lookup(name); !ok {
				return false
			}
		}
		return true
	})
	if _, ok := b.Catalog().Current().Lookup("slow__late"); ok {
		t.Fatal("slow was re-listed: its tools/list was to hang for an hour")
	}
}
