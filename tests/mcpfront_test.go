package tests

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP front door (serve --mcp-listen) end to end: real toolsvc, real
// upstreams (the go-sdk test server over stdio "s" and streamable HTTP
// "h"), real MCP clients.

// frontPageSize is small so that every client pages through tools/list.
const frontPageSize = "7"

// startFrontFixture is startCallFixture with the front door on; it returns
// the front door's base URL (http://host:port).
func startFrontFixture(t *testing.T, extraServers servers, extraArgs ...string) (*toolsvcProc, string) {
	t.Helper()
	p := startCallFixture(t, extraServers, append([]string{"--mcp-listen", "127.0.0.1:0", "--mcp-page-size", frontPageSize}, extraArgs...)...)
	return p, "http://" + p.mcpAddr
}

// grpcToolNames is ListTools' names, sorted.
func grpcToolNames(t *testing.T, ctx context.Context, p *toolsvcProc) []string {
	t.Helper()
	tools, _ := listAll(t, ctx, p.client, 0)
	names := toolNames(tools)
	slices.Sort(names)
	return names
}

// goFrontClient is one go-sdk client session on the front door, with its
// notifications.
type goFrontClient struct {
	cs       *mcp.ClientSession
	changed  chan struct{}
	progress chan *mcp.ProgressNotificationParams
}

func connectGoFront(t *testing.T, ctx context.Context, transport mcp.Transport, version string) *goFrontClient {
	t.Helper()
	c := &goFrontClient{changed: make(chan struct{}, 16), progress: make(chan *mcp.ProgressNotificationParams, 64)}
	client := mcp.NewClient(&mcp.Implementation{Name: "frontdoor-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.changed <- struct{}{}:
			default:
			}
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			select {
			case c.progress <- r.Params:
			default:
			}
		},
	})
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	c.cs = cs
	return c
}

