package service

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// The call pipeline: every way into a tool call (gRPC CallTool,
// CallToolStream, and any later front door) hands a CallInput to
// beginCall and then works on the *toolCall it returns:
//
//	beginCall:  authenticate → size the request (once, measured by the front
//	            door) → resolve the name (once: one catalog entry from one
//	            snapshot; failures are the bridge's own errors) → authorize →
//	            per-principal rate limit → arguments are one JSON object →
//	            inputSchema
//	dispatch:   the bridge calls that same entry (mcpbridge.Bridge.Call)
//	checkResult: the result's size (measured once by the front door)
//	end:        map the error (once, status), metrics, audit line, release
//	            the principal's concurrency slot
//
// Errors inside the pipeline are values: the bridge's typed errors, or a
// *richError for the pipeline's own refusals. The front door maps them once
// (callStatus for gRPC).

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
}

// toolCall is one call moving through the pipeline.
type toolCall struct {
	s         *Server
	ctx       context.Context // the caller's, with its principal
	in        CallInput
	principal Principal
	target    mcpbridge.Target // zero until resolved
	args      any              // map[string]any, json.RawMessage, or nil ({})
	start     time.Time
	release   func() // the principal's concurrency slot, if limited
	ended     bool
}

// beginCall runs every check that comes before the upstream. It always
// returns the call (so that end can observe a refusal); err says why the
// call must not be dispatched.
func (s *Server) beginCall(ctx context.Context, in CallInput) (*toolCall, error) {
	c := &toolCall{s: s, ctx: ctx, in: in, start: time.Now()}
	if m := s.opts.Metrics; m != nil {
		m.callsInFlight.Inc()
	}
	ctx, p, err := s.authenticate(ctx)
	if err != nil {
		return c, err
	}
	c.ctx, c.principal = ctx, p
	if in.Size > s.opts.MaxRequestBytes {
		return c, tooLargeError(ReasonRequestTooLarge, "request", "max-request-bytes", in.Size, s.opts.MaxRequestBytes)
	}
	if in.Name == "" {
		return c, fieldsError("name", violation("name", "required: the exposed tool name from ListTools"))
	}
	// One lookup; authorization (over exposed names) is decided before a
	// failed lookup is reported, so a caller learns nothing about tools it
	// may not use.
	target, rerr := s.bridge.Resolve(in.Name)
	c.target = target
	if !s.opts.Authorizer.AllowTool(p, in.Name) {
		return c, &richError{code: codes.PermissionDenied, reason: ReasonPermissionDenied,
			msg:  fmt.Sprintf("principal %q may not call tool %q", p.Name, in.Name),
			meta: map[string]string{"principal": p.Name}}
	}
	if rerr != nil {
		return c, rerr
	}
	if c.release, err = s.limits.acquire(p.Name, time.Now()); err != nil {
		return c, err
	}
	c.args, err = s.checkArguments(c.target, in)
	return c, err
}

// checkArguments checks that the arguments are one JSON object and, unless
// the tool's server turns validation off or its schema cannot be compiled,
// that they satisfy the entry's inputSchema. It returns what to send.
func (s *Server) checkArguments(t mcpbridge.Target, in CallInput) (any, error) {
	if in.Arguments != nil && in.ArgumentsJSON != "" {
		return nil, fieldsError("arguments_json", violation("arguments_json", "set at most one of arguments and arguments_json"))
	}
	if !t.ValidatesArguments() {
		switch {
		case in.ArgumentsJSON != "":
			if !isJSONObject(in.ArgumentsJSON) {
				return nil, fieldsError("arguments_json", violation("arguments_json", "must be a JSON object"))
			}
			return json.RawMessage(in.ArgumentsJSON), nil
		case in.Arguments != nil:
			return in.Arguments, nil
		}
		return nil, nil
	}
	return s.validateArguments(t.Tool, in)
}

// validateArguments decodes and validates the arguments against the
// tool's inputSchema.
func (s *Server) validateArguments(tool *mcpbridge.Tool, in CallInput) (any, error) {
	field := "arguments"
	var obj map[string]any
	var args any
	switch {
	case in.ArgumentsJSON != "":
		field = "arguments_json"
		m, err := decodeArgumentsJSON(in.ArgumentsJSON)
		if err != nil {
			return nil, fieldsError(field, violation(field, "must be a JSON object: "+err.Error()))
		}
		// Forwarded as the caller wrote it: numbers keep every digit.
		obj, args = m, json.RawMessage(in.ArgumentsJSON)
	case in.Arguments != nil:
		obj, args = in.Arguments, in.Arguments
	default:
		obj = map[string]any{}
	}
	cs := s.schemas.get(tool.SchemaHash, tool.InputSchema)
	if cs.resolved == nil {
		s.log.Debug("arguments not validated", "tool", tool.Name, "why", cs.problem)
	} else if vs := cs.validate(field, obj); len(vs) > 0 {
		return nil, fieldsError(field, vs...)
	}
	return args, nil
}

// isJSONObject checks, without validating against a schema, that text is
// exactly one JSON object.
func isJSONObject(text string) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal([]byte(text), &m) == nil && m != nil
}

// dispatch sends the call to the entry beginCall resolved.
func (c *toolCall) dispatch(ctx context.Context, opts *mcpbridge.CallOptions) (*mcp.CallToolResult, error) {
	return c.s.bridge.Call(ctx, c.target, c.args, opts)
}

// checkResult applies the response size limit to a result of size bytes
// (measured once by the front door).
func (c *toolCall) checkResult(size int) error {
	if size > c.s.opts.MaxResponseBytes {
		c.s.log.Info("result over the response limit", "tool", c.in.Name, "size", size, "limit", c.s.opts.MaxResponseBytes)
		return tooLargeError(ReasonResponseTooLarge, "response", "max-response-bytes", size, c.s.opts.MaxResponseBytes)
	}
	return nil
}

// status maps the pipeline's error to the gRPC status the caller gets:
// once, here. ErrorInfo names the tool and its server.
func (c *toolCall) status(err error) error {
	if err == nil {
		return nil
	}
	_, callerDeadline := c.ctx.Deadline()
	if c.ctx.Err() != nil {
		c.s.log.Debug("call ended by the caller", "tool", c.in.Name, "error", c.ctx.Err())
	}
	return callStatus(err, c.targetName(), callerDeadline)
}

func (c *toolCall) targetName() callTarget {
	t := callTarget{tool: c.in.Name}
	if c.target.Tool != nil {
		t.server = c.target.Tool.Server
	}
	return t
}
