package tests

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/toolsvc/toolsvc/config"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Tokens of TestReloadAuth's principals.
const (
	tokAlice = "tok-alice-0123456789"
	tokCarol = "tok-carol-0123456789"
	tokBob   = "tok-bob-0123456789ab"
	tokOps   = "tok-ops-0123456789ab"
)

// reloadAuthConfig is one server "a" and the given auth section.
func reloadAuthConfig(auth *authCfg) cfg {
	c := reloadConfig(servers{"a": stdioWithEnv("1")})
	c.Auth = auth
	return c
}

func bearerCtx(ctx context.Context, tok string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
}

// reloadAndWait rewrites the config (rename), sends SIGHUP, and waits until
// ops sees a reload after this call whose status satisfies want (the file
// watch may reload the same bytes too, before or after the SIGHUP: the
// outcome is what is waited for, not a count); it returns the status.
func reloadAndWait(t *testing.T, ctx context.Context, p *toolsvcProc, c cfg, want func(*toolsvcv1.ConfigStatus) bool) *toolsvcv1.ConfigStatus {
	t.Helper()
	status := func() *toolsvcv1.ConfigStatus {
		resp, err := p.client.ListServers(bearerCtx(ctx, tokOps), &toolsvcv1.ListServersRequest{})
		if err != nil {
			t.Fatalf("ops ListServers: %v", err)
		}
		return resp.GetConfig()
	}
	before := status().GetReloadCount()
	writeConfig(t, p.configPath, c.String())
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var cs *toolsvcv1.ConfigStatus
	eventually(t, 15*time.Second, "the reload to be reported", func() bool {
		cs = status()
		return cs.GetReloadCount() > before && want(cs)
	})
	return cs
}

// reloadOK and reloadRefused are reloadAndWait's usual wants.
func reloadOK(cs *toolsvcv1.ConfigStatus) bool { return cs.GetLastReloadOk() }

func reloadRefused(reason string) func(*toolsvcv1.ConfigStatus) bool {
	return func(cs *toolsvcv1.ConfigStatus) bool {
		return !cs.GetLastReloadOk() && strings.Contains(cs.GetLastReloadError(), reason)
	}
}

