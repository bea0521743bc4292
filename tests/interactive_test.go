package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Interactive calls (README "Tools that ask") against the go-sdk test
// server's asking tools (testserver/interactive.go), in both protocol
// eras: under 2025-11-25 the upstream asks mid-call and toolsvc parks the
// request; under 2026-07-28 the upstream's own input_required is relayed.

// interactiveCells are the upstream configurations: name, upstream, and
// whether the call is parked (2025-11-25) rather than relayed.
func interactiveCells(t *testing.T) []struct {
	name   string
	up     upstream
	parked bool
} {
	stdio := upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}}
	stdio26 := stdio
	stdio26.ProtocolVersion = "2026-07-28"
	httpURL := startProc(t, exec.Command(bin.testserver, "-mode", "http", "-interactive")).log.waitFor(t, urlLineRE, 30*time.Second)
	statelessURL := startProc(t, exec.Command(bin.testserver, "-mode", "http-stateless", "-interactive")).log.waitFor(t, urlLineRE, 30*time.Second)
	return []struct {
		name   string
		up     upstream
		parked bool
	}{
		{"stdio-2025", stdio, true},
		{"stdio-2026", stdio26, false},
		{"http-2025", upstream{URL: httpURL}, true},
		{"http-stateless-2026", upstream{URL: statelessURL}, false},
	}
}

var allInput = &toolsvcv1.InputCapabilities{Elicitation: true, ElicitationUrl: true, Sampling: true, Roots: true}

// answer answers every request the way a caller would: a name for forms,
// accept for URLs, a model message, one root.
func answer(t *testing.T, reqs []*toolsvcv1.InputRequest, name string) []*toolsvcv1.InputResponse {
	t.Helper()
	var out []*toolsvcv1.InputResponse
	for _, r := range reqs {
		a := &toolsvcv1.InputResponse{Id: r.GetId()}
		switch q := r.GetRequest().(type) {
		case *toolsvcv1.InputRequest_Elicitation:
			var schema map[string]any
			if err := json.Unmarshal([]byte(q.Elicitation.GetRequestedSchemaJson()), &schema); err != nil || schema["properties"] == nil {
				t.Fatalf("elicitation schema %q: %v", q.Elicitation.GetRequestedSchemaJson(), err)
			}
			content, _ := json.Marshal(map[string]any{"name": name})
			a.Response = &toolsvcv1.InputResponse_Elicitation{Elicitation: &toolsvcv1.ElicitationResponse{Action: "accept", ContentJson: string(content)}}
		case *toolsvcv1.InputRequest_ElicitationUrl:
			if !strings.HasPrefix(q.ElicitationUrl.GetUrl(), "https://login.example/") {
				t.Fatalf("URL elicitation url = %q", q.ElicitationUrl.GetUrl())
			}
			a.Response = &toolsvcv1.InputResponse_Elicitation{Elicitation: &toolsvcv1.ElicitationResponse{Action: "accept"}}
		case *toolsvcv1.InputRequest_Sampling:
			var p map[string]any
			if err := json.Unmarshal([]byte(q.Sampling.GetParamsJson()), &p); err != nil || p["messages"] == nil {
				t.Fatalf("sampling params %q: %v", q.Sampling.GetParamsJson(), err)
			}
			a.Response = &toolsvcv1.InputResponse_Sampling{Sampling: &toolsvcv1.SamplingResponse{
				ResultJson: `{"role":"assistant","content":{"type":"text","text":"hi there"},"model":"test-model"}`}}
		case *toolsvcv1.InputRequest_Roots:
			a.Response = &toolsvcv1.InputResponse_Roots{Roots: &toolsvcv1.RootsResponse{Roots: []*toolsvcv1.Root{{Uri: "file:///work", Name: "work"}}}}
		default:
			t.Fatalf("request %q of no kind", r.GetId())
		}
		out = append(out, a)
	}
	return out
}

