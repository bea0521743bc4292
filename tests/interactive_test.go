package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Interactive calls (docs/interactive.md) against the go-sdk test
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
	// The bound counts calls that asked: the same caller's calls that offer
	// input but never ask still run, concurrently and beyond it.
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "a__echo", InputCapabilities: allInput,
				ArgumentsJson: fmt.Sprintf(`{"text":"e%d"}`, i)})
			if err != nil || res.GetIsError() || res.GetInputRequired() != nil {
				t.Errorf("echo %d offering input with two calls parked: %v, %v", i, res, err)
			}
		})
	}
	wg.Wait()
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
	a := startToolsvc(t, c, "--state-key-file", key, "--mcp-listen", "127.0.0.1:0")
	b := startToolsvc(t, c, "--state-key-file", key, "--mcp-listen", "127.0.0.1:0")
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

	// The same through the front doors, for a 2026-07-28 MCP client that
	// continues its calls itself.
	fa, fb := manualFront2026(t, ctx, a), manualFront2026(t, ctx, b)
	for _, server := range []string{"new", "old"} {
		tool := server + "__ask_name"
		first, err := fa.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil || !first.NeedsInput() || len(first.InputRequests) != 1 {
			t.Fatalf("%s on a's front door: %+v, %v; want input_required", tool, first, err)
		}
		answers := mcp.InputResponseMap{}
		for id := range first.InputRequests {
			answers[id] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Bea"}}
		}
		retry := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, InputResponses: answers, RequestState: first.RequestState}
		res, err := fb.CallTool(ctx, retry)
		if server == "new" {
			if err != nil || callText(t, res) != "hello Bea" {
				t.Errorf("%s continued on b's front door: %+v, %v; want hello Bea", tool, res, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "another replica") {
			t.Errorf("%s (parked on a) continued on b's front door: %+v, %v; want an error saying it waits on another replica", tool, res, err)
		}
		if res, err = fa.CallTool(ctx, retry); err != nil || callText(t, res) != "hello Bea" {
			t.Errorf("%s continued on a's front door: %+v, %v; want hello Bea", tool, res, err)
		}
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

	asked := func(opts *mcp.ClientOptions) *mcp.Client {
		opts.Capabilities = &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
			Sampling:    &mcp.SamplingCapabilities{}}
		opts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if r.Params.Mode == "url" {
				return &mcp.ElicitResult{Action: "accept"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Front"}}, nil
		}
		opts.CreateMessageHandler = func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: "hi there"}, Model: "m"}, nil
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "asked", Version: "1"}, opts)
		c.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"})
		return c
	}
	connect := func(c *mcp.Client, version string) *mcp.ClientSession {
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("connect (%s): %v", version, err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	// Both client eras: a 2025-11-25 client is asked with server-to-client
	// requests on its session; a 2026-07-28 client gets input_required and
	// retries (go-sdk's client does it with the same handlers).
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		cs := connect(asked(&mcp.ClientOptions{}), version)
		plain := connect(mcp.NewClient(&mcp.Implementation{Name: "plain", Version: "1"}, nil), version)
		for _, server := range []string{"old", "new"} {
			wants := map[string]string{"ask_name": "hello Front", "ask_url": "url accept",
				"ask_all": "name=Front model=hi there roots=file:///work"}
			if server == "old" { // asks twice mid-call: protocols before 2026-07-28
				wants["ask_twice"] = "Front+Front"
			}
			for tool, want := range wants {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server + "__" + tool, Arguments: map[string]any{}})
				if err != nil || res.IsError || callText(t, res) != want {
					t.Errorf("%s client, %s__%s through the front door: %v, %v; want %q", version, server, tool, res, err, want)
				}
			}
			res, err := plain.CallTool(ctx, &mcp.CallToolParams{Name: server + "__ask_name", Arguments: map[string]any{}})
			if err != nil || callText(t, res) != "declined" {
				t.Errorf("%s client without elicitation, %s__ask_name: %v, %v", version, server, res, err)
			}
		}
	}
}

