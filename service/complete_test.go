package service

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service/core"
)

// Completion (Complete) over real go-sdk upstreams reached in memory:
//
//	a  prompt "trip" {city}, template x://items/{id}; completes
//	b  template x://items/{id} too (so a server-less ref is ambiguous); completes
//	c  prompt "bare", template z://{q}; no completions capability
//	d  template d://{id}; declares completions without a handler (go-sdk
//	   answers MethodNotFound)

// completeFixture is the bridge to a, b, c and d, and what a's and b's
// handlers were asked.
type completeFixture struct {
	bridge *mcpbridge.Bridge
	mu     sync.Mutex
	seen   []*mcp.CompleteParams
}

func (cf *completeFixture) last() *mcp.CompleteParams {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	return cf.seen[len(cf.seen)-1]
}

func newCompleteFixture(t *testing.T) *completeFixture {
	t.Helper()
	cf := &completeFixture{}
	handler := func(server string) func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		return func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			cf.mu.Lock()
			cf.seen = append(cf.seen, req.Params)
			cf.mu.Unlock()
			p := req.Params
			switch p.Argument.Name {
			case "many": // more than a completion may carry
				vs := make([]string, 150)
				for i := range vs {
					vs[i] = fmt.Sprintf("v%03d", i)
				}
				return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: vs, Total: 150}}, nil
			case "long": // values over a small response limit
				return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{strings.Repeat("x", 4096)}}}, nil
			}
			ref := p.Ref.Name + p.Ref.URI
			var vs []string
			for _, city := range []string{"Berlin", "Bern", "Bergen", "Paris"} {
				if strings.HasPrefix(city, p.Argument.Value) {
					vs = append(vs, server+":"+ref+":"+city)
				}
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: vs, Total: len(vs) + 10, HasMore: true}}, nil
		}
	}
	noop := func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	}
	prompt := func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	}
	newServer := func(name string, opts *mcp.ServerOptions) *memServer {
		m := &memServer{name: name, srv: mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, opts), tools: map[string]string{}}
		return m
	}
	a := newServer("a", &mcp.ServerOptions{CompletionHandler: handler("a")})
	a.srv.AddPrompt(&mcp.Prompt{Name: "trip", Arguments: []*mcp.PromptArgument{{Name: "city"}}}, prompt)
	a.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "x://items/{id}", Name: "item"}, noop)
	b := newServer("b", &mcp.ServerOptions{CompletionHandler: handler("b")})
	b.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "x://items/{id}", Name: "item"}, noop)
	c := newServer("c", nil)
	c.srv.AddPrompt(&mcp.Prompt{Name: "bare"}, prompt)
	c.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "z://{q}", Name: "z"}, noop)
	d := newServer("d", &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Completions: &mcp.CompletionCapabilities{}}})
	d.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "d://{id}", Name: "d"}, noop)
	sa := a.config()
	sa.ForwardPrincipal = true
	br, err := mcpbridge.New(mcpbridge.Config{Servers: []mcpbridge.ServerConfig{sa, b.config(), c.config(), d.config()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		br.Close()
		for _, m := range []*memServer{a, b, c, d} {
			m.closeAll()
		}
	})
	<-br.Ready()
	cf.bridge = br
	eventually(t, "every prompt and template listed", func() bool {
		s := br.Resources().Current()
		return len(s.Prompts) == 2 && len(s.Templates) == 4
	})
	return cf
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// eventually polls cond until it holds, or fails the test.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx := ctxT(t)
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// serve runs a service with opts for the fixture's bridge.
func (cf *completeFixture) serve(t *testing.T, opts *serverOpts) toolsvcv1.ToolServiceClient {
	t.Helper()
	svc := newServer(cf.bridge, opts)
	gs := grpc.NewServer(svc.ServerOptions()...)
	svc.Register(gs)
	conn := serveBufconn(t, gs)
	t.Cleanup(svc.Shutdown)
	return toolsvcv1.NewToolServiceClient(conn)
}

func promptRef(name, arg, value string) *toolsvcv1.CompleteRequest {
	return &toolsvcv1.CompleteRequest{Ref: &toolsvcv1.CompleteRequest_Prompt{Prompt: name}, ArgumentName: arg, ArgumentValue: value}
}

func templateRef(server, uri, arg, value string) *toolsvcv1.CompleteRequest {
	return &toolsvcv1.CompleteRequest{Ref: &toolsvcv1.CompleteRequest_ResourceTemplate{ResourceTemplate: &toolsvcv1.ResourceKey{Server: server, Uri: uri}},
		ArgumentName: arg, ArgumentValue: value}
}

// wantError checks an error's code, reason and, when field is set, its
// BadRequest field violation.
func wantError(t *testing.T, what string, err error, code codes.Code, reason, field string) *status.Status {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code || reasonOf(err) != reason {
		t.Fatalf("%s: %v, want %s / %s", what, err, code, reason)
	}
	if field == "" {
		return st
	}
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				if v.GetField() == field {
					return st
				}
			}
		}
	}
	t.Fatalf("%s: %v has no field violation for %q", what, err, field)
	return st
}

