package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
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

// TestGoSDKPatchedRawToolSchemas pins mcp.WithRawToolSchemas
// (third_party/go-sdk.patch), which the bridge lists with (rawschema.go):
// each listed schema comes as the text the server sent (nil when absent),
// the rest of each tool as go-sdk decodes it without the option, the
// same as toolsAsText makes of the same result; a tool whose x-mcp-header
// annotation is invalid is still left out, in both forms; without the
// option the schemas are decoded, as before.
func TestGoSDKPatchedRawToolSchemas(t *testing.T) {
	t.Parallel()
	srv := exactSchemaServer()
	bad := map[string]any{"type": "object", "properties": map[string]any{"o": map[string]any{"type": "object", "x-mcp-header": "X-O"}}}
	// go-sdk's AddTool refuses the bad annotation: the listing gets it
	// added on its way out.
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lt, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				c := *lt
				c.Tools = append(slices.Clone(lt.Tools), &mcp.Tool{Name: "bad-header", InputSchema: bad})
				return &c, nil
			}
			return res, err
		}
	})
	srv.AddTool(&mcp.Tool{Name: "z", Title: "Z", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}, Meta: mcp.Meta{"k": "v"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	cs := sdkPair(t, srv, nil, nil)
	asText, err := cs.ListTools(mcp.WithRawToolSchemas(t.Context()), nil)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := func(ts []*mcp.Tool) (out []string) {
		for _, x := range ts {
			out = append(out, x.Name)
		}
		return out
	}
	if got, want := names(asText.Tools), names(decoded.Tools); !slices.Equal(got, want) || slices.Contains(got, "bad-header") || len(got) != 3 {
		t.Fatalf("listed %v as text, %v decoded; want the same 3, without bad-header", got, want)
	}
	wire, err := json.Marshal(decoded)
	if err != nil {
		t.Fatal(err)
	}
	want := toolsAsText(t, wire)
	for i, x := range asText.Tools {
		in, ok := x.InputSchema.(json.RawMessage)
		if !ok {
			t.Fatalf("%s: inputSchema %T, want json.RawMessage", x.Name, x.InputSchema)
		}
		if x.Name == "exact" && (string(in) != rawSchemaKept || string(x.OutputSchema.(json.RawMessage)) != rawOutputSent) {
			t.Errorf("exact: schemas %s / %s, want the text sent: %s / %s", in, x.OutputSchema, rawSchemaKept, rawOutputSent)
		}
		if x.Name != "exact" && x.OutputSchema != nil {
			t.Errorf("%s: outputSchema %#v, want none", x.Name, x.OutputSchema)
		}
		var a, b any
		if json.Unmarshal(in, &a) != nil || !reflect.DeepEqual(a, decoded.Tools[i].InputSchema) {
			t.Errorf("%s: the text %s does not decode to go-sdk's value %v", x.Name, in, decoded.Tools[i].InputSchema)
		}
		if err := json.Unmarshal(want[i].InputSchema.(json.RawMessage), &b); err != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("%s: toolsAsText gives %s", x.Name, want[i].InputSchema)
		}
		c, d := *x, *decoded.Tools[i]
		c.InputSchema, c.OutputSchema, d.InputSchema, d.OutputSchema = nil, nil, nil, nil
		if !reflect.DeepEqual(c, d) {
			t.Errorf("%s: the rest of the tool differs: %+v as text, %+v decoded", x.Name, c, d)
		}
	}
	if _, ok := decoded.Tools[0].InputSchema.(map[string]any); !ok {
		t.Errorf("without the option the schema is %T, want map[string]any", decoded.Tools[0].InputSchema)
	}
}
