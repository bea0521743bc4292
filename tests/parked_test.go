package tests

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Parked server-to-client requests: what one call,
// one principal and the replica may have waiting for callers, and how a
// call toolsvc ends answers its upstream.

// floodRecordOf is tests/testserver's flood_record for id: how ask_flood's
// requests were answered, and whether all were.
func floodRecordOf(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient, server, id string) (map[string]float64, bool) {
	t.Helper()
	res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__flood_record", ArgumentsJson: fmt.Sprintf(`{"id": %q}`, id)})
	if err != nil {
		t.Fatalf("flood_record: %v", err)
	}
	if res.GetIsError() {
		return nil, false
	}
	m := res.GetStructuredContent().AsMap()
	out := map[string]float64{}
	answers, _ := m["answers"].(map[string]any)
	for k, v := range answers {
		out[k], _ = v.(float64)
	}
	done, _ := m["done"].(bool)
	return out, done
}

// TestParkedFloodIsBounded: an upstream (go-sdk, streamable HTTP,
// 2025-11-25) that asks 1,500 elicitations of 200 KB at once in one call
// gets at most --max-parked-per-call of them parked; every other one is
// declined at once (none left waiting, none answered with an error), the
// caller learns why (TOO_MANY_WAITING, limit max_parked_per_call), and
// toolsvc's goroutines come back to where they were. Before, each request
// was held on its own goroutine until the input timeout (1.18 GB of heap
// and 1,583 goroutines for this call).
func TestParkedFloodIsBounded(t *testing.T) {
	t.Parallel()
	url := startProc(t, exec.Command(bin.testserver, "-mode", "http", "-interactive")).log.waitFor(t, urlLineRE, 30*time.Second)
	// No health probes: the upstream busy writing 300 MB of requests on a
	// loaded machine may not answer a ping within its 5 s.
	p := startToolsvc(t, cfg{Servers: servers{"a": {URL: url, PingInterval: "1h"}}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	before := metricValue(t, p, "go_goroutines")
	const count = 1500
	res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "a__ask_flood", InputCapabilities: allInput,
		ArgumentsJson: fmt.Sprintf(`{"id": "flood", "count": %d, "bytes": 200000}`, count)})
	var state string
	switch {
	case err != nil: // the bound was passed while the first round waited
		ei := wantStatus(t, err, codes.ResourceExhausted, "TOO_MANY_WAITING", "a", "a__ask_flood")
		if ei.GetMetadata()["limit"] != "max_parked_per_call" {
			t.Errorf("limit = %q, want max_parked_per_call", ei.GetMetadata()["limit"])
		}
	case res.GetInputRequired() == nil:
		t.Fatalf("ask_flood = %v, want input_required or TOO_MANY_WAITING", res)
	default:
		if n := len(res.GetInputRequired().GetRequests()); n < 1 || n > 8 {
			t.Errorf("the first round asks %d requests, want 1 to --max-parked-per-call (8)", n)
		}
		state = res.GetInputRequired().GetRequestState()
	}
	var answers map[string]float64
	eventually(t, 2*time.Minute, "every request of the flood answered", func() bool {
		var done bool
		answers, done = floodRecordOf(t, ctx, p.client, "a", "flood")
		return done
	})
	// toolsvc declines each request it reads; those still on their way
	// when it cancels the call (a second after the first decline) end
	// with the call. None is answered with an error ("error: …" keys),
	// none waits.
	if answers["decline"] < 1 || answers["decline"]+answers["ended"] != count || len(answers) > 2 {
		t.Errorf("the flood's %d requests were answered %v, want each declined or ended by the call's cancellation", count, answers)
	}
	if state != "" {
		// The requests the caller was asked were declined with the rest;
		// its retry learns why the call ended.
		ir := res.GetInputRequired()
		_, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "a__ask_flood", InputCapabilities: allInput,
			ArgumentsJson: fmt.Sprintf(`{"id": "flood", "count": %d, "bytes": 200000}`, count),
			RequestState:  state, InputResponses: answer(t, ir.GetRequests(), "Ada")})
		ei := wantStatus(t, err, codes.ResourceExhausted, "TOO_MANY_WAITING", "a", "a__ask_flood")
		if ei.GetMetadata()["limit"] != "max_parked_per_call" {
			t.Errorf("the retry's limit = %q, want max_parked_per_call", ei.GetMetadata()["limit"])
		}
	}
	eventually(t, 30*time.Second, "no call waiting", func() bool {
		return metricValue(t, p, "toolsvc_interactive_calls_waiting") == 0
	})
	// What stays is the answers' idle keep-alive connections to the
	// upstream (at most 256, two goroutines each), not a goroutine per
	// request (1,500 and more before).
	eventually(t, 30*time.Second, "the flood's goroutines to end", func() bool {
		return metricValue(t, p, "go_goroutines") < before+600
	})
	// The upstream session took no harm: the next interactive call works.
	if got, _ := callInteractive(t, ctx, p.client, "a__ask_name", true); got != "hello Ada" {
		t.Errorf("after the flood ask_name = %q, want hello Ada", got)
	}
}

