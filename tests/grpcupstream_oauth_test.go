package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// tokenEndpoint is the token endpoint issuer's discovery document names.
func tokenEndpoint(t *testing.T, ctx context.Context, issuer string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, issuer+"/.well-known/openid-configuration", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || doc.TokenEndpoint == "" {
		t.Fatalf("discovery at %s: %+v, %v", issuer, doc, err)
	}
	return doc.TokenEndpoint
}

// TestGRPCUpstreamOAuth: an upstream that serves the binding behind JWT
// bearer tokens from the test authorization server is listed and called
// by a toolsvc whose oauth object gets tokens by client credentials; the
// token is replaced before it expires (the upstream sees a second one);
// with a wrong client secret the server stays down, the token endpoint's
// refusal its last error, the secret nowhere.
func TestGRPCUpstreamOAuth(t *testing.T) {
	t.Parallel()
	// Tokens live 32 s: the handler replaces one 30 s before it expires,
	// so a call 3 s after the first gets a new token.
	issuer := startAuthServer(t, "-access-ttl", "32s")
	ctx, cancel := context.WithTimeout(t.Context(), 2*defaultTestTimeout)
	defer cancel()
	tokenURL := tokenEndpoint(t, ctx, issuer)
	up := newGRPCUpstream(t, "-auth-issuer", issuer)
	const wrongSecret = "not-the-toolsvc-secret"
	p := startToolsvc(t, cfg{Servers: servers{
		"o":   fastSupervision(upstream{Type: "grpc", URL: up.url(), OAuth: &oauthCfg{ClientID: "toolsvc", ClientSecret: "toolsvc-secret", TokenURL: tokenURL}}),
		"bad": fastSupervision(upstream{Type: "grpc", URL: up.url(), OAuth: &oauthCfg{ClientID: "toolsvc", ClientSecret: wrongSecret, TokenURL: tokenURL}}),
	}})
	c := p.client
	call := func(text string) {
		t.Helper()
		res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "o__echo", ArgumentsJson: `{"text": "` + text + `"}`})
		if err != nil || resultText(res) != text {
			t.Fatalf("CallTool(o__echo %s) = %v, %v", text, res, err)
		}
	}
	tools, _ := listAll(t, ctx, c, 100)
	if !hasTool(tools, "o__echo") || hasTool(tools, "bad__echo") {
		t.Fatalf("ListTools = %v, want o__echo and no bad__echo", tools)
	}
	call("with a token")
	time.Sleep(3 * time.Second) // past the first token's refresh point
	call("with the next token")
	// The upstream prints the line before it answers, but its output
	// reaches the test through a pipe a goroutine copies: wait for it.
	eventually(t, 10*time.Second, "the upstream sees a second token (the token was replaced)", func() bool {
		return strings.Count(up.p.log.String(), "new bearer token") >= 2
	})

	var last string
	eventually(t, time.Minute, "bad reports the refused token request", func() bool {
		last = serverStatus(t, ctx, c, "bad").GetLastError()
		return strings.Contains(last, "oauth token request failed")
	})
	t.Logf("bad's last error: %s", last)
	if st := serverStatus(t, ctx, c, "bad").GetState(); st == toolsvcv1.ServerState_SERVER_STATE_READY {
		t.Errorf("bad is READY with a wrong client secret")
	}
	if strings.Contains(last, wrongSecret) || strings.Contains(p.log.String(), wrongSecret) || strings.Contains(p.log.String(), "toolsvc-secret") {
		t.Errorf("a client secret leaked: last error %q", last)
	}
}