// callInteractive calls tool, answering every round, until its result;
// it returns the result text and the number of rounds that asked.
func callInteractive(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient, tool string, wantBound bool) (string, int) {
	t.Helper()
	req := &toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: allInput}
	for rounds := 0; rounds < 8; rounds++ {
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("%s round %d: %v", tool, rounds, err)
		}
		ir := res.GetInputRequired()
		if ir == nil {
			return resultText(res), rounds
		}
		if len(ir.GetRequests()) == 0 || ir.GetRequestState() == "" {
			t.Fatalf("%s: input_required without requests or state: %v", tool, ir)
		}
		if ir.GetReplicaBound() != wantBound {
			t.Errorf("%s: replica_bound = %v, want %v", tool, ir.GetReplicaBound(), wantBound)
		}
		if exp := ir.GetExpireTime().AsTime(); exp.Before(time.Now()) || exp.After(time.Now().Add(time.Hour)) {
			t.Errorf("%s: expire_time %v is not a near future", tool, exp)
		}
		if len(res.GetContent()) != 0 {
			t.Errorf("%s: input_required with content %v", tool, res.GetContent())
		}
		req = &toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: allInput,
			InputResponses: answer(t, ir.GetRequests(), "Ada"), RequestState: ir.GetRequestState()}
	}
	t.Fatalf("%s: still asking after 8 rounds", tool)
	return "", 0
}

func TestInteractiveCalls(t *testing.T) {
	cells := interactiveCells(t)
	ss := servers{}
	for i, c := range cells {
		ss[[]string{"a", "b", "c", "d"}[i]] = c.up
	}
	p := startToolsvc(t, cfg{Servers: ss})
	for i, cell := range cells {
		server := []string{"a", "b", "c", "d"}[i]
		t.Run(cell.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
			defer cancel()
			t.Run("form", func(t *testing.T) {
				got, rounds := callInteractive(t, ctx, p.client, server+"__ask_name", cell.parked)
				if got != "hello Ada" || rounds != 1 {
					t.Errorf("ask_name = %q after %d rounds, want \"hello Ada\" after 1", got, rounds)
				}
			})
			t.Run("url", func(t *testing.T) {
				got, _ := callInteractive(t, ctx, p.client, server+"__ask_url", cell.parked)
				if got != "url accept" {
					t.Errorf("ask_url = %q, want \"url accept\"", got)
				}
			})
			t.Run("all kinds", func(t *testing.T) {
				got, rounds := callInteractive(t, ctx, p.client, server+"__ask_all", cell.parked)
				if got != "name=Ada model=hi there roots=file:///work" || rounds < 1 {
					t.Errorf("ask_all = %q after %d rounds", got, rounds)
				}
			})
			t.Run("not offered: policy declines", func(t *testing.T) {
				res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__ask_name"})
				if err != nil {
					t.Fatal(err)
				}
				if res.GetInputRequired() != nil || resultText(res) != "declined" {
					t.Errorf("ask_name without input_capabilities = %v, want the policy's decline", res)
				}
			})
			t.Run("decline", func(t *testing.T) {
				res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__ask_name", InputCapabilities: allInput})
				if err != nil {
					t.Fatal(err)
				}
				ir := res.GetInputRequired()
				res, err = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__ask_name", InputCapabilities: allInput,
					RequestState: ir.GetRequestState(), InputResponses: []*toolsvcv1.InputResponse{{Id: ir.GetRequests()[0].GetId(),
						Response: &toolsvcv1.InputResponse_Elicitation{Elicitation: &toolsvcv1.ElicitationResponse{Action: "decline"}}}}})
				if err != nil || resultText(res) != "declined" {
					t.Errorf("declined ask_name = %v, %v", res, err)
				}
			})
			t.Run("bad state", func(t *testing.T) {
				res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__ask_name", InputCapabilities: allInput})
				if err != nil {
					t.Fatal(err)
				}
				st := res.GetInputRequired().GetRequestState()
				responses := answer(t, res.GetInputRequired().GetRequests(), "Eve")
				tampered := st[:len(st)-3] + "AAA"
				_, err = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__ask_name", InputCapabilities: allInput, RequestState: tampered, InputResponses: responses})
				wantStatus(t, err, codes.InvalidArgument, "REQUEST_STATE_INVALID", server, server+"__ask_name")
				_, err = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__ask_url", InputCapabilities: allInput, RequestState: st, InputResponses: responses})
				wantStatus(t, err, codes.InvalidArgument, "REQUEST_STATE_INVALID", server, server+"__ask_url")
				// Unanswered, and answered with the wrong kind: refused, and
				// the call still waits for its answer.
				if cell.parked {
					_, err = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__ask_name", InputCapabilities: allInput, RequestState: st})
					wantStatus(t, err, codes.InvalidArgument, "INPUT_RESPONSES_INVALID", server, server+"__ask_name")
				}
				res, err = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__ask_name", InputCapabilities: allInput, RequestState: st, InputResponses: responses})
				if err != nil || resultText(res) != "hello Eve" {
					t.Errorf("after refused retries, ask_name = %v, %v", res, err)
				}
				if cell.parked {
					// The state was used: its call is over.
					_, err = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__ask_name", InputCapabilities: allInput, RequestState: st, InputResponses: responses})
					wantStatus(t, err, codes.FailedPrecondition, "INPUT_STATE_GONE", server, server+"__ask_name")
				}
			})
			if cell.name != "stdio-2025" {
				// Two callers' questions at once: each answer reaches its
				// own call (on stdio a 2025-era upstream's requests cannot
				// be told apart while two calls are in flight).
				t.Run("concurrent", func(t *testing.T) {
					var irs []*toolsvcv1.InputRequired
					for range 2 {
						res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__ask_name", InputCapabilities: allInput})
						if err != nil || res.GetInputRequired() == nil {
							t.Fatalf("ask_name: %v, %v", res, err)
						}
						irs = append(irs, res.GetInputRequired())
					}
					for i := len(irs) - 1; i >= 0; i-- {
						name := []string{"First", "Second"}[i]
						res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__ask_name", InputCapabilities: allInput,
							RequestState: irs[i].GetRequestState(), InputResponses: answer(t, irs[i].GetRequests(), name)})
						if err != nil || resultText(res) != "hello "+name {
							t.Errorf("call %d answered %q: %v, %v", i, name, res, err)
						}
					}
				})
			}
			if cell.parked {
				t.Run("two rounds mid-call", func(t *testing.T) {
					got, rounds := callInteractive(t, ctx, p.client, server+"__ask_twice", true)
					if got != "Ada+Ada" || rounds != 2 {
						t.Errorf("ask_twice = %q after %d rounds, want \"Ada+Ada\" after 2", got, rounds)
					}
				})
			}
		})
	}
}

