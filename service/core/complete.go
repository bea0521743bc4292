package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// Completion (MCP completion/complete): one more operation of the engine
// (operation.go). It concerns a prompt, authorized by its exposed name
// like GetPrompt, or a server's resource template, authorized by the
// server's resources name ("<prefix>__@resources") like ReadResource;
// authorization is decided before a failed lookup is reported. The
// upstream of the prompt or template is asked (mcpbridge.Bridge.Complete);
// one that does not declare the completions capability answers no values.
// The audit line has the argument's name and the length of its typed
// value, never the value: it is the caller's data.

// OpComplete is a completion/complete operation.
var OpComplete = OpKind{method: "completion/complete", audit: "completion"}

// MaxCompletionValues is the most values a completion answers (the MCP
// spec's bound); an upstream's longer list is cut, with HasMore set.
const MaxCompletionValues = 100

// CompleteKind says what a completion concerns.
type CompleteKind int

const (
	CompleteNone     CompleteKind = iota // the request named nothing
	CompletePrompt                       // a prompt, by its exposed name
	CompleteTemplate                     // a resource template of a server
)

// CompleteInput is a completion request, as a wire parsed it.
type CompleteInput struct {
	Kind CompleteKind
	// Prompt is the exposed prompt name (CompletePrompt).
	Prompt string
	// Server and Template name the resource template (CompleteTemplate):
	// its URI template exactly as listed, and its server; an empty Server
	// is the one server, among those whose resources the caller may use,
	// that lists the template.
	Server, Template string
	// Argument is the argument's name, Value what has been typed of it,
	// Context the arguments already resolved.
	Argument, Value string
	Context         map[string]string
}

// size is the request's size, for the request size limit.
func (in *CompleteInput) size() int {
	n := len(in.Prompt) + len(in.Server) + len(in.Template) + len(in.Argument) + len(in.Value)
	for k, v := range in.Context {
		n += len(k) + len(v)
	}
	return n
}

// Complete runs one completion for the caller of ctx. measure is the size
// of the result in the wire's encoding, for the response size limit. The
// result is the upstream's values (at most MaxCompletionValues, never
// nil), its total when it gave one (0: unknown) and whether more exist.
func (s *Core) Complete(ctx context.Context, in CompleteInput, f Fields, measure func(*mcp.CompleteResult) int) (*mcp.CompleteResult, *Error) {
	op, err := s.Begin(ctx, OpComplete, f)
	var res *mcp.CompleteResult
	if err == nil {
		res, err = op.complete(in)
		if err == nil && measure != nil {
			if e := s.CheckResponse(measure(res)); e != nil {
				res, err = nil, e
			}
		}
	}
	fail := op.Fail(err)
	n := 0
	if fail == nil {
		n = len(res.Completion.Values)
	} else {
		res = nil
	}
	extra := []slog.Attr{slog.Int("value_bytes", len(in.Value)), slog.Int("values", n)}
	if in.Argument != "" {
		extra = append([]slog.Attr{slog.String("argument", Clip(in.Argument))}, extra...)
	}
	op.end(fail, false, extra...)
	return res, fail
}

// complete checks the request, admits it and asks the upstream.
func (op *Operation) complete(in CompleteInput) (*mcp.CompleteResult, error) {
	s, f := op.s, op.fields
	if size := in.size(); size > s.opts.MaxRequestBytes {
		return nil, TooLarge(ReasonRequestTooLarge, "request", "max-request-bytes", size, s.opts.MaxRequestBytes)
	}
	refField, argField := or(f.CompleteRef, "ref"), or(f.CompleteArgument, "argument_name")
	if in.Kind == CompleteNone {
		return nil, InvalidField(refField, "required: a prompt (its exposed name) or a resource template")
	}
	if in.Argument == "" {
		return nil, InvalidField(argField, "required: the name of the argument to complete")
	}
	c := mcpbridge.Completion{Argument: in.Argument, Value: in.Value, Context: in.Context, Principal: op.principal.Name}
	var err error
	if in.Kind == CompletePrompt {
		c.Prompt, err = op.completePrompt(in.Prompt)
	} else {
		c.Template, err = op.completeTemplate(in.Server, in.Template)
	}
	if err != nil {
		return nil, err
	}
	res, err := s.bridge.Complete(op.ctx, c)
	if err != nil {
		return nil, err
	}
	return completionResult(res), nil
}

