package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Callers that never answer: the abandon-input fault starts
// interactive calls and leaves them. Most get input_required and never
// call again; some go away while their first round still waits. Every
// replica runs with --input-timeout inputTimeout, so each parked call must
// be over, its upstream call cancelled, within that bound; the replicas'
// toolsvc_interactive_calls_waiting must be back to 0 after the fault and
// at every quiet period; memory and goroutines are checked at quiet periods
// as always.

// inputTimeout is the replicas' --input-timeout.
const inputTimeout = 3 * time.Second

// inputGrace is how long after its bound (the expiry, or the caller going
// away) an abandoned call's upstream may see the cancellation: a timer, a
// notifications/cancelled over HTTP, a busy box.
const inputGrace = 3 * time.Second

// abandonServer is the upstream the fault asks through: the go-sdk test
// server over streamable HTTP at 2025-11-25, whose requests mid-call
// toolsvc links to their call by the response stream, and which keeps what
// ask_wait saw (cancel_record) process-wide, for every replica.
const abandonServer = sdkGo + "-" + trHTTP

// abandoned is one call the fault left: by when its upstream call must
// have been cancelled.
type abandoned struct {
	id      string
	replica *replica
	how     string // "unanswered" or "gone"
	bound   time.Time
}

var offerForm = &toolsvcv1.InputCapabilities{Elicitation: true}

