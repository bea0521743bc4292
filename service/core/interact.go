package core

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// Interactive calls (docs/interactive.md): a caller that offers input
// (CallInput.Input) lets the upstream ask it for some during the call. A
// round of such a call ends either with the result or with input_required
// — a *mcp.CallToolResult whose InputRequests say what is asked and whose
// RequestState is a state toolsvc signed — and the caller continues it by
// calling again with its answers and that state.
//
// Two ways an upstream asks, one contract for the caller:
//
//   - relayed (2026-07-28 upstreams): the upstream's own input_required is
//     passed on; its requestState is wrapped in toolsvc's state, signed
//     with the replicas' shared key and bound to the principal, the tool
//     and an expiry, so any replica can continue the call. Requests the
//     caller cannot answer are answered by the server's policy, and those
//     answers travel in the state until the retry.
//   - parked (2025-11-25 upstreams): the upstream sends a server-to-client
//     request mid-call and waits. The call runs on in a flight; its request
//     is held ("parked") on this replica until the caller's retry answers
//     it, and the state names the replica and the flight. A retry that
//     reaches another replica gets FAILED_PRECONDITION
//     INPUT_STATE_ELSEWHERE; a parked request nobody answers before the
//     expiry is declined and the upstream call cancelled; a caller that
//     goes away while a round waits cancels it too.

// InputOptions are what a caller of an interactive call sends.
type InputOptions struct {
	// Kinds are the kinds of input the caller can give.
	Kinds mcpbridge.InputKinds
	// Responses answer the previous round's requests, by id (decoded by
	// the wire with DecodeInputResponses).
	Responses map[string]mcp.InputResponse
	// State is the previous round's request state, verbatim.
	State string
}

// Defaults of the interactive-call bounds (Options).
const (
	DefaultInputTimeout               = 5 * time.Minute
	DefaultMaxWaitingPerPrincipal     = 16
	DefaultMaxWaiting                 = 1024
	DefaultMaxInteractiveCall         = 30 * time.Minute
	DefaultMaxParkedPerCall           = 8
	DefaultMaxInputRequestBytes       = 1 << 20
	DefaultMaxParkedBytes             = 256 << 20
	DefaultMaxParkedBytesPerPrincipal = 16 << 20
	maxPolicyRounds                   = 10
	stateVersion                      = "s1"
	ReasonRequestStateInvalid         = "REQUEST_STATE_INVALID"   // INVALID_ARGUMENT: a request_state toolsvc did not make, or made for another tool
	ReasonRequestStateExpired         = "REQUEST_STATE_EXPIRED"   // INVALID_ARGUMENT: the request_state is past its expiry; call again without it
	ReasonRequestStateNotYours        = "REQUEST_STATE_NOT_YOURS" // PERMISSION_DENIED: the request_state was made for another principal
	ReasonInputResponsesInvalid       = "INPUT_RESPONSES_INVALID" // INVALID_ARGUMENT: input_responses do not answer the requests (the violation names the entry)
	ReasonInputStateElsewhere         = "INPUT_STATE_ELSEWHERE"   // FAILED_PRECONDITION: the call waits on another replica (metadata "replica"); send the retry there, or call again without request_state
	ReasonInputStateGone              = "INPUT_STATE_GONE"        // FAILED_PRECONDITION: the waiting call ended (timed out, cancelled, or its upstream session went away); call again without request_state
	ReasonTooManyWaiting              = "TOO_MANY_WAITING"        // RESOURCE_EXHAUSTED: too many calls, or requests, waiting for input: the call's, the principal's or the replica's (metadata "limit")
	ReasonInputRequestTooLarge        = "INPUT_REQUEST_TOO_LARGE" // RESOURCE_EXHAUSTED: the upstream asked for input with a request over --max-input-request-bytes (metadata "limit_bytes", "kind")
	ReasonInputNotOffered             = "INPUT_NOT_OFFERED"       // FAILED_PRECONDITION: the upstream needs input of a kind the caller did not offer and the server's policy cannot give (metadata "kind": sampling)
	limitWaitingPerPrincipal          = "max_waiting_per_principal"
	limitWaiting                      = "max_waiting"
	limitParkedPerCall                = "max_parked_per_call"
	limitParkedBytesPerPrincipal      = "max_parked_bytes_per_principal"
	limitParkedBytes                  = "max_parked_bytes"
	stateKindRelay, stateKindParked   = "r", "p"
)

