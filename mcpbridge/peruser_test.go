package mcpbridge

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/internal/authtest"
)

// bearerSubject is the sub claim of the request's bearer JWT, unverified
// (the end-to-end test's upstream verifies; here the header is the point).
func bearerSubject(h http.Header) string {
	tok, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	parts := strings.Split(tok, ".")
	if !ok || len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var c struct {
		Sub string `json:"sub"`
	}
	_ = json.Unmarshal(raw, &c)
	return c.Sub
}

// TestTokenExchangeSessions: an upstream in mode tokenExchange is reached
// with each principal's exchanged token on the principal's own session;
// the first caller lists it (PrimeCaller). A caller without a JWT and a
// refused subject are CredentialsErrors; an authorization server that
// stopped answering is UNAVAILABLE token_endpoint for a principal with no
// cached token, while a cached one still serves. Close leaves no goroutine
// (goleak in TestMain).
func TestTokenExchangeSessions(t *testing.T) {
	as, err := authtest.Start(authtest.Config{AccessTTL: time.Minute, RefuseExchange: []string{"mallory"},
		Clients: []authtest.ClientConfig{{ID: "agent", RedirectURIs: []string{"http://127.0.0.1/callback"}, Audience: []string{"toolsvc"}},
			{ID: "toolsvc", Secret: "toolsvc-secret"}}})
	if err != nil {
		t.Fatal(err)
	}
	asClosed := false
	defer func() {
		if !asClosed {
			as.Close()
		}
	}()
	srv := mcp.NewServer(&mcp.Implementation{Name: "who", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: bearerSubject(req.Extra.Header)}}}, nil, nil
	})
	url := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if bearerSubject(r.Header) == "" {
			return nil // no bearer: 400, as a refusal
		}
		return srv
	}, nil))
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	jwt := map[string]string{}
	for _, u := range []string{"alice", "bob", "carol", "mallory"} {
		tok, err := as.Login(ctx, authtest.ClientConfig{ID: "agent", RedirectURIs: []string{"http://127.0.0.1/callback"}}, u)
		if err != nil {
			t.Fatal(err)
		}
		jwt[u] = tok.AccessToken
	}
	b := newTestBridge(t, ServerConfig{Name: "up", Transport: TransportStreamableHTTP, URL: url, PingInterval: time.Hour,
		Credentials: &CredentialsConfig{Mode: CredentialsTokenExchange, Issuer: as.URL(), ClientID: "toolsvc", ClientSecret: "toolsvc-secret",
			Audience: "urn:test:up", MaxSessions: 10}})
	defer b.Close()
	if _, ok := b.Catalog().Current().Lookup("up__whoami"); ok {
		t.Fatal("a per-user upstream listed before any caller")
	}
	b.PrimeCaller(ctx, "alice", jwt["alice"])
	if _, ok := b.Catalog().Current().Lookup("up__whoami"); !ok {
		t.Fatal("alice's PrimeCaller did not list the upstream")
	}
	call := func(user, subject string) (string, error) {
		res, err := b.CallTool(ctx, "up__whoami", nil, &CallOptions{Principal: user, SubjectToken: subject})
		if err != nil {
			return "", err
		}
		return res.Content[0].(*mcp.TextContent).Text, nil
	}
	for _, u := range []string{"alice", "bob", "alice"} {
		if who, err := call(u, jwt[u]); err != nil || who != u {
			t.Fatalf("whoami as %s = %q, %v", u, who, err)
		}
	}
	if n := b.PerUserSessions("up"); n != 2 {
		t.Errorf("%d per-user sessions, want 2", n)
	}
	var ce *CredentialsError
	if _, err := call("robot", ""); !errors.As(err, &ce) || ce.Code != CodeNoSubjectToken {
		t.Errorf("a call without a JWT = %v, want CredentialsError no_subject_token", err)
	}
	if _, err := call("mallory", jwt["mallory"]); !errors.As(err, &ce) || ce.Code != "access_denied" {
		t.Errorf("mallory's call = %v, want CredentialsError access_denied", err)
	} else if strings.Contains(err.Error(), jwt["mallory"]) {
		t.Error("the refusal holds mallory's token")
	}
	// The authorization server goes away: carol, with nothing cached, is
	// UNAVAILABLE token_endpoint; alice's cached token still serves.
	as.Close()
	asClosed = true
	var ue *UnavailableError
	if _, err := call("carol", jwt["carol"]); !errors.As(err, &ue) || ue.Reason != ReasonTokenEndpoint {
		t.Errorf("carol's call with the authorization server down = %v, want UnavailableError token_endpoint", err)
	}
	if who, err := call("alice", jwt["alice"]); err != nil || who != "alice" {
		t.Errorf("alice's call with a cached token = %q, %v", who, err)
	}
}

