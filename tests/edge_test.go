package tests

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

func tool(name string) string { return filepath.Join("..", ".bin", name) }

// TestHealthReflectionAndProbe: grpc-health-probe sees NOT_SERVING while
// discovery runs (a slow upstream) and SERVING after; liveness is SERVING
// throughout; grpcurl finds ToolService through reflection and calls it.
func TestHealthReflectionAndProbe(t *testing.T) {
	t.Parallel()
	// The upstream starts only once the test opens the gate, after its
	// probes during discovery: no race with a fixed delay.
	gate := filepath.Join(t.TempDir(), "gate")
	slow := upstream{Command: "sh", Args: []string{"-c", `while [ ! -e "$GATE" ]; do sleep 0.02; done; exec ` + bin.testserver + " -mode stdio"},
		Env: map[string]string{"GATE": gate}, ConnectTimeout: "20s"}
	p := startToolsvcWith(t, cfg{Servers: servers{"slow": slow}}, startOpts{noWait: true})
	probe := func(service string) (int, string) {
		args := []string{"-addr=" + p.addr, "-connect-timeout=2s", "-rpc-timeout=2s"}
		if service != "" {
			args = append(args, "-service="+service)
		}
		out, err := exec.Command(tool("grpc-health-probe"), args...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatalf("grpc-health-probe: %v", err)
		}
		return 0, string(out)
	}
	if code, out := probe(""); code == 0 || !strings.Contains(out, "NOT_SERVING") {
		t.Errorf("readiness during discovery: rc %d %q, want NOT_SERVING", code, out)
	}
	if code, out := probe("liveness"); code != 0 {
		t.Errorf("liveness during discovery: rc %d %q, want SERVING", code, out)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p.log.waitFor(t, readyRE, 30*time.Second)
	for _, svc := range []string{"", "toolsvc.v1.ToolService", "liveness"} {
		if code, out := probe(svc); code != 0 {
			t.Errorf("probe %q after discovery: rc %d %q, want SERVING", svc, code, out)
		}
	}
	out, err := exec.Command(tool("grpcurl"), "-plaintext", p.addr, "list").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "toolsvc.v1.ToolService") || !strings.Contains(string(out), "toolsvc.v1.AdminService") {
		t.Errorf("grpcurl list = %v\n%s", err, out)
	}
	out, err = exec.Command(tool("grpcurl"), "-plaintext", "-d", `{"page_size": 2}`, p.addr, "toolsvc.v1.ToolService/ListTools").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"slow__`) || !strings.Contains(string(out), "nextPageToken") {
		t.Errorf("grpcurl ListTools = %v\n%s", err, out)
	}
}

