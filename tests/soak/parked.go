package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Hostile interactive cases: what a caller answers and what an
// upstream asks are bounded, and a call toolsvc ends answers its upstream
// with the documented decline. Each runs on go-http (the go-sdk server
// over streamable HTTP at 2025-11-25): its requests mid-call are linked to
// their call by the response stream, so toolsvc parks them for the caller
// even while the load runs other calls on the same session; and it keeps
// flood_record process-wide, so any replica can read what the upstream
// got.
//
//   - deep-answer: ask_name's parked request answered with the issue's
//     996-level extra property (content 997 levels deep) → INVALID_ARGUMENT / INPUT_RESPONSES_INVALID naming
//     input_responses[0].elicitation.content_json (limit
//     max_answer_depth); nothing reaches the upstream and the call still
//     waits, so the proper answer on the same request_state must then give
//     "hello Ada". A failure of that second answer that no fault explains
//     counts in upstream_killed_by_answer.
//   - ask-flood: ask_flood asks floodCount elicitations at once, more than
//     --max-parked-per-call (8): the call ends RESOURCE_EXHAUSTED /
//     TOO_MANY_WAITING (limit max_parked_per_call), at once or at a retry
//     that answers a round; or, when the requests came slowly enough to
//     be answered round by round (1-8 each), with all of them accepted.
//   - ask-too-large: one elicitation over the replicas'
//     --max-input-request-bytes → RESOURCE_EXHAUSTED /
//     INPUT_REQUEST_TOO_LARGE (limit_bytes, kind elicitation).
//
// After either refusal the upstream's flood_record must show at most the
// requests the caller answered accepted, every other one declined or ended by the
// call's end, at least one declined and none answered with an error (the
// too-large one: exactly one decline);
// otherwise it counts in upstream_not_declined.

// maxInputRequestBytes is the replicas' --max-input-request-bytes: low, so
// that a too-large request costs the box little, and with the request
// (4 KiB more) under the 64 KiB toolsvc reads of an event line to link a
// request to its call (mcpbridge maxLinkLine). A longer line passes
// unread: its request has no certain call, and while the load has other
// calls in flight on go-http it gets the server's policy, the decline,
// and the call its result; the first soak runs, with 64 KiB and a 68 KiB
// request, saw that in 4 of 9 calls.
const maxInputRequestBytes = 16 << 10

// floodCount is how many elicitations ask-flood asks in one call.
const floodCount = 24

var parkedCases = []string{"deep-answer", "ask-flood", "ask-too-large"}

// parkedServer is the go-http upstream.
func (s *soak) parkedServer() *upstream {
	for _, u := range s.upstreams {
		if u.name == abandonServer {
			return u
		}
	}
	panic("no " + abandonServer)
}

// callParked runs one hostile interactive case, chosen at random, on r.
func (s *soak) callParked(ctx context.Context, r *replica, id string) {
	c := parkedCases[s.intn(len(parkedCases))]
	s.mu.Lock()
	s.hostileChecks[c]++
	s.mu.Unlock()
	h := &hostileCall{s: s, ctx: ctx, r: r, u: s.parkedServer(), op: "hostile-" + c, start: time.Now()}
	switch c {
	case "deep-answer":
		h.deepAnswer()
	case "ask-flood":
		h.askFlood(id)
	case "ask-too-large":
		h.askTooLarge(id)
	}
}