// completePrompt resolves and admits a prompt by its exposed name.
func (op *Operation) completePrompt(name string) (*mcpbridge.Prompt, error) {
	field := or(op.fields.CompletePrompt, "prompt")
	if err := checkExposedName(field, name, "prompt"); err != nil {
		return nil, err
	}
	op.meta["prompt"] = name
	if name == "" {
		return nil, InvalidField(field, "required: the exposed name of a listed prompt")
	}
	p, rerr := op.s.bridge.ResolvePrompt(name)
	if err := op.admit(name, "use prompt", name); err != nil {
		return nil, err
	}
	if errors.Is(rerr, mcpbridge.ErrPromptNotFound) {
		return nil, &Error{Code: NotFound, Reason: ReasonPromptNotFound, Message: fmt.Sprintf("%s: no prompt %q", field, name),
			Violations: []FieldViolation{Violation(field, "not the exposed name of a listed prompt")}}
	}
	if rerr != nil {
		return nil, rerr
	}
	op.meta["server"] = p.Server
	return p, nil
}

// completeTemplate resolves and admits a server's resource template; an
// empty server is inferred among the servers whose resources the caller
// may use.
func (op *Operation) completeTemplate(server, uriTemplate string) (*mcpbridge.ResourceTemplate, error) {
	s, f := op.s, op.fields
	tf, sf := or(f.CompleteTemplate, "resource_template.uri"), f.CompleteServer
	op.meta["uri"], op.meta["server"] = uriTemplate, server
	if uriTemplate == "" {
		return nil, InvalidField(tf, "required: the URI template of a listed resource template")
	}
	if server == "" {
		vis := s.resourceVisible(op.ctx, nil)
		var cands []string
		for _, n := range s.bridge.Resources().Current().ServersForTemplate(uriTemplate) {
			if vis(n) {
				cands = append(cands, n)
			}
		}
		switch len(cands) {
		case 0:
			if err := s.bridge.Discovered(); err != nil {
				return nil, err
			}
			return nil, templateNotFound(tf, fmt.Sprintf("no server you may use lists the resource template %q", Clip(uriTemplate)))
		case 1:
			server = cands[0]
		default:
			offer := fmt.Sprintf("several servers list the resource template %q: %s", Clip(uriTemplate), strings.Join(cands, ", "))
			var e *Error
			if sf != "" {
				e = InvalidField(sf, "required: "+offer)
			} else {
				e = InvalidField(tf, "ambiguous: "+offer)
			}
			e.Meta = map[string]string{"candidates": strings.Join(cands, ",")}
			return nil, e
		}
		op.meta["server"] = server
	}
	// As for reads: authorization is decided before a failed lookup (an
	// unconfigured server, an unlisted template) is reported.
	if err := op.admit(s.ResourcesAuthName(server), "use the resources of server", Clip(server)); err != nil {
		return nil, err
	}
	t, err := s.bridge.ResolveTemplate(server, uriTemplate)
	switch {
	case errors.Is(err, mcpbridge.ErrServerNotFound):
		field := or(sf, tf)
		return nil, &Error{Code: NotFound, Reason: ReasonServerNotFound, Message: fmt.Sprintf("%s: no configured server %q", field, Clip(server)),
			Violations: []FieldViolation{Violation(field, "not a configured server")}}
	case errors.Is(err, mcpbridge.ErrResourceNotFound):
		return nil, templateNotFound(tf, fmt.Sprintf("server %q lists no resource template %q", server, Clip(uriTemplate)))
	case err != nil:
		return nil, err
	}
	return t, nil
}

// templateNotFound is RESOURCE_NOT_FOUND naming the template's field.
func templateNotFound(field, why string) *Error {
	return &Error{Code: NotFound, Reason: ReasonResourceNotFound, Message: field + ": " + why,
		Violations: []FieldViolation{Violation(field, "not the URI template of a listed resource template")}}
}

// completionResult is the upstream's answer as every wire passes it on:
// values never nil, at most MaxCompletionValues (HasMore when cut), the
// total when the upstream gave one, and nothing else (the upstream's _meta
// is its own).
func completionResult(r *mcp.CompleteResult) *mcp.CompleteResult {
	d := r.Completion
	out := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: d.Values, Total: d.Total, HasMore: d.HasMore}}
	o := &out.Completion
	if o.Values == nil {
		o.Values = []string{}
	}
	if len(o.Values) > MaxCompletionValues {
		o.Values = o.Values[:MaxCompletionValues:MaxCompletionValues]
		o.HasMore = true
	}
	if o.Total < 0 {
		o.Total = 0
	}
	return out
}
