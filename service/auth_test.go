package service

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

const (
	aliceToken = "alice-token-0123456789"
	adminToken = "admin-token-0123456789"
)

// bareServer registers a service for f's bridge on a grpc.Server with no
// interceptors at all, the way an embedding program would, and returns
// clients for it.
func bareServer(t *testing.T, f *fixture, opts *serverOpts) (toolsvcv1.ToolServiceClient, toolsvcv1.AdminServiceClient) {
	t.Helper()
	svc := newServer(f.bridge, opts)
	gs := grpc.NewServer()
	svc.Register(gs)
	conn := serveBufconn(t, gs)
	t.Cleanup(svc.Shutdown)
	return toolsvcv1.NewToolServiceClient(conn), toolsvcv1.NewAdminServiceClient(conn)
}

func bearer(ctx context.Context, tok string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
}

// everyRPC calls each RPC of ToolService and AdminService once and returns
// their errors by name.
func everyRPC(ctx context.Context, c toolsvcv1.ToolServiceClient, a toolsvcv1.AdminServiceClient, tool string) map[string]error {
	errs := map[string]error{}
	_, errs["CallTool"] = c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: `{"text": "x"}`})
	if st, err := c.CallToolStream(ctx, &toolsvcv1.CallToolStreamRequest{Name: tool, ArgumentsJson: `{"text": "x"}`}); err != nil {
		errs["CallToolStream"] = err
	} else {
		_, errs["CallToolStream"] = st.Recv()
	}
	_, errs["ListTools"] = c.ListTools(ctx, &toolsvcv1.ListToolsRequest{})
	_, errs["ListServers"] = c.ListServers(ctx, &toolsvcv1.ListServersRequest{})
	if st, err := c.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{}); err != nil {
		errs["WatchCatalog"] = err
	} else {
		_, errs["WatchCatalog"] = st.Recv()
	}
	_, errs["RefreshServer"] = a.RefreshServer(ctx, &toolsvcv1.RefreshServerRequest{Name: "mem"})
	_, errs["ReconnectServer"] = a.ReconnectServer(ctx, &toolsvcv1.ReconnectServerRequest{Name: "mem"})
	_, errs["ReloadConfig"] = a.ReloadConfig(ctx, &toolsvcv1.ReloadConfigRequest{})
	return errs
}

// TestAuthInsideServiceOnBareServer: authorization does not depend on
// interceptors. On a grpc.Server without any, a request without credentials
// is refused by every RPC, a principal is refused a tool outside its rules
// (unary and streaming) and AdminService, and sees only its tools.
func TestAuthInsideServiceOnBareServer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	c, a := bareServer(t, f, &serverOpts{
		Authenticator: core.NewAuthenticator(map[string]string{aliceToken: "alice", adminToken: "root"}, nil, false),
		Authorizer:    core.NewAuthorizer([]core.Rule{{Principal: "alice", Allow: []string{"mem__echo"}}, {Principal: "root"}}, []string{"root"}),
	})
	ctx := ctxT(t)
	for rpc, err := range everyRPC(ctx, c, a, "mem__echo") {
		if status.Code(err) != codes.Unauthenticated || reasonOf(err) != ReasonUnauthenticated {
			t.Errorf("%s without credentials = %v, want UNAUTHENTICATED", rpc, err)
		}
	}
	alice := bearer(ctx, aliceToken)
	errs := everyRPC(alice, c, a, "mem__t0000")
	for _, rpc := range []string{"CallTool", "CallToolStream", "RefreshServer", "ReconnectServer", "ReloadConfig"} {
		if status.Code(errs[rpc]) != codes.PermissionDenied || reasonOf(errs[rpc]) != ReasonPermissionDenied {
			t.Errorf("alice %s outside her rules = %v, want PERMISSION_DENIED", rpc, errs[rpc])
		}
	}
	for _, rpc := range []string{"ListTools", "ListServers", "WatchCatalog"} {
		if errs[rpc] != nil {
			t.Errorf("alice %s = %v", rpc, errs[rpc])
		}
	}
	// A tool that does not exist is denied too (no existence leak).
	if _, err := c.CallTool(alice, &toolsvcv1.CallToolRequest{Name: "mem__nope"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("alice calling an unknown tool outside her rules = %v, want PERMISSION_DENIED", err)
	}
	if res, err := c.CallTool(alice, &toolsvcv1.CallToolRequest{Name: "mem__echo", ArgumentsJson: `{"text": "hi"}`}); err != nil || res.GetContent()[0].GetText().GetText() != "hi" {
		t.Fatalf("alice calling mem__echo = %v, %v", res, err)
	}
	list, err := c.ListTools(alice, &toolsvcv1.ListToolsRequest{})
	if err != nil || len(list.GetTools()) != 1 || list.GetTools()[0].GetName() != "mem__echo" {
		t.Fatalf("alice's ListTools = %v, %v; want mem__echo alone", list, err)
	}
	root := bearer(ctx, adminToken)
	if _, err := a.RefreshServer(root, &toolsvcv1.RefreshServerRequest{Name: "mem"}); err != nil {
		t.Errorf("root RefreshServer = %v", err)
	}
	if _, err := c.CallTool(root, &toolsvcv1.CallToolRequest{Name: "mem__t0000"}); err != nil {
		t.Errorf("root calling mem__t0000 = %v", err)
	}
}