// declineGrace is how long a flight that declined requests its upstream
// was still waiting on (its call ended by the expiry, a bound or its
// caller leaving) lets the upstream finish before cancelling its call.
// Cancelling at once raced the decline: a Python SDK 1.x server that gets
// the answer and the cancellation of its call together answers the call
// twice, asserts ("Request already responded to", python-sdk#2416) and
// exits, failing every call on that session. A second is far beyond the
// time a server takes to act on an answer it is waiting for.
const declineGrace = time.Second

// waitLimits are the replica's bounds on calls and requests waiting for
// callers (Options).
type waitLimits struct {
	perPrincipal, total      int   // calls that asked
	perCall                  int   // requests waiting in one call
	requestBytes             int   // one request
	bytesPerPrincipal, bytes int64 // requests waiting
}

func limitsOf(o Options) waitLimits {
	return waitLimits{perPrincipal: o.MaxWaitingPerPrincipal, total: o.MaxWaiting, perCall: o.MaxParkedPerCall,
		requestBytes: o.MaxInputRequestBytes, bytesPerPrincipal: o.MaxParkedBytesPerPrincipal, bytes: o.MaxParkedBytes}
}

// inputState is what a request_state carries, signed.
type inputState struct {
	Kind      string `json:"k"`
	Principal string `json:"p"`
	// Bound is what the state continues: a tool's exposed name, "prompt
	// NAME" or "resource SERVER URI" (exchange.bound).
	Bound   string `json:"t"`
	Expires int64  `json:"x"` // unix milliseconds
	// Parked: the replica and the flight.
	Replica string `json:"r,omitempty"`
	Flight  string `json:"f,omitempty"`
	// Relayed: the upstream's requestState, and the policy's answers to
	// the requests the caller could not answer (MCP JSON).
	Upstream string                     `json:"s,omitempty"`
	Policy   map[string]json.RawMessage `json:"a,omitempty"`
	// Asked are the requests the caller was asked, by id, with their
	// kinds: its answers are checked against them as a parked call's are
	// (checkAnswerIDs). A relayed state without them is refused.
	Asked answerKinds `json:"q,omitempty"`
}

// interactive is the core's state for interactive calls: the signing key,
// this replica's id, the flights (calls with a parked request, or running
// toward one) and what they hold of the replica's pools.
type interactive struct {
	key     []byte
	replica string
	limits  waitLimits
	mu      sync.Mutex
	flights map[string]*flight
	asked   int              // flights that have asked (MaxWaiting)
	count   map[string]int   // of them, per principal (MaxWaitingPerPrincipal)
	bytes   int64            // requests waiting in flights (MaxParkedBytes)
	bytesBy map[string]int64 // of them, per principal (MaxParkedBytesPerPrincipal)
}

func newInteractive(key []byte, replica string, limits waitLimits) *interactive {
	if len(key) == 0 {
		// Without a shared key only this process can verify its states:
		// relayed calls continue on this replica only.
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	}
	if replica == "" {
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		replica = hex.EncodeToString(b)
	}
	return &interactive{key: key, replica: replica, limits: limits, flights: map[string]*flight{},
		count: map[string]int{}, bytesBy: map[string]int64{}}
}

func (x *interactive) sign(st inputState) string {
	body, _ := json.Marshal(st)
	enc := base64.RawURLEncoding.EncodeToString(body)
	return stateVersion + "." + enc + "." + x.mac(enc)
}

