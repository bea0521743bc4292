package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tests here pin what gosdk.go relies on, against the real go-sdk. One
// failing after an upgrade names the workaround to re-check (and maybe
// drop) in gosdk.go.

// TestGoSDKVersion: the pins were measured against goSDKVersion.
func TestGoSDKVersion(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/modelcontextprotocol/go-sdk").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	if v := strings.TrimSpace(string(out)); v != goSDKVersion {
		t.Fatalf("go-sdk is %s, the pins in gosdk.go are for %s: run gosdk_test.go, re-check each workaround, then update goSDKVersion", v, goSDKVersion)
	}
}

// sdkPair connects a go-sdk client to srv in memory, the client's
// transport wrapped by wrap (nil: none), with opts.
func sdkPair(t *testing.T, srv *mcp.Server, wrap func(mcp.Transport) mcp.Transport, opts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	var tr mcp.Transport = ct
	if wrap != nil {
		tr = wrap(ct)
	}
	// A list_changed handler, as the bridge's: go-sdk listens only for
	// notifications the client handles.
	copts := &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "pin", Version: "1"}, copts).Connect(t.Context(), tr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestGoSDKErrorShapes pins the error classification (isSessionDead,
// answered, lostWithoutAnswer): a live upstream's error answer is a
// *jsonrpc.Error with its code; a request on a closed session is
// ErrConnectionClosed; a request to a streamable-HTTP upstream that is gone
// is a *jsonrpc.Error with code -32005 (codeRejectedByTransport).
func TestGoSDKErrorShapes(t *testing.T) {
	t.Parallel()
	cs := sdkPair(t, goSDKServer(), nil, nil)
	_, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "no such prompt"})
	if werr, ok := answered(err); !ok || werr.Code == codeRejectedByTransport || isSessionDead(err) || lostWithoutAnswer(err) {
		t.Errorf("a live upstream's error answer: %v (%T), want an answered *jsonrpc.Error", err, err)
	}
	_ = cs.Close()
	if _, err := cs.ListTools(t.Context(), nil); !errors.Is(err, mcp.ErrConnectionClosed) || !isSessionDead(err) {
		t.Errorf("a request on a closed session: %v, want ErrConnectionClosed (a dead session)", err)
	}

	peer := goSDKServer()
	defer func() { // the server side of the session cut off below
		for ss := range peer.Sessions() {
			_ = ss.Close()
		}
	}()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return peer }, nil))
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	hs, err := mcp.NewClient(&mcp.Implementation{Name: "pin", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc, MaxRetries: 1}, sessionOptions(DefaultProtocolVersion))
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	srv.CloseClientConnections()
	srv.Close()
	_, err = hs.ListTools(t.Context(), nil)
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != codeRejectedByTransport || !isSessionDead(err) {
		t.Errorf("a request to an upstream that is gone: %v (%T), want a *jsonrpc.Error %d", err, err, codeRejectedByTransport)
	}
}

// TestGoSDKOmitsToolsWithoutTools pins why tools are listed whatever the
// capabilities say (listPages): a go-sdk server with no tools at connect
// declares no tools capability, yet answers tools/list (and may add tools
// later).
func TestGoSDKOmitsToolsWithoutTools(t *testing.T) {
	t.Parallel()
	cs := sdkPair(t, mcp.NewServer(&mcp.Implementation{Name: "empty", Version: "1"}, nil), nil, sessionOptions(DefaultProtocolVersion))
	if caps := cs.InitializeResult().Capabilities; caps.Tools != nil {
		t.Errorf("tools capability %+v declared without tools", caps.Tools)
	}
	if res, err := cs.ListTools(t.Context(), nil); err != nil || len(res.Tools) != 0 {
		t.Errorf("tools/list without tools: %v, %v; want an empty answer", res, err)
	}
}

