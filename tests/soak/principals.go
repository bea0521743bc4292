package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Principals: the replicas run with an auth section of three
// static bearer tokens. Everything the soak did before (load, watchers,
// checks, tasks) is principal soak, an admin (ListServers' warnings, which
// the hostile listing checks, are for admins only). The principal-flood,
// run inside every abandon-input fault (which already holds go-http, the
// config and the replicas, and waits out the expiries anyway), sets
// flooder against other on one replica:
//
//   - flooder starts flooderCalls interactive calls of go-http's ask_name
//     at once and never answers: each must end parked (input_required) or
//     RESOURCE_EXHAUSTED / TOO_MANY_WAITING with limit
//     max_waiting_per_principal, and at most --max-waiting-per-principal
//     (16) park; meanwhile it streams log_levels (floodLogRepeat × 8
//     lines) on go-http and go-stdio;
//   - other, while flooder's calls wait and its lines are logged, streams
//     log_levels on the same two upstreams and runs otherCalls
//     interactive ask_name calls, answered: each must be "hello Bob".
//
// principal_flood_violations counts a flooder answer other than those two,
// more than 16 parked, a capacity refusal (RESOURCE_EXHAUSTED) of other,
// a wrong answer to other, and every log line a principal's stream got
// that was not of its own call (another tag); a failure of other's call
// that a fault explains (go-stdio killed meanwhile) is a failure like any.
// flooder_refused counts flooder's refusals; 0 in a run means the bound
// was never reached.

const (
	principalSoak    = "soak"
	principalFlooder = "flooder"
	principalOther   = "other"

	flooderCalls   = 24
	otherCalls     = 3
	floodLogRepeat = 250
	// the replicas' default --max-waiting-per-principal
	maxWaitingPerPrincipal = 16
)

// bearer is gRPC per-RPC credentials sending a static bearer token; the
// soak talks to its replicas over loopback without TLS.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return false }

// authConfig is the replicas' auth section. Audit lines are off: one per
// call would add a log line per load call to every replica log.
func (s *soak) authConfig() map[string]any {
	var rules []map[string]any
	for _, p := range []string{principalSoak, principalFlooder, principalOther} {
		rules = append(rules, map[string]any{"principal": p, "allow": []string{"*"}})
	}
	return map[string]any{
		"tokens": s.tokens,
		"admins": []string{principalSoak},
		"rules":  rules,
		"audit":  map[string]any{"enabled": false},
	}
}

// principalFlood runs flooder against other on a random replica (see
// above). u is go-http; the log lines are also logged on go-stdio.
func (s *soak) principalFlood(ctx context.Context, u *upstream, seq int) {
	r := s.replicas[s.intn(len(s.replicas))]
	var stdio *upstream
	for _, x := range s.upstreams {
		if x.sdk == sdkGo && x.tr == trStdio {
			stdio = x
		}
	}
	var wg sync.WaitGroup
	// flooder's log lines, on both upstreams, until its calls are parked.
	floodLogs, stopLogs := context.WithCancel(ctx)
	defer stopLogs()
	for _, lu := range []*upstream{u, stdio} {
		wg.Go(func() {
			for k := 0; floodLogs.Err() == nil; k++ {
				s.streamLogs(floodLogs, r, r.flooder, principalFlooder, lu, fmt.Sprintf("flooder-%d-%d", seq, k), floodLogRepeat)
			}
		})
	}
	// flooder's interactive calls, never answered.
	start := time.Now()
	var mu sync.Mutex
	parked, refused := 0, 0
	var calls sync.WaitGroup
	for range flooderCalls {
		calls.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			defer cancel()
			res, err := r.flooder.CallTool(cctx, &toolsvcv1.CallToolRequest{Name: u.name + "__ask_name", InputCapabilities: offerForm})
			s.calls.Add(1)
			if ctx.Err() != nil {
				return
			}
			code, reason, _ := reasonOf(err)
			switch {
			case err == nil && res.GetInputRequired().GetReplicaBound():
				mu.Lock()
				parked++
				mu.Unlock()
			case code == codes.ResourceExhausted && reason == "TOO_MANY_WAITING" && limitOf(err) == "max_waiting_per_principal":
				mu.Lock()
				refused++
				mu.Unlock()
			case err != nil && code != codes.ResourceExhausted:
				s.fail("principal-flood-flooder", r, u.name, start, err)
			default:
				s.notePrincipalFlood(fmt.Sprintf("flooder's ask_name on replica%d: %v (%v), want input_required or TOO_MANY_WAITING max_waiting_per_principal", r.idx, clip(fmt.Sprint(res)), err))
			}
		})
	}
	calls.Wait()
	if parked > maxWaitingPerPrincipal {
		s.notePrincipalFlood(fmt.Sprintf("replica%d parked %d of flooder's calls, past --max-waiting-per-principal %d", r.idx, parked, maxWaitingPerPrincipal))
	}
	s.mu.Lock()
	s.flooderRefused += refused
	s.mu.Unlock()
	// other, while flooder's calls wait and its lines are logged.
	var og sync.WaitGroup
	for _, lu := range []*upstream{u, stdio} {
		og.Go(func() { s.streamLogs(ctx, r, r.other, principalOther, lu, fmt.Sprintf("other-%d-%s", seq, lu.name), 2) })
	}
	for i := range otherCalls {
		og.Go(func() { s.otherInteractive(ctx, r, u, fmt.Sprintf("principal-flood-other-%d", i)) })
	}
	og.Wait()
	stopLogs()
	wg.Wait()
}

