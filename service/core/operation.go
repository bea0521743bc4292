package core

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// The operation engine: every upstream operation on every wire — a tool
// call (pipeline.go), a resource read, a prompt get, a resource
// subscription (resources.go), a completion (complete.go) — goes through
// the same steps:
//
//	begin:  authenticate (the request's principal and auth state)
//	admit:  authorize the principal for the operation's auth name, then
//	        take a slot of its rate limit
//	…       the operation's own work on the bridge
//	fail:   the error classified once into a *Error, with the
//	        operation's metadata (tool, server, uri, prompt)
//	end:    the rate-limit slot back, metrics, one audit line
//
// Each wire maps fail's *Error to its own form.

// OpKind is a kind of operation: its MCP method (a metrics label) and the
// message of its audit line.
type OpKind struct {
	method string
	audit  string
	// cancelNotice: cancelling it sends the upstream
	// notifications/cancelled, and its errors say so.
	cancelNotice bool
	// action names an administrative action in its audit line (admin.go).
	action string
}

var (
	OpToolCall     = OpKind{method: "tools/call", audit: "tool call", cancelNotice: true}
	OpResourceRead = OpKind{method: "resources/read", audit: "resource read"}
	OpPromptGet    = OpKind{method: "prompts/get", audit: "prompt get"}
	OpSubscription = OpKind{method: "resources/subscribe", audit: "resource subscription"}
)

// Operation is one upstream operation moving through the engine. It is
// used by one goroutine (its handler's); end is called exactly once.
type Operation struct {
	s         *Core
	kind      OpKind
	fields    Fields // the wire's field names
	ctx       context.Context
	principal Principal
	// subject is the caller's JWT when it was authenticated by one: the
	// subject token per-user upstreams exchange (never logged).
	subject string
	auth    *AuthState // the state it is decided under (nil: refused before authentication)
	start   time.Time
	release func() // the principal's rate-limit slot, while held
	ended   bool
	// meta names what the operation concerns, for its errors' metadata
	// and its audit line: "tool", "server", "task", "uri", "prompt".
	meta map[string]string
	// server and tool are the metrics labels once resolved: configured
	// names only (bounded label values).
	server, tool string
}

// Begin authenticates the request of ctx for an operation of kind. It
// always returns the operation (so that End can observe a refusal).
func (s *Core) Begin(ctx context.Context, kind OpKind, fields Fields) (*Operation, error) {
	op := &Operation{s: s, kind: kind, fields: fields, ctx: ctx, start: time.Now(), meta: map[string]string{}}
	if o := s.opts.Observer; o != nil && kind == OpToolCall {
		o.CallStarted()
	}
	ctx, p, e := s.Authenticate(ctx)
	if e != nil {
		return op, e
	}
	if p.Method == "jwt" {
		op.subject = SubjectTokenFrom(ctx)
	}
	// Requests to per-user upstreams go through the principal's session.
	ctx = mcpbridge.WithCaller(ctx, p.Name, op.subject)
	op.ctx, op.principal, op.auth = ctx, p, s.AuthOf(ctx)
	return op, nil
}

// admit authorizes the principal for authName (what and name say what it
// may not do, in the refusal: `call tool "x"`, formatted only then: an
// admitted call pays for no message) and takes a slot of its rate limit.
func (op *Operation) admit(authName, what, name string) error {
	if !op.auth.authz.AllowTool(op.principal, authName) {
		return NewError(PermissionDenied, ReasonPermissionDenied,
			fmt.Sprintf("principal %q may not %s %q", op.principal.Name, what, name), map[string]string{"principal": op.principal.Name})
	}
	release, err := op.auth.limits.admitNow(op.principal.Name)
	if err != nil {
		return err
	}
	op.release = release
	return nil
}

// admitAll takes a slot of the principal's rate limit for an operation
// over every tool it may see (a search): authorization then applies to
// each tool the operation returns, not to the operation.
func (op *Operation) admitAll() error {
	release, err := op.auth.limits.admitNow(op.principal.Name)
	if err != nil {
		return err
	}
	op.release = release
	return nil
}