func (c *goFrontClient) names(t *testing.T, ctx context.Context) []string {
	t.Helper()
	var names []string
	for tool, err := range c.cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func callText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestMCPFrontGoClient: go-sdk's client over each way in (2026-07-28
// stateless, 2025-11-25 sessions, legacy SSE) lists the same names as
// ListTools (paged), calls, gets progress with its token, cancels a call
// (the upstream sees it), and gets list_changed after an upstream adds a
// tool.
func TestMCPFrontGoClient(t *testing.T) {
	t.Parallel()
	p, base := startFrontFixture(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	want := grpcToolNames(t, ctx, p)
	for _, tc := range []struct {
		name, version string
		transport     func() mcp.Transport
	}{
		{"stateless-2026-07-28", "", func() mcp.Transport { return &mcp.StreamableClientTransport{Endpoint: base + "/mcp"} }},
		{"session-2025-11-25", "2025-11-25", func() mcp.Transport { return &mcp.StreamableClientTransport{Endpoint: base + "/mcp"} }},
		{"sse", "2025-11-25", func() mcp.Transport { return &mcp.SSEClientTransport{Endpoint: base + "/sse"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := connectGoFront(t, ctx, tc.transport(), tc.version)
			t.Logf("negotiated %s, session %q", c.cs.InitializeResult().ProtocolVersion, c.cs.ID())
			if got := c.names(t, ctx); !slices.Equal(got, want) {
				t.Fatalf("tools/list names:\n got %v\nwant %v (ListTools)", got, want)
			}

			res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "h__echo", Arguments: map[string]any{"text": "hi " + tc.name}})
			if err != nil || res.IsError || callText(t, res) != "hi "+tc.name {
				t.Fatalf("h__echo: %v %+v", err, res)
			}

			// Progress, with the client's token, in order, before the result.
			params := &mcp.CallToolParams{Name: "s__progress", Arguments: map[string]any{"steps": 3, "step_ms": 100}}
			token := "tok-" + tc.name
			params.SetProgressToken(token)
			res, err = c.cs.CallTool(ctx, params)
			if err != nil || callText(t, res) != "3 steps" {
				t.Fatalf("s__progress: %v %+v", err, res)
			}
			// Later steps race the result at the bridge, which drops
			// progress that reaches it after the result (as for
			// CallToolStream; on a loaded box the upstream's last steps and
			// its result can arrive in one read): the first step, 100 ms
			// before the next, always arrives.
			var got []float64
		collect:
			for {
				select {
				case pr := <-c.progress:
					if pr.ProgressToken != token {
						t.Fatalf("progress token %v, want %q", pr.ProgressToken, token)
					}
					got = append(got, pr.Progress)
				case <-time.After(200 * time.Millisecond):
					break collect
				}
			}
			if len(got) < 1 || len(got) > 3 || !slices.Equal(got, []float64{1, 2, 3}[:len(got)]) {
				t.Errorf("progress = %v, want 1[, 2[, 3]]", got)
			}

			// Arguments the schema refuses: a tool error the model can read.
			res, err = c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "h__echo", Arguments: map[string]any{"text": 5}})
			if err != nil || !res.IsError || !strings.Contains(callText(t, res), "arguments.text") {
				t.Errorf("h__echo with a number: err %v, result %+v; want isError naming arguments.text", err, res)
			}
			// An unknown tool: JSON-RPC InvalidParams naming it.
			_, err = c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "h__nope"})
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "h__nope") {
				t.Errorf("unknown tool: %v, want JSON-RPC %d naming h__nope", err, jsonrpc.CodeInvalidParams)
			}

			// Cancellation reaches the upstream.
			id := "fd-cancel-" + tc.name
			cctx, ccancel := context.WithCancel(ctx)
			time.AfterFunc(300*time.Millisecond, ccancel)
			_, err = c.cs.CallTool(cctx, &mcp.CallToolParams{Name: "s__wait_cancel", Arguments: map[string]any{"id": id, "ms": 30000}})
			if err == nil {
				t.Fatal("cancelled wait_cancel returned no error")
			}
			rec := waitCancelRecord(t, ctx, p.client, "s", id, 10*time.Second)
			if rec.cancelled.IsZero() {
				t.Fatalf("upstream record %+v: not cancelled", rec)
			}
			t.Logf("upstream cancelled %s after the call started", rec.cancelled.Sub(rec.started).Round(time.Millisecond))

			// list_changed after an upstream adds a tool.
			for len(c.changed) > 0 {
				<-c.changed
			}
			added := "added_" + strings.ReplaceAll(tc.name, "-", "_")
			if _, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "h__add_tool", Arguments: map[string]any{"name": added}}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-c.changed:
			case <-time.After(15 * time.Second):
				t.Fatal("no notifications/tools/list_changed within 15s of the upstream adding a tool")
			}
			if got := c.names(t, ctx); !slices.Contains(got, "h__"+added) {
				t.Fatalf("after list_changed, tools/list lacks h__%s: %v", added, got)
			}
			want = grpcToolNames(t, ctx, p)
		})
	}
}

// TestMCPFrontAuth: the front door authenticates like the gRPC API (the
// same bearer tokens, the same rules): no token is 401, a token's
// principal sees only its tools in tools/list and is refused others with
// the pipeline's PERMISSION_DENIED; Host and Origin are checked.
func TestMCPFrontAuth(t *testing.T) {
	t.Parallel()
	url := startHTTPUpstream(t)
	c := cfg{Servers: servers{"h": goHTTP(url, upstream{})},
		Auth: &authCfg{Tokens: map[string]string{"alice": "tok-alice-0123456789", "bob": "tok-bob-0123456789ab"},
			Rules: []rule{{Principal: "alice", Allow: []string{"h__echo", "h__add_tool"}}, {Principal: "bob"}}}}
	p := startToolsvc(t, c, "--mcp-listen", "127.0.0.1:0")
	base := "http://" + p.mcpAddr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	post := func(header map[string]string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no token", nil, http.StatusUnauthorized},
		{"bad token", map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"token", map[string]string{"Authorization": "Bearer tok-alice-0123456789"}, http.StatusOK},
		{"rebinding host", map[string]string{"Authorization": "Bearer tok-alice-0123456789", "Host": "attacker.example:80"}, http.StatusForbidden},
		{"foreign origin", map[string]string{"Authorization": "Bearer tok-alice-0123456789", "Origin": "http://attacker.example"}, http.StatusForbidden},
	} {
		if got := post(c.header); got != c.want {
			t.Errorf("%s: HTTP %d, want %d", c.name, got, c.want)
		}
	}

	bearer := func(tok string) *http.Client {
		return &http.Client{Transport: headerRoundTripper{"Authorization": "Bearer " + tok}}
	}
	alice := connectGoFront(t, ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: bearer("tok-alice-0123456789")}, "")
	if got := alice.names(t, ctx); !slices.Equal(got, []string{"h__add_tool", "h__echo"}) {
		t.Errorf("alice's tools/list = %v, want her two tools", got)
	}
	_, err := alice.cs.CallTool(ctx, &mcp.CallToolParams{Name: "h__big", Arguments: map[string]any{"bytes": 1}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || !strings.Contains(werr.Message, `may not call tool "h__big"`) || !strings.Contains(string(werr.Data), "PERMISSION_DENIED") {
		t.Errorf("alice calling h__big: %v, want PERMISSION_DENIED", err)
	}
	// A 2025-11-25 session is bound to its principal: bob cannot use
	// alice's session ID.
	aliceLegacy := connectGoFront(t, ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: bearer("tok-alice-0123456789")}, "2025-11-25")
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", aliceLegacy.cs.ID())
	req.Header.Set("Authorization", "Bearer tok-bob-0123456789ab")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		t.Errorf("bob using alice's session: HTTP %d, want refused", resp.StatusCode)
	}
}