// faultAbandonInput leaves 2-5 calls unanswered after their input_required
// (one of them retried after the expiry: REQUEST_STATE_EXPIRED) and 1-3
// callers going away before their question comes, then checks that every
// upstream call was cancelled within its bound and that no replica counts
// a waiting call.
func (s *soak) faultAbandonInput(ctx context.Context) {
	f := s.begin("abandon-input", abandonServer, -1)
	defer s.finish(f)
	var u *upstream
	for _, x := range s.upstreams {
		if x.name == abandonServer {
			u = x
		}
	}
	s.mu.Lock()
	s.abandonFaults++
	seq := s.abandonFaults
	s.mu.Unlock()
	tool := u.name + "__ask_wait"
	// Another principal's flood beside these calls (principals.go).
	var flood sync.WaitGroup
	flood.Go(func() { s.principalFlood(ctx, u, seq) })
	defer flood.Wait()
	var left []abandoned
	var expired *toolsvcv1.InputRequired
	var expiredOn *replica
	type goneCall struct {
		a    abandoned
		done chan error
	}
	var gone []goneCall
	for i := range 1 + s.intn(3) {
		r := s.replicas[s.intn(len(s.replicas))]
		id := fmt.Sprintf("abandon-%d-gone-%d", seq, i)
		after := s.durn(200*time.Millisecond, 800*time.Millisecond)
		g := goneCall{a: abandoned{id: id, replica: r, how: "gone", bound: time.Now().Add(after)}, done: make(chan error, 1)}
		go func() {
			cctx, cancel := context.WithTimeout(ctx, after)
			defer cancel()
			_, err := r.client.CallTool(cctx, &toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: offerForm,
				Arguments: args(map[string]any{"id": id, "delay_ms": 5000, "then_ms": 30000})})
			g.done <- err
		}()
		gone = append(gone, g)
	}
	for i := range 2 + s.intn(4) {
		r := s.replicas[s.intn(len(s.replicas))]
		id := fmt.Sprintf("abandon-%d-unanswered-%d", seq, i)
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		res, err := r.client.CallTool(cctx, &toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: offerForm,
			Arguments: args(map[string]any{"id": id, "then_ms": 30000})})
		cancel()
		s.calls.Add(1)
		if ctx.Err() != nil {
			return
		}
		ir := res.GetInputRequired()
		switch {
		case err != nil:
			s.fail("abandon-input", r, u.name, start, err)
			continue
		case ir == nil || !ir.GetReplicaBound() || ir.GetExpireTime() == nil:
			s.wrongResult("abandon-input", r, u, start, fmt.Sprintf("want a parked input_required, got %v", res))
			continue
		}
		exp := ir.GetExpireTime().AsTime()
		if exp.After(time.Now().Add(inputTimeout + time.Second)) {
			s.wrongResult("abandon-input", r, u, start, fmt.Sprintf("expire_time %s is past --input-timeout %s", exp, inputTimeout))
		}
		left = append(left, abandoned{id: id, replica: r, how: "unanswered", bound: exp})
		if expired == nil {
			expired, expiredOn = ir, r
		}
	}
	for _, g := range gone {
		err := <-g.done
		s.calls.Add(1)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err == nil:
			s.wrongResult("abandon-input", g.a.replica, u, g.a.bound, "a call whose caller left before its question succeeded")
			continue
		case status.Code(err) != codes.DeadlineExceeded:
			s.fail("abandon-input", g.a.replica, u.name, g.a.bound, err) // explained if a fault hit the upstream just before
			continue
		}
		left = append(left, g.a)
	}
	s.abandonedCalls.Add(int64(len(left)))
	expiry := s.leaveToExpire(ctx, u, seq)

	// Every upstream call ends, cancelled, within its bound.
	for _, a := range left {
		for {
			rec, ok := s.cancelRecord(ctx, a.replica, u, a.id)
			if ctx.Err() != nil {
				return
			}
			if ok && rec.Cancelled > 0 {
				late := time.Unix(0, rec.Cancelled).Sub(a.bound)
				s.mu.Lock()
				s.maxInputLate = max(s.maxInputLate, late)
				s.mu.Unlock()
				if late > inputGrace {
					s.noteOverdue(fmt.Sprintf("%s call %s on replica%d: its upstream call was cancelled %s after its bound", a.how, a.id, a.replica.idx, late.Round(time.Millisecond)))
				}
				break
			}
			if ok && rec.Finished {
				s.noteOverdue(fmt.Sprintf("%s call %s on replica%d: its upstream call ran to the end, uncancelled", a.how, a.id, a.replica.idx))
				break
			}
			if time.Since(a.bound) > inputGrace+2*time.Second {
				if !ok && a.how == "gone" {
					break // it left before toolsvc sent the call on: nothing upstream to end
				}
				s.noteOverdue(fmt.Sprintf("%s call %s on replica%d: its upstream call not cancelled %s after its bound (record: %v)", a.how, a.id, a.replica.idx, time.Since(a.bound).Round(time.Millisecond), ok))
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// The expired request of ask_flood was answered with the decline.
	if expiry != nil {
		s.checkExpiryDeclined(ctx, u, expiry)
	}
	// The state of an expired call is refused as such.
	if expired != nil {
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		_, err := expiredOn.client.CallTool(cctx, &toolsvcv1.CallToolRequest{Name: tool, InputCapabilities: offerForm, RequestState: expired.GetRequestState(),
			InputResponses: []*toolsvcv1.InputResponse{{Id: expired.GetRequests()[0].GetId(), Response: &toolsvcv1.InputResponse_Elicitation{
				Elicitation: &toolsvcv1.ElicitationResponse{Action: "accept", ContentJson: `{"name":"Late"}`}}}}})
		cancel()
		s.calls.Add(1)
		if code, reason, _ := reasonOf(err); ctx.Err() == nil && (code != codes.InvalidArgument || reason != "REQUEST_STATE_EXPIRED") {
			s.wrongResult("abandon-input", expiredOn, u, start, fmt.Sprintf("the retry of an expired call: %v, want REQUEST_STATE_EXPIRED", err))
		}
	}
	// Nothing waits any more on any replica.
	flood.Wait()
	for _, r := range s.replicas {
		s.checkNoneWaiting(ctx, r, fmt.Sprintf("after abandon-input %d", seq), 5*time.Second)
	}
}

// expiring is an ask_flood call left to expire: its one request must be
// declined by its bound.
type expiring struct {
	id      string
	replica *replica
	start   time.Time
	bound   time.Time
}

// leaveToExpire starts an ask_flood call of one request and leaves its
// input_required unanswered (nil if the call did not park).
func (s *soak) leaveToExpire(ctx context.Context, u *upstream, seq int) *expiring {
	r := s.replicas[s.intn(len(s.replicas))]
	e := &expiring{id: fmt.Sprintf("abandon-%d-expiry", seq), replica: r, start: time.Now()}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	res, err := r.client.CallTool(cctx, &toolsvcv1.CallToolRequest{Name: u.name + "__ask_flood", InputCapabilities: offerForm,
		Arguments: args(map[string]any{"id": e.id, "count": 1, "bytes": 100})})
	cancel()
	s.calls.Add(1)
	if ctx.Err() != nil {
		return nil
	}
	ir := res.GetInputRequired()
	switch {
	case err != nil:
		s.fail("abandon-input-expiry", r, u.name, e.start, err)
		return nil
	case ir == nil || !ir.GetReplicaBound() || ir.GetExpireTime() == nil || len(ir.GetRequests()) != 1:
		s.wrongResult("abandon-input-expiry", r, u, e.start, fmt.Sprintf("want one parked request, got %v", clip(fmt.Sprint(res))))
		return nil
	}
	e.bound = ir.GetExpireTime().AsTime()
	return e
}

// checkExpiryDeclined waits until the upstream's flood_record of e is
// done and checks that its request was answered exactly with the decline
// (not an error, not ended by a cancellation racing it), within
// inputGrace of its expiry.
func (s *soak) checkExpiryDeclined(ctx context.Context, u *upstream, e *expiring) {
	for {
		answers, done, ok := s.floodRecord(ctx, e.replica, u, e.id)
		if ctx.Err() != nil {
			return
		}
		if ok && done {
			if answers["decline"] != 1 || len(answers) != 1 {
				s.noteNotDeclined(fmt.Sprintf("abandon-input on replica%d: the expired request of %s was answered %s, want {decline:1}", e.replica.idx, e.id, fmtAnswers(answers)))
				return
			}
			s.mu.Lock()
			s.expiryChecks++
			s.mu.Unlock()
			return
		}
		if time.Since(e.bound) > inputGrace+2*time.Second {
			s.noteNotDeclined(fmt.Sprintf("abandon-input on replica%d: the expired request of %s not answered %s after its expiry (record %v: %s)",
				e.replica.idx, e.id, time.Since(e.bound).Round(time.Millisecond), ok, fmtAnswers(answers)))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cancelRecord is what the upstream's ask_wait saw of the call with id.
func (s *soak) cancelRecord(ctx context.Context, r *replica, u *upstream, id string) (rec struct {
	Cancelled int64
	Finished  bool
}, ok bool) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	res, err := r.client.CallTool(cctx, &toolsvcv1.CallToolRequest{Name: u.name + "__cancel_record", Arguments: args(map[string]any{"id": id})})
	if err != nil || res.GetIsError() {
		return rec, false
	}
	m := res.GetStructuredContent().AsMap()
	if v, ok := m["cancelled_unix_nanos"].(float64); ok {
		rec.Cancelled = int64(v)
	}
	rec.Finished, _ = m["finished"].(bool)
	return rec, true
}

// checkNoneWaiting checks, for up to wait, that the replica's
// toolsvc_interactive_calls_waiting is 0.
func (s *soak) checkNoneWaiting(ctx context.Context, r *replica, when string, wait time.Duration) {
	deadline := time.Now().Add(wait)
	for {
		mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := r.metricValues(mctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		n, ok := m["toolsvc_interactive_calls_waiting"]
		if err == nil && ok && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			s.mu.Lock()
			s.waitingLeft++
			s.waitingDetail = append(s.waitingDetail, fmt.Sprintf("%s: replica%d toolsvc_interactive_calls_waiting = %v (present %v, %v)", when, r.idx, n, ok, err))
			s.mu.Unlock()
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *soak) noteOverdue(d string) {
	s.mu.Lock()
	s.overdue = append(s.overdue, d)
	s.mu.Unlock()
	s.logf("OVERDUE %s", d)
}
