package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// grpcUpstream is tests/mcpgrpcupstream (an upstream that serves only the
// MCP gRPC binding), restartable on the same port.
type grpcUpstream struct {
	t    *testing.T
	addr string
	args []string
	p    *proc
}

var listeningRE = regexpMust(`listening on (\S+)`)

// newGRPCUpstream starts the upstream on a port below the ephemeral range
// (freePort: it is restarted on the same port).
func newGRPCUpstream(t *testing.T, args ...string) *grpcUpstream {
	u := &grpcUpstream{t: t, addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), args: args}
	u.start()
	return u
}

func (u *grpcUpstream) url() string { return "grpc://" + u.addr }

func (u *grpcUpstream) start() {
	t := u.t
	t.Helper()
	exe := helperBinary(t, "mcpgrpcupstream")
	deadline := time.Now().Add(20 * time.Second)
	for {
		p := startProc(t, exec.Command(exe, append([]string{"-addr", u.addr}, u.args...)...))
		if _, ok := p.log.wait(listeningRE, 20*time.Second, p.done); ok {
			u.p = p
			return
		}
		p.kill() // the port may still be held briefly after a kill: retry
		if time.Now().After(deadline) {
			t.Fatalf("grpc upstream did not start on %s; output:\n%s", u.addr, p.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const grpcUpstreamToken = "grpc-upstream-secret-0123456789"

// TestGRPCUpstream: an upstream that serves model_context_protocol.Mcp
// (with a bearer token) behind toolsvc is listed, called, read, prompted
// and completed by a ToolService caller, an MCP front-door client and a
// client of toolsvc's own Mcp service (the published package) like any
// other; a tool it adds is picked up when its list's ttl runs out
// (it sends no notification, and the other re-list intervals are an hour).
func TestGRPCUpstream(t *testing.T) {
	t.Parallel()
	up := newGRPCUpstream(t, "-token", grpcUpstreamToken, "-ttl", "1s")
	p := startToolsvc(t, cfg{Servers: servers{"g": {Type: "grpc", URL: up.url(),
		Headers:         map[string]string{"Authorization": "Bearer " + grpcUpstreamToken},
		RefreshInterval: "1h", PushlessRefresh: "1h", PingInterval: "1h"}}}, "--mcp-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), 2*defaultTestTimeout)
	defer cancel()
	c := p.client

	if tr := serverStatus(t, ctx, c, "g").GetTransport(); tr != toolsvcv1.Transport_TRANSPORT_GRPC {
		t.Errorf("ListServers transport = %v, want TRANSPORT_GRPC", tr)
	}
	tools, _ := listAll(t, ctx, c, 100)
	for _, want := range []string{"g__echo", "g__add", "g__add_tool"} {
		if !hasTool(tools, want) {
			t.Fatalf("ListTools lacks %s: %v", want, tools)
		}
	}
	res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "g__echo", ArgumentsJson: `{"text": "over grpc"}`})
	if err != nil || resultText(res) != "over grpc" {
		t.Fatalf("CallTool(g__echo) = %v, %v", res, err)
	}
	res, err = c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "g__add", ArgumentsJson: `{"a": 2, "b": 3}`})
	if err != nil || resultText(res) != "5" || res.GetStructuredContent().AsMap()["sum"] != 5.0 {
		t.Fatalf("CallTool(g__add) = %v, %v", res, err)
	}
	// Arguments are checked against the upstream's schema before anything
	// is sent, as for every upstream.
	_, err = c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "g__add", ArgumentsJson: `{"a": "x"}`})
	wantStatus(t, err, codes.InvalidArgument, "ARGUMENTS_INVALID", "g", "g__add")

	rr, err := c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Uri: "mem://hello"})
	if err != nil || len(rr.GetContents()) != 1 || rr.GetContents()[0].GetText() != "hello over grpc" || rr.GetServer() != "g" {
		t.Fatalf("ReadResource(mem://hello) = %v, %v", rr, err)
	}
	tr, err := c.ListResourceTemplates(ctx, &toolsvcv1.ListResourceTemplatesRequest{})
	if err != nil || len(tr.GetResourceTemplates()) != 1 || tr.GetResourceTemplates()[0].GetUriTemplate() != "mem://items/{id}" {
		t.Fatalf("ListResourceTemplates = %v, %v", tr, err)
	}
	rr, err = c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Server: "g", Uri: "mem://items/7"})
	if err != nil || len(rr.GetContents()) != 1 || rr.GetContents()[0].GetText() != "item 7" {
		t.Fatalf("ReadResource(mem://items/7) = %v, %v", rr, err)
	}
	gp, err := c.GetPrompt(ctx, &toolsvcv1.GetPromptRequest{Name: "g__greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || len(gp.GetMessages()) != 1 || gp.GetMessages()[0].GetContent().GetText().GetText() != "Hello, Ada!" {
		t.Fatalf("GetPrompt(g__greet) = %v, %v", gp, err)
	}
	cr, err := c.Complete(ctx, completePrompt("g__greet", "name", "al", nil))
	if err != nil || strings.Join(cr.GetValues(), ",") != "alice,albert" {
		t.Fatalf("Complete(g__greet name al) = %v, %v", cr, err)
	}

	// The same upstream through the MCP front door.
	fc := connectGoFront(t, ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + p.mcpAddr + "/mcp"}, "2025-11-25")
	fres, err := fc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "g__echo", Arguments: map[string]any{"text": "front"}})
	if err != nil || fres.IsError || len(fres.Content) != 1 || fres.Content[0].(*mcp.TextContent).Text != "front" {
		t.Fatalf("front door tools/call g__echo = %+v, %v", fres, err)
	}
	frr, err := fc.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mem://hello"})
	if err != nil || len(frr.Contents) != 1 || frr.Contents[0].Text != "hello over grpc" {
		t.Fatalf("front door resources/read = %+v, %v", frr, err)
	}
	fgp, err := fc.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "g__greet", Arguments: map[string]string{"name": "Bo"}})
	if err != nil || len(fgp.Messages) != 1 || fgp.Messages[0].Content.(*mcp.TextContent).Text != "Hello, Bo!" {
		t.Fatalf("front door prompts/get = %+v, %v", fgp, err)
	}

	// And through toolsvc's own Mcp service, with the published package's
	// client: the binding on both sides of toolsvc.
	got := runMcpGrpcClient(t, ctx, p.addr, "", []mcpStep{
		{"rpc": "ListTools"},
		{"rpc": "CallTool", "name": "g__echo", "arguments": map[string]any{"text": "both sides"}},
		{"rpc": "ReadResource", "uri": "mem://items/3"},
		{"rpc": "GetPrompt", "name": "g__greet", "arguments": map[string]string{"name": "Cy"}},
		{"rpc": "Complete", "prompt": "g__greet", "argument": "name", "value": "b"},
	})
	if o := got[0]; o.Error != nil || !slices.Contains(o.Items, "g__echo") || !slices.Contains(o.Items, "g__add_tool") {
		t.Errorf("Mcp ListTools = %+v", o)
	}
	if o := got[1]; o.Error != nil || o.Text != "both sides" || o.IsError {
		t.Errorf("Mcp CallTool g__echo = %+v", o)
	}
	if o := got[2]; o.Error != nil || o.Text != "item 3" {
		t.Errorf("Mcp ReadResource mem://items/3 = %+v", o)
	}
	if o := got[3]; o.Error != nil || o.Text != "Hello, Cy!" {
		t.Errorf("Mcp GetPrompt g__greet = %+v", o)
	}
	if o := got[4]; o.Error != nil || !slices.Equal(o.Values, []string{"bob"}) {
		t.Errorf("Mcp Complete g__greet name b = %+v", o)
	}

	// A catalog change with no notification: picked up at the list's ttl.
	w := startWatch(t, ctx, c, "")
	if _, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "g__add_tool", ArgumentsJson: `{"name": "fresh"}`}); err != nil {
		t.Fatalf("CallTool(g__add_tool): %v", err)
	}
	w.waitUpsert(t, "g__fresh", time.Minute)
	res, err = c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "g__fresh", ArgumentsJson: `{}`})
	if err != nil || resultText(res) != "hello from fresh" {
		t.Fatalf("CallTool(g__fresh) = %v, %v", res, err)
	}
	eventually(t, time.Minute, "the front door lists g__fresh", func() bool {
		lt, err := fc.cs.ListTools(ctx, nil)
		if err != nil {
			return false
		}
		for _, tool := range lt.Tools {
			if tool.Name == "g__fresh" {
				return true
			}
		}
		return false
	})
}