// TestGoSDKResourceNotFoundCode pins isResourceNotFound: go-sdk's server
// answers a read of an unknown resource with a code it accepts.
func TestGoSDKResourceNotFoundCode(t *testing.T) {
	t.Parallel()
	srv := goSDKServer()
	srv.AddResource(&mcp.Resource{URI: "pin://known", Name: "known"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	cs := sdkPair(t, srv, nil, nil)
	_, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "pin://unknown"})
	if werr, ok := answered(err); !ok || !isResourceNotFound(werr.Code) {
		t.Errorf("reading an unknown resource: %v, want a code isResourceNotFound accepts", err)
	}
}

// TestGoSDKDefaultProtocol pins sessionOptions: go-sdk's own default
// (nil options) is the stateless 2026-07-28, not DefaultProtocolVersion,
// so the bridge always names the version it wants.
func TestGoSDKDefaultProtocol(t *testing.T) {
	t.Parallel()
	if got := sdkPair(t, goSDKServer(), nil, nil).InitializeResult().ProtocolVersion; got != ProtocolStateless {
		t.Errorf("go-sdk's default protocol is %s, want %s", got, ProtocolStateless)
	}
	if got := sdkPair(t, goSDKServer(), nil, sessionOptions(DefaultProtocolVersion)).InitializeResult().ProtocolVersion; got != DefaultProtocolVersion {
		t.Errorf("asked for %s, got %s", DefaultProtocolVersion, got)
	}
}

// TestGoSDKFrameLimits pins sdkMaxFrame: go-sdk's stdio line limit and SSE
// event limit are one number.
func TestGoSDKFrameLimits(t *testing.T) {
	t.Parallel()
	if sdkMaxFrame != mcp.DefaultMaxEventSize || DefaultMaxMessageBytes != sdkMaxFrame {
		t.Errorf("go-sdk's limits: line %d, event %d; DefaultMaxMessageBytes %d", mcp.DefaultMaxLineLength, mcp.DefaultMaxEventSize, DefaultMaxMessageBytes)
	}
}

// TestGoSDKDecodesSchemasLossily pins the need for rawschema.go: go-sdk
// hands a listed tool's schema over decoded, numbers as float64, so 10.0
// and 10 are one value and the upstream's text is gone.
func TestGoSDKDecodesSchemasLossily(t *testing.T) {
	t.Parallel()
	cs := sdkPair(t, exactSchemaServer(), nil, nil)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if tl.Name != "exact" {
			continue
		}
		in, ok := tl.InputSchema.(map[string]any)
		if !ok {
			t.Fatalf("inputSchema decoded as %T, want map[string]any (then rawschema.go may be simpler)", tl.InputSchema)
		}
		x := in["properties"].(map[string]any)["x"].(map[string]any)
		if v, ok := x["minimum"].(float64); !ok || v != 10 {
			t.Errorf("minimum 10.0 decoded as %#v, want float64 10", x["minimum"])
		}
		return
	}
	t.Fatal("tool exact not listed")
}

// listenRecorder records the subscriptions/listen requests a client sends.
type listenRecorder struct {
	mcp.Transport
	mu     sync.Mutex
	params []json.RawMessage
}

func (r *listenRecorder) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := r.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &listenRecorderConn{Connection: c, r: r}, nil
}

func (r *listenRecorder) sent() []json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.params)
}

type listenRecorderConn struct {
	mcp.Connection
	r *listenRecorder
}