func (x *interactive) mac(enc string) string {
	m := hmac.New(sha256.New, x.key)
	m.Write([]byte(stateVersion + "." + enc))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verify checks a request_state for principal's request bound (see
// inputState.Bound).
func (x *interactive) verify(field, state, principal, bound string, now time.Time) (inputState, *Error) {
	bad := func(why string) (inputState, *Error) {
		e := InvalidField(field, why+"; send the "+field+" of the previous round verbatim, or none to start the call again")
		e.Reason = ReasonRequestStateInvalid
		return inputState{}, e
	}
	parts := strings.Split(state, ".")
	if len(parts) != 3 || parts[0] != stateVersion {
		return bad("not a request state toolsvc made")
	}
	if !hmac.Equal([]byte(parts[2]), []byte(x.mac(parts[1]))) {
		return bad("its signature does not match (altered, or signed with another key: replicas must share --state-key-file)")
	}
	body, err := base64.RawURLEncoding.DecodeString(parts[1])
	var st inputState
	if err != nil || json.Unmarshal(body, &st) != nil || (st.Kind != stateKindRelay && st.Kind != stateKindParked) {
		return bad("malformed")
	}
	if st.Principal != principal {
		return inputState{}, NewError(PermissionDenied, ReasonRequestStateNotYours,
			"request_state was made for another principal's call", nil)
	}
	if st.Bound != bound {
		return bad(fmt.Sprintf("made for another request (%s), not this one", Clip(st.Bound)))
	}
	if st.Kind == stateKindRelay && len(st.Asked) == 0 {
		return bad("made by an earlier toolsvc, without the requests it asked")
	}
	if now.UnixMilli() > st.Expires {
		e := InvalidField(field, "expired at "+time.UnixMilli(st.Expires).UTC().Format(time.RFC3339)+"; call again without it")
		e.Reason = ReasonRequestStateExpired
		return inputState{}, e
	}
	return st, nil
}

// flight is an interactive call of a 2025-era upstream running on past
// the round that started it: its upstream call, the requests it asked
// and the answers they wait for.
type flight struct {
	x         *interactive
	id        string
	principal string
	bound     string          // as inputState.Bound
	ctx       context.Context // the upstream call's
	cancel    context.CancelFunc
	asks      chan *ask     // the bridge's requests, as they come
	done      chan struct{} // closed when the upstream call returned
	ended     chan struct{} // closed when the flight takes no more answers (end)
	res       mcp.Result
	err       error
	need      func(mcp.InputRequestMap, string) mcp.Result // exchange.need
	asked     bool                                         // counted in x.asked and x.count (under x.mu)

	mu      sync.Mutex
	pending map[string]*ask // asked in the last round, waiting for answers
	waiting int             // requests inside ask: handed over, not yet answered (limits.perCall)
	seq     int
	expires time.Time
	timer   *time.Timer // declines the pending requests at expiry
	over    bool        // no more rounds: its requests are declined
	why     *Error      // what ended it, for the caller's next round (nil: stateGone)
	// held: the caller holds this round's state and has not retried;
	// kept: ended with a why while held, the flight stays in the table
	// (its upstream call over, nothing parked) until the retry learns why
	// or the state expires.
	held, kept bool
}

// ask is one request of the upstream, waiting for its answer.
type ask struct {
	req   mcp.InputRequest
	reply chan mcp.InputResponse // capacity 1; nil: declined
}

func newFlight(x *interactive, principal, bound string, need func(mcp.InputRequestMap, string) mcp.Result) *flight {
	return &flight{x: x, principal: principal, bound: bound, need: need,
		asks: make(chan *ask), done: make(chan struct{}), ended: make(chan struct{}), pending: map[string]*ask{}}
}

// startFlight runs the exchange's upstream request in a flight. The
// flight's context outlives the round: it ends when the request ends, when
// a parked request expires, or when a round's caller goes away.
func (e *exchange) startFlight(kinds mcpbridge.InputKinds) *flight {
	s := e.op.s
	x := s.input
	f := newFlight(x, e.op.principal.Name, e.bound, e.need)
	x.admit(f)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.op.ctx), s.opts.MaxInteractiveCall)
	f.ctx, f.cancel = ctx, cancel
	go f.run(func(ctx context.Context, it *mcpbridge.Interaction) (mcp.Result, error) {
		it.Kinds = kinds
		return e.send(ctx, it)
	})
	return f
}

// run is the flight's goroutine: it ends when the upstream request
// returns (bounded by MaxInteractiveCall). The flight then leaves the
// table, unless requests are parked: their caller's retry gets the
// result, until the expiry.
func (f *flight) run(send func(context.Context, *mcpbridge.Interaction) (mcp.Result, error)) {
	f.res, f.err = send(f.ctx, &mcpbridge.Interaction{Ask: f.ask})
	f.cancel()
	f.mu.Lock()
	stays := (len(f.pending) > 0 && !f.over) || f.kept
	close(f.done)
	f.mu.Unlock()
	if !stays {
		f.x.remove(f)
	}
}