// TestGRPCUpstreamKilled: an upstream that serves the binding is killed
// (SIGKILL): its server goes down and calls fail UNAVAILABLE (then the
// breaker opens); restarted on the same port, toolsvc reconnects and calls
// work again. A wrong token keeps it down without the token in any error.
func TestGRPCUpstreamKilled(t *testing.T) {
	t.Parallel()
	up := newGRPCUpstream(t)
	bad := newGRPCUpstream(t, "-token", grpcUpstreamToken)
	g := fastSupervision(upstream{Type: "grpc", URL: up.url(), Breaker: &breaker{Failures: 2, Cooldown: "200ms", MaxCooldown: "500ms"}})
	p := startToolsvc(t, cfg{Servers: servers{
		"g": g,
		"b": fastSupervision(upstream{Type: "grpc", URL: bad.url(), Headers: map[string]string{"Authorization": "Bearer wrong-" + grpcUpstreamToken}}),
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*defaultTestTimeout)
	defer cancel()
	c := p.client
	call := func() (*toolsvcv1.CallToolResponse, error) {
		return c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "g__echo", ArgumentsJson: `{"text": "again"}`})
	}
	if res, err := call(); err != nil || resultText(res) != "again" {
		t.Fatalf("CallTool before the kill = %v, %v", res, err)
	}

	up.p.kill()
	eventually(t, time.Minute, "g leaves READY after the kill", func() bool {
		return serverStatus(t, ctx, c, "g").GetState() != toolsvcv1.ServerState_SERVER_STATE_READY
	})
	_, err := call()
	if code := status.Code(err); code != codes.Unavailable {
		t.Fatalf("CallTool while the upstream is dead = %v, want UNAVAILABLE", err)
	}

	up.start()
	eventually(t, time.Minute, "g is READY again", func() bool {
		return serverStatus(t, ctx, c, "g").GetState() == toolsvcv1.ServerState_SERVER_STATE_READY
	})
	eventually(t, time.Minute, "calls work again", func() bool {
		res, err := call()
		return err == nil && resultText(res) == "again"
	})
	if n := serverStatus(t, ctx, c, "g").GetConnectCount(); n < 2 {
		t.Errorf("connect count = %d after the restart, want at least 2", n)
	}

	// The refusing upstream: down, its refusal named, the token nowhere.
	var last string
	eventually(t, time.Minute, "b reports the upstream's refusal", func() bool {
		last = serverStatus(t, ctx, c, "b").GetLastError()
		return strings.Contains(last, "Unauthenticated")
	})
	if st := serverStatus(t, ctx, c, "b").GetState(); st == toolsvcv1.ServerState_SERVER_STATE_READY {
		t.Errorf("b is READY with a wrong token")
	}
	if strings.Contains(last, grpcUpstreamToken) || strings.Contains(p.log.String(), grpcUpstreamToken) {
		t.Errorf("the upstream's token leaked: last error %q", last)
	}

	// A reload that leaves g's settings as they were keeps its session
	// (the config is comparable: no restart); one that changes them
	// reconnects it.
	connects := serverStatus(t, ctx, c, "g").GetConnectCount()
	reloadAndWait(t, ctx, p, cfg{Servers: servers{"g": g}}, reloadOK)
	if n := serverStatus(t, ctx, c, "g").GetConnectCount(); n != connects {
		t.Errorf("g's connect count went from %d to %d on a reload that did not change it", connects, n)
	}
	g.CallTimeout = "30s"
	reloadAndWait(t, ctx, p, cfg{Servers: servers{"g": g}}, reloadOK)
	eventually(t, time.Minute, "g reconnects under its changed settings", func() bool {
		st := serverStatus(t, ctx, c, "g")
		return st.GetConnectCount() > 0 && st.GetState() == toolsvcv1.ServerState_SERVER_STATE_READY
	})
	if res, err := call(); err != nil || resultText(res) != "again" {
		t.Fatalf("CallTool after the reload = %v, %v", res, err)
	}
}