// deepAnswer sends ask_name's parked request an answer 1,000 levels deep,
// then the proper one.
func (h *hostileCall) deepAnswer() {
	tool := h.u.name + "__ask_name"
	res, err := h.call(&toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: offerForm}, 4*time.Second)
	if err != nil {
		if h.ctx.Err() == nil {
			h.s.fail(h.op, h.r, h.u.name, h.start, err)
		}
		return
	}
	ir := res.GetInputRequired()
	if ir == nil || len(ir.GetRequests()) != 1 || !ir.GetReplicaBound() {
		h.s.wrongResult(h.op, h.r, h.u, h.start, fmt.Sprintf("want one parked request, got %v", clip(fmt.Sprint(res))))
		return
	}
	reqID := ir.GetRequests()[0].GetId()
	answer := func(content string) []*toolsvcv1.InputResponse {
		return []*toolsvcv1.InputResponse{{Id: reqID, Response: &toolsvcv1.InputResponse_Elicitation{
			Elicitation: &toolsvcv1.ElicitationResponse{Action: "accept", ContentJson: content}}}}
	}
	// The answer: the form's own field and a 996-level extra
	// property (schema-valid), so the content is 997 levels deep and the
	// answer 998, one past the bound; before the bound it made go-sdk
	// upstreams exit.
	deep := `{"name":"Ada","x":` + strings.Repeat("[", 996) + strings.Repeat("]", 996) + `}`
	res, err = h.call(&toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: offerForm, RequestState: ir.GetRequestState(), InputResponses: answer(deep)}, 4*time.Second)
	h.refused(res, err, codes.InvalidArgument, "INPUT_RESPONSES_INVALID", func(_ *status.Status, ei *errdetails.ErrorInfo) string {
		if got := ei.GetMetadata()["limit"]; got != "max_answer_depth" {
			return fmt.Sprintf("limit %q, want max_answer_depth", got)
		}
		return fieldsWant(err, "input_responses[0].elicitation.content_json")
	})
	if h.ctx.Err() != nil || status.Code(err) != codes.InvalidArgument {
		return
	}
	// The refused answer reached nobody: the call still waits for a
	// proper one, and the upstream session answers it.
	h.start, h.op = time.Now(), "hostile-deep-answer-then-answer"
	res, err = h.call(&toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: offerForm, RequestState: ir.GetRequestState(), InputResponses: answer(`{"name":"Ada"}`)}, 4*time.Second)
	h.echoed(res, err, "hello Ada")
}

// askFlood asks floodCount elicitations in one call. The bound is on
// requests waiting at once: on a busy box the upstream's requests may come
// slowly enough that each round toolsvc hands the caller holds 1-8 of
// them, and the caller answers round by round; the call then ends with
// the upstream's account of floodCount accepted answers. Otherwise a round
// or the retry that answers it ends TOO_MANY_WAITING.
func (h *hostileCall) askFlood(id string) {
	tool := h.u.name + "__ask_flood"
	id = "flood-" + id
	a := args(map[string]any{"id": id, "count": floodCount, "bytes": 200})
	res, err := h.call(&toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: offerForm, Arguments: a}, 4*time.Second)
	accepted := 0 // requests the caller answered
	for round := 1; err == nil && res.GetInputRequired() != nil; round++ {
		ir := res.GetInputRequired()
		if n := len(ir.GetRequests()); n < 1 || n > 8 || round > floodCount {
			h.s.wrongResult(h.op, h.r, h.u, h.start, fmt.Sprintf("round %d asks %d requests, want 1 to 8 in at most %d rounds", round, n, floodCount))
			return
		}
		var answers []*toolsvcv1.InputResponse
		for _, q := range ir.GetRequests() {
			answers = append(answers, &toolsvcv1.InputResponse{Id: q.GetId(), Response: &toolsvcv1.InputResponse_Elicitation{
				Elicitation: &toolsvcv1.ElicitationResponse{Action: "accept", ContentJson: `{"name":"Ada"}`}}})
		}
		accepted += len(answers)
		h.op, h.start = "hostile-ask-flood-retry", time.Now()
		res, err = h.call(&toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: offerForm, Arguments: a,
			RequestState: ir.GetRequestState(), InputResponses: answers}, 4*time.Second)
	}
	if err == nil {
		// Every request answered by the caller, round by round.
		h.echoed(res, err, fmt.Sprintf("map[accept:%d]", floodCount))
		return
	}
	h.refused(res, err, codes.ResourceExhausted, "TOO_MANY_WAITING", func(_ *status.Status, ei *errdetails.ErrorInfo) string {
		if got := ei.GetMetadata()["limit"]; got != "max_parked_per_call" {
			return fmt.Sprintf("limit %q, want max_parked_per_call", got)
		}
		return ""
	})
	if h.ctx.Err() == nil && status.Code(err) == codes.ResourceExhausted {
		h.checkDeclined(id, floodCount, accepted)
	}
}