// admit enters the flight into the table. No bound counts it yet: a
// caller that merely offers input capabilities (every go-sdk client
// declares roots, so every call of one through the MCP front door is a
// flight) waits on nothing but its upstream, like any call; the bounds on
// waiting calls count a flight from its first request (admitAsked).
func (x *interactive) admit(f *flight) {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	x.mu.Lock()
	defer x.mu.Unlock()
	f.id = hex.EncodeToString(b)
	x.flights[f.id] = f
}

// admitAsked counts a flight that asks its caller for the first time
// against its principal's and the replica's bounds on calls waiting for
// input. The principal's bound is below the replica's, so no principal
// takes the replica's pool alone.
func (x *interactive) admitAsked(f *flight) *Error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if f.asked {
		return nil
	}
	if n := x.limits.perPrincipal; x.count[f.principal] >= n {
		return NewError(ResourceExhausted, ReasonTooManyWaiting,
			fmt.Sprintf("principal %q has %d interactive calls waiting for input, the most allowed (serve --max-waiting-per-principal)", f.principal, n),
			map[string]string{"limit": limitWaitingPerPrincipal, "principal": f.principal})
	}
	if n := x.limits.total; x.asked >= n {
		return NewError(ResourceExhausted, ReasonTooManyWaiting,
			fmt.Sprintf("this replica has %d interactive calls waiting for input, the most allowed (serve --max-waiting)", n),
			map[string]string{"limit": limitWaiting})
	}
	f.asked = true
	x.asked++
	x.count[f.principal]++
	return nil
}