// TestTokenExchangeIdleEviction: sessionIdle closes a principal's session
// with no call in flight; the next call opens another.
func TestTokenExchangeIdleEviction(t *testing.T) {
	as, err := authtest.Start(authtest.Config{AccessTTL: time.Minute,
		Clients: []authtest.ClientConfig{{ID: "agent", RedirectURIs: []string{"http://127.0.0.1/callback"}, Audience: []string{"toolsvc"}},
			{ID: "toolsvc", Secret: "toolsvc-secret"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer as.Close()
	srv := mcp.NewServer(&mcp.Implementation{Name: "who", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: bearerSubject(req.Extra.Header)}}}, nil, nil
	})
	url := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	tok, err := as.Login(ctx, authtest.ClientConfig{ID: "agent", RedirectURIs: []string{"http://127.0.0.1/callback"}}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	b := newTestBridge(t, ServerConfig{Name: "up", Transport: TransportStreamableHTTP, URL: url, PingInterval: time.Hour,
		Credentials: &CredentialsConfig{Mode: CredentialsTokenExchange, Issuer: as.URL(), ClientID: "toolsvc", ClientSecret: "toolsvc-secret",
			SessionIdle: time.Second}})
	defer b.Close()
	b.PrimeCaller(ctx, "alice", tok.AccessToken)
	if n := b.PerUserSessions("up"); n != 1 {
		t.Fatalf("%d sessions after alice's first use, want 1", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.PerUserSessions("up") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("alice's idle session was never closed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	res, err := b.CallTool(ctx, "up__whoami", nil, &CallOptions{Principal: "alice", SubjectToken: tok.AccessToken})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "alice" {
		t.Fatalf("whoami after the idle close = %v, %v", res, err)
	}
	// An operator's reconnect closes the sessions without a call in flight.
	if b.PerUserSessions("up") != 1 {
		t.Fatalf("%d sessions after the call, want 1", b.PerUserSessions("up"))
	}
	if st, err := b.Reconnect(ctx, "up"); err != nil || st.State != StateReady {
		t.Errorf("Reconnect = %v, %v; want ready", st.State, err)
	}
	if n := b.PerUserSessions("up"); n != 0 {
		t.Errorf("%d sessions after Reconnect, want 0", n)
	}
	if st := as.Stats(); st.Exchanges["alice"] != 1 {
		t.Errorf("alice's exchanges = %d, want 1 (the cached token serves the new session)", st.Exchanges["alice"])
	}
}

// TestHelperAuthServer is not a test: run as a child of
// TestTokenExchangeSessionCost (MCPBRIDGE_HELPER=authserver), it serves
// the test authorization server, prints its URL, and serves until killed.
func TestHelperAuthServer(t *testing.T) {
	if os.Getenv("MCPBRIDGE_HELPER") != "authserver" {
		return
	}
	as, err := authtest.Start(authtest.Config{AccessTTL: time.Hour, Clients: []authtest.ClientConfig{
		{ID: "agent", RedirectURIs: []string{"http://127.0.0.1/callback"}, Audience: []string{"toolsvc"}},
		{ID: "toolsvc", Secret: "toolsvc-secret"}}})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("URL %s\n", as.URL())
	select {}
}

// helperURL starts this test binary as the helper named and returns the
// URL it prints; the helper is killed at cleanup.
func helperURL(t *testing.T, helper, test string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), "MCPBRIDGE_HELPER="+helper)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "URL "); ok {
			go func() { // drain until killed
				for sc.Scan() {
				}
			}()
			return u
		}
	}
	t.Fatalf("helper %s printed no URL", helper)
	return ""
}

