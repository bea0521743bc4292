package mcpbridge

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// completeUpstream is a real go-sdk server with a prompt ("p q", exposed
// as mem__p_q) and a resource template; complete, when set, is its
// completion handler, and declare alone declares the capability without
// one (go-sdk then answers MethodNotFound).
func completeUpstream(t *testing.T, name string, complete func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error), declare bool) *memUpstream {
	up := newMemUpstream(t)
	opts := &mcp.ServerOptions{CompletionHandler: complete}
	if declare {
		opts.Capabilities = &mcp.ServerCapabilities{Completions: &mcp.CompletionCapabilities{}}
	}
	up.server = mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, opts)
	up.server.AddPrompt(&mcp.Prompt{Name: "p q", Arguments: []*mcp.PromptArgument{{Name: "city"}}},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	up.server.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "mem://items/{id}", Name: "item"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
	return up
}

func TestComplete(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []*mcp.CompleteParams
	handler := func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		mu.Lock()
		seen = append(seen, req.Params)
		mu.Unlock()
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{req.Params.Argument.Value + "1"}, Total: 7, HasMore: true}}, nil
	}
	withHandler := completeUpstream(t, "mem", handler, false)
	without := completeUpstream(t, "bare", nil, false)
	declared := completeUpstream(t, "declared", nil, true)
	sc := withHandler.config("mem")
	sc.ForwardPrincipal = true
	b := newTestBridge(t, sc, without.config("bare"), declared.config("declared"))
	var prompt *Prompt
	eventually(t, "the prompt listed", func() bool { prompt, _ = b.ResolvePrompt("mem__p_q"); return prompt != nil })
	eventually(t, "every template listed", func() bool { return len(b.Resources().Current().Templates) == 3 })
	ctx := t.Context()

	// A prompt: its upstream's own name, the argument, the context, the
	// principal (forwardPrincipal), and the answer as it came.
	res, err := b.Complete(ctx, Completion{Prompt: prompt, Argument: "city", Value: "Ber", Context: map[string]string{"country": "DE"}, Principal: "alice"})
	if err != nil || len(res.Completion.Values) != 1 || res.Completion.Values[0] != "Ber1" || res.Completion.Total != 7 || !res.Completion.HasMore {
		t.Fatalf("Complete(prompt) = %+v, %v", res, err)
	}
	mu.Lock()
	p := seen[0]
	mu.Unlock()
	if p.Ref.Type != "ref/prompt" || p.Ref.Name != "p q" || p.Argument.Name != "city" || p.Context == nil || p.Context.Arguments["country"] != "DE" {
		t.Fatalf("the upstream got %+v (ref %+v)", p, p.Ref)
	}
	if who, _ := p.Meta[PrincipalMetaKey].(map[string]any); who["name"] != "alice" {
		t.Errorf("the upstream's _meta %v does not name the principal", p.Meta)
	}

	// A template: it must be one the server lists.
	tm, err := b.ResolveTemplate("mem", "mem://items/{id}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Complete(ctx, Completion{Template: tm, Argument: "id"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	p = seen[1]
	mu.Unlock()
	if p.Ref.Type != "ref/resource" || p.Ref.URI != "mem://items/{id}" || p.Context != nil {
		t.Fatalf("the upstream got %+v (ref %+v)", p, p.Ref)
	}
	for _, c := range []struct{ server, tmpl string }{{"mem", "mem://items/{other}"}, {"mem", "mem://items/1"}} {
		if _, err := b.ResolveTemplate(c.server, c.tmpl); !errors.Is(err, ErrResourceNotFound) {
			t.Errorf("ResolveTemplate(%s, %s): %v, want ErrResourceNotFound", c.server, c.tmpl, err)
		}
	}
	if _, err := b.ResolveTemplate("nope", "mem://items/{id}"); !errors.Is(err, ErrServerNotFound) {
		t.Errorf("ResolveTemplate of an unconfigured server: %v", err)
	}
	if got := b.Resources().Current().ServersForTemplate("mem://items/{id}"); len(got) != 3 || got[0] != "bare" || got[2] != "mem" {
		t.Errorf("ServersForTemplate = %v, want [bare declared mem]", got)
	}

	// Without the completions capability: no values, and nothing sent.
	bare, _ := b.ResolveTemplate("bare", "mem://items/{id}")
	res, err = b.Complete(ctx, Completion{Template: bare, Argument: "id", Value: "1"})
	if err != nil || res.Completion.Values == nil || len(res.Completion.Values) != 0 {
		t.Fatalf("Complete on an upstream without completions = %+v, %v; want no values", res, err)
	}
	if st, _ := b.Server("bare"); st.InFlightCalls != 0 || st.ConsecutiveFailures != 0 {
		t.Errorf("status %+v", st)
	}

	// Declared without a handler: go-sdk's MethodNotFound, as the
	// upstream's answer.
	decl, _ := b.ResolveTemplate("declared", "mem://items/{id}")
	_, err = b.Complete(ctx, Completion{Template: decl, Argument: "id"})
	var ue *UpstreamError
	if !errors.As(err, &ue) || ue.Code != jsonrpc.CodeMethodNotFound || ue.Server != "declared" {
		t.Fatalf("Complete on an upstream that declares completions but has no handler: %v, want an UpstreamError with MethodNotFound", err)
	}
	if st, _ := b.Server("declared"); st.ConsecutiveFailures != 0 {
		t.Errorf("an upstream's error answer counted against it: %+v", st)
	}
}