// hold counts one request of f, of size bytes, as waiting: in the call,
// the principal's and the replica's bytes. A request over a bound is not
// held; the error says which.
func (x *interactive) hold(f *flight, r mcp.InputRequest, size int) *Error {
	l := x.limits
	if size > l.requestBytes {
		return NewError(ResourceExhausted, ReasonInputRequestTooLarge,
			fmt.Sprintf("the upstream asked for %s with a request of %d bytes, over the %d allowed (serve --max-input-request-bytes); it was declined and the call ended", inputKindName(r), size, l.requestBytes),
			map[string]string{"limit_bytes": strconv.Itoa(l.requestBytes), "kind": inputKindName(r)})
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.waiting >= l.perCall {
		return NewError(ResourceExhausted, ReasonTooManyWaiting,
			fmt.Sprintf("the upstream asked for more than %d inputs at once in one call, the most allowed (serve --max-parked-per-call); they were declined and the call ended", l.perCall),
			map[string]string{"limit": limitParkedPerCall})
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	n := int64(size)
	if x.bytesBy[f.principal]+n > l.bytesPerPrincipal {
		return NewError(ResourceExhausted, ReasonTooManyWaiting,
			fmt.Sprintf("principal %q has requests of over %d bytes in all waiting for input, the most allowed (serve --max-parked-bytes-per-principal); the upstream's request was declined and the call ended", f.principal, l.bytesPerPrincipal),
			map[string]string{"limit": limitParkedBytesPerPrincipal, "principal": f.principal})
	}
	if x.bytes+n > l.bytes {
		return NewError(ResourceExhausted, ReasonTooManyWaiting,
			fmt.Sprintf("this replica has requests of over %d bytes in all waiting for input, the most allowed (serve --max-parked-bytes); the upstream's request was declined and the call ended", l.bytes),
			map[string]string{"limit": limitParkedBytes})
	}
	f.waiting++
	x.bytes += n
	x.bytesBy[f.principal] += n
	return nil
}

// release gives back what hold counted.
func (x *interactive) release(f *flight, size int) {
	f.mu.Lock()
	f.waiting--
	f.mu.Unlock()
	x.mu.Lock()
	n := int64(size)
	x.bytes -= n
	if x.bytesBy[f.principal] -= n; x.bytesBy[f.principal] <= 0 {
		delete(x.bytesBy, f.principal)
	}
	x.mu.Unlock()
}

func (x *interactive) remove(f *flight) {
	x.mu.Lock()
	if x.flights[f.id] == f {
		delete(x.flights, f.id)
		if f.asked {
			x.asked--
			if x.count[f.principal]--; x.count[f.principal] <= 0 {
				delete(x.count, f.principal)
			}
		}
	}
	x.mu.Unlock()
	f.mu.Lock()
	f.over = true
	if f.timer != nil {
		f.timer.Stop()
	}
	f.mu.Unlock()
}

func (x *interactive) lookup(id string) *flight {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.flights[id]
}

// waiting is the number of flights that have asked their callers, as
// MaxWaiting counts them (for tests and metrics).
func (x *interactive) waiting() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.asked
}

// ask is the flight's Interaction.Ask: it hands the request to the round
// that waits and blocks until the caller answers, the flight ends or the
// upstream gives up. A request over a bound (hold) ends the flight; a
// request the flight will not take, or that nobody answered, gets the
// decline (mcpbridge.Decline), never an error in its place.
func (f *flight) ask(ctx context.Context, r mcp.InputRequest) (mcp.InputResponse, error) {
	size := requestSize(r)
	if e := f.x.hold(f, r, size); e != nil {
		f.end(e, true)
		return mcpbridge.Decline(r)
	}
	defer f.x.release(f, size)
	a := &ask{req: r, reply: make(chan mcp.InputResponse, 1)}
	select {
	case f.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-f.ended:
		return mcpbridge.Decline(r)
	case <-f.ctx.Done():
		return mcpbridge.Decline(r)
	}
	select {
	case res := <-a.reply:
		if res == nil {
			return mcpbridge.Decline(r)
		}
		return res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-f.ended:
		return mcpbridge.Decline(r)
	case <-f.ctx.Done():
		return mcpbridge.Decline(r)
	}
}

// requestSize is the encoded size of an input request, as the caller
// would get it.
func requestSize(r mcp.InputRequest) int {
	b, err := json.Marshal(r)
	if err != nil {
		return math.MaxInt
	}
	return len(b)
}

// end ends the flight's rounds: what it asked is declined, requests it
// has yet to take are declined as they come, and the next round (or the
// one waiting) gets why (nil: stateGone). The upstream call is cancelled
// at once when the upstream waits on no answer (answering: the caller of
// end is about to answer one itself); otherwise only after declineGrace,
// so that no cancellation races the declines (see declineGrace).
func (f *flight) end(why *Error, answering bool) {
	f.mu.Lock()
	if f.over {
		f.mu.Unlock()
		return
	}
	f.over, f.why = true, why
	answered := answering || f.waiting > 0
	for id, a := range f.pending {
		a.reply <- nil
		delete(f.pending, id)
	}
	close(f.ended)
	// The caller learns why on its retry: the flight stays until then, or
	// until its state expires (expire removes it).
	f.kept = why != nil && f.held
	if f.timer != nil && !f.kept {
		f.timer.Stop()
	}
	kept := f.kept
	f.mu.Unlock()
	if answered {
		time.AfterFunc(declineGrace, f.cancel)
	} else {
		f.cancel()
	}
	if kept {
		return
	}
	select {
	case <-f.done:
		f.x.remove(f)
	default: // run removes it when the upstream call returns
	}
}

// endError is what a round of an ended flight returns.
func (f *flight) endError() *Error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.why != nil {
		return f.why
	}
	return stateGone()
}

// round waits, within the caller's ctx, for the flight's result or its
// next requests. Requests end the round as input_required: they are
// parked until the expiry.
func (f *flight) round(ctx context.Context, timeout time.Duration) (_ mcp.Result, parked bool, _ error) {
	select {
	case <-f.done:
		return f.res, false, f.err
	case <-f.ended:
		return nil, false, f.endError()
	case a := <-f.asks:
		batch := []*ask{a}
		if e := f.x.admitAsked(f); e != nil {
			// Over the bound on calls waiting for input: the request is
			// declined and the call ends, as it would have at its start.
			a.reply <- nil
			f.end(e, true)
			return nil, false, e
		}
		for more := true; more; {
			select {
			case b := <-f.asks:
				batch = append(batch, b)
			default:
				more = false
			}
		}
		if res, ok := f.park(batch, timeout); ok {
			return res, true, nil
		}
		return nil, false, f.endError()
	case <-ctx.Done():
		// The caller went away while the call could still ask: nobody
		// would answer, so the call ends.
		f.end(nil, false)
		return nil, false, ctx.Err()
	}
}