func errorMeta(err error) map[string]string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetMetadata()
		}
	}
	return nil
}

// TestComplete: prompts by exposed name (asked under the upstream's own
// name), resource templates by server and URI template (or the one server
// that lists it), values, total and has_more as the upstream gave them,
// the context arguments and the principal forwarded; an upstream without
// the completions capability answers no values; every refusal names its
// field; metrics and the audit line (without the typed value).
func TestComplete(t *testing.T) {
	t.Parallel()
	cf := newCompleteFixture(t)
	audit := &syncBuffer{}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	c := cf.serve(t, &serverOpts{
		Authenticator: core.NewAuthenticator(map[string]string{aliceToken: "alice", adminToken: "root"}, nil, false),
		Authorizer:    core.NewAuthorizer([]core.Rule{{Principal: "alice", Allow: []string{"a__*"}}, {Principal: "root"}}, nil),
		AuditLog:      slog.New(slog.NewJSONHandler(audit, nil)),
		Metrics:       m,
	})
	ctx := ctxT(t)
	root, alice := bearer(ctx, adminToken), bearer(ctx, aliceToken)

	// A prompt, with context arguments.
	req := promptRef("a__trip", "city", "Ber")
	req.ContextArguments = map[string]string{"country": "DE"}
	resp, err := c.Complete(alice, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(resp.GetValues(), ","); got != "a:trip:Berlin,a:trip:Bern,a:trip:Bergen" || resp.GetTotal() != 13 || !resp.GetHasMore() {
		t.Fatalf("Complete(prompt) = %v", resp)
	}
	p := cf.last()
	if p.Ref.Type != "ref/prompt" || p.Ref.Name != "trip" || p.Context == nil || p.Context.Arguments["country"] != "DE" {
		t.Fatalf("the upstream was asked %+v (ref %+v)", p, p.Ref)
	}
	if who, _ := p.Meta[mcpbridge.PrincipalMetaKey].(map[string]any); who["name"] != "alice" {
		t.Errorf("forwardPrincipal: _meta %v", p.Meta)
	}

	// A resource template, with its server; without one, the one server
	// the caller may use that lists it.
	resp, err = c.Complete(root, templateRef("b", "x://items/{id}", "id", "P"))
	if err != nil || strings.Join(resp.GetValues(), ",") != "b:x://items/{id}:Paris" {
		t.Fatalf("Complete(template on b) = %v, %v", resp, err)
	}
	if p := cf.last(); p.Ref.Type != "ref/resource" || p.Ref.URI != "x://items/{id}" || p.Context != nil {
		t.Fatalf("the upstream was asked %+v (ref %+v)", p, p.Ref)
	}
	resp, err = c.Complete(alice, templateRef("", "x://items/{id}", "id", "Pa"))
	if err != nil || strings.Join(resp.GetValues(), ",") != "a:x://items/{id}:Paris" {
		t.Fatalf("Complete(template, server inferred for alice) = %v, %v", resp, err)
	}
	_, err = c.Complete(root, templateRef("", "x://items/{id}", "id", "P"))
	wantError(t, "a template two servers list, without a server", err, codes.InvalidArgument, ReasonRequestInvalid, "resource_template.server")
	if m := errorMeta(err); m["candidates"] != "a,b" {
		t.Errorf("candidates %q, want a,b", m["candidates"])
	}

	// At most 100 values; more is has_more.
	resp, err = c.Complete(root, promptRef("a__trip", "many", ""))
	if err != nil || len(resp.GetValues()) != 100 || resp.GetValues()[99] != "v099" || !resp.GetHasMore() || resp.GetTotal() != 150 {
		t.Fatalf("150 values from the upstream: %d values, has_more %v, total %d, %v", len(resp.GetValues()), resp.GetHasMore(), resp.GetTotal(), err)
	}

	// No completions capability: no values, nothing asked.
	asked := len(cf.seen)
	for _, r := range []*toolsvcv1.CompleteRequest{promptRef("c__bare", "x", "y"), templateRef("c", "z://{q}", "q", "")} {
		resp, err = c.Complete(root, r)
		if err != nil || len(resp.GetValues()) != 0 || resp.Total != nil || resp.GetHasMore() {
			t.Fatalf("Complete on an upstream without completions = %v, %v; want no values", resp, err)
		}
	}
	if len(cf.seen) != asked {
		t.Error("an upstream without completions was asked")
	}

	// Declared without a handler: the upstream's MethodNotFound.
	_, err = c.Complete(root, templateRef("d", "d://{id}", "id", ""))
	wantError(t, "an upstream that declares completions without a handler", err, codes.Unimplemented, ReasonUpstreamError, "")
	if m := errorMeta(err); m["upstream_code"] != "-32601" || m["server"] != "d" || m["uri"] != "d://{id}" {
		t.Errorf("metadata %v", m)
	}

	// Refusals name their field.
	for _, tc := range []struct {
		name   string
		who    context.Context
		req    *toolsvcv1.CompleteRequest
		code   codes.Code
		reason string
		field  string
	}{
		{"no ref", root, &toolsvcv1.CompleteRequest{ArgumentName: "city"}, codes.InvalidArgument, ReasonRequestInvalid, "ref"},
		{"no argument name", root, promptRef("a__trip", "", "B"), codes.InvalidArgument, ReasonRequestInvalid, "argument_name"},
		{"empty prompt", root, promptRef("", "city", ""), codes.InvalidArgument, ReasonRequestInvalid, "prompt"},
		{"overlong prompt", root, promptRef(strings.Repeat("p", 300), "city", ""), codes.InvalidArgument, ReasonRequestInvalid, "prompt"},
		{"empty template", root, templateRef("a", "", "id", ""), codes.InvalidArgument, ReasonRequestInvalid, "resource_template.uri"},
		{"unknown prompt", root, promptRef("a__nope", "city", ""), codes.NotFound, ReasonPromptNotFound, "prompt"},
		{"unknown server", root, templateRef("nope", "x://items/{id}", "id", ""), codes.NotFound, ReasonServerNotFound, "resource_template.server"},
		{"a template the server does not list", root, templateRef("c", "x://items/{id}", "id", ""), codes.NotFound, ReasonResourceNotFound, "resource_template.uri"},
		{"a resource URI, not a template", root, templateRef("a", "x://items/1", "id", ""), codes.NotFound, ReasonResourceNotFound, "resource_template.uri"},
		{"a template no server lists", root, templateRef("", "q://{x}", "x", ""), codes.NotFound, ReasonResourceNotFound, "resource_template.uri"},
		{"a prompt outside the rules", alice, promptRef("c__bare", "x", ""), codes.PermissionDenied, ReasonPermissionDenied, ""},
		// Authorization before a failed lookup: nothing learnt about
		// names the caller may not use.
		{"an unknown prompt outside the rules", alice, promptRef("zz__nope", "x", ""), codes.PermissionDenied, ReasonPermissionDenied, ""},
		{"another server's resources", alice, templateRef("b", "x://items/{id}", "id", ""), codes.PermissionDenied, ReasonPermissionDenied, ""},
		{"a template only servers outside the rules list", alice, templateRef("", "z://{q}", "q", ""), codes.NotFound, ReasonResourceNotFound, "resource_template.uri"},
		{"no credentials", ctx, promptRef("a__trip", "city", ""), codes.Unauthenticated, ReasonUnauthenticated, ""},
	} {
		_, err := c.Complete(tc.who, tc.req)
		wantError(t, tc.name, err, tc.code, tc.reason, tc.field)
	}

	// Caller text is not echoed whole.
	long := strings.Repeat("x", 1<<20)
	for _, req := range []*toolsvcv1.CompleteRequest{templateRef("a", long, "id", ""), templateRef(long, "x://items/{id}", "id", ""),
		templateRef("", long, "id", ""), promptRef(long, "city", "")} {
		_, err := c.Complete(root, req)
		if st := status.Convert(err); len(st.Message())+proto.Size(st.Proto()) > 2048 || strings.Contains(st.Message(), strings.Repeat("x", 200)) {
			t.Errorf("a 1 MiB name or URI: status of %d bytes: %.300s", proto.Size(st.Proto()), st.Message())
		}
	}

	// Metrics: the operations' family, method completion/complete.
	for _, c := range []struct {
		server, outcome string
		want            float64
	}{{"a", "ok", 3}, {"b", "ok", 1}, {"c", "ok", 2}, {"d", "Unimplemented", 1}, {"a", "NotFound", 2}, {"c", "NotFound", 1}, {"unknown", "NotFound", 6}} {
		if n := testutil.ToFloat64(m.resourceOps.WithLabelValues(c.server, "completion/complete", c.outcome)); n != c.want {
			t.Errorf("toolsvc_resource_requests_total{server=%q,method=completion/complete,outcome=%q} = %v, want %v", c.server, c.outcome, n, c.want)
		}
	}
	// The audit line: the argument's name and its value's length, never
	// the value.
	lines := audit.String()
	var line string
	for _, l := range strings.Split(lines, "\n") {
		if strings.Contains(l, `"country"`) || strings.Contains(l, `"Ber"`) {
			t.Errorf("the audit log has the typed value or the context: %s", l)
		}
		if strings.Contains(l, `"msg":"completion"`) && strings.Contains(l, `"prompt":"a__trip"`) && line == "" {
			line = l
		}
	}
	for _, want := range []string{`"principal":"alice"`, `"server":"a"`, `"argument":"city"`, `"value_bytes":3`, `"values":3`, `"outcome":"ok"`} {
		if !strings.Contains(line, want) {
			t.Errorf("the first completion's audit line %q lacks %s", line, want)
		}
	}
}

// TestCompleteLimits: a completion takes a slot of the principal's rate
// limit like a call, and is held to the request and response size limits.
func TestCompleteLimits(t *testing.T) {
	t.Parallel()
	cf := newCompleteFixture(t)
	c := cf.serve(t, &serverOpts{
		Authenticator: core.NewAuthenticator(map[string]string{aliceToken: "alice", adminToken: "root"}, nil, false),
		Authorizer:    core.NewAuthorizer(nil, nil),
		// alice: a bucket of 1 that refills once a minute.
		RateLimits:       []core.RateLimit{{Principal: "alice", CallsPerSecond: 1.0 / 60, Burst: 1}},
		MaxRequestBytes:  1024,
		MaxResponseBytes: 1024,
	})
	ctx := ctxT(t)
	alice, root := bearer(ctx, aliceToken), bearer(ctx, adminToken)
	if _, err := c.Complete(alice, promptRef("a__trip", "city", "B")); err != nil {
		t.Fatal(err)
	}
	_, err := c.Complete(alice, promptRef("a__trip", "city", "B"))
	wantError(t, "a completion over the rate limit", err, codes.ResourceExhausted, ReasonRateLimited, "")
	if retryOf(err) <= 0 {
		t.Errorf("no RetryInfo: %v", err)
	}

	_, err = c.Complete(root, promptRef("a__trip", "city", strings.Repeat("B", 2000)))
	wantError(t, "a typed value over the request limit", err, codes.ResourceExhausted, ReasonRequestTooLarge, "")
	_, err = c.Complete(root, promptRef("a__trip", "long", ""))
	st := wantError(t, "values over the response limit", err, codes.ResourceExhausted, ReasonResponseTooLarge, "")
	if m := errorMeta(err); m["prompt"] != "a__trip" || m["server"] != "a" {
		t.Errorf("%v: metadata %v", st.Message(), m)
	}
}
