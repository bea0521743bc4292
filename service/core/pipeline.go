package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// The call pipeline: every way into a tool call (gRPC CallTool,
// CallToolStream, and any later front door such as MCP) hands a CallInput
// to BeginCall and then works on the *Call it returns:
//
//	BeginCall:   authenticate → request size (measured once, by the front
//	             door) → resolve the name (once: one catalog entry from one
//	             snapshot; failures are the bridge's own errors) → authorize
//	             → per-principal rate limit → arguments are one JSON object
//	             → inputSchema of that entry
//	Dispatch:    the bridge calls that same entry (mcpbridge.Bridge.Call)
//	CheckResult: the result's size (measured once, by the front door)
//	Fail:        the error classified, once, to a *Error
//	End:         metrics, audit line, the principal's concurrency slot back
//
// A front door does, whatever its wire:
//
//	c, err := s.BeginCall(ctx, in)
//	if err == nil { res, err = c.Dispatch(c.Context(), opts); … size the
//	                encoded result, err = c.CheckResult(size) }
//	fail := c.Fail(err); c.End(fail, isError, size); answer fail in the
//	wire's form, or the result
//
// Errors inside the pipeline are values: the bridge's typed errors, or a
// *Error for the pipeline's own refusals, built with the wire's field
// names (CallInput.Fields). Fail classifies them once; each wire maps the
// *Error to its own form (a gRPC status, a JSON-RPC error) and edits
// no text.

// CallInput is one tool call as a front door received it.
type CallInput struct {
	// Name is the exposed tool name.
	Name string
	// Arguments is the decoded arguments object, or nil.
	Arguments map[string]any
	// ArgumentsJSON is the arguments object as JSON text, forwarded byte for
	// byte; set at most one of Arguments and ArgumentsJSON (neither: {}).
	ArgumentsJSON string
	// Size is the encoded size of the request as received, measured once by
	// the front door, for the request size limit and the audit line.
	Size int
	// Fields are the wire's field names, for the call's errors.
	Fields Fields
	// Input, if set, makes the call interactive (interact.go): what input
	// the caller can give, and its answers to the previous round.
	Input *InputOptions
	// Task, if set, asks for the call to run as a task (tasks.go).
	Task *TaskOptions
	// Invalid is a request field the wire could not parse (an
	// interactive field, task.ttl): BeginCall refuses the call with it
	// once everything else about the call passed, so the refusal is
	// authenticated, authorized and audited as on every wire.
	Invalid *Error
}

// Call is one tool call moving through the operation engine
// (operation.go). It is used by one goroutine (the front door's handler);
// End must be called exactly once.
type Call struct {
	op     *Operation
	in     CallInput
	target mcpbridge.Target // zero until resolved
	args   any              // map[string]any, json.RawMessage, or nil ({})
	values map[string]any   // args decoded (validated), for the bridge's DecodedArguments
	state  *inputState      // the verified request state of a continued call
	parked bool             // the result is a parked input_required (interact.go)
	task   *Task            // the task the upstream created for the call (tasks.go)
}

// BeginCall runs every check that comes before the upstream. It always
// returns the call (so that End can observe a refusal); a non-nil err says
// why the call must not be dispatched.
func (s *Core) BeginCall(ctx context.Context, in CallInput) (*Call, error) {
	op, err := s.Begin(ctx, OpToolCall, in.Fields)
	c := &Call{op: op, in: in}
	// A name longer than any tool's is never echoed (checkExposedName).
	op.meta["tool"], op.meta["server"] = "", ""
	if len(in.Name) <= mcpbridge.MaxNameLen {
		op.meta["tool"] = in.Name
	}
	if err != nil {
		return c, err
	}
	if in.Size > s.opts.MaxRequestBytes {
		return c, TooLarge(ReasonRequestTooLarge, "request", "max-request-bytes", in.Size, s.opts.MaxRequestBytes)
	}
	if in.Name == "" {
		return c, in.Fields.badToolName("required: the exposed tool name from ListTools")
	}
	if len(in.Name) > mcpbridge.MaxNameLen {
		return c, in.Fields.badToolName(exposedNameTooLong(in.Name, "tool"))
	}
	// One lookup; authorization (over exposed names) is decided before a
	// failed lookup is reported, so a caller learns nothing about tools it
	// may not use.
	// A per-user upstream lists its tools through its first caller's
	// session: this caller's, if none has yet.
	primeErr := s.bridge.PrimeCaller(op.ctx, op.principal.Name, op.subject)
	target, rerr := s.bridge.ResolveFor(ToolsPrincipal(op.ctx), in.Name) // in the caller's view: another's private tool is NOT_FOUND
	if ue := (*mcpbridge.UnavailableError)(nil); errors.As(rerr, &ue) && ue.Reason == mcpbridge.ReasonNoSession && ue.Server != "" {
		// A per-user upstream not listed for this caller: a caller it
		// refuses (or who must log in) learns that, not UNAVAILABLE.
		if cerr := s.bridge.CheckCaller(op.ctx, ue.Server); cerr != nil {
			rerr = cerr
		}
	}
	if target.Tool != nil {
		c.target = target
		op.meta["server"], op.server, op.tool = target.Tool.Server, target.Tool.Server, target.Tool.Name
	}
	if err := op.admit(in.Name, "call tool", in.Name); err != nil {
		return c, err
	}
	if rerr != nil {
		if primeErr != nil && target.Tool == nil {
			// A userOAuth upstream nobody could list yet: the tool may
			// be one of its own, and the login is what the caller needs.
			return c, primeErr
		}
		if in.Fields.ToolNameInArguments && errors.Is(rerr, mcpbridge.ErrToolNotFound) {
			return c, in.Fields.badToolName(ClipTo(rerr.Error(), 2*MaxEchoLen))
		}
		return c, rerr
	}
	st, e := op.continued(in.Input, in.Name)
	if e != nil {
		return c, e
	}
	c.state = st
	c.args, c.values, err = s.checkArguments(c.target, in)
	if err == nil && in.Invalid != nil {
		return c, in.Invalid
	}
	if err == nil && in.Task == nil && c.target.Tool.TaskSupport == TaskSupportRequired {
		// The upstream would refuse it (a 2026-07-28 tasks-extension
		// server with -32021, a 2025-11-25 one with an error result):
		// refused here, before it leaves toolsvc, naming the field to set.
		return c, TaskRequired(in.Name, map[string]string{"task_support": TaskSupportRequired})
	}
	return c, err
}

