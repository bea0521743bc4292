package mcpbridge

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/internal/authtest"
)

// perCallerUpstream is an HTTP MCP upstream whose tools depend on the
// caller: one go-sdk server per bearer subject, each with "common",
// "only_<sub>" and whoami (answering the subject); private makes its
// tools/list results say cacheScope "private" (2026-07-28).
type perCallerUpstream struct {
	mu        sync.Mutex
	servers   map[string]*mcp.Server
	private   bool
	stateless bool // the 2026-07-28 era needs go-sdk's stateless handler
}

func (p *perCallerUpstream) server(sub string) *mcp.Server {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.servers[sub]; s != nil {
		return s
	}
	var opts *mcp.ServerOptions
	if p.private {
		opts = &mcp.ServerOptions{SetCacheable: func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
			if _, ok := req.(*mcp.ListToolsRequest); ok {
				c.CacheScope = "private"
			}
		}}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "per-caller", Version: "1"}, opts)
	for _, name := range []string{"common", "only_" + sub, "whoami"} {
		mcp.AddTool(s, &mcp.Tool{Name: name}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: bearerSubject(req.Extra.Header)}}}, nil, nil
		})
	}
	if p.servers == nil {
		p.servers = map[string]*mcp.Server{}
	}
	p.servers[sub] = s
	return s
}

func (p *perCallerUpstream) handler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		sub := bearerSubject(r.Header)
		if sub == "" {
			return nil
		}
		return p.server(sub)
	}, &mcp.StreamableHTTPOptions{Stateless: p.stateless})
}