// askTooLarge asks one elicitation over --max-input-request-bytes.
func (h *hostileCall) askTooLarge(id string) {
	id = "large-" + id
	res, err := h.call(&toolsvcv1.CallToolRequest{Name: h.u.name + "__ask_flood", InputCapabilities: offerForm,
		Arguments: args(map[string]any{"id": id, "count": 1, "bytes": maxInputRequestBytes + 4096})}, 4*time.Second)
	h.refused(res, err, codes.ResourceExhausted, "INPUT_REQUEST_TOO_LARGE", func(_ *status.Status, ei *errdetails.ErrorInfo) string {
		if m := ei.GetMetadata(); m["limit_bytes"] != strconv.Itoa(maxInputRequestBytes) || m["kind"] != "elicitation" {
			return fmt.Sprintf("metadata %v, want limit_bytes %d and kind elicitation", m, maxInputRequestBytes)
		}
		return ""
	})
	if h.ctx.Err() == nil && status.Code(err) == codes.ResourceExhausted {
		h.checkDeclined(id, 1, -1)
	}
}

// checkDeclined waits (up to 10 s) for the upstream's flood_record of id
// to be done and checks how its count requests were answered: at most
// accepted of them (those the caller answered) accepted, the others
// declined or ended by the call's end,
// at least one declined, never an error; with accepted -1, every one
// declined. A record that is gone (a fault restarted the process) checks
// nothing.
func (h *hostileCall) checkDeclined(id string, count, accepted int) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		answers, done, ok := h.s.floodRecord(h.ctx, h.r, h.u, id)
		if h.ctx.Err() != nil || !ok {
			return
		}
		if done {
			declined, ended, acc := answers["decline"], answers["ended"], answers["accept"]
			// A round the caller answered after the call passed its bound
			// was declined with the rest: the caller's answers reach the
			// upstream only for the rounds answered before.
			bad := acc > accepted || acc+declined+ended != count || declined < 1
			if accepted < 0 {
				bad = declined != count || len(answers) != 1
			}
			if bad {
				h.s.noteNotDeclined(fmt.Sprintf("%s on replica%d: %d requests (%d answered by the caller) answered %s", h.op, h.r.idx, count, accepted, fmtAnswers(answers)))
			}
			return
		}
		if time.Now().After(deadline) {
			h.s.noteNotDeclined(fmt.Sprintf("%s on replica%d: %d requests not all answered 10 s after the call ended: %s", h.op, h.r.idx, count, fmtAnswers(answers)))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// floodRecord is the upstream's flood_record of id: how its ask_flood
// requests were answered, and whether all were. ok is false when it has
// no such record or could not be asked.
func (s *soak) floodRecord(ctx context.Context, r *replica, u *upstream, id string) (answers map[string]int, done, ok bool) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	res, err := r.client.CallTool(cctx, &toolsvcv1.CallToolRequest{Name: u.name + "__flood_record", Arguments: args(map[string]any{"id": id})})
	if err != nil || res.GetIsError() {
		return nil, false, false
	}
	m := res.GetStructuredContent().AsMap()
	answers = map[string]int{}
	if a, ok := m["answers"].(map[string]any); ok {
		for k, v := range a {
			n, _ := v.(float64)
			answers[k] = int(n)
		}
	}
	done, _ = m["done"].(bool)
	return answers, done, true
}

func fmtAnswers(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s:%d", k, v))
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, " ") + "}"
}

func (s *soak) noteNotDeclined(d string) {
	s.mu.Lock()
	s.notDeclined = append(s.notDeclined, d)
	s.mu.Unlock()
	s.logf("NOT DECLINED %s", d)
}