// TestParkedOversizedRequestRefused: an elicitation over
// --max-input-request-bytes is declined before it is parked: the caller
// gets RESOURCE_EXHAUSTED INPUT_REQUEST_TOO_LARGE (limit_bytes), the
// upstream the decline, and nothing stays waiting.
func TestParkedOversizedRequestRefused(t *testing.T) {
	t.Parallel()
	url := startProc(t, exec.Command(bin.testserver, "-mode", "http", "-interactive")).log.waitFor(t, urlLineRE, 30*time.Second)
	p := startToolsvc(t, cfg{Servers: servers{"a": {URL: url}}}, "--max-input-request-bytes", "65536")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	_, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "a__ask_flood", InputCapabilities: allInput,
		ArgumentsJson: `{"id": "big", "count": 1, "bytes": 100000}`})
	ei := wantStatus(t, err, codes.ResourceExhausted, "INPUT_REQUEST_TOO_LARGE", "a", "a__ask_flood")
	if ei.GetMetadata()["limit_bytes"] != "65536" || ei.GetMetadata()["kind"] != "elicitation" {
		t.Errorf("metadata = %v, want limit_bytes 65536 and kind elicitation", ei.GetMetadata())
	}
	var answers map[string]float64
	eventually(t, 30*time.Second, "the oversized request answered", func() bool {
		var done bool
		answers, done = floodRecordOf(t, ctx, p.client, "a", "big")
		return done
	})
	if answers["decline"] != 1 || len(answers) != 1 {
		t.Errorf("the oversized request was answered %v, want declined", answers)
	}
	eventually(t, 30*time.Second, "no call waiting", func() bool {
		return metricValue(t, p, "toolsvc_interactive_calls_waiting") == 0
	})
}

// TestParkedRootsOnlyCallsDoNotLockOut: 1,030 slow calls of alice that
// merely offer roots (as every go-sdk client's do) wait on nothing but
// their upstream; they do not count as waiting, so bob's interactive
// calls — parked on a 2025-11-25 upstream, relayed from a 2026-07-28 one
// — still get their input_required and complete. Before, the replica-wide
// --max-waiting (1,024) counted them, and bob got TOO_MANY_WAITING.
func TestParkedRootsOnlyCallsDoNotLockOut(t *testing.T) {
	t.Parallel()
	const aliceToken, bobToken = "alice-token-0123456789", "bob-token-0123456789"
	url := startProc(t, exec.Command(bin.testserver, "-mode", "http", "-interactive")).log.waitFor(t, urlLineRE, 30*time.Second)
	stdio26 := upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}, ProtocolVersion: "2026-07-28"}
	p := startToolsvc(t, cfg{Auth: &authCfg{Tokens: map[string]string{"alice": aliceToken, "bob": bobToken},
		Rules: []rule{{Principal: "alice", Allow: []string{"*"}}, {Principal: "bob", Allow: []string{"*"}}}},
		Servers: servers{"slow": goStdio(upstream{}), "old": {URL: url}, "new": stdio26}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	alice, stopAlice := context.WithCancel(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+aliceToken))
	defer stopAlice()
	bob := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+bobToken)
	const slow = 1030
	var wg sync.WaitGroup
	errs := make(chan error, slow)
	for i := range slow {
		wg.Go(func() {
			_, err := p.client.CallTool(alice, &toolsvcv1.CallToolRequest{Name: "slow__wait_cancel",
				ArgumentsJson: fmt.Sprintf(`{"id": "s%d", "ms": 600000}`, i), InputCapabilities: &toolsvcv1.InputCapabilities{Roots: true}})
			errs <- err
		})
	}
	eventually(t, 3*time.Minute, "alice's slow calls all in flight upstream", func() bool {
		return upstreamCalls(t, bob, p.client, "slow")["wait_cancel"] >= slow
	})
	if n := metricValue(t, p, "toolsvc_interactive_calls_waiting"); n != 0 {
		t.Errorf("toolsvc_interactive_calls_waiting = %v with only calls that offer roots, want 0", n)
	}
	for _, tool := range []string{"old__ask_name", "new__ask_name"} {
		req := &toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: allInput}
		res, err := p.client.CallTool(bob, req)
		if err != nil || res.GetInputRequired() == nil {
			t.Fatalf("%s as bob beside alice's %d slow calls: %v, %v; want input_required", tool, slow, res, err)
		}
		ir := res.GetInputRequired()
		req.RequestState, req.InputResponses = ir.GetRequestState(), answer(t, ir.GetRequests(), "Bob")
		if res, err = p.client.CallTool(bob, req); err != nil || resultText(res) != "hello Bob" {
			t.Errorf("%s answered by bob: %v, %v", tool, res, err)
		}
	}
	stopAlice()
	wg.Wait()
	close(errs)
	for err := range errs {
		if status.Code(err) != codes.Canceled {
			t.Fatalf("alice's slow call: %v, want cancelled by alice", err)
		}
	}
}