// startPrivateOP starts an authorization server and logs in users.
func startPrivateOP(t *testing.T, ctx context.Context, users ...string) (*authtest.Server, map[string]string) {
	t.Helper()
	as, err := authtest.Start(authtest.Config{AccessTTL: time.Minute,
		Clients: []authtest.ClientConfig{{ID: "agent", RedirectURIs: []string{"http://127.0.0.1/callback"}, Audience: []string{"toolsvc"}},
			{ID: "toolsvc", Secret: "toolsvc-secret"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = as.Close() })
	jwt := map[string]string{}
	for _, u := range users {
		tok, err := as.Login(ctx, authtest.ClientConfig{ID: "agent", RedirectURIs: []string{"http://127.0.0.1/callback"}}, u)
		if err != nil {
			t.Fatal(err)
		}
		jwt[u] = tok.AccessToken
	}
	return as, jwt
}

func toolNames(s *Snapshot, server string) []string {
	var out []string
	for _, t := range s.Tools {
		if t.Server == server {
			out = append(out, t.Name)
		}
	}
	return out
}

// waitView waits, on a subscription of principal's view, until cond holds.
func waitView(t *testing.T, v ToolView, what string, cond func(*Snapshot) bool) {
	t.Helper()
	sub := v.Subscribe()
	defer sub.Close()
	deadline := time.After(defaultTestTimeout)
	for !cond(v.Current()) {
		select {
		case <-sub.C():
		case <-deadline:
			t.Fatalf("timed out waiting for %s; view %v", what, toolNames(v.Current(), "up"))
		}
	}
}

// TestPrivateToolsConfigured: with credentials.privateTools each
// principal's session lists its own tools; they are in that principal's
// view only (the shared catalog has none), a tool only bob has does not
// resolve for alice, a list_changed on bob's session re-lists bob's (the
// upstream's relister) and signals bob's view only, and the listing goes
// with the session.
func TestPrivateToolsConfigured(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	as, jwt := startPrivateOP(t, ctx, "alice", "bob")
	up := &perCallerUpstream{}
	url := serveHTTP(t, up.handler())
	b := newTestBridge(t, ServerConfig{Name: "up", Transport: TransportStreamableHTTP, URL: url, PingInterval: time.Hour,
		RefreshDebounce: time.Millisecond,
		Credentials: &CredentialsConfig{Mode: CredentialsTokenExchange, Issuer: as.URL(), ClientID: "toolsvc", ClientSecret: "toolsvc-secret",
			Audience: "urn:test:up", MaxSessions: 10, PrivateTools: true}})
	defer b.Close()
	if !b.HasPerUser() {
		t.Fatal("HasPerUser = false")
	}
	b.PrimeCaller(ctx, "alice", jwt["alice"])
	b.PrimeCaller(ctx, "bob", jwt["bob"])
	if got := toolNames(b.Catalog().Current(), "up"); len(got) != 0 {
		t.Errorf("the shared catalog has %v, want no tool of a private upstream", got)
	}
	want := map[string][]string{"alice": {"up__common", "up__only_alice", "up__whoami"}, "bob": {"up__common", "up__only_bob", "up__whoami"}}
	for p, w := range want {
		if got := toolNames(b.Tools(p).Current(), "up"); !slices.Equal(got, w) {
			t.Errorf("%s's view = %v, want %v", p, got, w)
		}
	}
	if got := toolNames(b.Tools("carol").Current(), "up"); len(got) != 0 {
		t.Errorf("carol (no session) sees %v", got)
	}
	if b.PrivateListings() != 2 {
		t.Errorf("PrivateListings = %d, want 2", b.PrivateListings())
	}
	// Revisions are content-derived: alice's view differs from bob's and
	// from the shared catalog; a remembered revision is found again.
	ra, rb := b.Tools("alice").Current().Revision, b.Tools("bob").Current().Revision
	if ra == rb || ra == b.Catalog().Current().Revision {
		t.Errorf("revisions alice %s bob %s shared %s: want three", ra, rb, b.Catalog().Current().Revision)
	}
	if s, ok := b.Tools("alice").Snapshot(ra); !ok || s.Revision != ra {
		t.Errorf("alice's Snapshot(%s) = %v, %v", ra, s, ok)
	}
	if b.Tools("alice").Current() != b.Tools("alice").Current() {
		t.Error("two reads of an unchanged view built two snapshots")
	}

	// Resolution in the caller's view.
	if _, err := b.ResolveFor("alice", "up__only_bob"); !errors.Is(err, ErrToolNotFound) {
		t.Errorf("alice resolving bob's tool = %v, want ErrToolNotFound", err)
	}
	if _, err := b.Resolve("up__common"); !errors.Is(err, ErrToolNotFound) {
		t.Errorf("resolving a private tool without a principal = %v, want ErrToolNotFound", err)
	}
	tg, err := b.ResolveFor("bob", "up__only_bob")
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Call(ctx, tg, nil, &CallOptions{Principal: "bob", SubjectToken: jwt["bob"]})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "bob" {
		t.Fatalf("bob's call of his tool = %v, %v", res, err)
	}

	// A list_changed on bob's session only (his own server gains a tool).
	asub := b.Tools("alice").Subscribe()
	defer asub.Close()
	select {
	case <-asub.C():
		t.Fatal("a fresh subscription was signalled")
	default:
	}
	aliceBefore := b.Tools("alice").Current()
	addTool(up.server("bob"), "extra")
	waitView(t, b.Tools("bob"), "bob's up__extra", func(s *Snapshot) bool { _, ok := s.Lookup("up__extra"); return ok })
	select {
	case <-asub.C():
		t.Error("bob's list change signalled alice's view")
	default:
	}
	if b.Tools("alice").Current() != aliceBefore {
		t.Error("alice's view changed with bob's list")
	}
	if _, ok := b.Catalog().Current().Lookup("up__extra"); ok {
		t.Error("bob's new tool reached the shared catalog")
	}

	// The listing lives with the session: an operator's reconnect closes
	// the idle sessions, and their listings go.
	if _, err := b.Reconnect(ctx, "up"); err != nil {
		t.Fatal(err)
	}
	waitView(t, b.Tools("bob"), "bob's listing dropped with his session", func(s *Snapshot) bool { return len(toolNames(s, "up")) == 0 })
	eventually(t, "no private listing", func() bool { return b.PrivateListings() == 0 })
	// Priming again lists again.
	b.PrimeCaller(ctx, "bob", jwt["bob"])
	if got := toolNames(b.Tools("bob").Current(), "up"); !slices.Contains(got, "up__extra") {
		t.Errorf("bob's view after priming again = %v", got)
	}
}

// TestPrivateToolsCacheScope: a 2026-07-28 upstream answering tools/list
// with cacheScope "private" is listed per principal without the
// operator's privateTools; a shared-listing per-user upstream (no
// cacheScope private) publishes to the shared catalog as before.
func TestPrivateToolsCacheScope(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	as, jwt := startPrivateOP(t, ctx, "alice", "bob")
	priv := &perCallerUpstream{private: true, stateless: true}
	pub := &perCallerUpstream{}
	cred := func() *CredentialsConfig {
		return &CredentialsConfig{Mode: CredentialsTokenExchange, Issuer: as.URL(), ClientID: "toolsvc", ClientSecret: "toolsvc-secret",
			Audience: "urn:test:up", MaxSessions: 10}
	}
	b := newTestBridge(t,
		ServerConfig{Name: "up", Transport: TransportStreamableHTTP, URL: serveHTTP(t, priv.handler()), PingInterval: time.Hour,
			ProtocolVersion: "2026-07-28", Credentials: cred()},
		ServerConfig{Name: "pub", Transport: TransportStreamableHTTP, URL: serveHTTP(t, pub.handler()), PingInterval: time.Hour,
			ProtocolVersion: "2026-07-28", Credentials: cred()})
	defer b.Close()
	b.PrimeCaller(ctx, "alice", jwt["alice"])
	b.PrimeCaller(ctx, "bob", jwt["bob"])
	if got := toolNames(b.Catalog().Current(), "up"); len(got) != 0 {
		t.Errorf("the shared catalog has %v of the cacheScope-private upstream", got)
	}
	if got := toolNames(b.Tools("bob").Current(), "up"); !slices.Equal(got, []string{"up__common", "up__only_bob", "up__whoami"}) {
		t.Errorf("bob's view = %v", got)
	}
	if got := toolNames(b.Tools("alice").Current(), "up"); !slices.Equal(got, []string{"up__common", "up__only_alice", "up__whoami"}) {
		t.Errorf("alice's view = %v", got)
	}
	// The public one: listed once, by the first principal, shared.
	got := toolNames(b.Catalog().Current(), "pub")
	if len(got) != 3 || !slices.Contains(got, "pub__common") {
		t.Errorf("the shared catalog's pub tools = %v, want the first principal's three", got)
	}
	if a, c := toolNames(b.Tools("alice").Current(), "pub"), toolNames(b.Tools("bob").Current(), "pub"); !slices.Equal(a, c) {
		t.Errorf("alice sees pub %v, bob %v: want the shared listing", a, c)
	}
	for _, n := range toolNames(b.Tools("bob").Current(), "") {
		if strings.HasPrefix(n, "up__only_alice") {
			t.Errorf("bob sees %s", n)
		}
	}
}

// TestPerUserSharedListChanged: a list_changed on a per-principal session
// of a per-user upstream whose listing is shared re-lists it (the
// upstream's relister) and publishes to the shared catalog.
func TestPerUserSharedListChanged(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	as, jwt := startPrivateOP(t, ctx, "alice")
	up := &perCallerUpstream{}
	b := newTestBridge(t, ServerConfig{Name: "up", Transport: TransportStreamableHTTP, URL: serveHTTP(t, up.handler()), PingInterval: time.Hour,
		RefreshDebounce: time.Millisecond,
		Credentials: &CredentialsConfig{Mode: CredentialsTokenExchange, Issuer: as.URL(), ClientID: "toolsvc", ClientSecret: "toolsvc-secret",
			Audience: "urn:test:up"}})
	defer b.Close()
	b.PrimeCaller(ctx, "alice", jwt["alice"])
	if _, ok := b.Catalog().Current().Lookup("up__only_alice"); !ok {
		t.Fatalf("the shared catalog = %v, want alice's listing", toolNames(b.Catalog().Current(), "up"))
	}
	addTool(up.server("alice"), "later")
	waitFor(t, b, "up__later in the shared catalog", func(s *Snapshot) bool { _, ok := s.Lookup("up__later"); return ok })
	if b.PrivateListings() != 0 || b.Tools("alice").Current() != b.Catalog().Current() {
		t.Error("a shared listing made a private one")
	}
}
