package mcpfront

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service/core"
)

func TestMCPSessionIDs(t *testing.T) {
	t.Parallel()
	ids := newSessionIDs(nil)
	id := ids.mint("alice")
	if !ids.valid(id, "alice") {
		t.Fatalf("%q not valid for its principal", id)
	}
	if ids.valid(id, "bob") {
		t.Error("an ID minted for alice is valid for bob")
	}
	if !newSessionIDs(nil).valid(id, "alice") {
		t.Error("another replica (same default key) does not accept the ID")
	}
	if newSessionIDs([]byte("other key")).valid(id, "alice") {
		t.Error("a replica with another key accepts the ID")
	}
	for _, bad := range []string{"", "s1.", "s1.x", id + "x", "s2" + id[2:], "s1..mac", id[:len(id)-1]} {
		if ids.valid(bad, "alice") {
			t.Errorf("%q is valid", bad)
		}
	}
	if a, b := ids.mint("alice"), ids.mint("alice"); a == b {
		t.Error("two mints gave the same ID")
	}
}

func TestMCPHostPolicy(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		listen         string
		hosts, origins []string
		host, origin   string
		ok             bool
	}{
		{"127.0.0.1:8080", nil, nil, "127.0.0.1:8080", "", true},
		{"127.0.0.1:8080", nil, nil, "localhost:8080", "", true},
		{"127.0.0.1:8080", nil, nil, "[::1]:8080", "", true},
		{"127.0.0.1:8080", nil, nil, "attacker.example:8080", "", false}, // DNS rebinding
		{"127.0.0.1:8080", nil, nil, "localhost:8080", "http://localhost:8080", true},
		{"127.0.0.1:8080", nil, nil, "localhost:8080", "http://attacker.example", false},
		{"127.0.0.1:8080", nil, []string{"https://app.example"}, "localhost:8080", "https://app.example", true},
		{":8080", nil, nil, "toolsvc.internal:8080", "", true},
		{":8080", []string{"toolsvc.example.com"}, nil, "toolsvc.example.com:8080", "", true},
		{":8080", []string{"toolsvc.example.com"}, nil, "toolsvc.example.com", "", true},
		{":8080", []string{"toolsvc.example.com"}, nil, "other.example.com", "", false},
		{":8080", []string{"toolsvc.example.com:443"}, nil, "toolsvc.example.com:8080", "", false},
		{"127.0.0.1:8080", []string{"*"}, nil, "anything", "", true},
	} {
		p := newHostPolicy(c.listen, c.hosts, c.origins)
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Host = c.host
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if err := p.check(r); (err == nil) != c.ok {
			t.Errorf("listen %s hosts %v origins %v: Host %q Origin %q: error %v, want ok=%v", c.listen, c.hosts, c.origins, c.host, c.origin, err, c.ok)
		}
	}
}

// TestMCPListChangedDebounce: a burst of catalog signals within the
// debounce gives one list_changed; signals further apart give one each.
func TestMCPListChangedDebounce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := make(chan struct{}, 1)
		stop := make(chan struct{})
		var fired atomic.Int32
		done := make(chan struct{})
		go func() {
			defer close(done)
			debounce(stop, in, 50*time.Millisecond, func() { fired.Add(1) })
		}()
		signal := func() {
			select {
			case in <- struct{}{}:
			default:
			}
		}
		for range 50 { // 50 signals 1 ms apart: one burst
			signal()
			time.Sleep(time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if n := fired.Load(); n != 1 {
			t.Fatalf("a burst of 50 signals fired %d times, want 1", n)
		}
		for range 5 { // 5 signals 200 ms apart: five bursts
			signal()
			time.Sleep(200 * time.Millisecond)
		}
		synctest.Wait()
		if n := fired.Load(); n != 6 {
			t.Fatalf("fired %d times in all, want 6", n)
		}
		// The first fire comes d after the first signal of the burst, not
		// after the last (a steady stream of changes still notifies).
		signal()
		time.Sleep(49 * time.Millisecond)
		synctest.Wait()
		if n := fired.Load(); n != 6 {
			t.Fatalf("fired before the debounce: %d", n)
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		if n := fired.Load(); n != 7 {
			t.Fatalf("fired %d times, want 7 once the debounce passed", n)
		}
		close(stop)
		<-done
	})
}

