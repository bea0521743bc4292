package core

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// Interactive calls (README "Tools that ask"): a caller that offers input
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
	DefaultInputTimeout             = 5 * time.Minute
	DefaultMaxWaitingPerPrincipal   = 16
	DefaultMaxWaiting               = 1024
	DefaultMaxInteractiveCall       = 30 * time.Minute
	maxPolicyRounds                 = 10
	stateVersion                    = "s1"
	ReasonRequestStateInvalid       = "REQUEST_STATE_INVALID"   // INVALID_ARGUMENT: a request_state toolsvc did not make, or made for another tool
	ReasonRequestStateExpired       = "REQUEST_STATE_EXPIRED"   // INVALID_ARGUMENT: the request_state is past its expiry; call again without it
	ReasonRequestStateNotYours      = "REQUEST_STATE_NOT_YOURS" // PERMISSION_DENIED: the request_state was made for another principal
	ReasonInputResponsesInvalid     = "INPUT_RESPONSES_INVALID" // INVALID_ARGUMENT: input_responses do not answer the requests (the violation names the entry)
	ReasonInputStateElsewhere       = "INPUT_STATE_ELSEWHERE"   // FAILED_PRECONDITION: the call waits on another replica (metadata "replica"); send the retry there, or call again without request_state
	ReasonInputStateGone            = "INPUT_STATE_GONE"        // FAILED_PRECONDITION: the waiting call ended (timed out, cancelled, or its upstream session went away); call again without request_state
	ReasonTooManyWaiting            = "TOO_MANY_WAITING"        // RESOURCE_EXHAUSTED: the principal (or the replica) has too many calls waiting for input (metadata "limit")
	ReasonInputNotOffered           = "INPUT_NOT_OFFERED"       // FAILED_PRECONDITION: the upstream needs input of a kind the caller did not offer and the server's policy cannot give (metadata "kind": sampling)
	limitWaitingPerPrincipal        = "max_waiting_per_principal"
	limitWaiting                    = "max_waiting"
	stateKindRelay, stateKindParked = "r", "p"
)

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
// this replica's id, and the flights (calls with a parked request, or
// running toward one).
type interactive struct {
	key     []byte
	replica string
	mu      sync.Mutex
	flights map[string]*flight
	count   map[string]int // flights per principal that have asked (parked)
}

func newInteractive(key []byte, replica string) *interactive {
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
	return &interactive{key: key, replica: replica, flights: map[string]*flight{}, count: map[string]int{}}
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
func (x *interactive) verify(state, principal, bound string, now time.Time) (inputState, *Error) {
	bad := func(why string) (inputState, *Error) {
		e := InvalidField("request_state", why+"; send the request_state of the previous round verbatim, or none to start the call again")
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
		e := InvalidField("request_state", "expired at "+time.UnixMilli(st.Expires).UTC().Format(time.RFC3339)+"; call again without it")
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
	res       mcp.Result
	err       error
	need      func(mcp.InputRequestMap, string) mcp.Result // exchange.need
	// perPrincipal bounds the principal's flights that have asked (asked:
	// this one is counted; both under x.mu).
	perPrincipal int
	asked        bool

	mu      sync.Mutex
	pending map[string]*ask // asked in the last round, waiting for answers
	seq     int
	expires time.Time
	timer   *time.Timer // declines the pending requests at expiry
	over    bool        // removed from the table: no more rounds
}

// ask is one request of the upstream, waiting for its answer.
type ask struct {
	req   mcp.InputRequest
	reply chan mcp.InputResponse // capacity 1
}

// startFlight runs the exchange's upstream request in a flight. The
// flight's context outlives the round: it ends when the request ends, when
// a parked request expires, or when a round's caller goes away.
func (e *exchange) startFlight(kinds mcpbridge.InputKinds) (*flight, *Error) {
	s := e.op.s
	x := s.input
	f := &flight{x: x, principal: e.op.principal.Name, bound: e.bound, need: e.need, perPrincipal: s.opts.MaxWaitingPerPrincipal,
		asks: make(chan *ask), done: make(chan struct{}), pending: map[string]*ask{}}
	if err := x.admit(f, s.opts.MaxWaiting); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.op.ctx), s.opts.MaxInteractiveCall)
	f.ctx, f.cancel = ctx, cancel
	go func() {
		// Owned by the flight: it ends when the upstream request returns
		// (bounded by MaxInteractiveCall). The flight then leaves the
		// table, unless requests are parked: their caller's retry gets
		// the result, until the expiry.
		f.res, f.err = e.send(ctx, &mcpbridge.Interaction{Kinds: kinds, Ask: f.ask})
		cancel()
		f.mu.Lock()
		parked := len(f.pending) > 0
		close(f.done)
		f.mu.Unlock()
		if !parked {
			x.remove(f)
		}
	}()
	return f, nil
}