// releaseSlot gives the rate-limit slot back early: an operation that
// goes on without being a call (a subscription that streams).
func (op *Operation) releaseSlot() {
	if op.release != nil {
		op.release()
		op.release = nil
	}
}

// fail classifies err once (nil: nil), adding the operation's metadata.
func (op *Operation) fail(err error) *Error {
	if err == nil {
		return nil
	}
	_, callerDeadline := op.ctx.Deadline()
	e := Classify(err, ClassifyOptions{CallerDeadline: callerDeadline, CancelNotice: op.kind.cancelNotice, Fields: op.fields})
	for _, k := range metaKeys {
		e.SetMeta(k, op.meta[k])
	}
	return e
}

// metaKeys are the keys of operation.meta, in the audit line's order.
var metaKeys = []string{"tool", "server", "task", "uri", "prompt"}

// end observes the finished operation once: fail is what the caller got
// (nil: OK), toolError that a tool reported its own failure; extra are
// the audit line's attributes of the operation's kind. It gives the
// rate-limit slot back, records the metrics and writes the audit line.
func (op *Operation) end(fail *Error, toolError bool, extra ...slog.Attr) {
	if op.ended {
		return
	}
	op.ended = true
	op.releaseSlot()
	end := time.Now()
	took := end.Sub(op.start)
	outcome := "ok"
	switch {
	case fail != nil:
		outcome = fail.Code.String()
	case toolError:
		outcome = "tool_error"
	}
	op.observe(outcome, end, took)
	as := op.auth
	if as == nil { // refused before it was decided under a state
		as = op.s.CurrentAuth()
	}
	if a := as.audit; a != nil {
		attrs := make([]slog.Attr, 0, 8+len(extra))
		attrs = append(attrs, slog.String("principal", op.principal.Name))
		for _, k := range metaKeys {
			if v, ok := op.meta[k]; ok {
				attrs = append(attrs, slog.String(k, v))
			}
		}
		attrs = append(attrs, slog.String("outcome", outcome), slog.Duration("duration", took))
		a.LogAttrs(context.Background(), slog.LevelInfo, op.kind.audit, append(attrs, extra...)...)
	}
}

// observe records the operation's metrics: tool calls by server, tool and
// outcome, the other operations by server, method and outcome.
func (op *Operation) observe(outcome string, end time.Time, took time.Duration) {
	o := op.s.opts.Observer
	if o == nil {
		return
	}
	server := op.server
	if server == "" {
		server = "unknown"
		if n := op.meta["server"]; n != "" {
			if _, err := op.s.bridge.Server(n); err == nil {
				server = n
			}
		}
	}
	if op.kind == OpToolCall {
		tool := op.tool
		if tool == "" {
			tool = "unknown"
		}
		o.CallDone(server, tool, outcome, end, took)
		return
	}
	o.OperationDone(server, op.kind.method, outcome, took)
}

// CheckResponse applies the response size limit to a result of size
// bytes, as the wire encodes it (measured once, by the wire).
func (s *Core) CheckResponse(size int) *Error {
	if size > s.opts.MaxResponseBytes {
		return TooLarge(ReasonResponseTooLarge, "response", "max-response-bytes", size, s.opts.MaxResponseBytes)
	}
	return nil
}

// The operation's steps for a wire (the steps above, under the names each
// wire calls).

// Context is the request's context, with its principal and auth state
// once authenticated.
func (op *Operation) Context() context.Context { return op.ctx }

// Principal is the authenticated caller (zero before).
func (op *Operation) Principal() Principal { return op.principal }

// ReleaseSlot gives the rate-limit slot back early (a subscription that
// streams is not a call).
func (op *Operation) ReleaseSlot() { op.releaseSlot() }

// Fail classifies err once (nil: nil), with the operation's metadata.
func (op *Operation) Fail(err error) *Error { return op.fail(err) }

// End observes the finished operation once (fail: what the caller got).
func (op *Operation) End(fail *Error) { op.end(fail, false) }
