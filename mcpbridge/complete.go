package mcpbridge

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Completion (completion/complete): the completions of one argument of a
// prompt or of a resource template, asked of the upstream that lists it,
// through the one request path (request.go: breaker, concurrency limit,
// callTimeout, session death, one mapping of failures).

// ResolveTemplate looks server's resource template uriTemplate up in the
// current snapshot: ErrServerNotFound for a server that is not
// configured, an *UnavailableError (ReasonStarting) before the first
// discovery round finished, else ErrResourceNotFound when the server does
// not list it.
func (b *Bridge) ResolveTemplate(server, uriTemplate string) (*ResourceTemplate, error) {
	if b.ctx.Err() != nil {
		return nil, ErrClosed
	}
	if _, err := b.upstream(server); err != nil {
		return nil, err
	}
	t, ok := b.resources.Current().LookupTemplate(server, uriTemplate)
	if !ok {
		select {
		case <-b.ready:
		default:
			return nil, &UnavailableError{Reason: ReasonStarting, RetryAfter: time.Second}
		}
		return nil, fmt.Errorf("%w: server %q lists no resource template %q", ErrResourceNotFound, server, trimURI(uriTemplate))
	}
	return t, nil
}

// Completion is one completion/complete request: what it completes (a
// prompt from ResolvePrompt, or a resource template from ResolveTemplate),
// the argument, what has been typed of it, and the arguments already
// resolved.
type Completion struct {
	Prompt   *Prompt
	Template *ResourceTemplate
	// Argument is the argument's name; Value what has been typed so far.
	Argument, Value string
	// Context are the arguments already resolved (may be nil).
	Context map[string]string
	// Principal is forwarded as for tools/call (ForwardPrincipal).
	Principal string
}

// server is the upstream the completion is asked of.
func (c *Completion) server() string {
	if c.Prompt != nil {
		return c.Prompt.Server
	}
	return c.Template.Server
}

// ref is the MCP reference: the prompt under its upstream's own name, or
// the template as the upstream lists it.
func (c *Completion) ref() *mcp.CompleteReference {
	if c.Prompt != nil {
		return &mcp.CompleteReference{Type: "ref/prompt", Name: c.Prompt.P.Name}
	}
	return &mcp.CompleteReference{Type: "ref/resource", URI: c.Template.T.URITemplate}
}

// noCompletions is the answer of an upstream that does not declare the
// completions capability: no values (nothing is sent).
func noCompletions() *mcp.CompleteResult {
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
}

// canComplete reports whether the session's upstream declared the
// completions capability (initialize, or server/discover in 2026-07-28).
func (s *session) canComplete() bool {
	ir := s.cs.InitializeResult()
	return ir != nil && ir.Capabilities != nil && ir.Capabilities.Completions != nil
}

// Complete asks the upstream of c's prompt or template for completions of
// c.Argument. An upstream that does not declare the completions capability
// answers no values, and nothing is sent to it; an upstream error (such as
// MethodNotFound from one that declares the capability but does not
// implement the method) is an *UpstreamError.
func (b *Bridge) Complete(ctx context.Context, c Completion) (*mcp.CompleteResult, error) {
	if c.Prompt == nil && c.Template == nil {
		return nil, fmt.Errorf("completion without a prompt or a resource template")
	}
	server := c.server()
	u, err := b.upstream(server)
	if err != nil {
		return nil, err
	}
	// Decided before the request path, as for subscriptions: a request
	// that sends nothing is no verdict for the breaker, and takes no slot
	// of the upstream's concurrency limit.
	if s := u.source.current(ctx); s != nil && !s.canComplete() {
		return noCompletions(), nil
	}
	var res *mcp.CompleteResult
	err = b.request(ctx, u, labelOf("completion/complete"), func(ctx context.Context, s *session) error {
		if !s.canComplete() { // a new session (after an expired one) without the capability
			res = noCompletions()
			return nil
		}
		p := &mcp.CompleteParams{Ref: c.ref(), Argument: mcp.CompleteParamsArgument{Name: c.Argument, Value: c.Value},
			Meta: s.principalMeta(c.Principal)}
		if len(c.Context) > 0 {
			p.Context = &mcp.CompleteContext{Arguments: c.Context}
		}
		var err error
		res, err = s.cs.Complete(ctx, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	if res == nil {
		res = noCompletions()
	}
	return res, nil
}