// TestInteractiveFrontDoor2026: a 2026-07-28 front-door client that
// continues calls itself sees input_required with the requests and a
// requestState, and its retry with inputResponses completes the call —
// relayed (2026 upstream) and parked (2025 upstream); a tampered state is
// refused.
func TestInteractiveFrontDoor2026(t *testing.T) {
	stdio := upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}}
	stdio26 := stdio
	stdio26.ProtocolVersion = "2026-07-28"
	p := startToolsvc(t, cfg{Servers: servers{"old": stdio, "new": stdio26}}, "--mcp-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	cs := manualFront2026(t, ctx, p)
	for _, server := range []string{"new", "old"} {
		tool := server + "__ask_name"
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil || !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
			t.Fatalf("%s: %+v, %v; want input_required with one request and a requestState", tool, res, err)
		}
		var id string
		for k, r := range res.InputRequests {
			if _, ok := r.(*mcp.ElicitParams); !ok {
				t.Fatalf("%s: request %s is %T, want an elicitation", tool, k, r)
			}
			id = k
		}
		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, RequestState: res.RequestState + "x",
			InputResponses: mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Eve"}}}})
		// Named as the MCP wire names it (it said ToolService's request_state).
		if err == nil || !strings.Contains(err.Error(), "requestState:") {
			t.Errorf("%s with a tampered requestState: %v; want an error naming requestState", tool, err)
		}
		done, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, RequestState: res.RequestState,
			InputResponses: mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}}})
		if err != nil || done.NeedsInput() || callText(t, done) != "hello Ada" {
			t.Errorf("%s continued: %+v, %v; want hello Ada", tool, done, err)
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

// TestInteractivePromptsAndReads: prompts/get and resources/read ask like
// tools/call — relayed from a 2026-07-28 upstream, parked for a 2025-11-25
// one — through gRPC (input_required, then the retry) and through the front
// door (a 2025-11-25 client asked on its session, a 2026-07-28 client
// continuing itself). A caller that offers nothing gets the policy's
// answer (decline).
func TestInteractivePromptsAndReads(t *testing.T) {
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run("upstream "+era, func(t *testing.T) {
			up := upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}, ProtocolVersion: era}
			p := startToolsvc(t, cfg{Servers: servers{"s": up}}, "--mcp-listen", "127.0.0.1:0")
			ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
			defer cancel()
			askPromptsAndReadsGRPC(t, ctx, p.client, era < "2026-07-28")
			for _, version := range []string{"2025-11-25", "2026-07-28"} {
				askPromptsAndReadsFront(t, ctx, "http://"+p.mcpAddr+"/mcp", version)
			}
		})
	}
}

func askPromptsAndReadsGRPC(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient, bound bool) {
	promptText := func(r *toolsvcv1.GetPromptResponse) string {
		if len(r.GetMessages()) != 1 {
			return fmt.Sprintf("%d messages", len(r.GetMessages()))
		}
		return r.GetMessages()[0].GetContent().GetText().GetText()
	}
	readText := func(r *toolsvcv1.ReadResourceResponse) string {
		if len(r.GetContents()) != 1 {
			return fmt.Sprintf("%d contents", len(r.GetContents()))
		}
		return r.GetContents()[0].GetText()
	}
	const prompt = "s__ask_prompt"
	pr, err := c.GetPrompt(ctx, &toolsvcv1.GetPromptRequest{Name: prompt, InputCapabilities: allInput})
	ir := pr.GetInputRequired()
	if err != nil || ir == nil || len(ir.GetRequests()) != 1 || ir.GetReplicaBound() != bound || len(pr.GetMessages()) != 0 {
		t.Fatalf("GetPrompt %s: %v, %v; want input_required (replica_bound %v) and no messages", prompt, pr, err, bound)
	}
	_, err = c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Server: "s", Uri: "ask://greeting", InputCapabilities: allInput,
		RequestState: ir.GetRequestState(), InputResponses: answer(t, ir.GetRequests(), "Eve")})
	wantStatus(t, err, codes.InvalidArgument, "REQUEST_STATE_INVALID", "s", "") // a read continued with the prompt's state
	pr, err = c.GetPrompt(ctx, &toolsvcv1.GetPromptRequest{Name: prompt, InputCapabilities: allInput,
		RequestState: ir.GetRequestState(), InputResponses: answer(t, ir.GetRequests(), "Ada")})
	if err != nil || pr.GetInputRequired() != nil || promptText(pr) != "Greet Ada" {
		t.Errorf("GetPrompt %s continued: %v, %v; want \"Greet Ada\"", prompt, pr, err)
	}
	pr, err = c.GetPrompt(ctx, &toolsvcv1.GetPromptRequest{Name: prompt})
	if err != nil || promptText(pr) != "Greet decline" {
		t.Errorf("GetPrompt %s offering nothing: %v, %v; want the policy's decline", prompt, pr, err)
	}

	rr, err := c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Uri: "ask://greeting", InputCapabilities: allInput})
	ir = rr.GetInputRequired()
	if err != nil || ir == nil || len(ir.GetRequests()) != 1 || ir.GetReplicaBound() != bound || len(rr.GetContents()) != 0 || rr.GetServer() != "s" {
		t.Fatalf("ReadResource ask://greeting: %v, %v; want input_required from server s", rr, err)
	}
	rr, err = c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Uri: "ask://greeting", InputCapabilities: allInput,
		RequestState: ir.GetRequestState(), InputResponses: answer(t, ir.GetRequests(), "Ada")})
	if err != nil || rr.GetInputRequired() != nil || readText(rr) != "hello Ada" {
		t.Errorf("ReadResource continued: %v, %v; want \"hello Ada\"", rr, err)
	}
	rr, err = c.ReadResource(ctx, &toolsvcv1.ReadResourceRequest{Uri: "ask://greeting"})
	if err != nil || readText(rr) != "hello decline" {
		t.Errorf("ReadResource offering nothing: %v, %v; want the policy's decline", rr, err)
	}
}