// TestGRPCUpstreamAuthRejected: a gRPC upstream whose credentials are
// refused is an authentication problem, as an HTTP upstream's 401/403 is
// (TestUpstreamAuthRejected), not a crash: the authorization server
// refusing the client's secret, the upstream answering UNAUTHENTICATED to
// a wrong bearer token, and one answering PERMISSION_DENIED. Each server
// is DOWN with "authentication failed (…)" as its last error, no breaker
// failure, toolsvc_upstream_auth_failures_total counts it once, and it
// waits authRetry (1h) however short its crash backoff (10-20 ms: one
// attempt, not one every few milliseconds); ReconnectServer retries at
// once. ListServers reports the transport as TRANSPORT_GRPC.
func TestGRPCUpstreamAuthRejected(t *testing.T) {
	t.Parallel()
	issuer := startAuthServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*defaultTestTimeout)
	defer cancel()
	tokenURL := tokenEndpoint(t, ctx, issuer)
	jwtUp := newGRPCUpstream(t, "-auth-issuer", issuer)
	tokenUp := newGRPCUpstream(t, "-token", grpcUpstreamToken)
	denyUp := newGRPCUpstream(t, "-deny")
	const wrongSecret = "not-the-toolsvc-secret"
	held := func(u upstream) upstream {
		u.Type, u.PingInterval, u.AuthRetry = "grpc", "1h", "1h"
		u.Backoff = &backoff{Base: "10ms", Max: "20ms"}
		return u
	}
	p := startToolsvc(t, cfg{Servers: servers{
		"wrongsecret": held(upstream{URL: jwtUp.url(), OAuth: &oauthCfg{ClientID: "toolsvc", ClientSecret: wrongSecret, TokenURL: tokenURL}}),
		"wrongtoken":  held(upstream{URL: tokenUp.url(), Headers: map[string]string{"Authorization": "Bearer wrong-" + grpcUpstreamToken}}),
		"denied":      held(upstream{URL: denyUp.url()}),
	}})
	c := p.client
	for server, want := range map[string]string{
		"wrongsecret": `^authentication failed \(see below; check the server's oauth settings; next attempt in 1h0m0s or on ReconnectServer\): .*oauth token request failed: oauth: client_credentials token request to \S+ failed: HTTP 401: invalid_client`,
		"wrongtoken":  `^authentication failed \(the upstream answered UNAUTHENTICATED; configure headers or oauth for this server; next attempt in 1h0m0s or on ReconnectServer\): .*Unauthenticated desc = a bearer token is required`,
		"denied":      `^authentication failed \(the upstream answered PERMISSION_DENIED; configure headers or oauth for this server; next attempt in 1h0m0s or on ReconnectServer\): .*PermissionDenied desc = this client may not use the service`,
	} {
		var st *toolsvcv1.Server
		eventually(t, defaultTestTimeout, server+" to fail", func() bool {
			st = serverStatus(t, ctx, c, server)
			return st.GetLastError() != ""
		})
		if !regexp.MustCompile(want).MatchString(st.GetLastError()) {
			t.Errorf("%s last error = %q, want it to match %q", server, st.GetLastError(), want)
		}
		if st.GetState() != toolsvcv1.ServerState_SERVER_STATE_DOWN {
			t.Errorf("%s state = %v, want DOWN", server, st.GetState())
		}
		if st.GetConsecutiveFailures() != 0 || st.GetBreakerState() != toolsvcv1.BreakerState_BREAKER_STATE_CLOSED {
			t.Errorf("%s: %d breaker failures, breaker %v; refused credentials are not a health failure", server, st.GetConsecutiveFailures(), st.GetBreakerState())
		}
		if st.GetTransport() != toolsvcv1.Transport_TRANSPORT_GRPC {
			t.Errorf("%s transport = %v, want TRANSPORT_GRPC", server, st.GetTransport())
		}
	}
	// With a 10-20 ms crash backoff, a second or so would be ~50 attempts.
	time.Sleep(time.Second)
	refusals := func(u *grpcUpstream) int {
		return strings.Count(u.p.log.String(), "refused /model_context_protocol.Mcp/")
	}
	for name, u := range map[string]*grpcUpstream{"wrongtoken": tokenUp, "denied": denyUp} {
		if n := refusals(u); n != 1 {
			t.Errorf("%s's upstream refused %d RPCs, want 1 (one attempt, held for authRetry)", name, n)
		}
	}
	metrics := scrape(t, p.adminAddr)
	for _, server := range []string{"wrongsecret", "wrongtoken", "denied"} {
		if !strings.Contains(metrics, fmt.Sprintf(`toolsvc_upstream_auth_failures_total{server=%q} 1`, server)) {
			t.Errorf("/metrics lacks toolsvc_upstream_auth_failures_total{server=%q} 1", server)
		}
	}
	// An operator reconnect is a new attempt now.
	admin := toolsvcv1.NewAdminServiceClient(grpcConn(t, p.addr))
	if _, err := admin.ReconnectServer(ctx, &toolsvcv1.ReconnectServerRequest{Name: "wrongtoken"}); status.Code(err) != codes.Unavailable {
		t.Fatalf("ReconnectServer with the token still wrong = %v, want UNAVAILABLE", err)
	}
	eventually(t, 10*time.Second, "the reconnect's RPC", func() bool { return refusals(tokenUp) == 2 })
	log := p.log.String()
	for _, secret := range []string{wrongSecret, grpcUpstreamToken} {
		if strings.Contains(log, secret) {
			t.Errorf("a secret (%.6s…) appears in the log", secret)
		}
	}
}