// TestAuthFailsClosed: an core.Authorizer without any way to authenticate (no
// core.Authenticator, no interceptor) refuses every RPC instead of treating the
// caller as allowed.
func TestAuthFailsClosed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	c, a := bareServer(t, f, &serverOpts{Authorizer: core.NewAuthorizer(nil, nil)})
	ctx := bearer(ctxT(t), aliceToken)
	for rpc, err := range everyRPC(ctx, c, a, "mem__echo") {
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s with nothing to authenticate = %v, want UNAUTHENTICATED", rpc, err)
		}
	}
}

func reasonOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

func retryOf(err error) time.Duration {
	for _, d := range status.Convert(err).Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			return r.GetRetryDelay().AsDuration()
		}
	}
	return 0
}

// TestRateLimits: a principal over its callsPerSecond gets
// RESOURCE_EXHAUSTED with RATE_LIMITED and a RetryInfo, on unary and
// streaming calls alike, without touching another principal's budget; the
// refusals are counted by principal.
func TestRateLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	c, _ := bareServer(t, f, &serverOpts{
		Authenticator: core.NewAuthenticator(map[string]string{aliceToken: "agent-alice", adminToken: "root"}, nil, false),
		Authorizer:    core.NewAuthorizer(nil, nil),
		// A bucket of 2 that refills once a minute: the third call within
		// the test is refused.
		RateLimits: []core.RateLimit{{Principal: "agent-*", CallsPerSecond: 1.0 / 60, Burst: 2}, {Principal: "*", CallsPerSecond: 1000}},
		Metrics:    m,
	})
	ctx := ctxT(t)
	alice := bearer(ctx, aliceToken)
	req := &toolsvcv1.CallToolRequest{Name: "mem__echo", ArgumentsJson: `{"text": "x"}`}
	for i := 0; i < 2; i++ {
		if _, err := c.CallTool(alice, req); err != nil {
			t.Fatalf("call %d within the burst = %v", i, err)
		}
	}
	_, err := c.CallTool(alice, req)
	if status.Code(err) != codes.ResourceExhausted || reasonOf(err) != ReasonRateLimited {
		t.Fatalf("third call = %v, want RESOURCE_EXHAUSTED RATE_LIMITED", err)
	}
	if d := retryOf(err); d < 50*time.Second || d > time.Minute {
		t.Errorf("RetryInfo = %v, want about a minute (one token at 1/60 per second)", d)
	}
	st, err := c.CallToolStream(alice, &toolsvcv1.CallToolStreamRequest{Name: "mem__echo"})
	if err == nil {
		_, err = st.Recv()
	}
	if reasonOf(err) != ReasonRateLimited {
		t.Fatalf("streaming call over the limit = %v, want RATE_LIMITED", err)
	}
	// Another principal (first matching rule: "*") is not affected.
	for i := 0; i < 5; i++ {
		if _, err := c.CallTool(bearer(ctx, adminToken), req); err != nil {
			t.Fatalf("root call %d = %v", i, err)
		}
	}
	want := `
# HELP toolsvc_rate_limited_total Tool calls refused by auth.rateLimits, by principal and limit (calls_per_second, max_concurrent).
# TYPE toolsvc_rate_limited_total counter
toolsvc_rate_limited_total{limit="calls_per_second",principal="agent-alice"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "toolsvc_rate_limited_total"); err != nil {
		t.Error(err)
	}
}

// TestRateLimitMaxConcurrent: with maxConcurrent 1 a second call while the
// first is in flight is refused; once the first ends the slot is free again.
func TestRateLimitMaxConcurrent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	f.upstream.AddTool(&mcp.Tool{Name: "block", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{}, nil
	})
	ctx := ctxT(t)
	waitTool(t, ctx, f, "mem__block")
	c, _ := bareServer(t, f, &serverOpts{
		Authenticator: core.NewAuthenticator(map[string]string{aliceToken: "alice"}, nil, false),
		RateLimits:    []core.RateLimit{{Principal: "alice", MaxConcurrent: 1}},
	})
	alice := bearer(ctx, aliceToken)
	first := make(chan error, 1)
	go func() {
		_, err := c.CallTool(alice, &toolsvcv1.CallToolRequest{Name: "mem__block"})
		first <- err
	}()
	<-started
	_, err := c.CallTool(alice, &toolsvcv1.CallToolRequest{Name: "mem__echo"})
	if status.Code(err) != codes.ResourceExhausted || reasonOf(err) != ReasonRateLimited || retryOf(err) <= 0 {
		t.Fatalf("second concurrent call = %v, want RATE_LIMITED with RetryInfo", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(alice, &toolsvcv1.CallToolRequest{Name: "mem__echo", ArgumentsJson: `{"text": "x"}`}); err != nil {
		t.Fatalf("call after the first ended = %v", err)
	}
}

// TestBearerBounds: a bearer credential over core.MaxBearerLen is refused
// UNAUTHENTICATED before it is parsed (a validly signed JWT just over the
// cap too, one under it passes), and a JWT whose subject is a static-token
// principal's name is refused, so the two cannot be confused.
func TestBearerBounds(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
		"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()), "e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes())}}})
	kf, err := keyfunc.NewJWKSetJSON(jwks)
	if err != nil {
		t.Fatal(err)
	}
	// sign makes a JWT for sub whose length is about n bytes.
	sign := func(sub string, n int) string {
		pad := ""
		for {
			tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"sub": sub, "iss": "idp", "aud": "toolsvc",
				"exp": time.Now().Add(time.Hour).Unix(), "groups": pad})
			tok.Header["kid"] = "k1"
			s, err := tok.SignedString(key)
			if err != nil {
				t.Fatal(err)
			}
			if len(s) >= n {
				return s
			}
			pad += strings.Repeat("g", (n-len(s))*3/4+1)
		}
	}
	f := newFixture(t, 1)
	c, _ := bareServer(t, f, &serverOpts{
		Authenticator: core.NewAuthenticator(map[string]string{aliceToken: "alice", adminToken: "root"}, &core.JWTOptions{Keyfunc: kf, Issuer: "idp", Audience: "toolsvc"}, false),
		Authorizer:    core.NewAuthorizer([]core.Rule{{Principal: "carol"}, {Principal: "root"}}, []string{"root"}),
	})
	ctx := ctxT(t)
	under := sign("carol", core.MaxBearerLen-200)
	if len(under) > core.MaxBearerLen {
		t.Fatalf("the JWT under the cap is %d bytes", len(under))
	}
	if _, err := c.ListTools(bearer(ctx, under), &toolsvcv1.ListToolsRequest{}); err != nil {
		t.Fatalf("ListTools with a %d-byte JWT = %v, want it accepted", len(under), err)
	}
	for _, tc := range []struct{ what, tok, msg string }{
		{"a validly signed JWT over the cap", sign("carol", core.MaxBearerLen+1), "longer than 8192 bytes"},
		{"a 1 MiB bearer", strings.Repeat("x", 1<<20), "longer than 8192 bytes"},
		{"a JWT whose subject is a static-token principal", sign("root", 0), "static-token principal"},
	} {
		_, err := c.ListTools(bearer(ctx, tc.tok), &toolsvcv1.ListToolsRequest{})
		if status.Code(err) != codes.Unauthenticated || reasonOf(err) != ReasonUnauthenticated || !strings.Contains(status.Convert(err).Message(), tc.msg) {
			t.Errorf("ListTools with %s = %v, want UNAUTHENTICATED saying %q", tc.what, err, tc.msg)
		}
	}
}