// otherInteractive runs one ask_name as other, answered "Bob".
func (s *soak) otherInteractive(ctx context.Context, r *replica, u *upstream, op string) {
	start := time.Now()
	tool := u.name + "__ask_name"
	cctx, cancel := context.WithTimeout(ctx, 2*callTimeout)
	defer cancel()
	res, err := r.other.CallTool(cctx, &toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: offerForm})
	s.calls.Add(1)
	if err == nil {
		ir := res.GetInputRequired()
		if ir == nil || len(ir.GetRequests()) != 1 {
			s.notePrincipalFlood(fmt.Sprintf("other's ask_name on replica%d beside the flood: %v, want one request", r.idx, clip(fmt.Sprint(res))))
			return
		}
		res, err = r.other.CallTool(cctx, &toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: offerForm, RequestState: ir.GetRequestState(),
			InputResponses: []*toolsvcv1.InputResponse{{Id: ir.GetRequests()[0].GetId(), Response: &toolsvcv1.InputResponse_Elicitation{
				Elicitation: &toolsvcv1.ElicitationResponse{Action: "accept", ContentJson: `{"name":"Bob"}`}}}}})
		s.calls.Add(1)
	}
	if ctx.Err() != nil {
		return
	}
	switch {
	case status.Code(err) == codes.ResourceExhausted:
		s.notePrincipalFlood(fmt.Sprintf("other's ask_name on replica%d refused beside the flood: %v", r.idx, err))
	case err != nil:
		s.fail(op, r, u.name, start, err)
	case resultText(res) != "hello Bob" || res.GetIsError():
		s.notePrincipalFlood(fmt.Sprintf("other's ask_name on replica%d beside the flood: %q (is_error %v), want \"hello Bob\"", r.idx, clip(resultText(res)), res.GetIsError()))
	}
}

// streamLogs streams log_levels with tag as principal p and counts every
// log line of the upstream's that is not of this call (another tag).
// toolsvc may drop lines it cannot attribute, and a lagging reader's
// oldest (then one "toolsvc" warning): no line of another call is allowed.
func (s *soak) streamLogs(ctx context.Context, r *replica, c toolsvcv1.ToolServiceClient, p string, u *upstream, tag string, repeat int) {
	op := "principal-flood-logs-" + p
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	st, err := c.CallToolStream(cctx, &toolsvcv1.CallToolStreamRequest{Name: u.name + "__log_levels",
		Arguments: args(map[string]any{"tag": tag, "repeat": repeat}), InputCapabilities: &toolsvcv1.InputCapabilities{LogLevel: "debug"}})
	s.calls.Add(1)
	own := fmt.Sprintf(`"tag":%q`, tag)
	for err == nil {
		var m *toolsvcv1.CallToolStreamResponse
		if m, err = st.Recv(); err != nil {
			break
		}
		if l := m.GetLog(); l != nil {
			switch {
			case l.GetLogger() == "levels" && strings.Contains(strings.ReplaceAll(l.GetDataJson(), " ", ""), own):
				s.ownLogLines.Add(1)
			case l.GetLogger() == "toolsvc":
			default:
				s.notePrincipalFlood(fmt.Sprintf("%s's log_levels %s on replica%d got a line not of its call: %s %s", p, u.name, r.idx, l.GetLogger(), clip(l.GetDataJson())))
			}
		}
		if res := m.GetResult(); res != nil && (res.GetIsError() || resultText(res) != "logged "+tag) {
			s.notePrincipalFlood(fmt.Sprintf("%s's log_levels %s on replica%d: %q (is_error %v), want \"logged %s\"", p, u.name, r.idx, clip(resultText(res)), res.GetIsError(), tag))
		}
	}
	if errors.Is(err, io.EOF) || ctx.Err() != nil {
		return
	}
	if p == principalFlooder && status.Code(err) == codes.DeadlineExceeded {
		return // a long backlog on a busy box: flooder's own concern
	}
	if status.Code(err) == codes.ResourceExhausted && p == principalOther {
		s.notePrincipalFlood(fmt.Sprintf("other's log_levels %s on replica%d refused beside the flood: %v", u.name, r.idx, err))
		return
	}
	s.fail(op, r, u.name, start, err)
}

// limitOf is the ErrorInfo metadata "limit" of err.
func limitOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if ei, ok := d.(interface{ GetMetadata() map[string]string }); ok {
			return ei.GetMetadata()["limit"]
		}
	}
	return ""
}

func (s *soak) notePrincipalFlood(d string) {
	s.mu.Lock()
	s.floodViolations = append(s.floodViolations, d)
	s.mu.Unlock()
	s.logf("PRINCIPAL FLOOD %s", d)
}
