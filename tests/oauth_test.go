package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// oauthUpstream is a running tests/oauthupstream: a real authorization
// server (mockoidc) and a go-sdk MCP server behind auth.RequireBearerToken.
type oauthUpstream struct {
	URL          string `json:"url"`
	Issuer       string `json:"issuer"`
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret"`
	RefreshToken string `json:"refreshToken"`
	Admin        string `json:"admin"`
	TokenURL     string `json:"tokenUrl"`
}

type oauthStats struct {
	TokenRequests map[string]int `json:"tokenRequests"`
	Unauthorized  int            `json:"unauthorized"`
}

func startOAuthUpstream(t *testing.T) *oauthUpstream {
	t.Helper()
	path := helperBinary(t, "oauthupstream")
	p := startProc(t, exec.Command(path))
	line := p.log.waitFor(t, regexp.MustCompile(`^\{.*\}$`), 30*time.Second)
	var u oauthUpstream
	if err := json.Unmarshal([]byte(line), &u); err != nil {
		t.Fatalf("oauthupstream printed %q: %v", line, err)
	}
	return &u
}

func (u *oauthUpstream) stats(t *testing.T) oauthStats {
	t.Helper()
	resp, err := http.Get(u.Admin + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s oauthStats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func (u *oauthUpstream) revoke(t *testing.T) {
	t.Helper()
	resp, err := http.Post(u.Admin+"/revoke", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// TestOAuthRefreshTokenUpstream: an upstream behind a real authorization
// server, reached with a provisioned refresh token (secrets from ${ENV}).
// toolsvc discovers the token endpoint (401 → RFC 9728 metadata → OIDC
// discovery), refreshes, and calls. When the resource server revokes every
// token, the next call's 401 is answered by exactly one refresh and the
// call succeeds on the retry. No secret appears in the log. The caller's
// principal reaches the upstream in _meta (forwardPrincipal).
func TestOAuthRefreshTokenUpstream(t *testing.T) {
	t.Parallel()
	up := startOAuthUpstream(t)
	const alice = "alice-token-0123456789"
	// mockoidc accepts client credentials only in the form body although
	// its metadata also names client_secret_basic: authMethod says so.
	p := startToolsvcEnv(t, cfg{Auth: &authCfg{Tokens: map[string]string{"alice": alice}},
		Servers: servers{"prot": goHTTP(up.URL, upstream{PingInterval: "1h", ForwardPrincipal: true,
			OAuth: &oauthCfg{ClientID: up.ClientID, ClientSecret: "${PROT_SECRET}", RefreshToken: "${PROT_REFRESH}", AuthMethod: "client_secret_post"}})}},
		[]string{"PROT_SECRET=" + up.ClientSecret, "PROT_REFRESH=" + up.RefreshToken})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+alice)
	call := func() {
		t.Helper()
		res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "prot__echo", ArgumentsJson: `{"text": "hi"}`})
		if err != nil || resultText(res) != "hi" {
			t.Fatalf("prot__echo = %v, %v", res, err)
		}
	}
	call()
	s0 := up.stats(t)
	if s0.TokenRequests["refresh_token"] != 1 {
		t.Errorf("refresh_token requests after start = %d, want 1 (stats %+v)", s0.TokenRequests["refresh_token"], s0)
	}
	up.revoke(t)
	call()
	s1 := up.stats(t)
	if got := s1.TokenRequests["refresh_token"] - s0.TokenRequests["refresh_token"]; got != 1 {
		t.Errorf("refresh_token requests for the call after revocation = %d, want exactly 1", got)
	}
	if got := s1.Unauthorized - s0.Unauthorized; got != 1 {
		t.Errorf("401 answers for the call after revocation = %d, want exactly 1 (then the retry succeeded)", got)
	}
	if st := serverStatus(t, ctx, p.client, "prot"); st.GetState() != toolsvcv1.ServerState_SERVER_STATE_READY || st.GetConnectCount() != 1 {
		t.Errorf("after the refresh the server is %v with %d connects, want READY on its first session", st.GetState(), st.GetConnectCount())
	}

	// Identity forwarding: the upstream sees who asked.
	res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "prot__whoami"})
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal([]byte(resultText(res)), &meta); err != nil {
		t.Fatalf("whoami returned %q: %v", resultText(res), err)
	}
	if pr, _ := meta["dev.toolsvc/principal"].(map[string]any); pr["name"] != "alice" {
		t.Errorf("_meta seen by the upstream = %v, want dev.toolsvc/principal {name: alice}", meta)
	}

	log := p.log.String()
	for name, secret := range map[string]string{"client secret": up.ClientSecret, "refresh token": up.RefreshToken} {
		if strings.Contains(log, secret) {
			t.Errorf("the %s appears in the log", name)
		}
	}
}

