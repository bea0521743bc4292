package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// What a caller answers an upstream is bounded and checked like its
// arguments (docs/security.md "What a caller answers"): against real go-sdk,
// TypeScript-SDK upstreams and front-door clients.

// deepJSON is a JSON object {"name": "x", "deep": [[…]]} nested depth
// levels (the object is level 1).
func deepJSON(depth int) string {
	return `{"name":"x","deep":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
}

// TestDeepAnswerBounded: an elicitation answer nested past what a go-sdk
// upstream decodes (the 996 levels, sent six times: the upstream
// exited each time and its breaker opened for every principal) is refused
// with INVALID_ARGUMENT naming the field, on gRPC and the front door, in
// both eras; the call still waits for a proper answer, and another
// principal's call to the same upstream succeeds.
func TestDeepAnswerBounded(t *testing.T) {
	t.Parallel()
	const annToken, bobToken = "ann-token-0123456789", "bob-token-0123456789"
	stdio := upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}}
	stdio26 := stdio
	stdio26.ProtocolVersion = "2026-07-28"
	p := startToolsvc(t, cfg{Auth: &authCfg{Tokens: map[string]string{"ann": annToken, "bob": bobToken},
		Rules: []rule{{Principal: "ann", Allow: []string{"*"}}, {Principal: "bob", Allow: []string{"*"}}}},
		// "frontold" and "frontold26": a front-door call refused below stays
		// parked on its stdio upstream, where a second call in flight could
		// not be told apart (its request would get the policy), so each
		// front-door client has its own 2025-era upstream.
		Servers: servers{"old": stdio, "new": stdio26, "frontold": stdio, "frontold26": stdio}}, "--mcp-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	ann := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+annToken)
	bob := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+bobToken)
	// The answer: a 996-level extra property, so the content is
	// 997 levels deep, one past the bound.
	deep := deepJSON(997)
	// "new" first: before the bound, the 2026-07-28 retry that carries
	// the answer was nested past go-sdk's limit and the upstream exited.
	for _, server := range []string{"new", "old"} {
		tool := server + "__ask_name"
		res, err := p.client.CallTool(ann, &toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: allInput})
		if err != nil || res.GetInputRequired() == nil {
			t.Fatalf("%s: %v, %v; want input_required", tool, res, err)
		}
		ir := res.GetInputRequired()
		id := ir.GetRequests()[0].GetId()
		for range 6 {
			_, err = p.client.CallTool(ann, &toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: allInput, RequestState: ir.GetRequestState(),
				InputResponses: []*toolsvcv1.InputResponse{{Id: id, Response: &toolsvcv1.InputResponse_Elicitation{
					Elicitation: &toolsvcv1.ElicitationResponse{Action: "accept", ContentJson: deep}}}}})
			ei := wantStatus(t, err, codes.InvalidArgument, "INPUT_RESPONSES_INVALID", "", "")
			if ei.GetMetadata()["max_depth"] == "" {
				t.Errorf("%s: deep answer refused without max_depth: %v", tool, ei.GetMetadata())
			}
			if f := fieldViolations(err); len(f) != 1 || f[0] != "input_responses[0].elicitation.content_json" {
				t.Errorf("%s: deep answer's violations name %v, want input_responses[0].elicitation.content_json", tool, f)
			}
		}
		// Another principal's call to the same upstream succeeds.
		res, err = p.client.CallTool(bob, &toolsvcv1.CallToolRequest{Name: server + "__echo", ArgumentsJson: `{"text":"still up"}`})
		if err != nil || resultText(res) != "still up" {
			t.Fatalf("bob's %s__echo after ann's deep answers: %v, %v", server, res, err)
		}
		// And the refused call still takes its proper answer.
		res, err = p.client.CallTool(ann, &toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: allInput, RequestState: ir.GetRequestState(),
			InputResponses: answer(t, ir.GetRequests(), "Ada")})
		if err != nil || resultText(res) != "hello Ada" {
			t.Errorf("%s answered properly after the deep answers: %v, %v", tool, res, err)
		}
	}

	// The front door: a 2026-07-28 client's inputResponses, and a
	// 2025-11-25 client's answer to toolsvc's elicitation/create.
	front := func(version string, handler func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
		opts := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
			ElicitationHandler: handler}
		if version == "2026-07-28" {
			opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "deep", Version: "1"}, opts)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + p.mcpAddr + "/mcp",
			HTTPClient: &http.Client{Transport: headerRoundTripper{"Authorization": "Bearer " + annToken}}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("front door (%s): %v", version, err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	var deepContent map[string]any
	if err := json.Unmarshal([]byte(deep), &deepContent); err != nil {
		t.Fatal(err)
	}
	cs25 := front("2025-11-25", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: deepContent}, nil
	})
	for _, server := range []string{"frontold", "new"} {
		res, err := cs25.CallTool(ctx, &mcp.CallToolParams{Name: server + "__ask_name", Arguments: map[string]any{}})
		if err == nil || !strings.Contains(err.Error(), "levels") {
			text := ""
			if res != nil {
				text = callText(t, res)
			}
			t.Errorf("front door (2025-11-25) %s__ask_name answered deep: %q, %v; want an error naming the depth", server, text, err)
		}
	}
	for _, server := range []string{"frontold26", "new"} {
		// A 2026-07-28 retry carries the answer five levels inside the
		// message: the front door's go-sdk decoder refuses the message
		// itself (HTTP 400, the session closed), before the core sees it.
		cs26 := front("2026-07-28", nil)
		tool := server + "__ask_name"
		res, err := cs26.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil || !res.NeedsInput() {
			t.Fatalf("front door %s: %+v, %v; want input_required", tool, res, err)
		}
		var id string
		for k := range res.InputRequests {
			id = k
		}
		done, err := cs26.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, RequestState: res.RequestState,
			InputResponses: mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept", Content: deepContent}}})
		if err == nil {
			t.Errorf("front door (2026-07-28) %s with a deep answer: %+v; want it refused", tool, done)
		}
	}
	for _, server := range []string{"old", "new", "frontold", "frontold26"} {
		res, err := p.client.CallTool(bob, &toolsvcv1.CallToolRequest{Name: server + "__echo", ArgumentsJson: `{"text":"still up"}`})
		if err != nil || resultText(res) != "still up" {
			t.Errorf("bob's %s__echo after the front door's deep answers: %v, %v", server, res, err)
		}
	}
}

// TestRelayedAnswersChecked: the answers to a relayed input_required
// (2026-07-28 upstream) are checked as a parked call's are: an id that was
// not asked, an answer of another kind, and a missing answer are refused
// without reaching the upstream, and the call still takes its answer.
func TestRelayedAnswersChecked(t *testing.T) {
	t.Parallel()
	stdio26 := upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}, ProtocolVersion: "2026-07-28"}
	p := startToolsvc(t, cfg{Servers: servers{"new": stdio26}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "new__ask_name", InputCapabilities: allInput})
	if err != nil || res.GetInputRequired() == nil {
		t.Fatalf("ask_name: %v, %v", res, err)
	}
	ir := res.GetInputRequired()
	id := ir.GetRequests()[0].GetId()
	elicit := &toolsvcv1.InputResponse_Elicitation{Elicitation: &toolsvcv1.ElicitationResponse{Action: "accept", ContentJson: `{"name":"Eve"}`}}
	sampling := &toolsvcv1.InputResponse_Sampling{Sampling: &toolsvcv1.SamplingResponse{
		ResultJson: `{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}`}}
	many := []*toolsvcv1.InputResponse{{Id: id, Response: elicit}}
	for i := range 10000 {
		many = append(many, &toolsvcv1.InputResponse{Id: "\x1b[31mx" + strings.Repeat("y", i%7) + string(rune('a'+i%26)) + strings.Repeat("z", i/26), Response: elicit})
	}
	for name, rs := range map[string][]*toolsvcv1.InputResponse{
		"not asked":       {{Id: id, Response: elicit}, {Id: "other", Response: elicit}},
		"another kind":    {{Id: id, Response: sampling}},
		"none":            nil,
		"10,000 wrong":    many,
		"missing the one": {{Id: "other", Response: elicit}},
	} {
		_, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "new__ask_name", InputCapabilities: allInput,
			RequestState: ir.GetRequestState(), InputResponses: rs})
		wantStatus(t, err, codes.InvalidArgument, "INPUT_RESPONSES_INVALID", "", "")
		if msg := err.Error(); strings.Contains(msg, "\x1b") {
			t.Errorf("%s: the refusal echoes a control character: %q", name, msg)
		}
	}
	res, err = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "new__ask_name", InputCapabilities: allInput,
		RequestState: ir.GetRequestState(), InputResponses: answer(t, ir.GetRequests(), "Ada")})
	if err != nil || resultText(res) != "hello Ada" {
		t.Errorf("after the refused answers: %v, %v", res, err)
	}
}

// TestPolicyInputAnswers2026: with "input": "policy" the server's policy
// answers, in both eras: a caller that offers every kind of input is not
// asked (before, a 2026-07-28 upstream's input_required was relayed).
func TestPolicyInputAnswers2026(t *testing.T) {
	t.Parallel()
	// "decline" declares elicitation (without an elicitation policy a
	// policy session declares none, and go-sdk fails the call instead).
	stdio := upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}, Input: "policy", Elicitation: "decline"}
	stdio26 := stdio
	stdio26.ProtocolVersion = "2026-07-28"
	withDefaults := stdio26
	withDefaults.Elicitation = "defaults"
	p := startToolsvc(t, cfg{Servers: servers{"old": stdio, "new": stdio26, "dflt": withDefaults}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	for tool, want := range map[string]string{"old__ask_name": "declined", "new__ask_name": "declined",
		"dflt__ask_form": `form {"color":"blue","size":3}`} {
		res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: allInput})
		if err != nil || res.GetInputRequired() != nil || resultText(res) != want {
			t.Errorf("%s under input: policy, offering every kind = %v, %v; want %q from the policy", tool, res, err, want)
		}
	}
	// An upstream that asks on and on, each round answered by the policy:
	// the call ends after 10 rounds with its reason and a log line
	// naming the server (before: INTERNAL with neither).
	_, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "new__ask_forever"})
	ei := wantStatus(t, err, codes.Internal, "UPSTREAM_MALFORMED", "new", "new__ask_forever")
	if ei.GetMetadata()["limit"] != "max_policy_rounds" || !strings.Contains(err.Error(), "11 rounds") {
		t.Errorf("ask_forever: %v, metadata %v; want 11 rounds named and limit max_policy_rounds", err, ei.GetMetadata())
	}
	p.log.waitFor(t, regexp.MustCompile(`kept asking for input.*server=new`), 30*time.Second)
}

// TestAnswerForwardedAsGiven: an accepted form reaches the upstream as
// the caller sent it, without the schema's defaults (go-sdk's client and
// server fill them in): from gRPC, parked (a TypeScript-SDK upstream,
// whose server adds none) and relayed (the go-sdk test server's 2026-07-28
// input_required), and from a TypeScript-SDK front-door client (2025-11-25:
// toolsvc asks it with elicitation/create).
func TestAnswerForwardedAsGiven(t *testing.T) {
	t.Parallel()
	ask := startAskServers(t, "ts-stdio")
	stdio26 := upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}, ProtocolVersion: "2026-07-28"}
	p := startToolsvc(t, cfg{Servers: servers{"ts": ask.servers["ts-stdio"], "new": stdio26}}, "--mcp-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	for _, tool := range []string{"ts__ask_form", "new__ask_form"} {
		got, rounds := callInteractive(t, ctx, p.client, tool, tool == "ts__ask_form")
		if want := `form {"name":"Ada"}`; got != want || rounds != 1 {
			t.Errorf("%s answered {\"name\":\"Ada\"} over gRPC: the upstream saw %q after %d rounds, want %q", tool, got, rounds, want)
		}
	}
	cmd := exec.CommandContext(ctx, nodePath(t, node22), filepath.Join(bin.nodeDir, "ask_front_client.mjs"), "http://"+p.mcpAddr, "ts__ask_form", "new__ask_form")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ask_front_client.mjs: %v\n%s\n%s", err, out, stderr.String())
	}
	var r askFrontReport
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("report %q: %v", out, err)
	}
	for _, tool := range []string{"ts__ask_form", "new__ask_form"} {
		if want := `form {"name":"Front"}`; r.Results[tool] != want {
			t.Errorf("%s answered {\"name\":\"Front\"} by the TypeScript front-door client (%s): the upstream saw %q, want %q", tool, r.Protocol, r.Results[tool], want)
		}
	}
}