func (c *listenRecorderConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == listenMethod {
		c.r.mu.Lock()
		c.r.params = append(c.r.params, req.Params)
		c.r.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

// TestGoSDKListenShapes pins the subscriptions/listen workaround
// (rewriteListen, listensForListChanged, subscribedURIs): under 2026-07-28
// go-sdk's Connect sends one listen request for list_changed, and
// ClientSession.Subscribe, its only public way to send another, sends one
// per resource URI in notifications.resourceSubscriptions, which the
// bridge rewrites for its sentinel URIs.
func TestGoSDKListenShapes(t *testing.T) {
	t.Parallel()
	rec := &listenRecorder{}
	cs := sdkPair(t, goSDKServer(), func(t mcp.Transport) mcp.Transport { rec.Transport = t; return rec }, sessionOptions(ProtocolStateless))
	eventually(t, "the listen request of Connect", func() bool { return len(rec.sent()) == 1 })
	if p := rec.sent()[0]; !listensForListChanged(p) || len(subscribedURIs(p)) != 0 {
		t.Fatalf("Connect's listen request %s: want list_changed, no resources", p)
	}
	sentinel := listenReopenScheme + "7/t"
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for _, uri := range []string{"pin://r", sentinel} {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("Subscribe(%s): %v", uri, err)
		}
	}
	eventually(t, "the two subscriptions' listen requests", func() bool { return len(rec.sent()) == 3 })
	sent := rec.sent()
	if p := sent[1]; listensForListChanged(p) || !slices.Equal(subscribedURIs(p), []string{"pin://r"}) {
		t.Errorf("Subscribe's listen request %s: want resourceSubscriptions [pin://r] only", p)
	}
	if out, ok := rewriteListen(sent[2]); !ok || !listensForListChanged(out) {
		t.Errorf("the sentinel's listen request %s was not rewritten to list_changed (%s)", sent[2], out)
	}
}

// getCounter counts the standalone GET streams a client opens.
type getCounter struct {
	base http.RoundTripper
	n    atomic.Int32
}

func (g *getCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		g.n.Add(1)
	}
	return g.base.RoundTrip(r)
}

// TestStreamableConnIsToolsvcs pins that a streamable HTTP upstream's
// session runs on toolsvc's own connection (streamhttp.go), and that this
// connection, wrapped by the taps like every other (withTaps, tap.go),
// still opens the standalone GET stream that carries list_changed before
// 2026-07-28. go-sdk's own connection could not be wrapped: it opens that
// stream through an unexported method, which a wrapper hides.
func TestStreamableConnIsToolsvcs(t *testing.T) {
	t.Parallel()
	url := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return goSDKServer() }, nil))
	b := newTestBridge(t, ServerConfig{Name: "web", Transport: TransportStreamableHTTP, URL: url})
	u, err := b.upstream("web")
	if err != nil {
		t.Fatal(err)
	}
	s := u.sess.Load()
	if s == nil {
		t.Fatal("no session")
	}
	tr, err := u.newTransport(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.(*streamableTransport); !ok {
		t.Fatalf("a streamable HTTP upstream's transport is %T, want toolsvc's *streamableTransport", tr)
	}
	if _, ok := withTaps(tr, s.sessionTaps(tr)).(*tapTransport); !ok {
		t.Fatal("the taps do not wrap the streamable HTTP transport")
	}

	g := &getCounter{base: &http.Transport{}}
	t.Cleanup(g.base.(*http.Transport).CloseIdleConnections)
	st := testStreamable(url)
	st.client = &http.Client{Transport: g}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "pin", Version: "1"}, nil).
		Connect(t.Context(), withTaps(st, []tap{&rawSchemas{}}), sessionOptions(DefaultProtocolVersion))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if cs.ID() == "" {
		t.Error("the wrapped connection does not report the upstream's session id")
	}
	eventually(t, "the wrapped connection's standalone GET stream", func() bool { return g.n.Load() > 0 })
}

