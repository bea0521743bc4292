package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/authtest"
)

// authStats reads the authorization server's counters.
func authStats(t *testing.T, issuer string) authtest.Stats {
	t.Helper()
	resp, err := http.Get(issuer + "/admin/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st authtest.Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// jwksURI is the issuer's JWKS address from its OpenID discovery.
func jwksURI(t *testing.T, issuer string) string {
	t.Helper()
	resp, err := http.Get(issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d struct {
		JWKS string `json:"jwks_uri"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil || d.JWKS == "" {
		t.Fatalf("discovery: %v (jwks_uri %q)", err, d.JWKS)
	}
	return d.JWKS
}

// TestTokenExchangeEndToEnd: toolsvc trusts the authorization server's
// JWTs (auth.jwt) and reaches a bearer-checking upstream in mode
// tokenExchange, all real processes. Each principal's call goes through
// its own session with its own exchanged token: the upstream's whoami sees
// alice as alice and bob as bob (toolsvc as the actor), over gRPC and the
// MCP front door. A refused subject is PERMISSION_DENIED
// CREDENTIALS_REFUSED (access_denied), a static-token caller
// CREDENTIALS_REFUSED (no_subject_token). Concurrent first calls
// make one exchange per principal, and so do concurrent calls once the
// exchanged token is about to expire. maxSessions 2 evicts the least
// recently used idle session for a third principal (without a new
// exchange), sessionIdle closes them, the authorization server stopped is
// UNAVAILABLE token_endpoint, and no token reaches the log or ListServers.
func TestTokenExchangeEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	defer http.DefaultClient.CloseIdleConnections()
	// Tokens live 36 s: an exchanged one is cached until 30 s before its
	// expiry, so 6 s, then exchanged again.
	asProc := startProcWith(t, exec.Command(helperBinary(t, "authserver"), "-access-ttl", "36s", "-refuse-exchange", "mallory"),
		procOpts{checkExit: true})
	issuer := asProc.log.waitFor(t, urlLineRE, 30*time.Second)
	up := startBearerUpstream(t, issuer, "urn:test:upstream")
	const static = "static-token-0123456789"
	p := startToolsvc(t, cfg{
		Auth: &authCfg{Tokens: map[string]string{"robot": static},
			JWT: &jwtCfg{JWKSURL: jwksURI(t, issuer), Issuer: issuer, Audience: "toolsvc"}},
		Servers: servers{"up": goHTTP(up, upstream{PingInterval: "1h", Credentials: &credsCfg{Mode: "tokenExchange",
			Issuer: issuer, ClientID: authToolsvc.ID, ClientSecret: authToolsvc.Secret, Audience: "urn:test:upstream",
			MaxSessions: 2, SessionIdle: "3s"}})}},
		"--mcp-listen", "127.0.0.1:0")

	tokens := map[string]string{}
	for _, user := range []string{"alice", "bob", "carol", "dave", "mallory"} {
		tok, err := authtest.Login(ctx, issuer, authAgent, user)
		if err != nil {
			t.Fatalf("login %s: %v", user, err)
		}
		tokens[user] = tok.AccessToken
	}
	as := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	}
	whoamiAs := func(user string) (map[string]any, error) {
		res, err := p.client.CallTool(as(tokens[user]), &toolsvcv1.CallToolRequest{Name: "up__whoami"})
		if err != nil {
			return nil, err
		}
		if res.GetIsError() {
			return nil, fmt.Errorf("whoami as %s: tool error %v", user, res.GetContent())
		}
		return res.GetStructuredContent().AsMap(), nil
	}
	check := func(user string, who map[string]any) {
		t.Helper()
		act, _ := who["act"].(map[string]any)
		if who["sub"] != user || act["sub"] != authToolsvc.ID {
			t.Errorf("as %s the upstream saw %v", user, who)
		}
	}
	// Concurrent first calls of two principals: each sees itself, one
	// exchange (and one session) each.
	concurrent := func(users ...string) {
		t.Helper()
		var wg sync.WaitGroup
		for _, user := range users {
			for range 8 {
				wg.Go(func() {
					who, err := whoamiAs(user)
					if err != nil {
						t.Errorf("whoami as %s: %v", user, err)
						return
					}
					check(user, who)
				})
			}
		}
		wg.Wait()
	}
	// The per-user upstream's tools are unknown until a caller's session
	// lists them: bob's tools/list over the MCP front door does it through
	// his; alice's ListTools over gRPC sees them too.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + p.mcpAddr + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{tokens["bob"]}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	mlt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(mlt.Tools, func(tl *mcp.Tool) bool { return tl.Name == "up__whoami" }) {
		t.Fatalf("bob's first tools/list has no up__whoami: %d tools", len(mlt.Tools))
	}
	lt, err := p.client.ListTools(as(tokens["alice"]), &toolsvcv1.ListToolsRequest{PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(lt.GetTools(), func(tl *toolsvcv1.Tool) bool { return tl.GetName() == "up__whoami" }) {
		t.Fatalf("alice's first ListTools has no up__whoami: %d tools", len(lt.GetTools()))
	}
	concurrent("alice", "bob")
	exchanged := time.Now() // both first exchanges happened before this
	if t.Failed() {
		t.FailNow()
	}
	// The MCP front door carries the caller's JWT the same way: bob, over
	// MCP, is bob upstream (his cached token: no new exchange).
	mres, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__whoami"})
	if err != nil || mres.IsError {
		t.Fatalf("whoami as bob over the MCP front door: %v, %v", mres, err)
	}
	mwho, _ := mres.StructuredContent.(map[string]any)
	check("bob", mwho)
	st := authStats(t, issuer)
	if st.Exchanges["alice"] != 1 || st.Exchanges["bob"] != 1 {
		t.Errorf("exchanges after 8 concurrent first calls each = %v, want alice 1, bob 1", st.Exchanges)
	}

	// A refused subject, and a caller with no JWT.
	_, err = whoamiAs("mallory")
	ei := wantStatus(t, err, codes.PermissionDenied, "CREDENTIALS_REFUSED", "up", "up__whoami")
	if ei.GetMetadata()["oauth_error"] != "access_denied" {
		t.Errorf("mallory's refusal metadata = %v, want oauth_error access_denied", ei.GetMetadata())
	}
	_, err = p.client.CallTool(as(static), &toolsvcv1.CallToolRequest{Name: "up__whoami"})
	ei = wantStatus(t, err, codes.PermissionDenied, "CREDENTIALS_REFUSED", "up", "up__whoami")
	if ei.GetMetadata()["oauth_error"] != "no_subject_token" {
		t.Errorf("the static-token caller's refusal metadata = %v, want oauth_error no_subject_token", ei.GetMetadata())
	}

	// Past the cache (6 s after the first exchanges), concurrent calls
	// exchange once more per principal.
	time.Sleep(time.Until(exchanged.Add(6500 * time.Millisecond)))
	concurrent("alice", "bob")
	st = authStats(t, issuer)
	if st.Exchanges["alice"] != 2 || st.Exchanges["bob"] != 2 {
		t.Errorf("exchanges after the cached tokens neared expiry = %v, want alice 2, bob 2", st.Exchanges)
	}

	// The bound: a third principal evicts the least recently used idle
	// session other than the listener's (the one session that keeps the
	// upstream's standalone stream, closed last): alice's or bob's, the
	// one of them that is not the listener.
	if _, err := whoamiAs("alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := whoamiAs("bob"); err != nil {
		t.Fatal(err)
	}
	who, err := whoamiAs("carol")
	if err != nil {
		t.Fatal(err)
	}
	check("carol", who)
	p.log.waitFor(t, regexp.MustCompile(`per-principal session closed.*principal=(alice|bob).*sessions=2`), 10*time.Second)
	// The operator sees the bound held: the gauge of per-principal sessions.
	if m := regexp.MustCompile(`(?m)^toolsvc_upstream_user_sessions\{server="up"\} (\d+)$`).FindStringSubmatch(scrape(t, p.adminAddr)); m == nil || m[1] != "2" {
		t.Errorf("toolsvc_upstream_user_sessions{server=\"up\"} = %v, want 2 (maxSessions)", m)
	}
	// alice is served again (on a new session if hers went), with her
	// cached token.
	who, err = whoamiAs("alice")
	if err != nil {
		t.Fatal(err)
	}
	check("alice", who)
	if n := authStats(t, issuer).Exchanges["alice"]; n != 2 {
		t.Errorf("alice's exchanges after her session was evicted = %d, want 2 (the cached token)", n)
	}
	// Idle (3 s), or evicted for alice's: carol's session closes.
	p.log.waitFor(t, regexp.MustCompile(`per-principal session closed.*principal=carol`), 15*time.Second)

	// Every exchange the authorization server made, for the metric below.
	exchangesOK := 0
	for _, n := range authStats(t, issuer).Exchanges {
		exchangesOK += n
	}

	// The authorization server stops: dave, with nothing cached, is
	// UNAVAILABLE token_endpoint.
	asProc.stop()
	_, err = whoamiAs("dave")
	ei = wantStatus(t, err, codes.Unavailable, "UPSTREAM_UNAVAILABLE", "up", "up__whoami")
	if ei.GetMetadata()["unavailable_reason"] != "token_endpoint" {
		t.Errorf("dave's call with the authorization server down: metadata %v, want unavailable_reason token_endpoint", ei.GetMetadata())
	}
	// The operator sees each exchange made at the authorization server
	// (not the cached answers): the ones it made, mallory's refusal, dave's
	// unreachable server.
	metrics := scrape(t, p.adminAddr)
	for outcome, want := range map[string]int{"ok": exchangesOK, "refused": 1, "error": 1} {
		re := regexp.MustCompile(`(?m)^toolsvc_upstream_credentials_total\{op="exchange",outcome="` + outcome + `",server="up"\} (\d+)$`)
		if m := re.FindStringSubmatch(metrics); m == nil || m[1] != strconv.Itoa(want) {
			t.Errorf("toolsvc_upstream_credentials_total{op=exchange,outcome=%s} = %v, want %d", outcome, m, want)
		}
	}

	// Never more than maxSessions, never a token in the log.
	maxSeen := 0
	for _, l := range strings.Split(p.log.String(), "\n") {
		if m := regexp.MustCompile(`per-principal session closed.*sessions=(\d+)`).FindStringSubmatch(l); m != nil {
			var n int
			fmt.Sscan(m[1], &n)
			maxSeen = max(maxSeen, n)
		}
		for user, tok := range tokens {
			if strings.Contains(l, tok) || strings.Contains(l, tok[len(tok)-40:]) {
				t.Errorf("%s's token in toolsvc's log: %s", user, l)
			}
		}
	}
	if maxSeen > 2 {
		t.Errorf("%d sessions after a close, want at most maxSessions 2", maxSeen)
	}
	resp, err := p.client.ListServers(as(static), &toolsvcv1.ListServersRequest{})
	if status.Code(err) == codes.OK {
		raw, _ := json.Marshal(resp)
		for user, tok := range tokens {
			if strings.Contains(string(raw), tok) {
				t.Errorf("%s's token in ListServers", user)
			}
		}
	}
}
