package tests

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
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

// The userOAuth tests' authorization server clients: "agent" signs
// callers in to toolsvc (passthrough), "toolsvc" is toolsvc's own client
// for the users' logins, whose access tokens name the upstream.
const userOAuthClients = `[{"id":"agent","redirectURIs":["http://127.0.0.1/callback"],"audience":["toolsvc"]},` +
	`{"id":"agent-up","redirectURIs":["http://127.0.0.1/callback"],"audience":["toolsvc","urn:test:passthrough"]},` +
	`{"id":"toolsvc","secret":"toolsvc-secret","redirectURIs":["http://127.0.0.1/oauth/callback"],"audience":["urn:test:upstream"]}]`

// jwtRE matches a JWT (header and payload are base64url JSON objects): no
// such text may reach toolsvc's log, errors or ListServers.
var jwtRE = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+`)

// storeKeyFile writes a random token store key (hex) into dir, mode 0600.
func storeKeyFile(t *testing.T, dir string) string {
	t.Helper()
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	path := filepath.Join(dir, "store.key")
	if err := os.WriteFile(path, []byte(hex.EncodeToString(k)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// userOAuthUp is the "up" server in mode userOAuth on the test's
// authorization server, checking the login's subject.
func userOAuthUp(issuer, upURL string) upstream {
	return goHTTP(upURL, upstream{PingInterval: "1h", Credentials: &credsCfg{Mode: "userOAuth", Issuer: issuer,
		ClientID: "toolsvc", ClientSecret: "toolsvc-secret", Scopes: []string{"openid", "offline_access"}, RequireSameSubject: true}})
}

// browserLogin plays user's browser on a login link: a cookie jar, the
// authorization server's login form filled as user, the redirects
// followed to toolsvc's callback, whose page must say the login is stored.
func browserLogin(t *testing.T, ctx context.Context, link, user string) {
	t.Helper()
	if err := browserLoginErr(ctx, link, user); err != nil {
		t.Fatal(err)
	}
}

// browserLoginErr is browserLogin for goroutines other than the test's.
func browserLoginErr(ctx context.Context, link, user string) error {
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	cb, err := authtest.Authorize(ctx, hc, link, user)
	if err != nil {
		return fmt.Errorf("%s's browser at the authorization server: %v", user, err)
	}
	if cb.Path != "/oauth/callback" || cb.Query().Get("code") == "" {
		return fmt.Errorf("%s's browser was sent to %s%s (error %q), want toolsvc's callback with a code", user, cb.Host, cb.Path, cb.Query().Get("error"))
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cb.String(), nil)
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s's browser at toolsvc's callback: %v", user, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Logged in to up as "+user) {
		return fmt.Errorf("toolsvc's callback for %s: %s %s", user, resp.Status, body)
	}
	return nil
}

// loginLink checks err is UNAUTHENTICATED LOGIN_REQUIRED for server "up"
// and returns its login_url, a link to the authorization server.
func loginLink(t *testing.T, err error, issuer string) string {
	t.Helper()
	ei := wantStatus(t, err, codes.Unauthenticated, "LOGIN_REQUIRED", "up", "")
	link := ei.GetMetadata()["login_url"]
	if !strings.HasPrefix(link, issuer+"/") {
		t.Fatalf("login_url = %q, want a link to the authorization server %s", link, issuer)
	}
	u, _ := url.Parse(link)
	if q := u.Query(); q.Get("code_challenge_method") != "S256" || q.Get("state") == "" || q.Get("client_id") != "toolsvc" {
		t.Errorf("login_url's query = %v, want PKCE S256, a state and client_id toolsvc", q)
	}
	return link
}

// whoamiOn calls up__whoami on c as the bearer token tok and returns what
// the upstream saw.
func whoamiOn(ctx context.Context, c toolsvcv1.ToolServiceClient, tok string) (map[string]any, error) {
	res, err := c.CallTool(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok), &toolsvcv1.CallToolRequest{Name: "up__whoami"})
	if err != nil {
		return nil, err
	}
	if res.GetIsError() {
		return nil, fmt.Errorf("whoami: tool error %v", res.GetContent())
	}
	return res.GetStructuredContent().AsMap(), nil
}

// noTokenText fails the test for a JWT in text (toolsvc's log, an error,
// ListServers).
func noTokenText(t *testing.T, what, text string) {
	t.Helper()
	if m := jwtRE.FindString(text); m != "" {
		t.Errorf("a JWT in %s: …%s…", what, m[:min(len(m), 24)])
	}
}

// TestUserOAuthEndToEnd: an upstream in mode userOAuth, all real
// processes (tests/authserver, tests/testserver checking bearer JWTs,
// toolsvc with a file token store). A call by a principal who never
// logged in gets the login link: UNAUTHENTICATED LOGIN_REQUIRED with
// login_url for a plain caller, a URL elicitation for one that takes them;
// a browser (cookie jar, the login form, the redirects) completes it at
// toolsvc's callback; then the upstream sees each principal as itself.
// Tokens 36 s long are refreshed once each under concurrent calls (the
// authorization server's count); toolsvc logout and AdminService.Logout
// revoke (a principal only its own, an admin anyone's), and the next call
// gets the link again. No JWT in the log, errors or ListServers.
func TestUserOAuthEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Second)
	defer cancel()
	defer http.DefaultClient.CloseIdleConnections()
	asProc := startProcWith(t, exec.Command(helperBinary(t, "authserver"), "-access-ttl", "36s", "-clients", userOAuthClients),
		procOpts{checkExit: true})
	issuer := asProc.log.waitFor(t, urlLineRE, 30*time.Second)
	up := startBearerUpstream(t, issuer, "urn:test:upstream")
	dir := t.TempDir()
	toks := map[string]string{"alice": "static-alice-0123456789", "bob": "static-bob-0123456789", "carol": "static-carol-0123456789",
		"root": "static-root-0123456789"}
	p := startToolsvc(t, cfg{
		Auth:       &authCfg{Tokens: toks, Admins: []string{"root"}},
		TokenStore: &tokenStoreCfg{File: filepath.Join(dir, "tokens"), KeyFile: storeKeyFile(t, dir)},
		Servers:    servers{"up": userOAuthUp(issuer, up)}}, "--mcp-listen", "127.0.0.1:0")
	var errs []string // every error's text, checked for tokens at the end

	// alice, nobody listed the upstream yet: the call gets the link.
	_, err := whoamiOn(ctx, p.client, toks["alice"])
	if err != nil {
		errs = append(errs, err.Error())
	}
	link := loginLink(t, err, issuer)
	browserLogin(t, ctx, link, "alice")
	who, err := whoamiOn(ctx, p.client, toks["alice"])
	if err != nil {
		t.Fatalf("whoami as alice after her login: %v", err)
	}
	if who["sub"] != "alice" {
		t.Errorf("as alice the upstream saw %v, want sub alice", who)
	}

	// bob takes URL elicitations: the call asks him to open the link, he
	// logs in, answers accept, and the call goes on as bob.
	bobCtx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+toks["bob"])
	urlOnly := &toolsvcv1.InputCapabilities{ElicitationUrl: true}
	res, err := p.client.CallTool(bobCtx, &toolsvcv1.CallToolRequest{Name: "up__whoami", InputCapabilities: urlOnly})
	if err != nil {
		t.Fatalf("bob's interactive call: %v", err)
	}
	ir := res.GetInputRequired()
	if ir == nil || len(ir.GetRequests()) != 1 || ir.GetRequests()[0].GetElicitationUrl() == nil {
		t.Fatalf("bob's interactive call = %v, want input_required with one URL elicitation", res)
	}
	q := ir.GetRequests()[0]
	if !strings.HasPrefix(q.GetElicitationUrl().GetUrl(), issuer+"/") || !strings.Contains(q.GetElicitationUrl().GetMessage(), `"up"`) {
		t.Errorf("the URL elicitation = %v, want the authorization server's link and the server named", q.GetElicitationUrl())
	}
	browserLogin(t, ctx, q.GetElicitationUrl().GetUrl(), "bob")
	bobLoggedIn := time.Now()
	res, err = p.client.CallTool(bobCtx, &toolsvcv1.CallToolRequest{Name: "up__whoami", InputCapabilities: urlOnly,
		RequestState: ir.GetRequestState(), InputResponses: []*toolsvcv1.InputResponse{{Id: q.GetId(),
			Response: &toolsvcv1.InputResponse_Elicitation{Elicitation: &toolsvcv1.ElicitationResponse{Action: "accept"}}}}})
	if err != nil || res.GetInputRequired() != nil || res.GetIsError() {
		t.Fatalf("bob's call after the login: %v, %v", res, err)
	}
	if who := res.GetStructuredContent().AsMap(); who["sub"] != "bob" {
		t.Errorf("as bob the upstream saw %v, want sub bob", who)
	}
	// carol, over the MCP front door, takes URL elicitations: she is asked
	// on her session, logs in from the handler (her browser), accepts, and
	// the same tools/call completes as carol.
	var asked []string
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "carol", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(hctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, r.Params.Mode)
			if r.Params.Mode != "url" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			if err := browserLoginErr(hctx, r.Params.URL, "carol"); err != nil {
				return nil, err
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		}}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + p.mcpAddr + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{toks["carol"]}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	mres, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__whoami"})
	if err != nil || mres.IsError {
		t.Fatalf("carol's tools/call over the MCP front door: %v, %v", mres, err)
	}
	if mwho, _ := mres.StructuredContent.(map[string]any); mwho["sub"] != "carol" || len(asked) != 1 || asked[0] != "url" {
		t.Errorf("carol over the MCP front door: the upstream saw %v after asks %v, want sub carol after one URL elicitation", mres.StructuredContent, asked)
	}

	// A caller that takes no elicitation gets the plain error.
	_, err = whoamiOn(ctx, p.client, toks["root"])
	if err == nil {
		t.Fatal("root, never logged in, was served")
	}
	errs = append(errs, err.Error())
	rootLink := loginLink(t, err, issuer)
	// Login confusion (requireSameSubject): root's link completed by
	// mallory's browser stores nothing; a state toolsvc did not make is
	// refused too.
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	cb, err := authtest.Authorize(ctx, hc, rootLink, "mallory")
	if err != nil {
		t.Fatal(err)
	}
	forged := *cb
	fq := forged.Query()
	fq.Set("state", "bm90LXRvb2xzdmNz")
	forged.RawQuery = fq.Encode()
	for _, tc := range []struct {
		u      string
		status int
		want   string
	}{{cb.String(), http.StatusForbidden, "not the one the link was made for"}, {forged.String(), http.StatusBadRequest, "not made by this toolsvc"}} {
		resp, err := hc.Get(tc.u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("callback: %s %s, want %d and %q", resp.Status, body, tc.status, tc.want)
		}
		// The browser gets the kind of failure, never the error's detail.
		if strings.Contains(string(body), "oauth:") {
			t.Errorf("callback page shows the error's detail: %s", body)
		}
	}
	hc.CloseIdleConnections()
	_, err = whoamiOn(ctx, p.client, toks["root"])
	loginLink(t, err, issuer)

	// Expiry and refresh under load: 36 s tokens, refreshed from 30 s
	// before their expiry; 7 s after bob's login both are due, and 8
	// concurrent calls each refresh exactly once per principal.
	before := authStats(t, issuer)
	time.Sleep(time.Until(bobLoggedIn.Add(7 * time.Second)))
	var wg sync.WaitGroup
	for _, user := range []string{"alice", "bob"} {
		for range 8 {
			wg.Go(func() {
				who, err := whoamiOn(ctx, p.client, toks[user])
				if err != nil {
					t.Errorf("whoami as %s under load: %v", user, err)
				} else if who["sub"] != user {
					t.Errorf("as %s the upstream saw %v", user, who)
				}
			})
		}
	}
	wg.Wait()
	after := authStats(t, issuer)
	for _, user := range []string{"alice", "bob"} {
		if n := after.Refreshes[user] - before.Refreshes[user]; n != 1 {
			t.Errorf("%s's refreshes under 8 concurrent calls = %d, want 1 (stats before %v, after %v)", user, n, before.Refreshes, after.Refreshes)
		}
	}

	// toolsvc logout: alice revokes her own login.
	out, err := execToolsvc(ctx, p.addr, "logout", "--token", toks["alice"], "--server", "up")
	if err != nil || !strings.Contains(out, "logged out alice from up") {
		t.Fatalf("toolsvc logout as alice: %v\n%s", err, out)
	}
	if st := authStats(t, issuer); st.Revocations != after.Revocations+1 {
		t.Errorf("revocations after alice's logout = %d, want %d", st.Revocations, after.Revocations+1)
	}
	_, err = whoamiOn(ctx, p.client, toks["alice"])
	loginLink(t, err, issuer)
	errs = append(errs, err.Error())

	// AdminService.Logout: bob may not revoke another's login; root (an
	// admin) revokes bob's.
	admin := toolsvcv1.NewAdminServiceClient(grpcConn(t, p.addr))
	_, err = admin.Logout(bobCtx, &toolsvcv1.LogoutRequest{Server: "up", Principal: "alice"})
	wantStatus(t, err, codes.PermissionDenied, "PERMISSION_DENIED", "", "")
	errs = append(errs, err.Error())
	rootCtx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+toks["root"])
	_, err = admin.Logout(rootCtx, &toolsvcv1.LogoutRequest{Server: "nope"})
	wantStatus(t, err, codes.NotFound, "SERVER_NOT_FOUND", "", "")
	lr, err := admin.Logout(rootCtx, &toolsvcv1.LogoutRequest{Server: "up", Principal: "bob"})
	if err != nil || lr.GetPrincipal() != "bob" {
		t.Fatalf("root's Logout of bob: %v, %v", lr, err)
	}
	// Each is an audited admin action, naming whose login it concerned.
	p.log.waitFor(t, regexpMust(`msg="admin action" audit=true principal=bob outcome=PermissionDenied duration=\S+ action=logout target=up for=alice$`), 30*time.Second)
	p.log.waitFor(t, regexpMust(`msg="admin action" audit=true principal=root outcome=ok duration=\S+ action=logout target=up for=bob$`), 30*time.Second)
	_, err = whoamiOn(ctx, p.client, toks["bob"])
	loginLink(t, err, issuer)
	errs = append(errs, err.Error())
	if st := authStats(t, issuer); st.Revocations != after.Revocations+2 {
		t.Errorf("revocations after bob's logout = %d, want %d", st.Revocations, after.Revocations+2)
	}

	// The operator sees what happened to the logins: every refresh the
	// authorization server made, the two logouts, the confused login
	// refused. The forged state is no server's: it is refused before any
	// server's count (its 400 is the callback's).
	refreshes := 0
	for _, n := range authStats(t, issuer).Refreshes {
		refreshes += n
	}
	metrics := scrape(t, p.adminAddr)
	credential := func(op, outcome string) int {
		re := regexp.MustCompile(`(?m)^toolsvc_upstream_credentials_total\{op="` + op + `",outcome="` + outcome + `",server="up"\} (\d+)$`)
		m := re.FindStringSubmatch(metrics)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	for _, c := range []struct {
		op, outcome string
		want        int
	}{{"refresh", "ok", refreshes}, {"logout", "ok", 2}, {"login", "refused", 1}, {"login", "invalid", 0}} {
		if got := credential(c.op, c.outcome); got != c.want {
			t.Errorf("toolsvc_upstream_credentials_total{op=%s,outcome=%s} = %d, want %d", c.op, c.outcome, got, c.want)
		}
	}
	if got := credential("login", "ok"); got < 3 {
		t.Errorf("toolsvc_upstream_credentials_total{op=login,outcome=ok} = %d, want the logins of alice, bob and carol at least", got)
	}

	// Nothing leaks a token.
	noTokenText(t, "toolsvc's log", p.log.String())
	noTokenText(t, "the errors", strings.Join(errs, "\n"))
	resp, err := p.client.ListServers(rootCtx, &toolsvcv1.ListServersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(resp)
	noTokenText(t, "ListServers", string(raw))
	if regexp.MustCompile(`[?&]code=`).MatchString(p.log.String()) {
		t.Error("toolsvc's log shows a callback's query (code=)")
	}
}

// TestPassthroughEndToEnd: an upstream in mode passthrough, real
// processes. toolsvc trusts the authorization server's JWTs (auth.jwt,
// audience toolsvc); the upstream accepts only tokens naming
// urn:test:passthrough. A caller whose token names both is forwarded as
// is: the upstream sees the caller itself, no actor, client agent-up, and
// two callers are two identities. A token meant for toolsvc alone is
// PERMISSION_DENIED CREDENTIALS_REFUSED (oauth_error audience_mismatch),
// a static-token caller no_subject_token; no JWT in the log or errors.
func TestPassthroughEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	defer http.DefaultClient.CloseIdleConnections()
	asProc := startProcWith(t, exec.Command(helperBinary(t, "authserver"), "-clients", userOAuthClients), procOpts{checkExit: true})
	issuer := asProc.log.waitFor(t, urlLineRE, 30*time.Second)
	up := startBearerUpstream(t, issuer, "urn:test:passthrough")
	const static = "static-robot-0123456789"
	p := startToolsvc(t, cfg{
		Auth: &authCfg{Tokens: map[string]string{"robot": static},
			JWT: &jwtCfg{JWKSURL: jwksURI(t, issuer), Issuer: issuer, Audience: "toolsvc"}},
		Servers: servers{"pt": goHTTP(up, upstream{PingInterval: "1h", Credentials: &credsCfg{Mode: "passthrough", Audience: "urn:test:passthrough"}})}})
	agentUp := authtest.ClientConfig{ID: "agent-up", RedirectURIs: []string{"http://127.0.0.1/callback"}}
	tokens := map[string]string{}
	for _, user := range []string{"alice", "carol"} {
		tok, err := authtest.Login(ctx, issuer, agentUp, user)
		if err != nil {
			t.Fatalf("login %s: %v", user, err)
		}
		tokens[user] = tok.AccessToken
	}
	onlyToolsvc, err := authtest.Login(ctx, issuer, authAgent, "bob")
	if err != nil {
		t.Fatal(err)
	}
	call := func(tok string) (map[string]any, error) {
		res, err := p.client.CallTool(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok), &toolsvcv1.CallToolRequest{Name: "pt__whoami"})
		if err != nil {
			return nil, err
		}
		if res.GetIsError() {
			return nil, fmt.Errorf("tool error %v", res.GetContent())
		}
		return res.GetStructuredContent().AsMap(), nil
	}
	for _, user := range []string{"alice", "carol"} {
		who, err := call(tokens[user])
		if err != nil {
			t.Fatalf("whoami as %s: %v", user, err)
		}
		if who["sub"] != user || who["act"] != nil || who["client_id"] != "agent-up" {
			t.Errorf("as %s the upstream saw %v, want sub %s, no act, client agent-up (the caller's own token)", user, who, user)
		}
	}
	var errs []string
	_, err = call(onlyToolsvc.AccessToken)
	ei := wantStatus(t, err, codes.PermissionDenied, "CREDENTIALS_REFUSED", "pt", "pt__whoami")
	if ei.GetMetadata()["oauth_error"] != "audience_mismatch" {
		t.Errorf("bob's token for toolsvc only: metadata %v, want oauth_error audience_mismatch", ei.GetMetadata())
	}
	errs = append(errs, err.Error())
	_, err = call(static)
	ei = wantStatus(t, err, codes.PermissionDenied, "CREDENTIALS_REFUSED", "pt", "pt__whoami")
	if ei.GetMetadata()["oauth_error"] != "no_subject_token" {
		t.Errorf("a static-token caller: metadata %v, want oauth_error no_subject_token", ei.GetMetadata())
	}
	errs = append(errs, err.Error())
	noTokenText(t, "toolsvc's log", p.log.String())
	noTokenText(t, "the errors", strings.Join(errs, "\n"))
}

// startRedisProc runs Debian's redis-server (scripts/interop-deps.sh
// installs it) on a unix socket in dir, its append-only file fsynced on
// every write, so a restart on the same dir loses nothing.
func startRedisProc(t *testing.T, dir string) *proc {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("TOOLSVC_REDIS_TESTS") != "" {
			t.Fatal("redis-server not found: run scripts/interop-deps.sh")
		}
		t.Skip("redis-server not found (scripts/interop-deps.sh installs it; TOOLSVC_REDIS_TESTS=1 makes this a failure)")
	}
	p := startProc(t, exec.Command("redis-server", "--port", "0", "--unixsocket", filepath.Join(dir, "redis.sock"),
		"--unixsocketperm", "700", "--dir", dir, "--appendonly", "yes", "--appendfsync", "always", "--save", ""))
	p.log.waitFor(t, regexp.MustCompile(`(?i)(ready to accept connections)`), 20*time.Second)
	return p
}

// TestUserOAuthReplicas: three toolsvc replicas share a Redis token store
// (a real redis-server) and its key. A user who logged in through one
// replica's link and callback is served by the others; each principal's
// token, due for refresh, is refreshed exactly once across the three
// under concurrent calls to all of them. Redis killed (SIGKILL): every
// replica answers UNAVAILABLE token_store; restarted on its append-only
// file: the users are served again without logging in (no token lost).
func TestUserOAuthReplicas(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Second)
	defer cancel()
	defer http.DefaultClient.CloseIdleConnections()
	asProc := startProcWith(t, exec.Command(helperBinary(t, "authserver"), "-access-ttl", "36s", "-clients", userOAuthClients),
		procOpts{checkExit: true})
	issuer := asProc.log.waitFor(t, urlLineRE, 30*time.Second)
	up := startBearerUpstream(t, issuer, "urn:test:upstream")
	rdir := t.TempDir()
	redis := startRedisProc(t, rdir)
	dir := t.TempDir()
	toks := map[string]string{"alice": "static-alice-0123456789", "bob": "static-bob-0123456789"}
	c := cfg{Auth: &authCfg{Tokens: toks},
		TokenStore: &tokenStoreCfg{Redis: &redisStoreCfg{URL: "unix://" + filepath.Join(rdir, "redis.sock"), Timeout: "500ms"}, KeyFile: storeKeyFile(t, dir)},
		Servers:    servers{"up": userOAuthUp(issuer, up)}}
	var reps []*toolsvcProc
	for range 3 {
		reps = append(reps, startToolsvc(t, c))
	}
	var errs []string
	loginThrough := func(rep *toolsvcProc, user string) {
		t.Helper()
		_, err := whoamiOn(ctx, rep.client, toks[user])
		if err != nil {
			errs = append(errs, err.Error())
		}
		browserLogin(t, ctx, loginLink(t, err, issuer), user)
	}
	served := func(rep int, user string) {
		t.Helper()
		who, err := whoamiOn(ctx, reps[rep].client, toks[user])
		if err != nil {
			t.Fatalf("whoami as %s on replica %d: %v", user, rep, err)
		}
		if who["sub"] != user {
			t.Errorf("as %s on replica %d the upstream saw %v", user, rep, who)
		}
	}
	loginThrough(reps[0], "alice")
	served(1, "alice")
	served(2, "alice")
	loginThrough(reps[2], "bob")
	loggedIn := time.Now()
	served(0, "bob")
	served(1, "bob")

	// Due for refresh (7 s after the logins, tokens of 36 s refreshed from
	// 30 s before expiry): 4 concurrent calls per principal per replica,
	// one refresh per principal in all.
	before := authStats(t, issuer)
	time.Sleep(time.Until(loggedIn.Add(7 * time.Second)))
	var wg sync.WaitGroup
	for rep := range reps {
		for _, user := range []string{"alice", "bob"} {
			for range 4 {
				wg.Go(func() {
					who, err := whoamiOn(ctx, reps[rep].client, toks[user])
					if err != nil {
						t.Errorf("whoami as %s on replica %d under load: %v", user, rep, err)
					} else if who["sub"] != user {
						t.Errorf("as %s on replica %d the upstream saw %v", user, rep, who)
					}
				})
			}
		}
	}
	wg.Wait()
	after := authStats(t, issuer)
	for _, user := range []string{"alice", "bob"} {
		if n := after.Refreshes[user] - before.Refreshes[user]; n != 1 {
			t.Errorf("%s's refreshes under 12 concurrent calls on 3 replicas = %d, want 1", user, n)
		}
	}

	// The store dies: a clear UNAVAILABLE on every replica.
	redis.kill()
	for i, rep := range reps {
		_, err := whoamiOn(ctx, rep.client, toks["alice"])
		ei := wantStatus(t, err, codes.Unavailable, "UPSTREAM_UNAVAILABLE", "up", "up__whoami")
		if ei.GetMetadata()["unavailable_reason"] != "token_store" || !strings.Contains(status.Convert(err).Message(), "token store (tokenStore) is unreachable") {
			t.Errorf("replica %d with Redis down: %v, metadata %v, want unavailable_reason token_store and a message naming the store", i, err, ei.GetMetadata())
		}
		errs = append(errs, err.Error())
	}
	// Back on its append-only file: nobody logs in again.
	startRedisProc(t, rdir)
	for i := range reps {
		for _, user := range []string{"alice", "bob"} {
			var who map[string]any
			eventually(t, 10*time.Second, fmt.Sprintf("%s served by replica %d after Redis restarted", user, i), func() bool {
				var err error
				who, err = whoamiOn(ctx, reps[i].client, toks[user])
				if err != nil {
					errs = append(errs, err.Error())
				}
				return err == nil
			})
			if who["sub"] != user {
				t.Errorf("as %s on replica %d after the restart the upstream saw %v", user, i, who)
			}
		}
	}
	for i, rep := range reps {
		noTokenText(t, fmt.Sprintf("replica %d's log", i), rep.log.String())
	}
	noTokenText(t, "the errors", strings.Join(errs, "\n"))
}

// TestUserOAuthCost measures userOAuth's costs, real processes, when
// TOOLSVC_USEROAUTH_COST=N (N principals; TOOLSVC_USEROAUTH_STORE=redis for
// a redis-server store, else a file): a call answered with the login link,
// the callback (code redeemed, token stored), a principal's first call
// after its login (store read, session created, the call) and a later one.
// It checks each principal is served as itself; the figures are logged
// (docs/credentials.md), never asserted.
func TestUserOAuthCost(t *testing.T) {
	n := 0
	fmt.Sscan(os.Getenv("TOOLSVC_USEROAUTH_COST"), &n)
	if n <= 0 {
		t.Skip("set TOOLSVC_USEROAUTH_COST=N to measure with N principals")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	defer http.DefaultClient.CloseIdleConnections()
	asProc := startProcWith(t, exec.Command(helperBinary(t, "authserver"), "-clients", userOAuthClients), procOpts{checkExit: true})
	issuer := asProc.log.waitFor(t, urlLineRE, 30*time.Second)
	up := startBearerUpstream(t, issuer, "urn:test:upstream")
	dir := t.TempDir()
	ts := &tokenStoreCfg{File: filepath.Join(dir, "tokens"), KeyFile: storeKeyFile(t, dir)}
	if os.Getenv("TOOLSVC_USEROAUTH_STORE") == "redis" {
		rdir := t.TempDir()
		startRedisProc(t, rdir)
		ts = &tokenStoreCfg{Redis: &redisStoreCfg{URL: "unix://" + filepath.Join(rdir, "redis.sock")}, KeyFile: ts.KeyFile}
	}
	toks := map[string]string{}
	for i := range n {
		toks[fmt.Sprintf("u%04d", i)] = fmt.Sprintf("static-u%04d-0123456789", i)
	}
	p := startToolsvc(t, cfg{Auth: &authCfg{Tokens: toks}, TokenStore: ts,
		Servers: servers{"up": userOAuthUp(issuer, up)}})
	var link, callback, first, warm []time.Duration
	for i := range n {
		user := fmt.Sprintf("u%04d", i)
		t0 := time.Now()
		_, err := whoamiOn(ctx, p.client, toks[user])
		link = append(link, time.Since(t0))
		l := loginLink(t, err, issuer)
		jar, _ := cookiejar.New(nil)
		hc := &http.Client{Jar: jar}
		cb, err := authtest.Authorize(ctx, hc, l, user)
		if err != nil {
			t.Fatal(err)
		}
		t0 = time.Now()
		resp, err := hc.Get(cb.String())
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("callback for %s: %v %v", user, resp, err)
		}
		resp.Body.Close()
		callback = append(callback, time.Since(t0))
		hc.CloseIdleConnections()
		for j, into := range []*[]time.Duration{&first, &warm} {
			t0 = time.Now()
			who, err := whoamiOn(ctx, p.client, toks[user])
			*into = append(*into, time.Since(t0))
			if err != nil || who["sub"] != user {
				t.Fatalf("call %d as %s: %v, %v", j, user, who, err)
			}
		}
	}
	q := func(d []time.Duration) string {
		slices.Sort(d)
		return fmt.Sprintf("p50 %v p99 %v", d[len(d)/2].Round(10*time.Microsecond), d[len(d)*99/100].Round(10*time.Microsecond))
	}
	store := "file"
	if ts.Redis != nil {
		store = "redis"
	}
	t.Logf("%d principals, %s store: LOGIN_REQUIRED call %s; callback %s; first call after login %s; later call %s",
		n, store, q(link), q(callback), q(first), q(warm))
}

// TestUserOAuthLoginFirst: `toolsvc login` before any call, real processes
// (the authorization server, a bearer upstream, toolsvc): the CLI prints
// the caller's own link and, with --wait, returns once the browser has
// completed it; the first call is then served; asking again says logged
// in, and --force gives a new link anyway. A link for another principal is
// PERMISSION_DENIED even for an admin (it would log that principal in as
// whoever follows it), a server not in mode userOAuth INVALID_ARGUMENT
// (field server), an unknown one NOT_FOUND; no token in the log.
func TestUserOAuthLoginFirst(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	defer http.DefaultClient.CloseIdleConnections()
	asProc := startProcWith(t, exec.Command(helperBinary(t, "authserver"), "-access-ttl", "5m", "-clients", userOAuthClients),
		procOpts{checkExit: true})
	issuer := asProc.log.waitFor(t, urlLineRE, 30*time.Second)
	up := startBearerUpstream(t, issuer, "urn:test:upstream")
	dir := t.TempDir()
	toks := map[string]string{"alice": "static-alice-0123456789", "root": "static-root-0123456789"}
	conf := cfg{
		Auth:       &authCfg{Tokens: toks, Admins: []string{"root"}},
		TokenStore: &tokenStoreCfg{File: filepath.Join(dir, "tokens"), KeyFile: storeKeyFile(t, dir)},
		Servers:    servers{"up": userOAuthUp(issuer, up), "plain": goStdio(upstream{})}}
	p := startToolsvc(t, conf)

	// alice asks for her link first and waits; her browser follows it.
	cmd := exec.CommandContext(ctx, bin.toolsvc, "login", "--addr", p.addr, "--token", toks["alice"], "--server", "up", "--wait", "60s")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	var printed []string
	for len(printed) < 2 && lines.Scan() {
		printed = append(printed, lines.Text())
	}
	if len(printed) < 2 || printed[0] != "to log alice in to up, open:" || !strings.HasPrefix(printed[1], issuer+"/") {
		t.Fatalf("toolsvc login printed %q (stderr %s), want alice's link to the authorization server", printed, stderr.String())
	}
	browserLogin(t, ctx, printed[1], "alice")
	rest, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil || strings.TrimSpace(string(rest)) != "alice is logged in to up" {
		t.Fatalf("toolsvc login --wait: %v, then %q (stderr %s)", err, rest, stderr.String())
	}
	who, err := whoamiOn(ctx, p.client, toks["alice"])
	if err != nil || who["sub"] != "alice" {
		t.Fatalf("alice's first call after logging in first: %v, %v", who, err)
	}
	out, err := execToolsvc(ctx, p.addr, "login", "--token", toks["alice"], "--server", "up")
	if err != nil || strings.TrimSpace(out) != "alice is logged in to up" {
		t.Errorf("toolsvc login once logged in: %v\n%s", err, out)
	}

	admin := toolsvcv1.NewAdminServiceClient(grpcConn(t, p.addr))
	aliceCtx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+toks["alice"])
	forced, err := admin.Login(aliceCtx, &toolsvcv1.LoginRequest{Server: "up", Force: true})
	if err != nil || forced.GetLoggedIn() || !strings.HasPrefix(forced.GetLoginUrl(), issuer+"/") || forced.GetPrincipal() != "alice" {
		t.Errorf("Login with force as alice = %v, %v; want a new link for alice", forced, err)
	}
	rootCtx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+toks["root"])
	_, err = admin.Login(rootCtx, &toolsvcv1.LoginRequest{Server: "up", Principal: "alice"})
	wantStatus(t, err, codes.PermissionDenied, "PERMISSION_DENIED", "", "")
	_, err = admin.Login(aliceCtx, &toolsvcv1.LoginRequest{Server: "plain"})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "plain") {
		t.Errorf("Login to a server not in mode userOAuth: %v, want INVALID_ARGUMENT naming it", err)
	}
	_, err = admin.Login(aliceCtx, &toolsvcv1.LoginRequest{Server: "nope"})
	wantStatus(t, err, codes.NotFound, "SERVER_NOT_FOUND", "", "")
	_, err = admin.Login(aliceCtx, &toolsvcv1.LoginRequest{})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("Login without a server: %v, want INVALID_ARGUMENT", err)
	}
	// Each is an audited admin action; root's for alice names her.
	for _, line := range []string{
		`principal=alice outcome=ok duration=\S+ action=login target=up$`,
		`principal=root outcome=PermissionDenied duration=\S+ action=login target=up for=alice$`,
		`principal=alice outcome=NotFound duration=\S+ action=login target=nope$`,
	} {
		p.log.waitFor(t, regexpMust(`msg="admin action" audit=true `+line), 30*time.Second)
	}

	// A reload that changes the tokenStore section warns that it takes
	// effect on restart, and the running store stays: alice is still
	// logged in.
	conf.TokenStore = &tokenStoreCfg{File: filepath.Join(dir, "other-tokens"), KeyFile: conf.TokenStore.KeyFile}
	writeConfig(t, p.configPath, conf.String())
	rr, err := admin.ReloadConfig(rootCtx, &toolsvcv1.ReloadConfigRequest{})
	if err != nil || !rr.GetConfig().GetLastReloadOk() || !slices.ContainsFunc(rr.GetConfig().GetWarnings(), func(w string) bool {
		return strings.Contains(w, "tokenStore section changed; it takes effect on restart")
	}) {
		t.Errorf("reload with another tokenStore: %v, %v; want it applied with a warning that the store changes on restart", rr, err)
	}
	if r, err := admin.Login(aliceCtx, &toolsvcv1.LoginRequest{Server: "up"}); err != nil || !r.GetLoggedIn() {
		t.Errorf("alice after the reload: %v, %v; want still logged in (the running store)", r, err)
	}
	noTokenText(t, "toolsvc's log", p.log.String())
}