// park holds the requests until the caller's answer or the expiry, and
// returns the input_required that asks them; ok is false, and the
// requests declined, when the flight ended meanwhile.
func (f *flight) park(batch []*ask, timeout time.Duration) (_ mcp.Result, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.over {
		for _, a := range batch {
			a.reply <- nil
		}
		return nil, false
	}
	reqs := mcp.InputRequestMap{}
	for _, a := range batch {
		f.seq++
		id := "q" + strconv.Itoa(f.seq)
		f.pending[id] = a
		reqs[id] = a.req
	}
	f.expires = time.Now().Add(timeout)
	if f.timer != nil {
		f.timer.Stop()
	}
	f.timer = time.AfterFunc(timeout, f.expire)
	f.held = true
	state := f.x.sign(inputState{Kind: stateKindParked, Principal: f.principal, Bound: f.bound,
		Expires: f.expires.UnixMilli(), Replica: f.x.replica, Flight: f.id})
	return f.need(reqs, state), true
}

// expire declines what is still pending and ends the call: nobody
// answered in time. A flight kept to tell its caller why it ended leaves.
func (f *flight) expire() {
	f.mu.Lock()
	kept := f.kept
	f.mu.Unlock()
	if kept {
		f.x.remove(f)
		return
	}
	f.end(nil, false)
}

// resume answers the pending requests with the caller's responses (every
// one must be answered, with an answer of its kind) and waits for the next
// round.
func (f *flight) resume(ctx context.Context, field string, responses map[string]mcp.InputResponse, timeout time.Duration) (_ mcp.Result, parked bool, _ error) {
	f.mu.Lock()
	if f.over {
		kept := f.kept
		f.mu.Unlock()
		if kept {
			// Told once: the flight leaves (run removes it, or has).
			f.x.remove(f)
		}
		return nil, false, f.endError()
	}
	if len(f.pending) == 0 {
		// Answered already by another retry with this state.
		f.mu.Unlock()
		return nil, false, stateGone()
	}
	select {
	case <-f.done:
		// The upstream finished without the answers: the result is the
		// call's.
		clear(f.pending)
		f.mu.Unlock()
		f.x.remove(f)
		return f.res, false, f.err
	default:
	}
	if e := checkAnswers(field, f.pending, responses, false); e != nil {
		f.mu.Unlock()
		return nil, false, e
	}
	f.timer.Stop()
	f.held = false
	for id, a := range f.pending {
		a.reply <- responses[id]
		delete(f.pending, id)
	}
	f.mu.Unlock()
	return f.round(ctx, timeout)
}

// checkAnswers checks that responses (the wire's field) answer exactly the
// pending requests (partial: some of them), each with an answer of its kind.
func checkAnswers(field string, pending map[string]*ask, responses map[string]mcp.InputResponse, partial bool) *Error {
	asked := make(answerKinds, len(pending))
	for id, a := range pending {
		asked[id] = inputKindName(a.req)
	}
	return checkAnswerIDs(field, asked, responses, partial)
}

func stateGone() *Error {
	return NewError(FailedPrecondition, ReasonInputStateGone,
		"the call that waited for this input has ended (it timed out, was cancelled, or its upstream session went away); call the tool again without request_state", nil)
}

// InputExpiry is when the request state of an input_required result
// expires, and whether the call waits on this replica (parked); ok is
// false for a state this core did not sign.
func (s *Core) InputExpiry(state string) (expires time.Time, parked bool, ok bool) {
	parts := strings.Split(state, ".")
	if len(parts) != 3 || !hmac.Equal([]byte(parts[2]), []byte(s.input.mac(parts[1]))) {
		return time.Time{}, false, false
	}
	body, err := base64.RawURLEncoding.DecodeString(parts[1])
	var st inputState
	if err != nil || json.Unmarshal(body, &st) != nil {
		return time.Time{}, false, false
	}
	return time.UnixMilli(st.Expires), st.Kind == stateKindParked, true
}

// Waiting is the number of interactive calls running or parked on this
// replica.
func (s *Core) Waiting() int { return s.input.waiting() }

