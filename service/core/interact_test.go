package core

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// testLimits are small bounds for the flight tests.
var testLimits = waitLimits{perPrincipal: 2, total: 3, perCall: 2, requestBytes: 1 << 10, bytesPerPrincipal: 1 << 20, bytes: 1 << 20}

// startTestFlight runs a flight whose upstream request is send, as
// startFlight does without a core.
func startTestFlight(x *interactive, principal string, send func(context.Context, *mcpbridge.Interaction) (mcp.Result, error)) *flight {
	f := newFlight(x, principal, "tool", func(reqs mcp.InputRequestMap, state string) mcp.Result {
		return &mcp.CallToolResult{InputRequests: reqs, RequestState: state}
	})
	x.admit(f)
	f.ctx, f.cancel = context.WithCancel(context.Background())
	go f.run(send)
	return f
}

// askOnce is an upstream request that asks r once, records the answer and
// then works until its call is cancelled (cancelled reports when).
type askOnce struct {
	mu        sync.Mutex
	r         mcp.InputRequest
	answer    mcp.InputResponse
	err       error
	answered  time.Time
	cancelled time.Time
}

func (a *askOnce) send(ctx context.Context, it *mcpbridge.Interaction) (mcp.Result, error) {
	answer, err := it.Ask(ctx, a.r)
	a.mu.Lock()
	a.answer, a.err, a.answered = answer, err, time.Now()
	a.mu.Unlock()
	<-ctx.Done()
	a.mu.Lock()
	a.cancelled = time.Now()
	a.mu.Unlock()
	return nil, ctx.Err()
}

// seen is what the upstream saw: the answer and when it was cancelled.
func (a *askOnce) seen() (mcp.InputResponse, error, time.Time, time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.answer, a.err, a.answered, a.cancelled
}

// TestFlightExpiryDeclinesThenCancels: a parked elicitation nobody answers
// gets the decline at the expiry (not an error), and the upstream call is
// cancelled only declineGrace later, so the cancellation never races the
// answer; the waiting count is back to 0.
func TestFlightExpiryDeclinesThenCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newInteractive(nil, "r", testLimits)
		up := &askOnce{r: &mcp.ElicitParams{Message: "name?"}}
		f := startTestFlight(x, "alice", up.send)
		start := time.Now()
		res, parked, err := f.round(t.Context(), time.Minute)
		if err != nil || !parked || !needsInput(res) {
			t.Fatalf("round = %v, %v, %v; want parked input_required", res, parked, err)
		}
		if n := x.waiting(); n != 1 {
			t.Errorf("waiting = %d with one parked call, want 1", n)
		}
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		answer, err, answered, cancelled := up.seen()
		er, ok := answer.(*mcp.ElicitResult)
		if err != nil || !ok || er.Action != "decline" {
			t.Fatalf("the expired request was answered %#v, %v; want action decline", answer, err)
		}
		if !cancelled.IsZero() {
			t.Fatalf("the upstream call was cancelled with its request's answer (at %v)", cancelled.Sub(start))
		}
		time.Sleep(declineGrace)
		synctest.Wait()
		_, _, _, cancelled = up.seen()
		if got := cancelled.Sub(answered); cancelled.IsZero() || got != declineGrace {
			t.Errorf("the upstream call was cancelled %v after the decline, want %v", got, declineGrace)
		}
		x.mu.Lock()
		defer x.mu.Unlock()
		if x.asked != 0 || len(x.flights) != 0 {
			t.Errorf("after the expiry: waiting %d, flights %d; want 0, 0", x.asked, len(x.flights))
		}
	})
}

func isDecline(r mcp.InputResponse) bool {
	er, ok := r.(*mcp.ElicitResult)
	return ok && er.Action == "decline"
}

// TestFlightCallerLeavesCancelsAtOnce: a caller that goes away while its
// upstream works (nothing asked) ends the call at once: there is no
// answer to race.
func TestFlightCallerLeavesCancelsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newInteractive(nil, "r", testLimits)
		cancelled := make(chan time.Time, 1)
		f := startTestFlight(x, "alice", func(ctx context.Context, _ *mcpbridge.Interaction) (mcp.Result, error) {
			<-ctx.Done()
			cancelled <- time.Now()
			return nil, ctx.Err()
		})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		left := time.Now().Add(time.Second)
		if _, _, err := f.round(ctx, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("round = %v, want the caller's deadline", err)
		}
		if at := <-cancelled; !at.Equal(left) {
			t.Errorf("upstream cancelled at %v, want when the caller left (%v)", at, left)
		}
		synctest.Wait()
		x.mu.Lock()
		defer x.mu.Unlock()
		if len(x.flights) != 0 {
			t.Errorf("%d flights after the call ended, want 0", len(x.flights))
		}
	})
}