// TestUpstreamAuthRejected: an upstream that refuses toolsvc's credentials
// is an authentication problem, not a crash: ListServers' last error says
// so, toolsvc_upstream_auth_failures_total counts it, and toolsvc waits
// authRetry before the next attempt however short its crash backoff (one
// token request, not one every few milliseconds). ReconnectServer retries at
// once. Two causes: a wrong client secret (the token endpoint refuses) and
// no credentials at all (the upstream answers 401).
func TestUpstreamAuthRejected(t *testing.T) {
	t.Parallel()
	up := startOAuthUpstream(t)
	p := startToolsvc(t, cfg{Servers: servers{
		"wrongsecret": goHTTP(up.URL, upstream{PingInterval: "1h", Backoff: &backoff{Base: "10ms", Max: "20ms"}, AuthRetry: "1h",
			OAuth: &oauthCfg{ClientID: up.ClientID, ClientSecret: "not-the-secret", RefreshToken: up.RefreshToken, AuthMethod: "client_secret_post"}}),
		"nocreds": goHTTP(up.URL, upstream{PingInterval: "1h", Backoff: &backoff{Base: "10ms", Max: "20ms"}, AuthRetry: "1h"})}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	for server, want := range map[string]string{
		"wrongsecret": `authentication failed \(see below; check the server's oauth settings.*oauth: refresh_token token request to \S+ failed: HTTP 401: invalid_client`,
		"nocreds":     `authentication failed \(the upstream answered HTTP 401 Unauthorized`,
	} {
		var st *toolsvcv1.Server
		eventually(t, defaultTestTimeout, server+" to fail", func() bool {
			st = serverStatus(t, ctx, p.client, server)
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
	}
	// With a 10-20 ms crash backoff, a second or so would be ~50 attempts.
	time.Sleep(time.Second)
	s := up.stats(t)
	if got := s.TokenRequests["refresh_token"]; got != 1 {
		t.Errorf("token requests with the wrong secret = %d, want 1 (held for authRetry)", got)
	}
	// wrongsecret's first request went without a token (401, then
	// discovery), nocreds' one request: two 401s in all.
	if s.Unauthorized != 2 {
		t.Errorf("401 answers = %d, want 2 (one attempt per server)", s.Unauthorized)
	}
	metrics := scrape(t, p.adminAddr)
	for _, server := range []string{"wrongsecret", "nocreds"} {
		if !strings.Contains(metrics, fmt.Sprintf(`toolsvc_upstream_auth_failures_total{server=%q} 1`, server)) {
			t.Errorf("/metrics lacks toolsvc_upstream_auth_failures_total{server=%q} 1", server)
		}
	}
	// An operator reconnect is a new attempt now.
	admin := toolsvcv1.NewAdminServiceClient(grpcConn(t, p.addr))
	if _, err := admin.ReconnectServer(ctx, &toolsvcv1.ReconnectServerRequest{Name: "wrongsecret"}); status.Code(err) != codes.Unavailable {
		t.Fatalf("ReconnectServer with credentials still wrong = %v, want UNAVAILABLE", err)
	}
	eventually(t, 10*time.Second, "the reconnect's token request", func() bool {
		return up.stats(t).TokenRequests["refresh_token"] == 2
	})
	if strings.Contains(p.log.String(), up.RefreshToken) {
		t.Error("the refresh token appears in the log")
	}
}

// TestOAuthLoginProvisionsServe is the operator's whole refresh_token story:
// `toolsvc oauth login` against the authorization server (authorization
// code with PKCE, the "browser" approving at once, redirect to toolsvc's
// loopback listener) prints the server's oauth settings with a refresh
// token; `toolsvc serve` with exactly those settings reaches the upstream.
func TestOAuthLoginProvisionsServe(t *testing.T) {
	t.Parallel()
	up := startOAuthUpstream(t)
	browser := helperBinary(t, "oauthupstream")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin.toolsvc, "oauth", "login", "--client-id", up.ClientID, "--browser", browser+" -follow", up.URL)
	cmd.Env = append(os.Environ(), "TOOLSVC_OAUTH_CLIENT_SECRET="+up.ClientSecret)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("oauth login: %v\n%s", err, stderr.String())
	}
	var got struct {
		OAuth map[string]string `json:"oauth"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("oauth login printed %q: %v", out, err)
	}
	o := got.OAuth
	if o["grant"] != "refresh_token" || o["clientId"] != up.ClientID || o["refreshToken"] == "" || o["authMethod"] != "client_secret_post" {
		t.Fatalf("oauth login printed %v", o)
	}
	if !strings.Contains(stderr.String(), "code_challenge_method=S256") || !strings.Contains(stderr.String(), "listed 2 tools") {
		t.Errorf("oauth login's output lacks the PKCE authorization URL or the tool count:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), o["refreshToken"]) {
		t.Error("the refresh token went to stderr as well as to the settings on stdout")
	}
	p := startToolsvcEnv(t, cfg{Servers: servers{"prot": goHTTP(up.URL, upstream{PingInterval: "1h",
		OAuth: &oauthCfg{Grant: "refresh_token", ClientID: o["clientId"], ClientSecret: "${S}", RefreshToken: "${R}", AuthMethod: o["authMethod"]}})}},
		[]string{"S=" + o["clientSecret"], "R=" + o["refreshToken"]})
	res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "prot__echo", ArgumentsJson: `{"text": "provisioned"}`})
	if err != nil || resultText(res) != "provisioned" {
		t.Fatalf("call with the provisioned refresh token = %v, %v", res, err)
	}
}