// admit enters the flight into the table, within the replica's bound on
// flights. The principal's bound counts only flights that have asked
// (admitAsked): a caller that merely offers input capabilities (every
// go-sdk client declares roots, so every call of one through the MCP front
// door is a flight) is not limited to that many concurrent calls.
func (x *interactive) admit(f *flight, total int) *Error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.flights) >= total {
		return NewError(ResourceExhausted, ReasonTooManyWaiting,
			fmt.Sprintf("this replica has %d interactive calls running or waiting for input, the most allowed (serve --max-waiting)", total),
			map[string]string{"limit": limitWaiting})
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	f.id = hex.EncodeToString(b)
	x.flights[f.id] = f
	return nil
}

// admitAsked counts a flight that asks its caller for the first time
// against its principal's bound on calls waiting for input.
func (x *interactive) admitAsked(f *flight) *Error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if f.asked {
		return nil
	}
	if x.count[f.principal] >= f.perPrincipal {
		return NewError(ResourceExhausted, ReasonTooManyWaiting,
			fmt.Sprintf("principal %q has %d interactive calls waiting for input, the most allowed (serve --max-waiting-per-principal)", f.principal, f.perPrincipal),
			map[string]string{"limit": limitWaitingPerPrincipal, "principal": f.principal})
	}
	f.asked = true
	x.count[f.principal]++
	return nil
}

func (x *interactive) remove(f *flight) {
	x.mu.Lock()
	if x.flights[f.id] == f {
		delete(x.flights, f.id)
		if f.asked {
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

// waiting is the number of flights (for tests and metrics).
func (x *interactive) waiting() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.flights)
}

// ask is the flight's Interaction.Ask: it hands the request to the round
// that waits and blocks until the caller answers, the flight ends or the
// upstream gives up.
func (f *flight) ask(ctx context.Context, r mcp.InputRequest) (mcp.InputResponse, error) {
	a := &ask{req: r, reply: make(chan mcp.InputResponse, 1)}
	select {
	case f.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-f.ctx.Done():
		return nil, errNotAnswered
	}
	select {
	case res := <-a.reply:
		if res == nil {
			return nil, errNotAnswered
		}
		return res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-f.ctx.Done():
		return nil, errNotAnswered
	}
}

var errNotAnswered = errors.New("the caller did not answer in time")

// round waits, within the caller's ctx, for the flight's result or its
// next requests. Requests end the round as input_required: they are
// parked until the expiry.
func (f *flight) round(ctx context.Context, timeout time.Duration) (_ mcp.Result, parked bool, _ error) {
	select {
	case <-f.done:
		return f.res, false, f.err
	case a := <-f.asks:
		if e := f.x.admitAsked(f); e != nil {
			// Over the principal's bound on calls waiting for input: the
			// call ends (its upstream request is cancelled), as it would
			// have at its start before.
			f.cancel()
			<-f.done
			f.x.remove(f)
			return nil, false, e
		}
		batch := []*ask{a}
		for more := true; more; {
			select {
			case b := <-f.asks:
				batch = append(batch, b)
			default:
				more = false
			}
		}
		return f.park(batch, timeout), true, nil
	case <-ctx.Done():
		// The caller went away while the call could still ask: nobody
		// would answer, so the call ends.
		f.cancel()
		<-f.done
		return nil, false, ctx.Err()
	}
}

// park holds the requests until the caller's answer or the expiry, and
// returns the input_required that asks them.
func (f *flight) park(batch []*ask, timeout time.Duration) mcp.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
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
	state := f.x.sign(inputState{Kind: stateKindParked, Principal: f.principal, Bound: f.bound,
		Expires: f.expires.UnixMilli(), Replica: f.x.replica, Flight: f.id})
	return f.need(reqs, state)
}

// expire declines what is still pending and ends the call: nobody
// answered in time.
func (f *flight) expire() {
	f.mu.Lock()
	for id, a := range f.pending {
		a.reply <- nil
		delete(f.pending, id)
	}
	f.mu.Unlock()
	f.cancel()
	f.x.remove(f)
}

// resume answers the pending requests with the caller's responses (every
// one must be answered, with an answer of its kind) and waits for the next
// round.
func (f *flight) resume(ctx context.Context, responses map[string]mcp.InputResponse, timeout time.Duration) (_ mcp.Result, parked bool, _ error) {
	f.mu.Lock()
	if f.over || len(f.pending) == 0 {
		// Ended, or answered already by another retry with this state.
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
	if e := checkAnswers(f.pending, responses, false); e != nil {
		f.mu.Unlock()
		return nil, false, e
	}
	f.timer.Stop()
	for id, a := range f.pending {
		a.reply <- responses[id]
		delete(f.pending, id)
	}
	f.mu.Unlock()
	return f.round(ctx, timeout)
}

// checkAnswers checks that responses answer exactly the pending requests
// (partial: some of them), each with an answer of its kind.
func checkAnswers(pending map[string]*ask, responses map[string]mcp.InputResponse, partial bool) *Error {
	asked := make(answerKinds, len(pending))
	for id, a := range pending {
		asked[id] = inputKindName(a.req)
	}
	return checkAnswerIDs(asked, responses, partial)
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