// TestFlightRequestTooLarge: a request over the size bound is declined
// before it is parked, the round gets INPUT_REQUEST_TOO_LARGE, and the
// call is cancelled after the grace.
func TestFlightRequestTooLarge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newInteractive(nil, "r", testLimits)
		up := &askOnce{r: &mcp.ElicitParams{Message: strings.Repeat("x", 2<<10)}}
		f := startTestFlight(x, "alice", up.send)
		_, parked, err := f.round(t.Context(), time.Minute)
		var e *Error
		if parked || !errors.As(err, &e) || e.Reason != ReasonInputRequestTooLarge || e.Meta["limit_bytes"] != "1024" {
			t.Fatalf("round = parked %v, %v; want INPUT_REQUEST_TOO_LARGE limit_bytes 1024", parked, err)
		}
		synctest.Wait()
		if answer, err, _, _ := up.seen(); !isDecline(answer) {
			t.Errorf("the oversized request was answered %#v, %v; want decline", answer, err)
		}
		time.Sleep(declineGrace)
		synctest.Wait()
		_, _, _, cancelled := up.seen()
		x.mu.Lock()
		defer x.mu.Unlock()
		if cancelled.IsZero() || x.bytes != 0 || len(x.flights) != 0 || x.asked != 0 {
			t.Errorf("after the refusal: cancelled %v, bytes %d, flights %d, waiting %d; want cancelled and all 0",
				cancelled, x.bytes, len(x.flights), x.asked)
		}
	})
}

// TestFlightPerCallBoundTellsTheRetry: requests past the per-call bound,
// sent while the caller holds the previous round's state, are declined
// with the one parked; the caller's retry learns why (TOO_MANY_WAITING
// max_parked_per_call), and what they held is given back.
func TestFlightPerCallBoundTellsTheRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newInteractive(nil, "r", testLimits)
		answers := make(chan string, 10)
		f := startTestFlight(x, "alice", func(ctx context.Context, it *mcpbridge.Interaction) (mcp.Result, error) {
			var wg sync.WaitGroup
			ask := func(msg string) {
				wg.Go(func() {
					res, err := it.Ask(ctx, &mcp.ElicitParams{Message: msg})
					if er, ok := res.(*mcp.ElicitResult); ok && err == nil {
						answers <- er.Action
					} else {
						answers <- "error"
					}
				})
			}
			ask("first")
			time.Sleep(time.Second) // parked, its caller deciding
			for range 5 {
				ask("more")
			}
			wg.Wait()
			return &mcp.CallToolResult{}, nil
		})
		res, parked, err := f.round(t.Context(), time.Minute)
		if err != nil || !parked {
			t.Fatalf("round = %v, %v, %v", res, parked, err)
		}
		reqs, _ := inputOf(res)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		for range 6 {
			if a := <-answers; a != "decline" {
				t.Errorf("a request of the ended call was answered %q, want decline", a)
			}
		}
		resp := map[string]mcp.InputResponse{}
		for k := range reqs {
			resp[k] = &mcp.ElicitResult{Action: "accept"}
		}
		_, _, err = f.resume(t.Context(), "input_responses", resp, time.Minute)
		var e *Error
		if !errors.As(err, &e) || e.Reason != ReasonTooManyWaiting || e.Meta["limit"] != limitParkedPerCall {
			t.Fatalf("retry = %v; want TOO_MANY_WAITING max_parked_per_call", err)
		}
		if f := x.lookup(f.id); f != nil {
			t.Errorf("the flight is still in the table after its caller was told")
		}
		synctest.Wait()
		x.mu.Lock()
		defer x.mu.Unlock()
		if x.bytes != 0 || len(x.bytesBy) != 0 || len(x.flights) != 0 || x.asked != 0 {
			t.Errorf("after the call: bytes %d, principals %d, flights %d, waiting %d; want all 0", x.bytes, len(x.bytesBy), len(x.flights), x.asked)
		}
	})
}

// TestWaitingCountsCallsThatAsked: flights that merely run do not take
// the replica's pool of waiting calls; one principal's asked calls stop
// at its own bound, below the replica's, so another principal still gets
// a place.
func TestWaitingCountsCallsThatAsked(t *testing.T) {
	x := newInteractive(nil, "r", testLimits)
	newF := func(p string) *flight {
		f := newFlight(x, p, "tool", nil)
		x.admit(f)
		return f
	}
	for range 10 { // running, never asked: counted nowhere
		newF("alice")
	}
	if n := x.waiting(); n != 0 {
		t.Fatalf("waiting = %d with only running flights, want 0", n)
	}
	for i := range 3 {
		e := x.admitAsked(newF("alice"))
		if i < testLimits.perPrincipal && e != nil {
			t.Fatalf("alice's flight %d: %v", i, e)
		}
		if i == testLimits.perPrincipal && (e == nil || e.Meta["limit"] != limitWaitingPerPrincipal) {
			t.Fatalf("alice's flight %d over her bound: %v, want max_waiting_per_principal", i, e)
		}
	}
	if e := x.admitAsked(newF("bob")); e != nil {
		t.Fatalf("bob, with alice at her bound: %v", e)
	}
	if e := x.admitAsked(newF("carol")); e == nil || e.Meta["limit"] != limitWaiting {
		t.Fatalf("carol, with the replica's %d taken: %v, want max_waiting", testLimits.total, e)
	}
}