// TestGoSDKDecodesTaskAsEmptySuccess pins why CallTask reads the raw
// answer (tasktap.go): go-sdk decodes a task, in either era's shape (as
// the TypeScript SDK and fastmcp-tasks answer), as a CallToolResult with no
// content, no error and nothing of the task but IsTask (toolsvc's go-sdk
// patch, which Bridge.Call uses to refuse a task nobody asked for).
func TestGoSDKDecodesTaskAsEmptySuccess(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{"task":{"taskId":"t1","status":"working","ttl":30000,"createdAt":"2026-12-05T08:00:00.000Z","lastUpdatedAt":"2026-12-05T08:00:00.000Z","pollInterval":100}}`,
		`{"taskId":"t1","status":"working","createdAt":"2026-12-05T08:00:00Z","lastUpdatedAt":"2026-12-05T08:00:00Z","ttlMs":900000,"pollIntervalMs":100,"resultType":"task"}`,
	} {
		var res mcp.CallToolResult
		if err := json.Unmarshal([]byte(raw), &res); err != nil {
			t.Fatalf("decoding %s: %v (go-sdk now refuses a task: CallTask's raw tap may be unneeded)", raw, err)
		}
		out, _ := json.Marshal(&res)
		if len(res.Content) != 0 || res.IsError || res.StructuredContent != nil || res.NeedsInput() || strings.Contains(string(out), "t1") {
			t.Errorf("go-sdk decoded %s as %s: it keeps something of the task now; re-check tasktap.go", raw, out)
		}
		if !res.IsTask() {
			t.Errorf("go-sdk decoded %s without IsTask: the patch is gone (third_party/go-sdk.patch), and an unasked task is an empty success again", raw)
		}
	}
	for _, raw := range []string{`{"content":[]}`, `{"content":[],"task":null}`, `{"content":[],"resultType":"complete"}`,
		`{"content":[{"type":"text","text":"task"}],"structuredContent":{"task":{"taskId":"t1"}}}`} {
		var res mcp.CallToolResult
		if err := json.Unmarshal([]byte(raw), &res); err != nil {
			t.Fatalf("decoding %s: %v", raw, err)
		}
		if res.IsTask() {
			t.Errorf("go-sdk decoded the result %s as a task", raw)
		}
	}
}

// callRecorder records the params of the tools/call requests a client
// sends.
type callRecorder struct {
	mcp.Transport
	mu     sync.Mutex
	params []json.RawMessage
}

func (r *callRecorder) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := r.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &callRecorderConn{Connection: c, r: r}, nil
}

type callRecorderConn struct {
	mcp.Connection
	r *callRecorder
}

func (c *callRecorderConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" {
		c.r.mu.Lock()
		c.r.params = append(c.r.params, req.Params)
		c.r.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

// TestGoSDKTaskRequestShapes pins the two seams of a task-augmented
// tools/call: a sending middleware may replace the params (withTaskParam:
// go-sdk marshals what it is given, so params.task reaches the wire), and
// under 2026-07-28 the request's _meta already holds go-sdk's
// clientCapabilities when the middleware runs (optInTasks extends them).
func TestGoSDKTaskRequestShapes(t *testing.T) {
	t.Parallel()
	for _, pv := range []string{DefaultProtocolVersion, ProtocolStateless} {
		t.Run(pv, func(t *testing.T) {
			ct, st := mcp.NewInMemoryTransports()
			ss, err := goSDKServer().Connect(t.Context(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ss.Close() })
			rec := &callRecorder{Transport: ct}
			c := mcp.NewClient(&mcp.Implementation{Name: "pin", Version: "1"}, nil)
			c.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					if method == "tools/call" {
						if pv == ProtocolStateless {
							if !optInTasks(req.GetParams()) {
								t.Error("optInTasks: no clientCapabilities in the request's _meta")
							}
						} else {
							r, ok := withTaskParam(req, 1500*time.Millisecond)
							if !ok {
								t.Errorf("withTaskParam: tools/call's request is a %T", req)
							}
							req = r
						}
					}
					return next(ctx, method, req)
				}
			})
			cs, err := c.Connect(t.Context(), rec, sessionOptions(pv))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cs.Close() })
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
			if err != nil || res.IsError {
				t.Fatalf("CallTool: %v, %v", res, err)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.params) != 1 {
				t.Fatalf("%d tools/call requests sent", len(rec.params))
			}
			var p struct {
				Name string         `json:"name"`
				Task map[string]any `json:"task"`
				Meta map[string]any `json:"_meta"`
			}
			if err := json.Unmarshal(rec.params[0], &p); err != nil {
				t.Fatal(err)
			}
			if pv == ProtocolStateless {
				caps, _ := p.Meta[mcp.MetaKeyClientCapabilities].(map[string]any)
				ext, _ := caps["extensions"].(map[string]any)
				if _, ok := ext[TasksExtension]; !ok || p.Task != nil {
					t.Errorf("sent %s: want the tasks extension in _meta's clientCapabilities", rec.params[0])
				}
			} else if p.Name != "echo" || p.Task["ttl"] != 1500.0 {
				t.Errorf("sent %s: want name echo and task {ttl: 1500}", rec.params[0])
			}
		})
	}
}

// decodeProbe is a small tools/call response, as a stdio upstream sends it.
const decodeProbe = `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello"}]}}`

// TestGoSDKPatchedDecode pins the go-sdk patch toolsvc carries
// (third_party/go-sdk, go.mod's replace; docs/go-sdk-decode-garbage.md): go-sdk
// decodes a value without a 32 KiB read buffer. It fails if the replace is
// dropped or the patch lost in an upgrade: each decode would again allocate
// 32 KiB, about four times per call. (Not parallel: it reads the process's
// allocation total.)
func TestGoSDKPatchedDecode(t *testing.T) {
	const n = 50
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		if _, err := jsonrpc.DecodeMessage([]byte(decodeProbe)); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per >= 16<<10 {
		t.Errorf("jsonrpc.DecodeMessage of %d bytes allocates %d bytes: the go-sdk patch (third_party/go-sdk) is not in effect", len(decodeProbe), per)
	}
}

// TestGoSDKUpstreamDecodeGarbage: the patch is still needed and still
// applies to the go-sdk go.mod requires. It builds a probe against the
// unpatched go-sdk at that version (a module of its own, outside the
// replace) and fails once upstream decodes a small message without the
// 32 KiB buffer: then drop third_party/go-sdk and the replace, and
// re-measure stdioConn against go-sdk's IOTransport (stdioconn.go). It also
// fails when go.mod requires another version than the patched copy's.
func TestGoSDKUpstreamDecodeGarbage(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/modelcontextprotocol/go-sdk").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	version := strings.TrimSpace(string(out))
	base, err := os.ReadFile("../third_party/go-sdk/BASE_VERSION")
	if err != nil {
		t.Fatal(err)
	}
	if b := strings.TrimSpace(string(base)); b != version {
		t.Fatalf("go.mod requires go-sdk %s, third_party/go-sdk is %s patched: run scripts/go-sdk-patch.sh (or drop the patch if %s no longer needs it)", version, b, version)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module probe\n\ngo 1.25\n\nrequire github.com/modelcontextprotocol/go-sdk " + version + "\n",
		"main.go": `package main

import (
	"fmt"
	"runtime"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func main() {
	msg := []byte(` + "`" + decodeProbe + "`" + `)
	const n = 50
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		if _, err := jsonrpc.DecodeMessage(msg); err != nil {
			panic(err)
		}
	}
	runtime.ReadMemStats(&after)
	fmt.Println((after.TotalAlloc - before.TotalAlloc) / n)
}
`}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	// Stdout only: go's "downloading" lines on stderr are not the figure.
	var stderr strings.Builder
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	if err != nil {
		got = append(got, stderr.String()...)
		if offline.Match(got) {
			// The unpatched module is not in the module cache (the
			// replace means nothing else fetches it) and cannot be
			// fetched here.
			t.Skipf("the unpatched go-sdk %s cannot be fetched: %s", version, got)
		}
		t.Fatalf("probe of the unpatched go-sdk %s: %v\n%s", version, err, got)
	}
	per, err := strconv.Atoi(strings.TrimSpace(string(got)))
	if err != nil {
		t.Fatalf("probe said %q", got)
	}
	if per < 16<<10 {
		t.Errorf("the unpatched go-sdk %s allocates %d bytes to decode %d: upstream fixed it; drop third_party/go-sdk and the replace in go.mod (docs/go-sdk-decode-garbage.md)", version, per, len(decodeProbe))
	}
}

// offline matches go's complaints when a module cannot be downloaded.
var offline = regexp.MustCompile(`dial tcp|no such host|module lookup disabled|GOPROXY=off|connection refused|i/o timeout`)