// checkArguments checks that the arguments are one JSON object, nested at
// most MaxArgumentsDepth deep, with no key twice in any object, and, unless
// the tool's server turns validation off or its schema cannot be used, that
// they satisfy the entry's inputSchema. It returns what to send, and the
// same object decoded (nil when nothing was sent: {}).
func (s *Core) checkArguments(t mcpbridge.Target, in CallInput) (any, map[string]any, error) {
	field := "arguments"
	var obj map[string]any // decoded, for validation
	var args any           // what is sent: nil ({}), the map, or the caller's text
	switch {
	case in.Arguments != nil && in.ArgumentsJSON != "":
		return nil, nil, InvalidArguments(Violation(in.Fields.ArgumentsJSON, "set at most one of arguments and "+in.Fields.ArgumentsJSON))
	case in.ArgumentsJSON != "":
		field = in.Fields.ArgumentsJSON
		if JSONNestsDeeper(in.ArgumentsJSON, MaxArgumentsDepth) {
			return nil, nil, depthError(field)
		}
		m, err := decodeArgumentsJSON(in.ArgumentsJSON)
		var dup *duplicateKeyError
		switch {
		case errors.As(err, &dup):
			path := field + dup.path
			return nil, nil, InvalidArguments(Violation(Clip(path), "the key appears more than once in its object; send each key once"))
		case err != nil:
			return nil, nil, InvalidArguments(Violation(field, "must be a JSON object: "+err.Error()))
		}
		// Forwarded as the caller wrote it: numbers keep every digit.
		obj, args = m, json.RawMessage(in.ArgumentsJSON)
	case in.Arguments != nil:
		if valueNestsDeeper(in.Arguments, MaxArgumentsDepth) {
			return nil, nil, depthError(field)
		}
		obj, args = in.Arguments, in.Arguments
	default:
		obj = map[string]any{}
	}
	if t.ValidatesArguments() {
		if err := s.validateArguments(t.Tool, field, obj); err != nil {
			return nil, nil, err
		}
	}
	if args == nil || (in.ArgumentsJSON != "" && negativeZeroInteger(in.ArgumentsJSON)) {
		return args, nil, nil
	}
	return args, obj, nil
}

// negativeZeroInteger reports whether text may hold the integer literal -0,
// which the arguments' decoding (convertNumber) reads as the integer 0
// while a JSON decode into float64 keeps its sign: such arguments are not
// handed to the bridge decoded (CallOptions.DecodedArguments), so an
// upstream that takes values gets the same -0 as before. A match inside a
// string only costs that call the decode.
func negativeZeroInteger(text string) bool {
	for i := strings.Index(text, "-0"); i >= 0; {
		if j := i + 2; j == len(text) || !strings.ContainsRune(".eE0123456789", rune(text[j])) {
			return true
		}
		next := strings.Index(text[i+2:], "-0")
		if next < 0 {
			return false
		}
		i += 2 + next
	}
	return false
}