// TestInteractiveBounds: a parked request nobody answers is declined at
// its expiry and its call ends; a caller that goes away ends its call; the
// principal's bound on waiting calls holds.
func TestInteractiveBounds(t *testing.T) {
	url := startProc(t, exec.Command(bin.testserver, "-mode", "http", "-interactive")).log.waitFor(t, urlLineRE, 30*time.Second)
	p := startToolsvc(t, cfg{Servers: servers{"a": {URL: url}}}, "--input-timeout", "1s", "--max-waiting-per-principal", "2")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	ask := &toolsvcv1.CallToolRequest{Name: "a__ask_name", InputCapabilities: allInput}
	res, err := p.client.CallTool(ctx, ask)
	if err != nil || res.GetInputRequired() == nil {
		t.Fatalf("ask_name: %v, %v", res, err)
	}
	first := res.GetInputRequired()
	if _, err := p.client.CallTool(ctx, ask); err != nil {
		t.Fatal(err)
	}
	_, err = p.client.CallTool(ctx, ask)
	wantStatus(t, err, codes.ResourceExhausted, "TOO_MANY_WAITING", "a", "a__ask_name")
	if n := metricValue(t, p, "toolsvc_interactive_calls_waiting"); n != 2 {
		t.Errorf("toolsvc_interactive_calls_waiting = %v with two calls parked, want 2", n)
	}
	// Expiry: the state is refused, and the waiting calls are gone, so the
	// principal may ask again.
	time.Sleep(1500 * time.Millisecond)
	eventually(t, 10*time.Second, "the expired calls to leave toolsvc_interactive_calls_waiting", func() bool {
		return metricValue(t, p, "toolsvc_interactive_calls_waiting") == 0
	})
	_, err = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "a__ask_name", InputCapabilities: allInput,
		RequestState: first.GetRequestState(), InputResponses: answer(t, first.GetRequests(), "Late")})
	wantStatus(t, err, codes.InvalidArgument, "REQUEST_STATE_EXPIRED", "a", "a__ask_name")
	got, _ := callInteractive(t, ctx, p.client, "a__ask_name", true)
	if got != "hello Ada" {
		t.Errorf("after expiry ask_name = %q", got)
	}
	// A call whose question nobody answers is cancelled upstream at its
	// expiry (declined, then cancelled: the tool works on after the answer
	// and sees its context end, not its 20 s pass).
	res, err = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "a__ask_wait", ArgumentsJson: `{"id": "unanswered", "then_ms": 20000}`, InputCapabilities: allInput})
	if err != nil || !res.GetInputRequired().GetReplicaBound() {
		t.Fatalf("ask_wait: %v, %v", res, err)
	}
	rec := waitCancelRecord(t, ctx, p.client, "a", "unanswered", 10*time.Second)
	if exp := res.GetInputRequired().GetExpireTime().AsTime(); rec.cancelled.IsZero() || rec.cancelled.Before(exp) {
		t.Errorf("the unanswered call's upstream: %+v, want cancelled after its expiry %v", rec, exp)
	}
	// A caller that goes away while its call may still ask ends the call
	// (the upstream sees it cancelled), and its slot is given back.
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	_, err = p.client.CallTool(short, &toolsvcv1.CallToolRequest{Name: "a__wait_cancel", ArgumentsJson: `{"id": "gone", "ms": 20000}`, InputCapabilities: allInput})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("wait_cancel past the caller's deadline: %v", err)
	}
	if rec := waitCancelRecord(t, ctx, p.client, "a", "gone", 10*time.Second); rec.cancelled.IsZero() {
		t.Errorf("the upstream call of a caller that went away was not cancelled: %+v", rec)
	}
}