// TestMCPFrontInProcess: the front door over a real go-sdk upstream (in
// memory) and a real HTTP listener: tools/list pages equal ListTools'
// catalog, a call goes through, and an upstream burst of tool additions
// gives the client list_changed.
func TestMCPFrontInProcess(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 12, core.AuthConfig{})
	front := New(f.core, Options{PageSize: 5, ListenAddr: "127.0.0.1:0"})
	ctx, cancel := context.WithCancel(ctxT(t))
	ran := make(chan struct{})
	go func() { defer close(ran); front.Run(ctx) }()
	srv := httptest.NewServer(front.Handler())
	t.Cleanup(func() {
		cancel()
		<-ran
		front.Close()
		srv.Close()
	})
	var changed atomic.Int32
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed.Add(1) },
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list := func() []string {
		var names []string
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
		}
		return names
	}
	var want []string
	for _, tl := range f.bridge.Catalog().Current().Tools {
		want = append(want, tl.Name)
	}
	if got := list(); !slices.Equal(got, want) {
		t.Fatalf("tools/list = %v, want %v", got, want)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mem__echo", Arguments: map[string]any{"text": "x"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	for i := range 20 {
		f.upstream.AddTool(&mcp.Tool{Name: fmt.Sprintf("burst%02d", i), InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(list(), "mem__burst19") || changed.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after the burst: %d list_changed, tools %v", changed.Load(), list())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	t.Logf("a burst of 20 upstream additions: %d list_changed", changed.Load())
	if n := changed.Load(); n > 3 {
		t.Errorf("a burst of 20 additions gave %d list_changed, want about one", n)
	}
}

// TestMCPFrontPerPrincipalListChanged: with rules, a catalog change
// notifies only the sessions whose principal's view changed.
func TestMCPFrontPerPrincipalListChanged(t *testing.T) {
	t.Parallel()
	authz := core.NewAuthorizer([]core.Rule{{Principal: "alice", Allow: []string{"mem__a*"}}, {Principal: "bob", Allow: []string{"mem__b*", "mem__echo"}}}, nil)
	f := newFixture(t, 3, core.AuthConfig{Authorizer: authz,
		Authenticator: core.NewAuthenticator(map[string]string{"tok-alice-0123456789": "alice", "tok-bob-0123456789ab": "bob"}, nil, false)})
	ctx, srv := startPerPrincipalFront(t, f.core)
	type client struct {
		cs      *mcp.ClientSession
		changed atomic.Int32
	}
	connect := func(token, version string) *client {
		c := &client{}
		mc := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { c.changed.Add(1) },
		})
		c.cs = connectFront(t, ctx, mc, srv.URL, token, version)
		return c
	}
	alice, bob := connect("tok-alice-0123456789", "2025-11-25"), connect("tok-bob-0123456789ab", "")
	add := func(name string) {
		f.upstream.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, ok := f.bridge.Catalog().Current().Lookup("mem__" + name); ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("mem__%s never reached the catalog", name)
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond) // debounce, go-sdk's delay, delivery
	}
	add("alpha")
	if a, b := alice.changed.Load(), bob.changed.Load(); a != 1 || b != 0 {
		t.Fatalf("after mem__alpha (alice's view only): alice %d, bob %d list_changed; want 1, 0", a, b)
	}
	add("beta")
	if a, b := alice.changed.Load(), bob.changed.Load(); a != 1 || b != 1 {
		t.Fatalf("after mem__beta (bob's view only): alice %d, bob %d; want 1, 1", a, b)
	}
	add("zeta") // nobody's view
	if a, b := alice.changed.Load(), bob.changed.Load(); a != 1 || b != 1 {
		t.Fatalf("after mem__zeta (no one's view): alice %d, bob %d; want 1, 1", a, b)
	}
}