// TestGRPCUpstreamInteractive: a gRPC upstream's input requests
// (RESULT_TYPE_INPUT_REQUIRED) reach toolsvc's callers as any 2026-07-28
// upstream's do, and their answers go back as the binding's
// input_responses with the upstream's request_state: a ToolService
// CallToolStream caller answers an elicitation and a sampling request; a
// front-door client of either era answers an elicitation, and a client of
// toolsvc's Mcp service (the published Python package) both; a declined one ends
// as the tool decides; prompts and reads ask likewise; an input request of no kind, or one over the
// bound, is refused as a malformed answer and the session goes on.
func TestGRPCUpstreamInteractive(t *testing.T) {
	t.Parallel()
	up := newGRPCUpstream(t)
	p := startToolsvc(t, cfg{Servers: servers{"s": {Type: "grpc", URL: up.url()}}}, "--mcp-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), 2*defaultTestTimeout)
	defer cancel()
	c := p.client

	// stream runs one round of CallToolStream and returns its result.
	stream := func(req *toolsvcv1.CallToolStreamRequest) (*toolsvcv1.CallToolResponse, error) {
		s, err := c.CallToolStream(ctx, req)
		if err != nil {
			return nil, err
		}
		_, res, err := streamEvents(t, s)
		return res, err
	}
	for tool, want := range map[string]string{"s__ask_name": "hello Ada", "s__ask_sample": "model said: hi there"} {
		res, err := stream(&toolsvcv1.CallToolStreamRequest{Name: tool, InputCapabilities: allInput})
		ir := res.GetInputRequired()
		if err != nil || ir == nil || len(ir.GetRequests()) != 1 || ir.GetRequestState() == "" {
			t.Fatalf("CallToolStream(%s) = %v, %v; want input_required with one request and a state", tool, res, err)
		}
		if ir.GetReplicaBound() {
			t.Errorf("%s: a relayed call is not replica-bound", tool)
		}
		res, err = stream(&toolsvcv1.CallToolStreamRequest{Name: tool, InputCapabilities: allInput,
			InputResponses: answer(t, ir.GetRequests(), "Ada"), RequestState: ir.GetRequestState()})
		if err != nil || res.GetInputRequired() != nil || res.GetIsError() || resultText(res) != want {
			t.Fatalf("CallToolStream(%s) answered = %v, %v; want %q", tool, res, err, want)
		}
	}
	// What was asked arrives as it was asked: the form's message and
	// schema, the sampling message.
	res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "s__ask_name", InputCapabilities: allInput})
	if err != nil || res.GetInputRequired() == nil {
		t.Fatalf("CallTool(s__ask_name) = %v, %v", res, err)
	}
	q := res.GetInputRequired().GetRequests()[0]
	var schema map[string]any
	if e := q.GetElicitation(); e == nil || e.GetMessage() != "your name?" || json.Unmarshal([]byte(e.GetRequestedSchemaJson()), &schema) != nil ||
		fmt.Sprint(schema["required"]) != "[name]" || schema["properties"].(map[string]any)["name"].(map[string]any)["title"] != "Name" {
		t.Fatalf("the elicitation as relayed: %v", q)
	}
	// Declined: the tool decides what that means (here: an error result).
	declined, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "s__ask_name", InputCapabilities: allInput,
		RequestState: res.GetInputRequired().GetRequestState(), InputResponses: []*toolsvcv1.InputResponse{{Id: q.GetId(),
			Response: &toolsvcv1.InputResponse_Elicitation{Elicitation: &toolsvcv1.ElicitationResponse{Action: "decline"}}}}})
	if err != nil || !declined.GetIsError() || resultText(declined) != "declined" {
		t.Fatalf("s__ask_name declined = %v, %v; want the tool's error result \"declined\"", declined, err)
	}

	// A 2026-07-28 front-door client continues the call itself.
	cs := manualFront2026(t, ctx, p)
	fres, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__ask_name", Arguments: map[string]any{}})
	if err != nil || !fres.NeedsInput() || len(fres.InputRequests) != 1 || fres.RequestState == "" {
		t.Fatalf("front door s__ask_name: %+v, %v; want input_required with one request and a requestState", fres, err)
	}
	var id string
	for k, r := range fres.InputRequests {
		if e, ok := r.(*mcp.ElicitParams); !ok || e.Message != "your name?" {
			t.Fatalf("front door s__ask_name: request %s is %#v, want the form elicitation", k, r)
		}
		id = k
	}
	done, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__ask_name", Arguments: map[string]any{}, RequestState: fres.RequestState,
		InputResponses: mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Eve"}}}})
	if err != nil || done.NeedsInput() || callText(t, done) != "hello Eve" {
		t.Fatalf("front door s__ask_name continued: %+v, %v; want hello Eve", done, err)
	}

	// Prompts and reads ask as calls do (the checks of the stdio and HTTP
	// upstreams' asking prompt and resource).
	askPromptsAndReadsGRPC(t, ctx, c, false)

	// A 2025-11-25 front-door client is asked with server-to-client
	// requests on its session (go-sdk's handlers answer them).
	old := mcp.NewClient(&mcp.Implementation{Name: "asked", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}, Sampling: &mcp.SamplingCapabilities{}},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Old"}}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: "hey"}, Model: "m"}, nil
		},
	})
	ocs, err := old.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + p.mcpAddr + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer ocs.Close()
	for tool, want := range map[string]string{"s__ask_name": "hello Old", "s__ask_sample": "model said: hey"} {
		ores, err := ocs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil || ores.IsError || callText(t, ores) != want {
			t.Errorf("2025-11-25 front-door client, %s: %+v, %v; want %q", tool, ores, err, want)
		}
	}

	// A client of toolsvc's own Mcp service (the published Python
	// package): the binding end to end, gRPC client to gRPC upstream.
	got := runMcpGrpcClient(t, ctx, p.addr, "", []mcpStep{{"rpc": "CallTool", "name": "s__ask_name"}, {"rpc": "CallTool", "name": "s__ask_sample"}})
	if o := got[0]; o.Error != nil || o.Text != "hello Ada" || !slices.Equal(o.Asked, []string{"elicitation"}) {
		t.Errorf("Mcp CallTool s__ask_name = %+v, want one elicitation round, then hello Ada", o)
	}
	if o := got[1]; o.Error != nil || o.Text != "model said: hi there" || !slices.Equal(o.Asked, []string{"sampling"}) {
		t.Errorf("Mcp CallTool s__ask_sample = %+v, want one sampling round, then the model's text", o)
	}

	// Input requests toolsvc cannot pass on: refused with the field at
	// fault, and the session serves the next call.
	for tool, wantMsg := range map[string]string{"s__bad_ask": `input_requests[\"what\"]: set exactly one of`,
		"s__big_ask": `input_requests[\"big\"]: 2097`} {
		_, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: allInput})
		wantStatus(t, err, codes.Internal, "UPSTREAM_MALFORMED", "s", "")
		if !strings.Contains(status.Convert(err).Message(), strings.ReplaceAll(wantMsg, `\"`, `"`)) {
			t.Errorf("%s: %v; want the message to name %s", tool, err, wantMsg)
		}
	}
	res, err = c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "s__echo", ArgumentsJson: `{"text": "still here"}`})
	if err != nil || resultText(res) != "still here" {
		t.Fatalf("CallTool(s__echo) after the refusals = %v, %v", res, err)
	}
}