// TestInteractiveReplicas: a relayed call (2026-07-28) continues on any
// replica sharing the state key; a parked one (2025-11-25) is refused on
// another replica with INPUT_STATE_ELSEWHERE naming the replica.
func TestInteractiveReplicas(t *testing.T) {
	key := filepath.Join(t.TempDir(), "state.key")
	if err := os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdio := upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}}
	stdio26 := stdio
	stdio26.ProtocolVersion = "2026-07-28"
	c := cfg{Servers: servers{"old": stdio, "new": stdio26}}
	a := startToolsvc(t, c, "--state-key-file", key)
	b := startToolsvc(t, c, "--state-key-file", key)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()

	res, err := a.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "new__ask_name", InputCapabilities: allInput})
	if err != nil || res.GetInputRequired() == nil || res.GetInputRequired().GetReplicaBound() {
		t.Fatalf("new__ask_name on a: %v, %v", res, err)
	}
	ir := res.GetInputRequired()
	res, err = b.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "new__ask_name", InputCapabilities: allInput,
		RequestState: ir.GetRequestState(), InputResponses: answer(t, ir.GetRequests(), "Bea")})
	if err != nil || resultText(res) != "hello Bea" {
		t.Errorf("relayed call continued on b: %v, %v", res, err)
	}

	res, err = a.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "old__ask_name", InputCapabilities: allInput})
	if err != nil || !res.GetInputRequired().GetReplicaBound() {
		t.Fatalf("old__ask_name on a: %v, %v", res, err)
	}
	ir = res.GetInputRequired()
	_, err = b.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "old__ask_name", InputCapabilities: allInput,
		RequestState: ir.GetRequestState(), InputResponses: answer(t, ir.GetRequests(), "Bea")})
	ei := wantStatus(t, err, codes.FailedPrecondition, "INPUT_STATE_ELSEWHERE", "old", "old__ask_name")
	if ei.GetMetadata()["replica"] == "" {
		t.Errorf("INPUT_STATE_ELSEWHERE names no replica: %v", ei.GetMetadata())
	}
	// Back on the replica that holds it, the call goes on.
	res, err = a.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "old__ask_name", InputCapabilities: allInput,
		RequestState: ir.GetRequestState(), InputResponses: answer(t, ir.GetRequests(), "Bea")})
	if err != nil || resultText(res) != "hello Bea" {
		t.Errorf("parked call continued on a: %v, %v", res, err)
	}
}