// startPerPrincipalFront runs svc's front door on an httptest server with
// a short debounce and a 200 ms announce window (the per-principal tests
// space their changes 300 ms apart).
func startPerPrincipalFront(t *testing.T, c *core.Core) (context.Context, *httptest.Server) {
	t.Helper()
	return serveFront(t, c, Options{ListenAddr: "127.0.0.1:0", Debounce: 20 * time.Millisecond}, 200*time.Millisecond)
}

// serveFront runs a front door over c with opts (window: the views'
// window, 0 for the default) over an httptest server, until the test ends.
func serveFront(t *testing.T, c *core.Core, opts Options, window time.Duration) (context.Context, *httptest.Server) {
	t.Helper()
	front := New(c, opts)
	if window > 0 {
		front.announced.window = window
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	ran := make(chan struct{})
	go func() { defer close(ran); front.Run(ctx) }()
	srv := httptest.NewServer(front.Handler())
	t.Cleanup(func() {
		cancel()
		<-ran
		front.Close()
		srv.Close()
	})
	return ctx, srv
}

// connectFront connects mc to the front door at base with a bearer token
// ("" for none) at protocol version ("" for the newest); the session
// closes with the test.
func connectFront(t *testing.T, ctx context.Context, mc *mcp.Client, base, token, version string) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}
	if token != "" {
		tr.HTTPClient = &http.Client{Transport: bearerTransport(token)}
	}
	cs, err := mc.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPFrontPerPrincipalResourcesPromptsChanged: with rules,