// TestMetricsScrape: after calls and a refresh, /metrics has toolsvc's own
// metrics and the gRPC server metrics, with sane values.
func TestMetricsScrape(t *testing.T) {
	t.Parallel()
	p := startToolsvc(t, cfg{Servers: servers{"up": goStdio(upstream{RefreshInterval: "1h"})}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	for i := 0; i < 3; i++ {
		if _, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__ping_me", ArgumentsJson: `{"x": 1}`}); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__nope"})
	if _, err := toolsvcv1.NewAdminServiceClient(grpcConn(t, p.addr)).RefreshServer(ctx, &toolsvcv1.RefreshServerRequest{Name: "up"}); err != nil {
		t.Fatal(err)
	}
	w := startWatch(t, ctx, p.client, "")
	w.next(t, 5*time.Second)
	text := scrape(t, p.adminAddr)
	for _, want := range []string{
		`toolsvc_calls_total{outcome="ok",server="up",tool="up__ping_me"} 3`,
		`toolsvc_calls_total{outcome="NotFound",server="unknown",tool="unknown"} 1`,
		`toolsvc_call_duration_seconds_count{outcome="ok",server="up"} 3`,
		`toolsvc_calls_in_flight 0`,
		`toolsvc_upstream_state{server="up",state="ready"} 1`,
		`toolsvc_upstream_connects_total{server="up"} 1`,
		`toolsvc_upstream_refreshes_total{outcome="ok",server="up"} 2`,
		`toolsvc_upstream_refresh_duration_seconds_count{outcome="ok",server="up"} 2`,
		`toolsvc_upstream_breaker_open{server="up"} 0`,
		`toolsvc_upstream_last_list_age_seconds{server="up"}`,
		`toolsvc_catalog_tools`,
		`toolsvc_watchers 1`,
		`toolsvc_watch_streams 1`,
		`toolsvc_watch_resets_total 0`,
		`grpc_server_handled_total{grpc_code="OK",grpc_method="CallTool",grpc_service="toolsvc.v1.ToolService",grpc_type="unary"} 3`,
		`grpc_server_handling_seconds_bucket`,
		`go_goroutines`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// scrape returns the text of /metrics on the admin address.
func scrape(t *testing.T, adminAddr string) string {
	t.Helper()
	resp, err := http.Get("http://" + adminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

func grpcConn(t *testing.T, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestAuthTokensAndRules: no credentials → UNAUTHENTICATED; a principal
// allowed only a__* sees only those tools in ListTools and gets
// PERMISSION_DENIED for the others; health stays open.
func TestAuthTokensAndRules(t *testing.T) {
	t.Parallel()
	const alice, bob = "alice-token-0123456789", "bob-token-0123456789ab"
	jwksFile, carolJWT := testJWKS(t, "carol")
	p := startToolsvcEnv(t, cfg{
		Auth: &authCfg{Tokens: map[string]string{"alice": alice, "bob": "${BOB_TOKEN}"}, JWT: testJWT(jwksFile), Admins: []string{"bob"},
			Rules: []rule{{Principal: "alice", Allow: []string{"a__*"}}, {Principal: "bob"}, {Principal: "carol", Allow: []string{"b__*"}, Deny: []string{"b__echo"}}},
			Audit: &audit{Arguments: true}},
		Servers: servers{"a": goStdio(upstream{PingInterval: "1h"}), "b": goStdio(upstream{PingInterval: "1h"})}},
		[]string{"BOB_TOKEN=" + bob})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	as := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	}
	if _, err := p.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("ListTools without credentials = %v, want UNAUTHENTICATED", err)
	}
	if _, err := p.client.ListTools(as("wrong-token-0123456789"), &toolsvcv1.ListToolsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("ListTools with a wrong token = %v, want UNAUTHENTICATED", err)
	}
	resp, err := p.client.ListTools(as(alice), &toolsvcv1.ListToolsRequest{PageSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	var aliceTools []*toolsvcv1.Tool
	aliceTools = append(aliceTools, resp.GetTools()...)
	for tok := resp.GetNextPageToken(); tok != ""; {
		r, err := p.client.ListTools(as(alice), &toolsvcv1.ListToolsRequest{PageSize: 3, PageToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		aliceTools = append(aliceTools, r.GetTools()...)
		tok = r.GetNextPageToken()
	}
	bobResp, err := p.client.ListTools(as(bob), &toolsvcv1.ListToolsRequest{PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(aliceTools) == 0 || 2*len(aliceTools) != len(bobResp.GetTools()) {
		t.Fatalf("alice sees %d tools, bob %d; want half", len(aliceTools), len(bobResp.GetTools()))
	}
	for _, tl := range aliceTools {
		if !strings.HasPrefix(tl.GetName(), "a__") {
			t.Errorf("alice sees %s", tl.GetName())
		}
	}
	// The same rules on the watch: alice's snapshot holds exactly her tools.
	w := startWatch(t, as(alice), p.client, "")
	snap := w.next(t, 5*time.Second).GetSnapshot()
	if len(snap.GetTools()) != len(aliceTools) {
		t.Errorf("alice's watch snapshot has %d tools, her ListTools %d", len(snap.GetTools()), len(aliceTools))
	}
	for _, tl := range snap.GetTools() {
		if !strings.HasPrefix(tl.GetName(), "a__") {
			t.Errorf("alice's watch shows %s", tl.GetName())
		}
	}
	if _, err := p.client.CallTool(as(alice), &toolsvcv1.CallToolRequest{Name: "b__ping_me", ArgumentsJson: `{"x": 1}`}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("alice calling b__ping_me = %v, want PERMISSION_DENIED", err)
	}
	if res, err := p.client.CallTool(as(alice), &toolsvcv1.CallToolRequest{Name: "a__ping_me", ArgumentsJson: `{"x": 1}`}); err != nil || resultText(res) != "2" {
		t.Fatalf("alice calling a__ping_me = %v, %v", res, err)
	}
	if _, err := p.client.CallTool(as(bob), &toolsvcv1.CallToolRequest{Name: "b__ping_me", ArgumentsJson: `{"x": 1}`}); err != nil {
		t.Fatalf("bob calling b__ping_me = %v", err)
	}
	// A JWT principal (sub) with its own rules.
	if res, err := p.client.CallTool(as(carolJWT), &toolsvcv1.CallToolRequest{Name: "b__ping_me", ArgumentsJson: `{"x": 2}`}); err != nil || resultText(res) != "3" {
		t.Fatalf("carol (JWT) calling b__ping_me = %v, %v", res, err)
	}
	if _, err := p.client.CallTool(as(carolJWT), &toolsvcv1.CallToolRequest{Name: "b__echo", ArgumentsJson: `{"text": "x"}`}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("carol calling a denied tool = %v, want PERMISSION_DENIED", err)
	}
	_, expired := testJWKSWith(t, "carol", -time.Minute)
	if _, err := p.client.ListTools(as(expired), &toolsvcv1.ListToolsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("a JWT signed by another key = %v, want UNAUTHENTICATED", err)
	}
	// AdminService: only auth.admins.
	admin := toolsvcv1.NewAdminServiceClient(grpcConn(t, p.addr))
	if _, err := admin.RefreshServer(as(alice), &toolsvcv1.RefreshServerRequest{Name: "a"}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("alice RefreshServer = %v, want PERMISSION_DENIED", err)
	}
	if _, err := admin.RefreshServer(as(bob), &toolsvcv1.RefreshServerRequest{Name: "a"}); err != nil {
		t.Fatalf("bob (admin) RefreshServer = %v", err)
	}
	// One audit line per call, with the principal, and arguments (enabled).
	p.log.waitFor(t, regexpMust(`msg="tool call".*principal=alice tool=a__ping_me server=a outcome=ok.*arguments="?\{`), 5*time.Second)
	p.log.waitFor(t, regexpMust(`msg="tool call".*principal=alice tool=b__ping_me server=b outcome=PermissionDenied`), 5*time.Second)
	if strings.Contains(p.log.String(), bob) || strings.Contains(p.log.String(), alice) {
		t.Error("a bearer token appeared in the log")
	}
}

// testJWKS writes a JWKS file with a fresh RSA key and returns it with a
// token for sub, valid for a minute (issuer test-idp, audience toolsvc).
func testJWKS(t *testing.T, sub string) (string, string) { return testJWKSWith(t, sub, time.Minute) }

func testJWKSWith(t *testing.T, sub string, valid time.Duration) (string, string) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	jwks := map[string]any{"keys": []any{map[string]any{"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
		"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes())}}}
	raw, _ := json.Marshal(jwks)
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"sub": sub, "iss": "test-idp", "aud": "toolsvc",
		"exp": time.Now().Add(valid).Unix()})
	tok.Header["kid"] = "k1"
	signed, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return file, signed
}

// testCA makes a CA and certificates it signs, in PEM files.
type testCA struct {
	t    *testing.T
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string
}

func newTestCA(t *testing.T, name string) *testCA {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testCA{t: t, dir: t.TempDir(), cert: cert, key: key}
	ca.file = filepath.Join(ca.dir, "ca.pem")
	os.WriteFile(ca.file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	return ca
}

// issue returns cert and key file paths for cn (a server cert for
// 127.0.0.1 when server is set).
func (ca *testCA) issue(cn string, server bool) (string, string) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	cf, kf := filepath.Join(ca.dir, cn+".pem"), filepath.Join(ca.dir, cn+".key")
	os.WriteFile(cf, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(kf, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return cf, kf
}

// TestMTLS: a client certificate from the configured CA authenticates (its
// CN is the principal); one from another CA is refused.
func TestMTLS(t *testing.T) {
	t.Parallel()
	ca, other := newTestCA(t, "toolsvc-test-ca"), newTestCA(t, "other-ca")
	srvCert, srvKey := ca.issue("server", true)
	p := startToolsvcWith(t, cfg{Auth: &authCfg{MTLS: true, Rules: []rule{{Principal: "agent-a"}}}, Servers: servers{"up": goStdio(upstream{PingInterval: "1h"})}},
		startOpts{args: []string{"--tls-cert", srvCert, "--tls-key", srvKey, "--tls-client-ca", ca.file}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	dial := func(ca *testCA, cn string) toolsvcv1.ToolServiceClient {
		cf, kf := ca.issue(cn, false)
		cert, err := tls.LoadX509KeyPair(cf, kf)
		if err != nil {
			t.Fatal(err)
		}
		creds := credentials.NewTLS(&tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}})
		return toolsvcv1.NewToolServiceClient(grpcConn(t, p.addr, grpc.WithTransportCredentials(creds)))
	}
	res, err := dial(ca, "agent-a").CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__ping_me", ArgumentsJson: `{"x": 1}`})
	if err != nil || resultText(res) != "2" {
		t.Fatalf("call with a client cert from the CA = %v, %v", res, err)
	}
	if _, err := dial(other, "agent-a").ListTools(ctx, &toolsvcv1.ListToolsRequest{}); err == nil {
		t.Fatal("a client certificate from another CA was accepted")
	}
	// No client certificate at all: TLS works, but the call is unauthenticated.
	noCert := toolsvcv1.NewToolServiceClient(grpcConn(t, p.addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots}))))
	if _, err := noCert.ListTools(ctx, &toolsvcv1.ListToolsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("call without a client certificate = %v, want UNAUTHENTICATED", err)
	}
	// A cert from the right CA whose CN no rule names sees nothing.
	if r, err := dial(ca, "agent-b").ListTools(ctx, &toolsvcv1.ListToolsRequest{}); err != nil || len(r.GetTools()) != 0 {
		t.Fatalf("agent-b ListTools = %v, %v; want no tools", r, err)
	}
}

// TestGracefulDrain: SIGTERM with a call in flight and a watch open. The
// call completes, the watch ends with UNAVAILABLE, readiness turns
// NOT_SERVING first, and the process exits 0 within --shutdown-timeout.
func TestGracefulDrain(t *testing.T) {
	p := startToolsvc(t, cfg{Servers: servers{"up": goStdio(upstream{PingInterval: "1h"})}}, "--shutdown-timeout", "6s")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	w := startWatch(t, ctx, p.client, "")
	w.next(t, 5*time.Second)
	var wg sync.WaitGroup
	var callErr error
	var callRes *toolsvcv1.CallToolResponse
	wg.Add(1)
	go func() {
		defer wg.Done()
		callRes, callErr = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__progress", ArgumentsJson: `{"steps": 10, "step_ms": 150}`})
	}()
	eventually(t, 5*time.Second, "the call to be in flight", func() bool {
		return serverStatus(t, ctx, p.client, "up").GetInFlightCalls() == 1
	})
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	// The watch ends with UNAVAILABLE.
	for {
		select {
		case _, ok := <-w.events:
			if ok {
				continue
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the watch did not end after SIGTERM")
		}
		break
	}
	if err := <-w.done; status.Code(err) != codes.Unavailable {
		t.Errorf("watch ended with %v, want UNAVAILABLE", err)
	}
	wg.Wait()
	if callErr != nil || resultText(callRes) != "10 steps" {
		t.Errorf("in-flight call during drain = %v, %v; want it to complete", callRes, callErr)
	}
	select {
	case <-p.exited():
		if err := p.exitErr(); err != nil {
			t.Errorf("toolsvc exited with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("toolsvc did not exit within the shutdown bound")
	}
	took := time.Since(start)
	p.stop = func() {} // already stopped
	if took > 8*time.Second {
		t.Errorf("shutdown took %v with --shutdown-timeout 6s", took)
	}
	log := p.log.String()
	if i, j := strings.Index(log, "shutting down"), strings.Index(log, "msg=stopped"); i < 0 || j < i {
		t.Errorf("shutdown log out of order:\n%s", log)
	}
	t.Logf("drained in %v", took.Round(time.Millisecond))
}

// TestDrainBoundCancelsCalls: a call that outlasts the drain bound (two
// thirds of --shutdown-timeout) is cancelled there, its caller told so, and
// toolsvc still exits cleanly within the bound: every handler has returned
// before the watch sends are waited for (the race-enabled binary exits
// non-zero on a data race), and none is left behind.
func TestDrainBoundCancelsCalls(t *testing.T) {
	p := startToolsvc(t, cfg{Servers: servers{"up": goStdio(upstream{PingInterval: "1h"})}}, "--shutdown-timeout", "3s")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	w := startWatch(t, ctx, p.client, "")
	w.next(t, 5*time.Second)
	callErr := make(chan error, 1)
	go func() {
		_, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__progress", ArgumentsJson: `{"steps": 200, "step_ms": 100}`})
		callErr <- err
	}()
	eventually(t, 5*time.Second, "the call to be in flight", func() bool {
		return serverStatus(t, ctx, p.client, "up").GetInFlightCalls() == 1
	})
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-callErr:
		if code := status.Code(err); code != codes.Unavailable && code != codes.Canceled {
			t.Errorf("call cut at the drain bound ended with %v, want UNAVAILABLE or CANCELLED", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the call outlasting the drain bound did not end")
	}
	select {
	case <-p.exited():
		if err := p.exitErr(); err != nil {
			t.Errorf("toolsvc exited with %v; log:\n%s", err, p.log)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("toolsvc did not exit after its shutdown bound")
	}
	p.stop = func() {} // already stopped
	log := p.log.String()
	for _, want := range []string{"drain bound reached", "msg=stopped"} {
		if !strings.Contains(log, want) {
			t.Errorf("shutdown log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "handlers still running") {
		t.Errorf("a handler outlived its cancelled call:\n%s", log)
	}
	t.Logf("stopped in %v", time.Since(start).Round(time.Millisecond))
}

// TestMetricsWatchersWithFrontDoor: toolsvc_watchers counts WatchCatalog
// streams only, as its help says, also when the MCP front door (which
// subscribes to the catalog too) is on; toolsvc_catalog_subscribers counts
// both.
func TestMetricsWatchersWithFrontDoor(t *testing.T) {
	t.Parallel()
	p := startToolsvcWith(t, cfg{Servers: servers{"up": goStdio(upstream{RefreshInterval: "1h"})}},
		startOpts{args: []string{"--mcp-listen", "127.0.0.1:0"}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	w := startWatch(t, ctx, p.client, "")
	w.next(t, 5*time.Second)
	text := scrape(t, p.adminAddr)
	for _, want := range []string{"toolsvc_watchers 1\n", "toolsvc_watch_streams 1\n", "toolsvc_catalog_subscribers 2\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", strings.TrimSpace(want))
		}
	}
}