// relay passes an upstream's input_required (2026-07-28) on to the caller:
// the requests it can answer, with the upstream's state wrapped in a
// signed one; the policy answers the others (their answers ride in the
// state). A caller that can answer none gets the policy's answers sent at
// once, round after round.
func (e *exchange) relay(ctx context.Context, res mcp.Result, kinds mcpbridge.InputKinds) (mcp.Result, error) {
	b := e.op.s.bridge
	for round := 0; ; round++ {
		reqs, upstreamState := inputOf(res)
		ask := mcp.InputRequestMap{}
		policy := mcp.InputResponseMap{}
		for id, r := range reqs {
			if kinds.Allows(r) {
				ask[id] = r
				continue
			}
			a := b.PolicyAnswer(e.server, r)
			if a == nil {
				return nil, NewError(FailedPrecondition, ReasonInputNotOffered,
					fmt.Sprintf("the upstream asks for %s, which the caller did not offer (input_capabilities)", inputKindName(r)),
					map[string]string{"kind": inputKindName(r)})
			}
			policy[id] = a
		}
		if len(ask) > 0 {
			st := inputState{Kind: stateKindRelay, Principal: e.op.principal.Name, Bound: e.bound,
				Expires: time.Now().Add(e.op.s.opts.InputTimeout).UnixMilli(), Upstream: upstreamState, Asked: kindsOf(ask)}
			if len(policy) > 0 {
				st.Policy = map[string]json.RawMessage{}
				for id, a := range policy {
					st.Policy[id], _ = json.Marshal(a)
				}
			}
			return e.need(ask, e.op.s.input.sign(st)), nil
		}
		if round >= maxPolicyRounds {
			// An upstream that asks on and on what the policy answers
			// would loop here for ever: the call ends with its reason,
			// and the operator sees which upstream does it.
			e.op.s.log.Warn("an upstream kept asking for input the server's policy answers: the request ends",
				"server", e.server, "request", Clip(e.bound), "rounds", round+1, "limit", maxPolicyRounds)
			return nil, NewError(Internal, ReasonUpstreamMalformed,
				fmt.Sprintf("the upstream asked for input %d rounds in a row, each answered by the server's policy; toolsvc answers at most %d such rounds per request", round+1, maxPolicyRounds),
				map[string]string{"server": e.server, "limit": "max_policy_rounds", "max_rounds": strconv.Itoa(maxPolicyRounds)})
		}
		var err error
		if res, err = e.send(ctx, &mcpbridge.Interaction{Kinds: kinds, Responses: policy, State: upstreamState}); err != nil || !needsInput(res) {
			return res, err
		}
	}
}

// relayAnswers are the answers a relayed call's retry sends: the caller's
// and the policy's from the state.
func (e *exchange) relayAnswers(caller map[string]mcp.InputResponse) mcp.InputResponseMap {
	out := mcp.InputResponseMap{}
	for id, raw := range e.state.Policy {
		var probe mcp.InputResponseMap
		if json.Unmarshal([]byte(`{"x":`+string(raw)+`}`), &probe) == nil {
			out[id] = probe["x"]
		}
	}
	for id, r := range caller {
		if _, taken := out[id]; !taken {
			out[id] = r
		}
	}
	return out
}

// inputKindName names a request's kind in errors and metadata.
func inputKindName(r mcp.InputRequest) string {
	switch p := r.(type) {
	case *mcp.ElicitParams:
		if p.Mode == "url" || (p.Mode == "" && p.URL != "") {
			return "elicitation_url"
		}
		return "elicitation"
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return "sampling"
	case *mcp.ListRootsParams:
		return "roots"
	}
	return "unknown"
}

// NeedsInput reports whether a result is an input_required: an upstream's
// (go-sdk decoded its resultType) or one the core made.
func NeedsInput(res *mcp.CallToolResult) bool { return needsInput(res) }

// needsInput is NeedsInput for the results of the three requests that can
// ask: tools/call, prompts/get and resources/read.
func needsInput(res mcp.Result) bool {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		return r != nil && (r.NeedsInput() || len(r.InputRequests) > 0)
	case *mcp.GetPromptResult:
		return r != nil && (r.NeedsInput() || len(r.InputRequests) > 0)
	case *mcp.ReadResourceResult:
		return r != nil && (r.NeedsInput() || len(r.InputRequests) > 0)
	}
	return false
}

// inputOf is what an input_required result asks, and its request state.
func inputOf(res mcp.Result) (mcp.InputRequestMap, string) {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		if r != nil {
			return r.InputRequests, r.RequestState
		}
	case *mcp.GetPromptResult:
		if r != nil {
			return r.InputRequests, r.RequestState
		}
	case *mcp.ReadResourceResult:
		if r != nil {
			return r.InputRequests, r.RequestState
		}
	}
	return nil, ""
}