// TestParkedDeclineKeepsPython1Session: a FastMCP server of the Python SDK
// 1.x (mcp 1.30.0) over stdio asks alice mid-call; she never answers. At
// --input-timeout toolsvc sends the documented decline, and no
// notifications/cancelled with it: before, it answered with a JSON-RPC
// error and cancelled the call at the same moment, the SDK answered the
// call twice ("Request already responded to", python-sdk#2416) and the
// server exited, failing bob's call in flight on the same session.
func TestParkedDeclineKeepsPython1Session(t *testing.T) {
	t.Parallel()
	const aliceToken, bobToken = "alice-token-0123456789", "bob-token-0123456789"
	script := filepath.Join(rootDir(t), "tests", "python", "ask_server_v1.py")
	p := startToolsvc(t, cfg{Auth: &authCfg{Tokens: map[string]string{"alice": aliceToken, "bob": bobToken},
		Rules: []rule{{Principal: "alice", Allow: []string{"*"}}, {Principal: "bob", Allow: []string{"*"}}}},
		Servers: servers{"py": {Command: venvBin(t, "mcp1", "python"), Args: []string{script}, ConnectTimeout: "2m"}}}, "--input-timeout", "3s")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	alice := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+aliceToken)
	bob := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+bobToken)
	eventually(t, 2*time.Minute, "the Python server's tools listed", func() bool {
		res, err := p.client.ListTools(bob, &toolsvcv1.ListToolsRequest{})
		return err == nil && hasTool(res.GetTools(), "py__ask_name")
	})
	res, err := p.client.CallTool(alice, &toolsvcv1.CallToolRequest{Name: "py__ask_name", InputCapabilities: allInput})
	if err != nil || !res.GetInputRequired().GetReplicaBound() {
		t.Fatalf("ask_name as alice: %v, %v; want a parked input_required", res, err)
	}
	ir := res.GetInputRequired()
	// Bob's call waits, on the same session, for alice's to be answered.
	bobRes, err := p.client.CallTool(bob, &toolsvcv1.CallToolRequest{Name: "py__wait_answered", ArgumentsJson: `{"n": 1}`})
	if err != nil || bobRes.GetIsError() || resultText(bobRes) != "answered: decline" {
		t.Fatalf("bob's call beside alice's expiring one: %v, %v; want \"answered: decline\"", bobRes, err)
	}
	_, err = p.client.CallTool(alice, &toolsvcv1.CallToolRequest{Name: "py__ask_name", InputCapabilities: allInput,
		RequestState: ir.GetRequestState(), InputResponses: answer(t, ir.GetRequests(), "Late")})
	wantStatus(t, err, codes.InvalidArgument, "REQUEST_STATE_EXPIRED", "py", "py__ask_name")
	// The server survived: the same process still remembers the answer
	// (a restarted one would have none, and bob's call would wait), and it
	// still asks.
	bobRes, err = p.client.CallTool(bob, &toolsvcv1.CallToolRequest{Name: "py__wait_answered", ArgumentsJson: `{"n": 1}`})
	if err != nil || resultText(bobRes) != "answered: decline" {
		t.Fatalf("bob's call after the expiry: %v, %v; want the same server's \"answered: decline\"", bobRes, err)
	}
	if got, _ := callInteractive(t, bob, p.client, "py__ask_name", true); got != "hello Ada" {
		t.Errorf("ask_name as bob after the expiry = %q, want hello Ada", got)
	}
}