func askPromptsAndReadsFront(t *testing.T, ctx context.Context, endpoint, version string) {
	client := mcp.NewClient(&mcp.Implementation{Name: "asked", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Front"}}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "s__ask_prompt"})
	if err != nil || len(gp.Messages) != 1 {
		t.Errorf("%s client, prompts/get: %+v, %v; want one message", version, gp, err)
	} else if tc, ok := gp.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "Greet Front" {
		t.Errorf("%s client, prompts/get: %+v; want \"Greet Front\"", version, gp.Messages[0].Content)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ask://greeting"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "hello Front" {
		t.Errorf("%s client, resources/read: %+v, %v; want \"hello Front\"", version, rr, err)
	}
}

// TestInteractiveCallTimeout: a call that offers input is still bounded
// by its server's callTimeout while the upstream works (DEADLINE_EXCEEDED
// DEADLINE, deadline_source call_timeout), but not while it waits for
// the caller's answer: a parked call answered after longer than
// callTimeout goes on.
func TestInteractiveCallTimeout(t *testing.T) {
	up := upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}, CallTimeout: "1s"}
	p := startToolsvc(t, cfg{Servers: servers{"s": up}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	args, _ := structpb.NewStruct(map[string]any{"id": "interactive-timeout", "ms": 30000})
	_, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "s__wait_cancel", Arguments: args, InputCapabilities: allInput})
	ei := wantStatus(t, err, codes.DeadlineExceeded, "DEADLINE", "s", "s__wait_cancel")
	if ei.GetMetadata()["deadline_source"] != "call_timeout" {
		t.Errorf("deadline_source = %q, want call_timeout", ei.GetMetadata()["deadline_source"])
	}

	res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "s__ask_name", InputCapabilities: allInput})
	ir := res.GetInputRequired()
	if err != nil || ir == nil || !ir.GetReplicaBound() {
		t.Fatalf("s__ask_name: %v, %v; want a parked input_required", res, err)
	}
	time.Sleep(1500 * time.Millisecond) // the person takes longer than callTimeout
	res, err = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "s__ask_name", InputCapabilities: allInput,
		RequestState: ir.GetRequestState(), InputResponses: answer(t, ir.GetRequests(), "Slow")})
	if err != nil || resultText(res) != "hello Slow" {
		t.Errorf("answered after 1.5 s (callTimeout 1 s): %v, %v; want hello Slow", res, err)
	}
}

// manualFront2026 is a 2026-07-28 go-sdk client of p's front door that
// offers form elicitation and continues its calls itself (go-sdk's own
// multi-round-trip retry off): it sees input_required.
func manualFront2026(t *testing.T, ctx context.Context, p *toolsvcProc) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "manual", Version: "1"}, &mcp.ClientOptions{
		Capabilities:   &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + p.mcpAddr + "/mcp"},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}