// TestTokenExchangeSessionCost measures the per-principal sessions as
// built (a tokenExchange upstream's bridge sessions: the exchange, the
// go-sdk session and the bridge's own parts), with the upstream and the
// authorization server in other processes over loopback HTTP: the latency
// of a principal's first call (exchange + session creation + the call) and
// the heap, stack and goroutines each idle session keeps. A measurement:
// TOOLSVC_TX_COST=N (N principals, default 300); TOOLSVC_TX_HEAPPROFILE=path
// also writes the heap profile of the idle sessions.
func TestTokenExchangeSessionCost(t *testing.T) {
	if os.Getenv("TOOLSVC_TX_COST") == "" {
		t.Skip("a measurement: TOOLSVC_TX_COST=N runs it for N principals")
	}
	n, _ := strconv.Atoi(os.Getenv("TOOLSVC_TX_COST"))
	if n <= 1 {
		n = 300
	}
	up := helperURL(t, "mcpserver", "TestHelperMCPServer")
	issuer := helperURL(t, "authserver", "TestHelperAuthServer")
	ctx := context.Background()
	jwts := make([]string, n)
	for i := range n {
		tok, err := authtest.Login(ctx, issuer, authtest.ClientConfig{ID: "agent", RedirectURIs: []string{"http://127.0.0.1/callback"}}, fmt.Sprintf("user%d", i))
		if err != nil {
			t.Fatal(err)
		}
		jwts[i] = tok.AccessToken
	}
	http.DefaultClient.CloseIdleConnections()
	b, err := New(Config{Servers: []ServerConfig{{Name: "cost", Transport: TransportStreamableHTTP, URL: up, PingInterval: time.Hour,
		Credentials: &CredentialsConfig{Mode: CredentialsTokenExchange, Issuer: issuer, ClientID: "toolsvc", ClientSecret: "toolsvc-secret",
			Audience: "urn:cost", MaxSessions: n + 10, SessionIdle: time.Hour}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	<-b.Ready()
	b.PrimeCaller(ctx, "warm", jwts[0]) // the listing, discovery, the pools
	settle := func() (uint64, int) {
		var ms runtime.MemStats
		for range 3 {
			runtime.GC()
			time.Sleep(50 * time.Millisecond)
		}
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse + ms.StackInuse, runtime.NumGoroutine()
	}
	heap0, g0 := settle()
	lat := make([]time.Duration, 0, n-1)
	for i := 1; i < n; i++ {
		start := time.Now()
		if _, err := b.CallTool(ctx, "cost__echo", nil, &CallOptions{Principal: fmt.Sprintf("user%d", i), SubjectToken: jwts[i]}); err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	heap1, g1 := settle()
	if path := os.Getenv("TOOLSVC_TX_HEAPPROFILE"); path != "" {
		// What the idle sessions hold: go tool pprof -sample_index=inuse_space path.
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.WriteHeapProfile(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if got := b.PerUserSessions("cost"); got != n {
		t.Errorf("%d sessions, want %d", got, n)
	}
	slices.Sort(lat)
	m := int64(len(lat))
	t.Logf("%d principals' first calls on a tokenExchange upstream (exchange + session + call; upstream and authorization server in other processes): "+
		"p50 %v, p99 %v; per idle session %.1f KiB heap+stack, %.1f goroutines",
		m, lat[len(lat)/2], lat[len(lat)*99/100], float64(int64(heap1)-int64(heap0))/float64(m)/1024, float64(g1-g0)/float64(m))
}

// TestTokenExchangeAllBusy: at maxSessions, a new principal never evicts
// a session with a call in flight: with alice's only session busy, bob is
// ErrSessionsFull (OVERLOADED at the edge); once alice's call ended, bob's
// call evicts her idle session and is served.
func TestTokenExchangeAllBusy(t *testing.T) {
	as, err := authtest.Start(authtest.Config{AccessTTL: time.Minute,
		Clients: []authtest.ClientConfig{{ID: "agent", RedirectURIs: []string{"http://127.0.0.1/callback"}, Audience: []string{"toolsvc"}},
			{ID: "toolsvc", Secret: "toolsvc-secret"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer as.Close()
	started, release := make(chan struct{}, 1), make(chan struct{})
	srv := mcp.NewServer(&mcp.Implementation{Name: "who", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: bearerSubject(req.Extra.Header)}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "block"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{Content: []mcp.Content{}}, nil, nil
	})
	url := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	jwt := map[string]string{}
	for _, u := range []string{"alice", "bob"} {
		tok, err := as.Login(ctx, authtest.ClientConfig{ID: "agent", RedirectURIs: []string{"http://127.0.0.1/callback"}}, u)
		if err != nil {
			t.Fatal(err)
		}
		jwt[u] = tok.AccessToken
	}
	b := newTestBridge(t, ServerConfig{Name: "up", Transport: TransportStreamableHTTP, URL: url, PingInterval: time.Hour,
		Credentials: &CredentialsConfig{Mode: CredentialsTokenExchange, Issuer: as.URL(), ClientID: "toolsvc", ClientSecret: "toolsvc-secret",
			MaxSessions: 1}})
	defer b.Close()
	b.PrimeCaller(ctx, "alice", jwt["alice"])
	done := make(chan error, 1)
	go func() {
		_, err := b.CallTool(ctx, "up__block", nil, &CallOptions{Principal: "alice", SubjectToken: jwt["alice"]})
		done <- err
	}()
	<-started
	_, err = b.CallTool(ctx, "up__whoami", nil, &CallOptions{Principal: "bob", SubjectToken: jwt["bob"]})
	if !errors.Is(err, ErrSessionsFull) || !errors.Is(err, ErrOverloaded) {
		t.Errorf("bob's call with alice's only session busy = %v, want ErrSessionsFull (ErrOverloaded)", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("alice's call: %v", err)
	}
	res, err := b.CallTool(ctx, "up__whoami", nil, &CallOptions{Principal: "bob", SubjectToken: jwt["bob"]})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "bob" {
		t.Fatalf("bob's call once alice's session was idle = %v, %v", res, err)
	}
	if n := b.PerUserSessions("up"); n != 1 {
		t.Errorf("%d sessions, want 1 (maxSessions)", n)
	}
}