// TestInteractiveFrontDoor: a 2025-11-25 MCP client of the front door that
// declares elicitation, sampling and roots is asked by the upstreams of
// both eras (server-to-client requests on its session); a client that
// declares none gets the policy's answers.
func TestInteractiveFrontDoor(t *testing.T) {
	stdio := upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}}
	stdio26 := stdio
	stdio26.ProtocolVersion = "2026-07-28"
	p := startToolsvc(t, cfg{Servers: servers{"old": stdio, "new": stdio26}}, "--mcp-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	endpoint := "http://" + p.mcpAddr + "/mcp"

	client := mcp.NewClient(&mcp.Implementation{Name: "asked", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if r.Params.Mode == "url" {
				return &mcp.ElicitResult{Action: "accept"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Front"}}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: "hi there"}, Model: "m"}, nil
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	plain, err := mcp.NewClient(&mcp.Implementation{Name: "plain", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: endpoint}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for _, server := range []string{"old", "new"} {
		for tool, want := range map[string]string{"ask_name": "hello Front", "ask_url": "url accept",
			"ask_all": "name=Front model=hi there roots=file:///work"} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server + "__" + tool, Arguments: map[string]any{}})
			if err != nil || res.IsError || callText(t, res) != want {
				t.Errorf("%s__%s through the front door: %v, %v; want %q", server, tool, res, err, want)
			}
		}
		res, err := plain.CallTool(ctx, &mcp.CallToolParams{Name: server + "__ask_name", Arguments: map[string]any{}})
		if err != nil || callText(t, res) != "declined" {
			t.Errorf("%s__ask_name for a client without elicitation: %v, %v", server, res, err)
		}
	}
}

// TestInteractiveStateOtherPrincipal: a request_state is the principal's
// own: another principal's retry with it is PERMISSION_DENIED, on a
// relayed and on a parked call alike, and the owner can still continue.
func TestInteractiveStateOtherPrincipal(t *testing.T) {
	const annToken, bobToken = "ann-token-0123456789", "bob-token-0123456789"
	stdio := upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}}
	stdio26 := stdio
	stdio26.ProtocolVersion = "2026-07-28"
	p := startToolsvc(t, cfg{Auth: &authCfg{Tokens: map[string]string{"ann": annToken, "bob": bobToken},
		Rules: []rule{{Principal: "ann", Allow: []string{"*"}}, {Principal: "bob", Allow: []string{"*"}}}},
		Servers: servers{"old": stdio, "new": stdio26}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	ann := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+annToken)
	bob := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+bobToken)
	for _, server := range []string{"new", "old"} {
		tool := server + "__ask_name"
		res, err := p.client.CallTool(ann, &toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: allInput})
		if err != nil || res.GetInputRequired() == nil {
			t.Fatalf("%s as ann: %v, %v", tool, res, err)
		}
		ir := res.GetInputRequired()
		retry := &toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: allInput,
			RequestState: ir.GetRequestState(), InputResponses: answer(t, ir.GetRequests(), "Bob")}
		_, err = p.client.CallTool(bob, retry)
		wantStatus(t, err, codes.PermissionDenied, "REQUEST_STATE_NOT_YOURS", server, tool)
		retry.InputResponses = answer(t, ir.GetRequests(), "Ann")
		res, err = p.client.CallTool(ann, retry)
		if err != nil || resultText(res) != "hello Ann" {
			t.Errorf("%s continued by ann: %v, %v", tool, res, err)
		}
	}
}