type headerRoundTripper map[string]string

func (h headerRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPFrontUpstreamDown: a killed upstream is a JSON-RPC error naming
// the server and the reason (from the pipeline's mapping), not a tool
// result, and carries no upstream URL.
func TestMCPFrontUpstreamDown(t *testing.T) {
	t.Parallel()
	u := newHTTPUpstream(t)
	p := startToolsvc(t, cfg{Servers: servers{"d": goHTTP(u.url(), upstream{})}}, "--mcp-listen", "127.0.0.1:0")
	base := "http://" + p.mcpAddr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := connectGoFront(t, ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, "")
	if _, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "d__echo", Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Fatal(err)
	}
	u.kill()
	var werr *jsonrpc.Error
	eventually(t, 15*time.Second, "a JSON-RPC error for the dead upstream", func() bool {
		_, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "d__echo", Arguments: map[string]any{"text": "x"}})
		return errors.As(err, &werr)
	})
	var data map[string]any
	_ = json.Unmarshal(werr.Data, &data)
	if data["code"] != "Unavailable" || !strings.HasPrefix(fmt.Sprint(data["reason"]), "UPSTREAM_UNAVAILABLE") && data["reason"] != "CIRCUIT_OPEN" {
		t.Errorf("dead upstream: %v (data %s), want Unavailable / UPSTREAM_UNAVAILABLE", werr, werr.Data)
	}
	if strings.Contains(werr.Message, u.addr) || strings.Contains(string(werr.Data), u.addr) {
		t.Errorf("error names the upstream address %s: %v %s", u.addr, werr, werr.Data)
	}
	t.Logf("dead upstream: %d %s %s", werr.Code, werr.Message, werr.Data)
}

// TestMCPFrontShutdownDrains: SIGTERM lets a front-door call in flight
// finish (within the drain bound) while an idle 2025-11-25 session, whose
// GET stream is open, does not hold the shutdown up; the process exits 0.
func TestMCPFrontShutdownDrains(t *testing.T) {
	t.Parallel()
	p, base := startFrontFixture(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	idle := connectGoFront(t, ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, "2025-11-25")
	busy := connectGoFront(t, ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, "")
	_ = idle
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := busy.cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__wait_cancel", Arguments: map[string]any{"id": "drain", "ms": 1500}})
		done <- answer{res, err}
	}()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	p.stop() // SIGTERM; fails the test unless toolsvc exits 0 within 20 s
	t.Logf("toolsvc stopped %s after SIGTERM (the call had about 1.2 s left)", time.Since(start).Round(time.Millisecond))
	a := <-done
	if a.err != nil || callText(t, a.res) != "finished" {
		t.Fatalf("call in flight at SIGTERM: %v %+v, want finished", a.err, a.res)
	}
}

