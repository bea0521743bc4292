package tests

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestGRPCUpstreamArgumentValues: the arguments an upstream serving the
// MCP gRPC binding receives are the values a JSON decode of the caller's
// arguments gives (every number a float64, -0 kept, big integers rounded
// as float64 rounds them), whichever wire the caller used — ToolService's
// arguments_json and arguments, the MCP front door — now that toolsvc
// builds the binding's request from the values it validated instead of
// decoding go-sdk's request again (mcpbridge/wireargs.go); a number too
// large for a float64 is refused as before. The upstream (tests/
// mcpgrpcupstream, echo_args) says back, as JSON, the Struct it received.
func TestGRPCUpstreamArgumentValues(t *testing.T) {
	t.Parallel()
	up := newGRPCUpstream(t)
	p := startToolsvc(t, cfg{Servers: servers{"g": {Type: "grpc", URL: up.url(),
		RefreshInterval: "1h", PushlessRefresh: "1h", PingInterval: "1h"}}}, "--mcp-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), 2*defaultTestTimeout)
	defer cancel()
	c := p.client
	fc := connectGoFront(t, ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + p.mcpAddr + "/mcp"}, "2025-11-25")

	for _, args := range []string{
		`{}`,
		`{"text":"hello"}`,
		`{"s":"h\u00e9llo \"q\" \\ \u0000","n":9007199254740993,"u":18446744073709551615,"f":-2.5e-3,"e":1E2,"t":true,"nil":null}`,
		`{"z":-0,"zf":-0.0,"date":"2026-07-28","neg":-7e1,"negz":-0e5}`,
		`{"a":[1,"two",[3.5,-0],{"k":false}],"o":{"deep":{"x":[],"y":{}}}}`,
		`{"zz": -0 }`,
		`{"big":123456789012345678901234567890,"tiny":5e-324,"max":1.7976931348623157e308}`,
	} {
		var v map[string]any
		if err := json.Unmarshal([]byte(args), &v); err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		text, _ := json.Marshal(v)
		want := string(text) // what the upstream received from a JSON decode of args

		res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "g__echo_args", ArgumentsJson: args})
		if err != nil || res.GetIsError() || resultText(res) != want {
			t.Errorf("arguments_json %s: the upstream received %q (%v), want %s", args, resultText(res), err, want)
		}
		st, err := structpb.NewStruct(v)
		if err != nil {
			t.Fatal(err)
		}
		res, err = c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "g__echo_args", Arguments: st})
		if err != nil || res.GetIsError() || resultText(res) != want {
			t.Errorf("arguments %s: the upstream received %q (%v), want %s", args, resultText(res), err, want)
		}
		fres, err := fc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "g__echo_args", Arguments: json.RawMessage(args)})
		if err != nil || fres.IsError || len(fres.Content) != 1 || fres.Content[0].(*mcp.TextContent).Text != want {
			t.Errorf("front door %s: the upstream received %+v (%v), want %s", args, fres, err, want)
		}
	}

	// A number beyond a float64: the adapter's decode refuses it.
	_, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "g__echo_args", ArgumentsJson: `{"x":1e400}`})
	if status.Code(err) == codes.OK {
		t.Fatalf("arguments_json {\"x\":1e400}: no error")
	}
	t.Logf("arguments_json {\"x\":1e400}: %v", err)
	// The session is unharmed.
	res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "g__echo", ArgumentsJson: `{"text":"still"}`})
	if err != nil || resultText(res) != "still" {
		t.Fatalf("CallTool(g__echo) after = %v, %v", res, err)
	}
}
