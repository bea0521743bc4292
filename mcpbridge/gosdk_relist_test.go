package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// relistPinServer is a go-sdk server with n tools, each with a schema of
// 20 string properties; header puts a valid x-mcp-header annotation on one.
func relistPinServer(n int, header bool) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "relist-pin", Version: "1"}, nil)
	for i := range n {
		props := map[string]any{}
		for j := range 20 {
			props[fmt.Sprintf("p%02d", j)] = map[string]any{"type": "string"}
		}
		if header {
			props["p00"] = map[string]any{"type": "string", "x-mcp-header": "X-B"}
		}
		srv.AddTool(&mcp.Tool{
			Name:        fmt.Sprintf("t%03d", i),
			InputSchema: map[string]any{"type": "object", "properties": props},
		}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	return srv
}

// TestGoSDKPatchedToolFilter pins the patch to go-sdk's filterValidTools
// (third_party/go-sdk.patch, docs/benchmarks.md "Calls during a refresh
// storm"): a listed tool whose schema has no x-mcp-header key is kept
// without re-marshalling its schema. Without the patch a listing of
// schemas without the key makes about as many allocations as one with it
// (both re-marshal and re-decode every schema: dozens of allocations for
// 20 properties); with it, at least 20 a tool fewer. The annotated tools
// are still checked and kept.
func TestGoSDKPatchedToolFilter(t *testing.T) {
	const n = 200
	perListing := func(header bool) uint64 {
		cs := sdkPair(t, relistPinServer(n, header), nil, nil)
		list := func() {
			res, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tools) != n {
				t.Fatalf("listed %d tools, want %d (header %v)", len(res.Tools), n, header)
			}
		}
		list() // warm up
		const rounds = 5
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range rounds {
			list()
		}
		runtime.ReadMemStats(&after)
		return (after.Mallocs - before.Mallocs) / rounds
	}
	plain, annotated := perListing(false), perListing(true)
	t.Logf("allocations per listing of %d tools: %d without x-mcp-header, %d with", n, plain, annotated)
	if plain+n*20 > annotated {
		t.Errorf("a listing without x-mcp-header makes %d allocations, one with it %d (fewer than 20 a tool apart): the filterValidTools patch (third_party/go-sdk) is not in effect", plain, annotated)
	}
}

// TestGoSDKPatchedResultGate pins mcp.WithResultGate (third_party/go-sdk.patch),
// which the refresh work limit relies on (refreshwork.go): the gate runs
// once per request, after the response has arrived (the server's handler
// has finished) and before its decode; its error fails the request with
// that error.
func TestGoSDKPatchedResultGate(t *testing.T) {
	t.Parallel()
	cs := sdkPair(t, relistPinServer(3, false), nil, nil)
	calls := 0
	ctx := mcp.WithResultGate(t.Context(), func(context.Context) error { calls++; return nil })
	res, err := cs.ListTools(ctx, nil)
	if err != nil || len(res.Tools) != 3 {
		t.Fatalf("ListTools through a passing gate: %v, %v", res, err)
	}
	if calls != 1 {
		t.Fatalf("the gate ran %d times for one request, want 1", calls)
	}
	refused := errors.New("refused by the gate")
	ctx = mcp.WithResultGate(t.Context(), func(context.Context) error { return refused })
	if _, err := cs.ListTools(ctx, nil); !errors.Is(err, refused) {
		t.Fatalf("ListTools through a refusing gate: %v, want %v", err, refused)
	}
	// The session is still usable: the refused response was retired.
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Fatalf("ListTools after a refusal: %v", err)
	}
}
