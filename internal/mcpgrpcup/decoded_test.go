package mcpgrpcup

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// TestCallFromDecodedArguments: a call whose caller hands its decoded
// arguments over (CallOptions.DecodedArguments, as the core does) reaches
// tests/mcpgrpcupstream, a real child process, with the same Struct as one
// whose request JSON the adapter decodes (the upstream says back what it
// received), and makes fewer allocations: the request's JSON is not
// decoded again (148 against 159 a call; before the adapter used the
// values, 162 against 159). A
// value the JSON decode refuses (an overflowing number, an infinity once
// decoded) fails the same way on both.
func TestCallFromDecodedArguments(t *testing.T) {
	addr := startUpstreamChild(t)
	br, err := mcpbridge.New(mcpbridge.Config{
		Servers:    []mcpbridge.ServerConfig{{Name: "g", Transport: mcpbridge.TransportGRPC, URL: "grpc://" + addr}},
		Transports: map[mcpbridge.Transport]mcpbridge.TransportFactory{mcpbridge.TransportGRPC: Factory},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	select {
	case <-br.Ready():
	case <-time.After(time.Minute):
		t.Fatal("bridge not ready")
	}
	ctx := t.Context()
	call := func(tool, text string, decoded map[string]any) (*mcp.CallToolResult, error) {
		var opts *mcpbridge.CallOptions
		if decoded != nil {
			opts = &mcpbridge.CallOptions{DecodedArguments: decoded}
		}
		return br.CallTool(ctx, tool, json.RawMessage(text), opts)
	}
	said := func(res *mcp.CallToolResult, err error) string {
		t.Helper()
		if err != nil || res.IsError || len(res.Content) != 1 {
			t.Fatalf("call = %+v, %v", res, err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}

	// The values the core's decoding gives (integers as int64, -0 as
	// float64 only where it is a float literal) and the text it forwards.
	text := `{"s":"h\u00e9llo \"q\"","n":9007199254740993,"u":18446744073709551615,"f":-2.5e-3,"z":-0.0,"t":true,"nil":null,` +
		`"a":[1,"two",[3.5],{"k":false}],"o":{"deep":{"x":[]}}}`
	decoded := map[string]any{"s": `héllo "q"`, "n": int64(9007199254740993), "u": uint64(18446744073709551615), "f": -2.5e-3,
		"z": math.Copysign(0, -1), "t": true, "nil": nil, "a": []any{int64(1), "two", []any{3.5}, map[string]any{"k": false}},
		"o": map[string]any{"deep": map[string]any{"x": []any{}}}}
	want := said(call("g__echo_args", text, nil))
	if got := said(call("g__echo_args", text, decoded)); got != want {
		t.Fatalf("from decoded values the upstream received %s, from the request's JSON %s", got, want)
	}
	if want != `{"a":[1,"two",[3.5],{"k":false}],"f":-0.0025,"n":9007199254740992,"nil":null,"o":{"deep":{"x":[]}},"s":"héllo \"q\"","t":true,"u":18446744073709552000,"z":-0}` {
		t.Errorf("the upstream received %s", want)
	}

	// 1e400 decodes to +Inf in the core; the JSON decode refuses it.
	_, errJSON := call("g__echo_args", `{"x":1e400}`, nil)
	_, errDecoded := call("g__echo_args", `{"x":1e400}`, map[string]any{"x": math.Inf(1)})
	if errJSON == nil || errDecoded == nil || errJSON.Error() != errDecoded.Error() {
		t.Errorf("an overflowing number: %v from the JSON, %v from decoded values; want the same error", errJSON, errDecoded)
	}

	// AllocsPerRun counts the whole process (grpc-go's reader and writer
	// goroutines too), which only adds: the fewest of a few runs of each.
	echo := `{"text":"hello"}`
	values := map[string]any{"text": "hello"}
	allocs := func(decoded map[string]any) float64 {
		var runs []float64
		for range 5 {
			runs = append(runs, testing.AllocsPerRun(200, func() {
				if said(call("g__echo", echo, decoded)) != "hello" {
					t.Fatal("echo said something else")
				}
			}))
		}
		return slices.Min(runs)
	}
	for range 50 {
		said(call("g__echo", echo, values))
	}
	fromJSON, fromValues := allocs(nil), allocs(values)
	if fromValues > fromJSON-8 {
		t.Errorf("a call allocates %.1f times from decoded values and %.1f from the request's JSON; want at least 8 fewer", fromValues, fromJSON)
	}
	t.Logf("allocations a call: %.1f from the request's JSON, %.1f from decoded values", fromJSON, fromValues)
}

// TestDecodedCallCancels: a call built from decoded arguments still runs
// its RPC under the caller's context: a caller who gives up cancels the
// upstream's handler (a real gRPC server on loopback), gets an error, and
// the session goes on serving calls.
func TestDecodedCallCancels(t *testing.T) {
	srv := &toolsOnly{started: make(chan struct{}), cancelled: make(chan struct{}), auth: make(chan []string, 1)}
	url, _ := serve(t, srv)
	br, err := mcpbridge.New(mcpbridge.Config{
		Servers:    []mcpbridge.ServerConfig{{Name: "g", Transport: mcpbridge.TransportGRPC, URL: url}},
		Transports: map[mcpbridge.Transport]mcpbridge.TransportFactory{mcpbridge.TransportGRPC: Factory},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	select {
	case <-br.Ready():
	case <-time.After(time.Minute):
		t.Fatal("bridge not ready")
	}
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := br.CallTool(ctx, "g__block", json.RawMessage(`{}`), &mcpbridge.CallOptions{DecodedArguments: map[string]any{}})
		done <- err
	}()
	select {
	case <-srv.started:
	case <-time.After(time.Minute):
		t.Fatal("the upstream never ran block")
	}
	stop()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a cancelled call returned no error")
		}
	case <-time.After(time.Minute):
		t.Fatal("the cancelled call did not return")
	}
	select {
	case <-srv.cancelled:
	case <-time.After(time.Minute):
		t.Fatal("the upstream's handler was not cancelled")
	}
	res, err := br.CallTool(t.Context(), "g__echo", json.RawMessage(`{"text":"after"}`),
		&mcpbridge.CallOptions{DecodedArguments: map[string]any{"text": "after"}})
	if err != nil || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "after" {
		t.Fatalf("a call after the cancelled one = %+v, %v", res, err)
	}
}