// frontInitializeAs posts an MCP initialize with tok and returns the HTTP status.
func frontInitializeAs(t *testing.T, ctx context.Context, base, tok string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestReloadAuth: a reload (rename plus SIGHUP) applies the auth section on
// gRPC and the MCP front door together: a token added works, a token
// removed is refused, a narrowed rule hides a tool and refuses its call (a
// watch open across the reload sees it removed, a front-door session gets
// list_changed), a changed rate limit applies. A reload whose auth cannot be applied (an unreadable tokensFile,
// an unreachable JWKS URL, the auth section removed) is refused with the reason, and the running
// auth keeps working.
func TestReloadAuth(t *testing.T) {
	t.Parallel()
	before := &authCfg{Tokens: map[string]string{"alice": tokAlice, "carol": tokCarol, "ops": tokOps}, Admins: []string{"ops"},
		Rules: []rule{{Principal: "*"}}, RateLimits: []config.RateLimit{{Principal: "alice", CallsPerSecond: 1000}}}
	after := &authCfg{Tokens: map[string]string{"alice": tokAlice, "bob": tokBob, "ops": tokOps}, Admins: []string{"ops"},
		Rules:      []rule{{Principal: "alice", Allow: []string{"a__*"}, Deny: []string{"a__echo"}}, {Principal: "bob"}, {Principal: "ops"}},
		RateLimits: []config.RateLimit{{Principal: "alice", CallsPerSecond: 0.001, Burst: 1}}}
	p := startToolsvc(t, reloadAuthConfig(before), "--mcp-listen", "127.0.0.1:0")
	base := "http://" + p.mcpAddr
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	alice, bob, carol := bearerCtx(ctx, tokAlice), bearerCtx(ctx, tokBob), bearerCtx(ctx, tokCarol)

	names := func(ctx context.Context) ([]string, error) {
		resp, err := p.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{})
		return toolNames(resp.GetTools()), err
	}
	if got, err := names(alice); err != nil || !slices.Contains(got, "a__echo") {
		t.Fatalf("before: alice ListTools = %v, %v; want a__echo in it", got, err)
	}
	if _, err := names(bob); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("before: bob ListTools: %v, want UNAUTHENTICATED", err)
	}
	if _, err := names(carol); err != nil {
		t.Fatalf("before: carol ListTools: %v", err)
	}
	if got := frontInitializeAs(t, ctx, base, tokCarol); got != http.StatusOK {
		t.Fatalf("before: carol on the front door: HTTP %d", got)
	}
	w := startWatch(t, alice, p.client, "")
	if snap := w.next(t, 10*time.Second); !slices.Contains(toolNames(snap.GetSnapshot().GetTools()), "a__echo") {
		t.Fatalf("alice's watch snapshot lacks a__echo: %v", snap)
	}

	front := connectGoFront(t, ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp",
		HTTPClient: &http.Client{Transport: headerRoundTripper{"Authorization": "Bearer " + tokAlice}}}, "2025-11-25")
	if got := front.names(t, ctx); !slices.Contains(got, "a__echo") {
		t.Fatalf("before: alice's front-door tools/list = %v, want a__echo in it", got)
	}
	time.Sleep(200 * time.Millisecond)
	for len(front.changed) > 0 {
		<-front.changed
	}

	cs := reloadAndWait(t, ctx, p, reloadAuthConfig(after), reloadOK)
	if !cs.GetLastReloadOk() {
		t.Fatalf("the reload was refused: %v", cs)
	}
	// Removed and added tokens, on both wires.
	if _, err := names(carol); status.Code(err) != codes.Unauthenticated {
		t.Errorf("after: carol (token removed) ListTools: %v, want UNAUTHENTICATED", err)
	}
	if got := frontInitializeAs(t, ctx, base, tokCarol); got != http.StatusUnauthorized {
		t.Errorf("after: carol on the front door: HTTP %d, want 401", got)
	}
	if _, err := names(bob); err != nil {
		t.Errorf("after: bob (token added) ListTools: %v", err)
	}
	if got := frontInitializeAs(t, ctx, base, tokBob); got != http.StatusOK {
		t.Errorf("after: bob on the front door: HTTP %d, want 200", got)
	}
	// The narrowed rule: hidden, refused, and gone from the open watch.
	if got, err := names(alice); err != nil || slices.Contains(got, "a__echo") || !slices.Contains(got, "a__ping_me") {
		t.Errorf("after: alice ListTools = %v, %v; want a__ping_me without a__echo", got, err)
	}
	select {
	case <-front.changed:
	case <-time.After(15 * time.Second):
		t.Errorf("alice's front-door session got no tools/list_changed for her narrowed rule")
	}
	if got := front.names(t, ctx); slices.Contains(got, "a__echo") || !slices.Contains(got, "a__ping_me") {
		t.Errorf("after: alice's front-door tools/list = %v; want a__ping_me without a__echo", got)
	}
	_, err := p.client.CallTool(alice, &toolsvcv1.CallToolRequest{Name: "a__echo", ArgumentsJson: `{"text": "x"}`})
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("after: alice calling a__echo: %v, want PERMISSION_DENIED", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if ev := w.next(t, time.Until(deadline)); slices.Contains(ev.GetChanges().GetRemoved(), "a__echo") {
			break
		}
	}
	// The new rate limit: burst 1, then refused.
	if _, err := p.client.CallTool(alice, &toolsvcv1.CallToolRequest{Name: "a__ping_me", ArgumentsJson: `{"x": 1}`}); err != nil {
		t.Errorf("after: alice's first call: %v", err)
	}
	_, err = p.client.CallTool(alice, &toolsvcv1.CallToolRequest{Name: "a__ping_me", ArgumentsJson: `{"x": 1}`})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "rate limit") {
		t.Errorf("after: alice's second call: %v, want RESOURCE_EXHAUSTED (rate limit)", err)
	}

	// Refused reloads: the reason in the status and the log, the running
	// auth unchanged.
	for _, c := range []struct {
		name   string
		config cfg
		reason string
	}{
		{"unreadable tokensFile", reloadAuthConfig(&authCfg{TokensFile: "/nonexistent/toolsvc-tokens", Tokens: map[string]string{"ops": tokOps}, Admins: []string{"ops"}}), "tokensFile"},
		{"JWKS URL unreachable", reloadAuthConfig(&authCfg{JWT: &jwtCfg{JWKSURL: "http://127.0.0.1:1/jwks.json"}, Tokens: map[string]string{"ops": tokOps}, Admins: []string{"ops"}}), "jwt.jwksURL"},
		{"auth section removed", reloadConfig(servers{"a": stdioWithEnv("1")}), "turning authentication off needs a restart"},
	} {
		cs := reloadAndWait(t, ctx, p, c.config, reloadRefused(c.reason))
		if cs.GetLastReloadOk() || !strings.Contains(cs.GetLastReloadError(), c.reason) {
			t.Errorf("%s: config status = %v, want refused naming %q", c.name, cs, c.reason)
		}
		if _, err := names(bob); err != nil {
			t.Errorf("%s: bob (running auth) ListTools: %v", c.name, err)
		}
		if _, err := names(carol); status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: carol ListTools: %v, want UNAUTHENTICATED still", c.name, err)
		}
		if got, _ := names(alice); slices.Contains(got, "a__echo") {
			t.Errorf("%s: alice sees a__echo again: %v", c.name, got)
		}
	}
	p.log.waitFor(t, regexpMust(`config reload failed; keeping the running configuration.*tokensFile`), time.Second)
}
