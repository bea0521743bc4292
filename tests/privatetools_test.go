package tests

import (
	"context"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/authtest"
)

// TestPrivateToolsEndToEnd: per-principal tool listings, all real
// processes (tests/authserver, tests/testserver -per-caller verifying the
// exchanged JWTs, toolsvc with auth.jwt). Two per-user upstreams whose
// tools depend on the caller: "priv" (2025-11-25, credentials.privateTools)
// and "scoped" (2026-07-28, stateless, its tools/list says cacheScope
// "private"; no privateTools); "up" is a per-user upstream with one shared
// listing, as before. alice and bob each see their own tools through gRPC
// ListTools (paged), SearchTools, WatchCatalog and the MCP front door's
// tools/list; a tool only bob has is NOT_FOUND for alice; a list_changed
// on bob's session (his "grow") reaches bob's watch and never alice's;
// alice's own list change reaches hers.
func TestPrivateToolsEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	defer http.DefaultClient.CloseIdleConnections()
	asProc := startProcWith(t, exec.Command(helperBinary(t, "authserver"), "-access-ttl", "10m"), procOpts{checkExit: true})
	issuer := asProc.log.waitFor(t, urlLineRE, 30*time.Second)
	perCaller := func(mode string, extra ...string) string {
		args := append([]string{"-mode", mode, "-auth-issuer", issuer, "-auth-audience", "urn:test:upstream", "-per-caller"}, extra...)
		return startProc(t, exec.Command(bin.testserver, args...)).log.waitFor(t, urlLineRE, 30*time.Second)
	}
	privURL := perCaller("http")
	scopedURL := perCaller("http-stateless", "-cache-scope", "private")
	upURL := startBearerUpstream(t, issuer, "urn:test:upstream")
	creds := func(private bool) *credsCfg {
		return &credsCfg{Mode: "tokenExchange", Issuer: issuer, ClientID: authToolsvc.ID, ClientSecret: authToolsvc.Secret,
			Audience: "urn:test:upstream", PrivateTools: private}
	}
	p := startToolsvc(t, cfg{
		Auth: &authCfg{JWT: &jwtCfg{JWKSURL: jwksURI(t, issuer), Issuer: issuer, Audience: "toolsvc"}},
		Servers: servers{
			"priv":   goHTTP(privURL, upstream{PingInterval: "1h", RefreshDebounce: "10ms", Credentials: creds(true)}),
			"scoped": goHTTP(scopedURL, upstream{PingInterval: "1h", ProtocolVersion: "2026-07-28", Credentials: creds(false)}),
			"up":     goHTTP(upURL, upstream{PingInterval: "1h", Credentials: creds(false)}),
		}},
		"--mcp-listen", "127.0.0.1:0")
	tokens := map[string]string{}
	for _, user := range []string{"alice", "bob"} {
		tok, err := authtest.Login(ctx, issuer, authAgent, user)
		if err != nil {
			t.Fatalf("login %s: %v", user, err)
		}
		tokens[user] = tok.AccessToken
	}
	as := func(user string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tokens[user])
	}
	// Every tool of a principal's view, through ListTools two at a time
	// (the page tokens continue in the principal's view).
	listAll := func(user string) []string {
		t.Helper()
		var names []string
		tok, rev := "", ""
		for {
			res, err := p.client.ListTools(as(user), &toolsvcv1.ListToolsRequest{PageSize: 2, PageToken: tok})
			if err != nil {
				t.Fatalf("ListTools as %s: %v", user, err)
			}
			if rev != "" && res.GetRevision() != rev {
				t.Errorf("ListTools as %s: page of revision %s after %s", user, res.GetRevision(), rev)
			}
			rev = res.GetRevision()
			for _, tl := range res.GetTools() {
				names = append(names, tl.GetName())
			}
			if tok = res.GetNextPageToken(); tok == "" {
				return names
			}
		}
	}
	mine := map[string][]string{
		"alice": {"priv__grow", "priv__mine_alice", "priv__whoami", "scoped__grow", "scoped__mine_alice", "scoped__whoami"},
		"bob":   {"priv__grow", "priv__mine_bob", "priv__whoami", "scoped__grow", "scoped__mine_bob", "scoped__whoami"},
	}
	// The shared listing's tools ("up", the first principal's listing) are
	// everyone's.
	var shared []string
	// alice lists first over gRPC, bob over the MCP front door: each
	// primes (and lists) through their own sessions.
	all := listAll("alice")
	if got := privateOnes(all); !equalSet(got, mine["alice"]) {
		t.Errorf("alice's ListTools = %v, want %v", got, mine["alice"])
	}
	for _, n := range all {
		if strings.HasPrefix(n, "up__") {
			shared = append(shared, n)
		}
	}
	if !slices.Contains(shared, "up__whoami") {
		t.Fatalf("alice's ListTools has no up__whoami: %v", all)
	}
	// MCP sessions of both, counting their tools/list_changed.
	changed := map[string]chan struct{}{"alice": make(chan struct{}, 16), "bob": make(chan struct{}, 16)}
	mcpAs := func(user string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed[user] <- struct{}{} }})
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + p.mcpAddr + "/mcp",
			HTTPClient: &http.Client{Transport: bearerTransport{tokens[user]}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	cs := mcpAs("bob")
	var mcpNames []string
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		mcpNames = append(mcpNames, tl.Name)
	}
	if !equalSet(mcpNames, append(slices.Clone(mine["bob"]), shared...)) {
		t.Errorf("bob's MCP tools/list = %v, want %v", mcpNames, mine["bob"])
	}
	if got := listAll("bob"); !equalSet(got, append(slices.Clone(mine["bob"]), shared...)) {
		t.Errorf("bob's ListTools = %v, want %v", got, mine["bob"])
	}

	// Calls resolve in the caller's view: bob's own tool reaches the
	// upstream as bob; alice naming it is NOT_FOUND, as is any name.
	res, err := p.client.CallTool(as("bob"), &toolsvcv1.CallToolRequest{Name: "priv__mine_bob"})
	if err != nil || res.GetIsError() || !strings.Contains(res.String(), "mine, bob") {
		t.Fatalf("bob's priv__mine_bob = %v, %v", res, err)
	}
	for _, name := range []string{"priv__mine_bob", "scoped__mine_bob"} {
		_, err = p.client.CallTool(as("alice"), &toolsvcv1.CallToolRequest{Name: name})
		wantStatus(t, err, codes.NotFound, "TOOL_NOT_FOUND", "", name)
	}
	// MCP: bob calls his tool on the 2026-07-28 upstream too.
	mres, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "scoped__mine_bob"})
	if err != nil || mres.IsError || mres.Content[0].(*mcp.TextContent).Text != "mine, bob" {
		t.Fatalf("bob's scoped__mine_bob over MCP = %v, %v", mres, err)
	}

	// SearchTools ranks the caller's view.
	for user, want := range map[string]string{"alice": "priv__mine_alice", "bob": "priv__mine_bob"} {
		sr, err := p.client.SearchTools(as(user), &toolsvcv1.SearchToolsRequest{Query: "a tool only " + user + " has", Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		var found []string
		for _, r := range sr.GetResults() {
			found = append(found, r.GetTool().GetName())
		}
		other := map[string]string{"alice": "bob", "bob": "alice"}[user]
		if !slices.Contains(found, want) || slices.ContainsFunc(found, func(n string) bool { return strings.HasSuffix(n, "_"+other) }) {
			t.Errorf("%s's search = %v, want %s and nothing of %s", user, found, want, other)
		}
	}

	// Watches: each principal's snapshot is their view; bob's list change
	// reaches bob only.
	mcpAs("alice")
	aw, bw := startWatch(t, as("alice"), p.client, ""), startWatch(t, as("bob"), p.client, "")
	for user, w := range map[string]*watcher{"alice": aw, "bob": bw} {
		ev := w.next(t, 30*time.Second)
		var names []string
		for _, tl := range ev.GetSnapshot().GetTools() {
			names = append(names, tl.GetName())
		}
		if !equalSet(names, append(slices.Clone(mine[user]), shared...)) {
			t.Errorf("%s's watch snapshot = %v, want %v", user, names, mine[user])
		}
	}
	if _, err := p.client.CallTool(as("bob"), &toolsvcv1.CallToolRequest{Name: "priv__grow"}); err != nil {
		t.Fatal(err)
	}
	bw.waitUpsert(t, "priv__grown_bob_1", 30*time.Second)
	waitChanged := func(user string) {
		t.Helper()
		select {
		case <-changed[user]:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s's MCP session got no tools/list_changed for their own list change", user)
		}
	}
	waitChanged("bob")
	if _, err := p.client.CallTool(as("alice"), &toolsvcv1.CallToolRequest{Name: "priv__grow"}); err != nil {
		t.Fatal(err)
	}
	// alice's first change is her own: had bob's reached her watch, it
	// would have come before.
	for {
		ev := aw.next(t, 30*time.Second)
		if ev.GetProgress() != nil {
			continue
		}
		up := ev.GetChanges().GetUpserted()
		if len(up) != 1 || up[0].GetName() != "priv__grown_alice_1" || len(ev.GetChanges().GetRemoved()) != 0 {
			t.Fatalf("alice's watch event after bob's and her own list change = %v, want only priv__grown_alice_1", ev)
		}
		break
	}
	// Her MCP session is told of her change; a notification of bob's would
	// have been sent in the same pass as bob's, long before hers.
	waitChanged("alice")
	if n := len(changed["alice"]); n != 0 {
		t.Errorf("alice's MCP session got %d more tools/list_changed: bob's change reached her", n)
	}
	if got := listAll("alice"); slices.Contains(got, "priv__grown_bob_1") || !slices.Contains(got, "priv__grown_alice_1") {
		t.Errorf("alice's ListTools after the changes = %v", got)
	}
	// The MCP front door's tools/list is bob's view, with his new tool.
	mlt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(mlt.Tools, func(tl *mcp.Tool) bool { return tl.Name == "priv__grown_bob_1" }) ||
		slices.ContainsFunc(mlt.Tools, func(tl *mcp.Tool) bool { return strings.Contains(tl.Name, "alice") }) {
		t.Errorf("bob's MCP tools/list after the changes = %d tools", len(mlt.Tools))
	}
	// The shared per-user upstream still serves each principal as itself.
	for _, user := range []string{"alice", "bob"} {
		r, err := p.client.CallTool(as(user), &toolsvcv1.CallToolRequest{Name: "up__whoami"})
		if err != nil || r.GetStructuredContent().AsMap()["sub"] != user {
			t.Errorf("up__whoami as %s = %v, %v", user, r, err)
		}
	}
}

// privateOnes are the names of the per-principal upstreams' tools.
func privateOnes(names []string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return strings.HasPrefix(n, "up__") })
}

// equalSet reports whether a and b hold the same names.
func equalSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
