package tests

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
)

// The MCP gRPC binding (model_context_protocol.Mcp, docs/mcp-grpc.md) served
// by toolsvc, driven by tests/python/mcpgrpc_client.py: a client built only
// from the published mcp-grpc-transport-proto 0.2.0 and grpcio
// (.venv/mcpgrpc, scripts/python/mcpgrpc.txt).

// mcpOutcome is one step's outcome as mcpgrpc_client.py prints it.
type mcpOutcome struct {
	Error *struct {
		Code     string            `json:"code"`
		Reason   string            `json:"reason"`
		Message  string            `json:"message"`
		Metadata map[string]string `json:"metadata"`
		Fields   []string          `json:"fields"`
	} `json:"error"`
	Items      []string `json:"items"`
	TTLMs      *int     `json:"ttl_ms"`
	CacheScope string   `json:"cache_scope"`
	Version    string   `json:"version"`
	ResultType string   `json:"result_type"`
	Text       string   `json:"text"`
	IsError    bool     `json:"is_error"`
	Asked      []string `json:"asked"`
	Values     []string `json:"values"`
	HasMore    bool     `json:"has_more"`
}

// mcpStep is one request of mcpgrpc_client.py.
type mcpStep map[string]any

// runMcpGrpcClient runs the published-package client against addr with
// token ("" for none) and returns one outcome per step.
func runMcpGrpcClient(t *testing.T, ctx context.Context, addr, token string, steps []mcpStep) []mcpOutcome {
	t.Helper()
	py := venvBin(t, "mcpgrpc", "python")
	js, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, py, filepath.Join(rootDir(t), "tests", "python", "mcpgrpc_client.py"), addr, token, string(js))
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("mcpgrpc_client.py: %v\n%s\n%s", err, out, stderr)
	}
	var got []mcpOutcome
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(steps) {
		t.Fatalf("mcpgrpc_client.py printed %q (%v), want %d outcomes", out, err, len(steps))
	}
	return got
}

// wantMcpError checks a step's refusal: its gRPC code, ErrorInfo reason and
// the fields its BadRequest names (nil: not checked).
func wantMcpError(t *testing.T, what string, o mcpOutcome, code, reason string, fields []string) {
	t.Helper()
	if o.Error == nil {
		t.Errorf("%s = %+v, want %s %s", what, o, code, reason)
		return
	}
	if o.Error.Code != code || o.Error.Reason != reason || (fields != nil && !slices.Equal(o.Error.Fields, fields)) {
		t.Errorf("%s = %+v, want %s %s fields %v", what, *o.Error, code, reason, fields)
	}
}

