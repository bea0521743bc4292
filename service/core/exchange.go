package core

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// exchange is one request of an operation to its upstream that the
// upstream may answer by asking for input: a tool call, a prompt or a
// resource read (the three requests of MCP's multi-round-trip). Their
// rounds work alike (interact.go); only the request and the type of its
// result differ, which send and need carry.
type exchange struct {
	op *Operation
	// bound is what the request's states are bound to (inputState.Bound):
	// a tool's exposed name, "prompt NAME", or "resource SERVER URI".
	bound  string
	server string        // the upstream, for its input policy
	in     *InputOptions // what the caller offers (nil: nothing)
	state  *inputState   // the verified state of a continued request
	parked bool          // the result is a parked input_required
	// send is one upstream request; it (nil: the server's policy answers
	// any request for input) lets the upstream ask.
	send func(ctx context.Context, it *mcpbridge.Interaction) (mcp.Result, error)
	// need is an input_required result of the request's type.
	need func(reqs mcp.InputRequestMap, state string) mcp.Result
}

// Bounds of prompt and resource states (inputState.Bound).
func promptBound(name string) string          { return "prompt " + name }
func resourceBound(server, uri string) string { return "resource " + server + " " + uri }

// continued verifies the request state a caller sent with in (nil: a new
// request) for the principal's request bound.
func (op *Operation) continued(in *InputOptions, bound string) (*inputState, *Error) {
	if in == nil {
		return nil, nil
	}
	stateField, answersField := op.fields.requestStateField(), op.fields.inputResponsesField()
	if e := checkAnswerBounds(answersField, in.Responses); e != nil {
		return nil, e
	}
	if in.State == "" {
		if len(in.Responses) > 0 {
			return nil, InvalidField(stateField, "required with "+answersField+": the "+stateField+" of the round they answer")
		}
		return nil, nil
	}
	st, e := op.s.input.verify(stateField, in.State, op.principal.Name, bound, time.Now())
	if e != nil {
		return nil, e
	}
	return &st, nil
}

// run sends the request, or continues it: answers a parked request on
// this replica, or passes the caller's answers to an upstream that
// relayed its own input_required. The result may be input_required.
func (e *exchange) run(ctx context.Context) (mcp.Result, error) {
	in := e.in
	if in == nil {
		in = &InputOptions{}
	}
	s := e.op.s
	if in.Kinds.Any() && !s.bridge.AsksCallers(e.server) {
		// "input": "policy": the policy answers every request, in both
		// eras, whatever the caller offers.
		in = &InputOptions{Responses: in.Responses, State: in.State}
	}
	timeout := s.opts.InputTimeout
	var res mcp.Result
	var err error
	switch {
	case e.state != nil && e.state.Kind == stateKindParked:
		if e.state.Replica != s.input.replica {
			return nil, NewError(FailedPrecondition, ReasonInputStateElsewhere,
				"the request waits for this input on another replica: send the retry on the channel that got the input_required, or send the request again without "+e.op.fields.requestStateField(),
				map[string]string{"replica": e.state.Replica})
		}
		f := s.input.lookup(e.state.Flight)
		if f == nil || f.principal != e.op.principal.Name {
			return nil, stateGone()
		}
		res, e.parked, err = f.resume(ctx, e.op.fields.inputResponsesField(), in.Responses, timeout)
	case e.state != nil: // relayed: the upstream continues from its own state
		if fe := checkAnswerIDs(e.op.fields.inputResponsesField(), e.state.Asked, in.Responses, false); fe != nil {
			return nil, fe
		}
		res, err = e.send(ctx, &mcpbridge.Interaction{Kinds: in.Kinds, Responses: e.relayAnswers(in.Responses), State: e.state.Upstream})
	case in.Kinds.Any():
		res, e.parked, err = e.startFlight(in.Kinds).round(ctx, timeout)
	default:
		res, err = e.send(ctx, nil)
	}
	if err != nil || e.parked || !needsInput(res) {
		return res, err
	}
	return e.relay(ctx, res, in.Kinds)
}