// TestGRPCUpstreamFrozen: an upstream that serves the binding is frozen
// (SIGSTOP) with its connection open, and no call is made (callTimeout is
// an hour, so neither it nor the breaker can notice): the prober's ping is
// a round trip to the process, which gets no answer, so the server leaves
// READY and its session ends on the probes; SIGCONT brings it back READY
// and calls work again.
func TestGRPCUpstreamFrozen(t *testing.T) {
	t.Parallel()
	up := newGRPCUpstream(t)
	p := startToolsvc(t, cfg{Servers: servers{"g": fastSupervision(upstream{Type: "grpc", URL: up.url(), CallTimeout: "1h"})}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*defaultTestTimeout)
	defer cancel()
	c := p.client
	call := func() (*toolsvcv1.CallToolResponse, error) {
		return c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "g__echo", ArgumentsJson: `{"text": "awake"}`})
	}
	if res, err := call(); err != nil || resultText(res) != "awake" {
		t.Fatalf("CallTool before the freeze = %v, %v", res, err)
	}
	pid := up.p.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	waitStopped(t, pid)

	var last string
	eventually(t, time.Minute, "g to leave READY on its probes", func() bool {
		st := serverStatus(t, ctx, c, "g")
		last = st.GetLastError()
		return st.GetState() != toolsvcv1.ServerState_SERVER_STATE_READY && strings.Contains(last, "probe")
	})
	t.Logf("g's last error while frozen: %s", last)
	p.log.waitFor(t, regexpMust(`upstream down; reconnecting.*server=g.*session lost: probe 3/3 failed`), time.Minute)

	_ = syscall.Kill(pid, syscall.SIGCONT)
	eventually(t, time.Minute, "g is READY again after SIGCONT", func() bool {
		return serverStatus(t, ctx, c, "g").GetState() == toolsvcv1.ServerState_SERVER_STATE_READY
	})
	eventually(t, time.Minute, "calls work again", func() bool {
		res, err := call()
		return err == nil && resultText(res) == "awake"
	})
}