// TestMcpGrpcPythonClient: the published package's client lists and calls
// over stdio and HTTP upstreams of both eras (elicitation and sampling
// rounds included), reads resources and templates, gets prompts (one that
// asks), completes, and is refused as documented: a routing header that
// names another tool, an unknown tool, a tool outside its rules, a protocol
// version toolsvc does not speak, no credentials.
func TestMcpGrpcPythonClient(t *testing.T) {
	t.Parallel()
	const token = "py-token-0123456789abc"
	cells := interactiveCells(t) // stdio-2025, stdio-2026, http-2025, http-stateless-2026
	ss := servers{"r": goResourcesUpstream(t, "stdio", "resources,items,completions"), "x": goStdio(upstream{})}
	names := []string{"s25", "s26", "h25", "h26"}
	for i, c := range cells {
		ss[names[i]] = c.up
	}
	p := startToolsvc(t, cfg{
		Auth:    &authCfg{Tokens: map[string]string{"py": token}, Rules: []rule{{Principal: "py", Allow: []string{"s2*", "h2*", "r__*"}}}},
		Servers: ss,
	})
	ctx, cancel := context.WithTimeout(t.Context(), 3*defaultTestTimeout)
	defer cancel()

	// Reflection and health list the service.
	conn, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "model_context_protocol.Mcp"})
	if err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health of model_context_protocol.Mcp = %v, %v; want SERVING", hc, err)
	}
	if !slices.Contains(reflectedServices(t, ctx, conn), "model_context_protocol.Mcp") {
		t.Error("reflection does not list model_context_protocol.Mcp")
	}

	steps := []mcpStep{
		{"rpc": "ListTools"},
		{"rpc": "CallTool", "name": "s26__echo", "arguments": map[string]any{"text": "hi"}},
		{"rpc": "ListResources"},
		{"rpc": "ListResourceTemplates"},
		{"rpc": "ListPrompts"},
		{"rpc": "ReadResource", "uri": "test://hello"},
		{"rpc": "ReadResource", "uri": "test://items/7"},
		{"rpc": "GetPrompt", "name": "r__trip", "arguments": map[string]string{"city": "Bern"}},
		{"rpc": "GetPrompt", "name": "s26__ask_prompt"},
		{"rpc": "Complete", "prompt": "r__trip", "argument": "city", "value": "Ber"},
		{"rpc": "Complete", "template": "test://items/{id}", "argument": "id", "value": "14"},
		{"rpc": "CallTool", "name": "s26__echo", "arguments": map[string]any{"text": "hi"}, "header": "s26__add"},
		{"rpc": "CallTool", "name": "s26__nope"},
		{"rpc": "CallTool", "name": "x__echo", "arguments": map[string]any{"text": "hi"}},
		{"rpc": "ListTools", "version": "2025-06-18"},
		{"rpc": "CallTool", "name": "s26__echo", "arguments": map[string]any{"text": 7}},
	}
	for _, n := range names {
		steps = append(steps, mcpStep{"rpc": "CallTool", "name": n + "__ask_name"}, mcpStep{"rpc": "CallTool", "name": n + "__ask_all"})
	}
	// A header mismatch is refused as such even when the arguments are bad
	// too; the other routing headers likewise.
	steps = append(steps,
		mcpStep{"rpc": "CallTool", "name": "s26__echo", "arguments": map[string]any{"text": 7}, "header": "s26__add"},
		mcpStep{"rpc": "GetPrompt", "name": "r__trip", "arguments": map[string]string{"city": "Bern"}, "header": "r__hi"},
		mcpStep{"rpc": "ReadResource", "uri": "test://hello", "header": "test://items/1"},
		mcpStep{"rpc": "Complete", "prompt": "r__trip", "argument": "city", "value": "Ber", "header": "r__hi"})
	got := runMcpGrpcClient(t, ctx, p.addr, token, steps)

	tools := got[0]
	if tools.Error != nil || !slices.Contains(tools.Items, "s25__ask_name") || !slices.Contains(tools.Items, "h26__ask_all") ||
		!slices.Contains(tools.Items, "s26__echo") || slices.Contains(tools.Items, "x__echo") {
		t.Errorf("ListTools = %+v, want the four servers' tools and none of x's", tools)
	}
	if tools.TTLMs == nil || *tools.TTLMs != 0 || tools.CacheScope != "CACHE_SCOPE_PRIVATE" || tools.Version != "2026-07-28" || tools.ResultType != "RESULT_TYPE_COMPLETE" {
		t.Errorf("ListTools ttl %v, cache scope %q, version %q, result type %q; want 0, private (auth configured), 2026-07-28, complete",
			tools.TTLMs, tools.CacheScope, tools.Version, tools.ResultType)
	}
	if o := got[1]; o.Error != nil || o.Text != "hi" || o.IsError {
		t.Errorf("CallTool s26__echo = %+v", o)
	}
	if o := got[2]; o.Error != nil || !slices.Contains(o.Items, "test://hello") || !slices.Contains(o.Items, "ask://greeting") {
		t.Errorf("ListResources = %+v", o)
	}
	if o := got[3]; o.Error != nil || !slices.Equal(o.Items, []string{"test://items/{id}"}) {
		t.Errorf("ListResourceTemplates = %+v", o)
	}
	if o := got[4]; o.Error != nil || !slices.Contains(o.Items, "r__trip") || !slices.Contains(o.Items, "h25__ask_prompt") {
		t.Errorf("ListPrompts = %+v", o)
	}
	if o := got[5]; o.Error != nil || o.Text != "hello from go" || o.CacheScope != "CACHE_SCOPE_PRIVATE" {
		t.Errorf("ReadResource test://hello = %+v", o)
	}
	if o := got[6]; o.Error != nil || o.Text != "item 7" {
		t.Errorf("ReadResource test://items/7 (a template's) = %+v", o)
	}
	if o := got[7]; o.Error != nil || o.Text != "a trip to Bern" {
		t.Errorf("GetPrompt r__trip = %+v", o)
	}
	if o := got[8]; o.Error != nil || o.Text != "Greet Ada" || !slices.Equal(o.Asked, []string{"elicitation"}) {
		t.Errorf("GetPrompt s26__ask_prompt = %+v, want one elicitation round, then Greet Ada", o)
	}
	if o := got[9]; o.Error != nil || !slices.Equal(o.Values, []string{"Bergen", "Berlin", "Bern"}) {
		t.Errorf("Complete r__trip city Ber = %+v", o)
	}
	if o := got[10]; o.Error != nil || !slices.Equal(o.Values, []string{"14", "140", "141", "142", "143", "144", "145", "146", "147", "148", "149"}) {
		t.Errorf("Complete test://items/{id} id 14 = %+v", o)
	}
	wantMcpError(t, "CallTool with mcp_tool naming another tool", got[11], "INVALID_ARGUMENT", "REQUEST_INVALID", []string{"mcp_tool"})
	wantMcpError(t, "CallTool of an unknown tool", got[12], "NOT_FOUND", "TOOL_NOT_FOUND", nil)
	wantMcpError(t, "CallTool outside the rules", got[13], "PERMISSION_DENIED", "PERMISSION_DENIED", nil)
	wantMcpError(t, "ListTools in 2025-06-18", got[14], "INVALID_ARGUMENT", "REQUEST_INVALID",
		[]string{`common.metadata["io.modelcontextprotocol/protocolVersion"]`})
	wantMcpError(t, "CallTool with arguments against the schema", got[15], "INVALID_ARGUMENT", "ARGUMENTS_INVALID", nil)
	for i, n := range names {
		if o := got[16+2*i]; o.Error != nil || o.Text != "hello Ada" || !slices.Equal(o.Asked, []string{"elicitation"}) {
			t.Errorf("CallTool %s__ask_name = %+v, want one elicitation round, then hello Ada", n, o)
		}
		if o := got[17+2*i]; o.Error != nil || o.Text != "name=Ada model=hi there roots=file:///work" || !slices.Contains(o.Asked, "sampling") {
			t.Errorf("CallTool %s__ask_all = %+v, want elicitation, sampling and roots answered", n, o)
		}
	}

	for i, h := range []string{"mcp_tool", "mcp_prompt", "mcp_resource", "mcp_resource"} {
		wantMcpError(t, "a request whose "+h+" names another", got[24+i], "INVALID_ARGUMENT", "REQUEST_INVALID", []string{h})
	}

	// Without credentials: UNAUTHENTICATED, from the same interceptor
	// as ToolService's.
	wantMcpError(t, "ListTools without a token", runMcpGrpcClient(t, ctx, p.addr, "", []mcpStep{{"rpc": "ListTools"}})[0],
		"UNAUTHENTICATED", "UNAUTHENTICATED", nil)
}

// reflectedServices lists the services server reflection names.
func reflectedServices(t *testing.T, ctx context.Context, conn *grpc.ClientConn) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{ListServices: "*"}}); err != nil {
		t.Fatal(err)
	}
	res, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range res.GetListServicesResponse().GetService() {
		out = append(out, s.GetName())
	}
	return out
}