// validateArguments validates the decoded arguments against the tool's
// inputSchema; field names them in violations.
func (s *Core) validateArguments(tool *mcpbridge.Tool, field string, obj map[string]any) error {
	cs := s.schemas.get(tool.SchemaHash, tool.InputSchema)
	if cs.resolved == nil {
		if cs.warned.CompareAndSwap(false, true) {
			s.log.Warn("inputSchema not used: calls to the tool are forwarded without validation", "server", tool.Server, "tool", tool.Name, "why", cs.problem)
		}
		s.log.Debug("arguments not validated", "tool", tool.Name, "why", cs.problem)
	} else if err := cs.validate(field, obj); err != nil {
		if err.Meta["limit"] == limitValidationSteps && cs.costWarned.CompareAndSwap(false, true) {
			// The caller's arguments decide the cost, but a schema whose
			// count multiplies with nesting is the upstream's doing.
			s.log.Warn("arguments refused unvalidated: the inputSchema's alternatives multiply with nesting, past the validation budget",
				"server", tool.Server, "tool", tool.Name, "limit", maxValidationSteps)
		}
		return err
	}
	return nil
}

// Context is the caller's context with its authenticated principal.
func (c *Call) Context() context.Context { return c.op.ctx }

// Dispatch sends the call to the entry BeginCall resolved. For an
// interactive call (CallInput.Input) the result may be input_required
// (NeedsInput: InputRequests and a RequestState toolsvc signed);
// InputRequired says more about it.
func (c *Call) Dispatch(ctx context.Context, opts *mcpbridge.CallOptions) (*mcp.CallToolResult, error) {
	if opts == nil {
		opts = &mcpbridge.CallOptions{}
	}
	opts.Principal = c.op.principal.Name // sent to upstreams with forwardPrincipal
	opts.SubjectToken = c.op.subject     // exchanged by per-user upstreams
	// What was validated, decoded: the gRPC binding sends it as a Struct
	// without decoding the request's JSON again (mcpbridge/wireargs.go).
	opts.DecodedArguments = c.values
	e := &exchange{op: c.op, bound: c.in.Name, server: c.target.Tool.Server, in: c.in.Input, state: c.state,
		send: func(ctx context.Context, it *mcpbridge.Interaction) (mcp.Result, error) {
			o := *opts
			o.Input = it
			return c.dispatch(ctx, &o)
		},
		need: func(reqs mcp.InputRequestMap, state string) mcp.Result {
			return &mcp.CallToolResult{Content: []mcp.Content{}, InputRequests: reqs, RequestState: state}
		}}
	res, err := e.run(ctx)
	c.parked = e.parked
	r, _ := res.(*mcp.CallToolResult)
	return r, err
}

// dispatch is one upstream call of the entry BeginCall resolved. A call
// that asked for a task and got one returns an empty result; Task then
// has it.
func (c *Call) dispatch(ctx context.Context, opts *mcpbridge.CallOptions) (*mcp.CallToolResult, error) {
	if c.in.Task == nil {
		return c.op.s.bridge.Call(ctx, c.target, c.args, opts)
	}
	res, t, err := c.op.s.bridge.CallTask(ctx, c.target, c.args, mcpbridge.TaskRequest{TTL: c.in.Task.TTL}, opts)
	if err != nil || t == nil {
		return res, err
	}
	c.task = c.startTask(t)
	return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
}

// Task is the task the upstream created for a call that asked for one
// (CallInput.Task), after Dispatch; nil when the call ran normally (its
// result is Dispatch's).
func (c *Call) Task() *Task { return c.task }

// CheckResult applies the response size limit to a result of size bytes
// (measured once by the front door).
func (c *Call) CheckResult(size int) error {
	if e := c.op.s.CheckResponse(size); e != nil {
		c.op.s.log.Info("result over the response limit", "tool", c.in.Name, "size", size, "limit", c.op.s.opts.MaxResponseBytes)
		return e
	}
	return nil
}

// Fail classifies the pipeline's error once (nil: nil); its metadata
// names the tool and its server. Each wire maps the result to its own
// form.
func (c *Call) Fail(err error) *Error {
	if err != nil && c.op.ctx.Err() != nil {
		c.op.s.log.Debug("call ended by the caller", "tool", c.in.Name, "error", c.op.ctx.Err())
	}
	return c.op.fail(err)
}

// checkExposedName refuses a name longer than any exposed tool or prompt
// name (mcpbridge.MaxNameLen), without echoing it: no lookup could find it,
// and echoing it whole into the status made megabytes of trailers.
func checkExposedName(field, name, what string) *Error {
	if len(name) <= mcpbridge.MaxNameLen {
		return nil
	}
	return InvalidField(field, exposedNameTooLong(name, what))
}

// exposedNameTooLong says that name is longer than any exposed name.
func exposedNameTooLong(name, what string) string {
	return fmt.Sprintf("is %d bytes, longer than any exposed %s name (at most %d)", len(name), what, mcpbridge.MaxNameLen)
}