// resources/list_changed and prompts/list_changed reach only the sessions
// whose principal's view of that list changed, and each principal lists
// only what it may use.
func TestMCPFrontPerPrincipalResourcesPromptsChanged(t *testing.T) {
	t.Parallel()
	up := mcp.NewServer(&mcp.Implementation{Name: "mem", Version: "1"}, nil)
	text := func(s string) mcp.ResourceHandler {
		return func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: s}}}, nil
		}
	}
	prompt := func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	}
	up.AddResource(&mcp.Resource{URI: "mem://first", Name: "first"}, text("first"))
	up.AddPrompt(&mcp.Prompt{Name: "a_first"}, prompt)
	b, err := mcpbridge.New(mcpbridge.Config{Servers: []mcpbridge.ServerConfig{{
		Name: "mem", RefreshDebounce: 10 * time.Millisecond,
		NewTransport: func() (mcp.Transport, error) {
			ct, st := mcp.NewInMemoryTransports()
			_, err := up.Connect(context.Background(), st, nil)
			return ct, err
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	<-b.Ready()
	// alice: the a* prompts and mem's resources; bob: the b* prompts only.
	c := core.New(b, core.Options{Auth: core.AuthConfig{
		Authenticator: core.NewAuthenticator(map[string]string{"tok-alice-0123456789": "alice", "tok-bob-0123456789ab": "bob"}, nil, false),
		Authorizer:    core.NewAuthorizer([]core.Rule{{Principal: "alice", Allow: []string{"mem__a*", "mem__@resources"}}, {Principal: "bob", Allow: []string{"mem__b*"}}}, nil),
	}})
	ctx, srv := startPerPrincipalFront(t, c)
	type client struct {
		cs                 *mcp.ClientSession
		resources, prompts atomic.Int32
	}
	connect := func(token, version string) *client {
		c := &client{}
		mc := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
			ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { c.resources.Add(1) },
			PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { c.prompts.Add(1) },
		})
		c.cs = connectFront(t, ctx, mc, srv.URL, token, version)
		return c
	}
	alice, bob := connect("tok-alice-0123456789", "2025-11-25"), connect("tok-bob-0123456789ab", "")
	lists := func(c *client) (uris, prompts []string) {
		for r, err := range c.cs.Resources(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			uris = append(uris, r.URI)
		}
		for p, err := range c.cs.Prompts(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			prompts = append(prompts, p.Name)
		}
		return uris, prompts
	}
	if u, p := lists(alice); !slices.Equal(u, []string{"mem://first"}) || !slices.Equal(p, []string{"mem__a_first"}) {
		t.Fatalf("alice lists %v, %v", u, p)
	}
	if u, p := lists(bob); len(u) != 0 || len(p) != 0 {
		t.Fatalf("bob lists %v, %v; want nothing", u, p)
	}
	if _, err := bob.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mem://first"}); err == nil || !strings.Contains(err.Error(), "mem://first") {
		t.Errorf("bob reading mem://first: %v, want an error naming it", err)
	}
	if res, err := alice.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mem://first"}); err != nil || res.Contents[0].Text != "first" {
		t.Errorf("alice reading mem://first: %v %+v", err, res)
	}
	if _, err := bob.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mem__a_first"}); err == nil || !strings.Contains(err.Error(), "may not use") {
		t.Errorf("bob getting mem__a_first: %v, want a permission error", err)
	}

	settle := func(until func() bool, what string) {
		deadline := time.Now().Add(10 * time.Second)
		for !until() {
			if time.Now().After(deadline) {
				t.Fatalf("%s never reached the lists", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond) // debounce, go-sdk's delay, delivery
	}
	promptListed := func(name string) func() bool {
		return func() bool { _, ok := b.Resources().Current().LookupPrompt(name); return ok }
	}
	up.AddResource(&mcp.Resource{URI: "mem://second", Name: "second"}, text("second"))
	settle(func() bool { return len(b.Resources().Current().Resources) == 2 }, "mem://second")
	if a, bb := alice.resources.Load(), bob.resources.Load(); a != 1 || bb != 0 {
		t.Fatalf("after mem://second (alice's view only): resources/list_changed alice %d, bob %d; want 1, 0", a, bb)
	}
	up.AddPrompt(&mcp.Prompt{Name: "b_second"}, prompt)
	settle(promptListed("mem__b_second"), "mem__b_second")
	if a, bb := alice.prompts.Load(), bob.prompts.Load(); a != 0 || bb != 1 {
		t.Fatalf("after mem__b_second (bob's view only): prompts/list_changed alice %d, bob %d; want 0, 1", a, bb)
	}
	up.AddPrompt(&mcp.Prompt{Name: "z_third"}, prompt) // nobody's view
	settle(promptListed("mem__z_third"), "mem__z_third")
	if a, bb := alice.prompts.Load(), bob.prompts.Load(); a != 0 || bb != 1 {
		t.Fatalf("after mem__z_third (no one's view): prompts/list_changed alice %d, bob %d; want 0, 1", a, bb)
	}
	if r := alice.resources.Load() + bob.resources.Load(); r != 1 {
		t.Errorf("prompt changes sent %d resources/list_changed in all, want the 1 from before", r)
	}
}

// TestMCPFrontSubscriptionsEndWithSessions: the front door's upstream
// subscriptions go when their sessions do: a 2025-11-25 session that
// closes without unsubscribing, a 2026-07-28 client that unsubscribes, and
// a resources/subscribe sent without a session (its one-request session
// ends with the request). Two sessions share one upstream subscription.
func TestMCPFrontSubscriptionsEndWithSessions(t *testing.T) {
	t.Parallel()
	up := mcp.NewServer(&mcp.Implementation{Name: "mem", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	up.AddResource(&mcp.Resource{URI: "mem://doc", Name: "doc"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "doc"}}}, nil
	})
	b, err := mcpbridge.New(mcpbridge.Config{Servers: []mcpbridge.ServerConfig{{
		Name: "mem",
		NewTransport: func() (mcp.Transport, error) {
			ct, st := mcp.NewInMemoryTransports()
			_, err := up.Connect(context.Background(), st, nil)
			return ct, err
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	<-b.Ready()
	front := New(core.New(b, core.Options{}), Options{ListenAddr: "127.0.0.1:0"})
	ctx, cancel := context.WithCancel(ctxT(t))
	ran := make(chan struct{})
	go func() { defer close(ran); front.Run(ctx) }()
	srv := httptest.NewServer(front.Handler())
	t.Cleanup(func() {
		cancel()
		<-ran
		front.Close()
		srv.Close()
	})
	held := func() (entries, sessions int) {
		front.subs.mu.Lock()
		defer front.subs.mu.Unlock()
		for _, e := range front.subs.entries {
			entries++
			sessions += len(e.sessions)
		}
		return entries, sessions
	}
	eventually := func(wantE, wantS int, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			e, s := held()
			if e == wantE && s == wantS {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d upstream subscriptions, %d subscribed sessions; want %d, %d", what, e, s, wantE, wantS)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	connect := func(version string) *mcp.ClientSession {
		return connectFront(t, ctx, mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil), srv.URL, "", version)
	}

	old, modern := connect("2025-11-25"), connect("")
	if err := old.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://doc"}); err != nil {
		t.Fatal(err)
	}
	if err := old.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://doc"}); err != nil { // twice: one entry, as in go-sdk
		t.Fatal(err)
	}
	if err := modern.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://doc"}); err != nil {
		t.Fatal(err)
	}
	eventually(1, 2, "two sessions subscribed")
	if err := modern.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "mem://doc"}); err != nil {
		t.Fatal(err)
	}
	eventually(1, 1, "the 2026-07-28 client unsubscribed")
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(0, 0, "the 2025-11-25 session closed without unsubscribing")

	// Without a session: a 2026-07-28 request (served by a session that
	// lives for the request alone; that era has no resources/subscribe) and
	// a 2025-11-25 one without Mcp-Session-Id. Neither may leave a
	// subscription behind.
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		body := `{"jsonrpc":"2.0","id":7,"method":"resources/subscribe","params":{"uri":"mem://doc","_meta":{"io.modelcontextprotocol/protocolVersion":"` +
			version + `","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", version)
		req.Header.Set("Mcp-Method", "resources/subscribe")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// go-sdk v1.8.0 answers the 2025-11-25 one (a session for the
		// request alone) and refuses the 2026-07-28 one (no such method).
		t.Logf("sessionless resources/subscribe (%s): HTTP %d %q", version, resp.StatusCode, bytes.TrimSpace(raw))
		eventually(0, 0, "after a sessionless resources/subscribe ("+version+")")
	}
	eventually(0, 0, "after a sessionless resources/subscribe")
}

// TestMCPFrontSessionTable: the session table closes a session idle for
// SessionTimeout (not one in use, however long), and at its cap evicts
// the session idle the longest, or refuses when every one is in use.
func TestMCPFrontSessionTable(t *testing.T) {
	f := newFixture(t, 1, core.AuthConfig{})
	synctest.Test(t, func(t *testing.T) {
		front := New(f.core, Options{ListenAddr: "127.0.0.1:0", SessionTimeout: time.Minute, MaxSessions: 3, MaxSessionsPerPrincipal: 2})
		type held struct {
			e      *frontSession
			cs     *mcp.ClientSession
			closed chan struct{}
		}
		var all []*held
		open := func(id, principal string) (*held, error) {
			e, err := front.sessions.reserve(id, principal)
			if err != nil {
				return nil, err
			}
			ct, st := mcp.NewInMemoryTransports()
			ss, err := front.server.Connect(t.Context(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(), ct, nil)
			if err != nil {
				t.Fatal(err)
			}
			e.ss = ss // what bind does for a session whose ID go-sdk took from the table's reservation
			front.sessions.created(e)
			h := &held{e: e, cs: cs, closed: make(chan struct{})}
			go func() {
				_ = ss.Wait()
				close(h.closed)
			}()
			all = append(all, h)
			return h, nil
		}
		isClosed := func(h *held) bool {
			synctest.Wait()
			select {
			case <-h.closed:
				return true
			default:
				return false
			}
		}
		holds := func(h *held) bool {
			front.sessions.mu.Lock()
			defer front.sessions.mu.Unlock()
			return front.sessions.m[h.e.id] == h.e
		}

		a, _ := open("a", "alice")
		time.Sleep(59 * time.Second)
		b, _ := open("b", "bob")
		time.Sleep(2 * time.Second)
		if holds(a) || !isClosed(a) {
			t.Errorf("a session idle for 61 s with a 1 min timeout: held %v, closed %v; want closed", holds(a), isClosed(a))
		}
		if !holds(b) || isClosed(b) {
			t.Errorf("a session idle for 2 s was closed")
		}
		if front.sessions.begin("b") == nil {
			t.Fatal("begin(b) = nil, want b")
		}
		time.Sleep(5 * time.Minute)
		if !holds(b) || isClosed(b) {
			t.Errorf("a session in use for 5 min was closed")
		}
		front.sessions.end(b.e)

		// The cap: c and d join b (idle since now); e evicts the oldest
		// idle, b.
		time.Sleep(time.Second)
		c, _ := open("c", "alice")
		time.Sleep(time.Second)
		d, _ := open("d", "alice")
		e, err := open("e", "bob")
		if err != nil {
			t.Fatalf("a fourth session with three idle: %v", err)
		}
		if holds(b) || !isClosed(b) || !holds(c) || !holds(d) || !holds(e) {
			t.Errorf("at the cap of 3, a new session: b held %v closed %v, c %v d %v e %v; want b evicted", holds(b), isClosed(b), holds(c), holds(d), holds(e))
		}
		// alice at her cap of 2: her oldest idle, c, goes for her next.
		if front.sessions.begin("d") == nil {
			t.Fatal("begin(d) = nil")
		}
		g, err := open("g", "alice")
		if err != nil || holds(c) || !isClosed(c) {
			t.Errorf("alice's third session: %v, c held %v closed %v; want c evicted", err, holds(c), isClosed(c))
		}
		// Every one of alice's in use: refused, whatever bob holds.
		front.sessions.begin("g")
		if _, err := open("h", "alice"); !errors.Is(err, errSessionsBusy) || !strings.Contains(err.Error(), "--mcp-max-sessions-per-principal") {
			t.Errorf("alice's sessions all in use: %v, want errSessionsBusy naming --mcp-max-sessions-per-principal", err)
		}
		front.sessions.begin("e")
		if _, err := open("i", "carol"); !errors.Is(err, errSessionsBusy) || !strings.Contains(err.Error(), "--mcp-max-sessions)") {
			t.Errorf("every session in use: %v, want errSessionsBusy naming --mcp-max-sessions", err)
		}
		for _, h := range []*held{d, e, g} {
			front.sessions.end(h.e)
		}
		front.Close()
		for _, h := range all {
			_ = h.cs.Close()
		}
		synctest.Wait()
	})
}

// TestMCPFrontSSEForeignSession: a legacy SSE session's endpoint
// (/sse?sessionid=…) presented by another principal is unknown to it
// (404, as on /mcp), so that a leaked ID (it travels in a URL) does not
// let bob run calls in alice's session, as alice; alice's own POSTs are
// accepted.
func TestMCPFrontSSEForeignSession(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, core.AuthConfig{Authenticator: core.NewAuthenticator(map[string]string{"tok-alice-0123456789": "alice", "tok-bob-0123456789ab": "bob"}, nil, false)})
	_, srv := startPerPrincipalFront(t, f.core)
	ctx := ctxT(t)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/sse", nil)
	req.Header.Set("Authorization", "Bearer tok-alice-0123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The first event is the endpoint: "event: endpoint\ndata: /sse?sessionid=…".
	buf := make([]byte, 0, 512)
	for !bytes.Contains(buf, []byte("\n\n")) {
		b := make([]byte, 256)
		n, err := resp.Body.Read(b)
		if err != nil {
			t.Fatalf("reading the endpoint event: %v (%q so far)", err, buf)
		}
		buf = append(buf, b[:n]...)
	}
	_, endpoint, ok := strings.Cut(string(buf), "data: ")
	if !ok {
		t.Fatalf("no endpoint event: %q", buf)
	}
	endpoint, _, _ = strings.Cut(endpoint, "\n")
	post := func(token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+endpoint,
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("tok-bob-0123456789ab"); code != http.StatusNotFound || !strings.Contains(body, "session not found") {
		t.Errorf("bob's POST to alice's SSE session: HTTP %d %q, want 404 session not found", code, body)
	}
	if code, body := post("tok-alice-0123456789"); code != http.StatusAccepted {
		t.Errorf("alice's POST to her SSE session: HTTP %d %q, want 202", code, body)
	}
}