// TestMCPFrontTLSPrincipals: with --tls-cert and --tls-client-ca the front
// door listens with TLS; a client certificate from the CA authenticates as
// its CN and a bearer JWT as its subject, with the gRPC API's rules (agent-a
// and carol may use up__echo only).
func TestMCPFrontTLSPrincipals(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, "toolsvc-test-ca")
	srvCert, srvKey := ca.issue("server", true)
	jwksFile, carolJWT := testJWKS(t, "carol")
	c := cfg{
		Auth: &authCfg{MTLS: true, JWT: testJWT(jwksFile),
			Rules: []rule{{Principal: "agent-a", Allow: []string{"up__echo"}}, {Principal: "carol", Allow: []string{"up__echo"}}}},
		Servers: servers{"up": goStdio(upstream{PingInterval: "1h"})}}
	p := startToolsvcWith(t, c, startOpts{args: []string{"--tls-cert", srvCert, "--tls-key", srvKey, "--tls-client-ca", ca.file,
		"--mcp-listen", "127.0.0.1:0"}})
	base := "https://" + p.mcpAddr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	client := func(certs []tls.Certificate, header map[string]string) *http.Client {
		var rt http.RoundTripper = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}}
		if header != nil {
			rt = headerRoundTripperOver{h: header, next: rt}
		}
		return &http.Client{Transport: rt}
	}
	cf, kf := ca.issue("agent-a", false)
	cert, err := tls.LoadX509KeyPair(cf, kf)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		hc   *http.Client
	}{
		{"client certificate", client([]tls.Certificate{cert}, nil)},
		{"bearer JWT", client(nil, map[string]string{"Authorization": "Bearer " + carolJWT})},
	} {
		for _, version := range []string{"2025-11-25", ""} {
			gc := connectGoFront(t, ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: c.hc}, version)
			if got := gc.names(t, ctx); !slices.Equal(got, []string{"up__echo"}) {
				t.Errorf("%s %q: tools/list = %v, want [up__echo]", c.name, version, got)
			}
			res, err := gc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "tls"}})
			if err != nil || callText(t, res) != "tls" {
				t.Errorf("%s %q: call: %v %+v", c.name, version, err, res)
			}
		}
	}
	// TLS without a client certificate or token: 401.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client(nil, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no credentials over TLS: HTTP %d, want 401", resp.StatusCode)
	}
}

type headerRoundTripperOver struct {
	h    map[string]string
	next http.RoundTripper
}

func (h headerRoundTripperOver) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header.Set(k, v)
	}
	return h.next.RoundTrip(r)
}

// TestMCPFrontLimits: the pipeline's size limits hold on the front door
// (JSON-RPC errors naming the limit, nothing over-size sent upstream), and
// a body far over the limit is refused by HTTP (413) before MCP decoding.
func TestMCPFrontLimits(t *testing.T) {
	t.Parallel()
	p, base := startFrontFixture(t, nil, "--max-request-bytes", "2048", "--max-response-bytes", "4096")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := connectGoFront(t, ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, "2025-11-25")
	reason := func(err error) string {
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) {
			return fmt.Sprintf("not a JSON-RPC error: %v", err)
		}
		var data map[string]any
		_ = json.Unmarshal(werr.Data, &data)
		return fmt.Sprint(data["reason"])
	}
	before := upstreamCalls(t, ctx, p.client, "h")["echo"]
	_, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "h__echo", Arguments: map[string]any{"text": strings.Repeat("x", 3000)}})
	if r := reason(err); r != "REQUEST_TOO_LARGE" {
		t.Errorf("3000-byte arguments over a 2048-byte limit: %v (reason %s), want REQUEST_TOO_LARGE", err, r)
	}
	if after := upstreamCalls(t, ctx, p.client, "h")["echo"]; after != before {
		t.Errorf("the over-size call reached the upstream (%v → %v echo calls)", before, after)
	}
	_, err = c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "h__big", Arguments: map[string]any{"bytes": 10000}})
	if r := reason(err); r != "RESPONSE_TOO_LARGE" {
		t.Errorf("a 10000-byte result over a 4096-byte limit: %v (reason %s), want RESPONSE_TOO_LARGE", err, r)
	}
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "h__big", Arguments: map[string]any{"bytes": 1000}})
	if err != nil || len(callText(t, res)) != 1000 {
		t.Errorf("a result under the limit: %v", err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"h__echo","arguments":{"text":"`+strings.Repeat("x", 200<<10)+`"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.cs.ID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 200 KiB body: HTTP %d, want 413", resp.StatusCode)
	}
}
