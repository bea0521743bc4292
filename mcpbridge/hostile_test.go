package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge/catalog"
)

// Tests in this file meet hostile upstreams over real loopback servers
// (docs/security.md): redirects to other origins, oversized results, and tool
// listings meant to break the catalog.

// headerRecorder is a second, real MCP server that records the credential
// headers it was sent.
type headerRecorder struct {
	mu   sync.Mutex
	seen []string // "Header: value" of every credential header received
	h    http.Handler
}

func (r *headerRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	for _, k := range []string{"Authorization", "X-Api-Key"} {
		if v := req.Header.Get(k); v != "" {
			r.seen = append(r.seen, k+": "+v)
		}
	}
	r.mu.Unlock()
	r.h.ServeHTTP(w, req)
}

func (r *headerRecorder) credentials() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// TestRedirectToAnotherOriginIsRefused: an HTTP upstream that answers 307
// or 302 towards another origin (here: another port of the same host,
// which net/http treats as the same host and keeps Authorization for) gets
// no configured header and no OAuth token there, and no session is
// established there; the server's status names the refused redirect. A
// redirect within the configured origin is still followed, with the
// headers.
func TestRedirectToAnotherOriginIsRefused(t *testing.T) {
	t.Parallel()
	srv := goSDKServer()
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusFound} {
		for _, creds := range []string{"headers", "oauth"} {
			t.Run(http.StatusText(code)+"/"+creds, func(t *testing.T) {
				other := &headerRecorder{h: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
				otherURL := serveHTTP(t, other)
				redirector := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, otherURL+r.URL.Path, code)
				}))
				sc := ServerConfig{Name: "redir", Transport: TransportStreamableHTTP, URL: redirector + "/mcp"}
				switch creds {
				case "headers":
					sc.Headers = map[string]string{"Authorization": "Bearer static-secret", "X-Api-Key": "key-secret"}
				case "oauth":
					tokens := tokenServer(t)
					sc.OAuth = &OAuthConfig{Grant: OAuthClientCredentials, ClientID: "c", ClientSecret: "s", TokenURL: tokens + "/token"}
				}
				b := newTestBridge(t, sc) // ready: the first attempt is over
				if got := other.credentials(); len(got) > 0 {
					t.Errorf("the other origin received credentials: %q", got)
				}
				if st, _ := b.Server("redir"); st.State == StateReady {
					t.Fatalf("state %v: a session was established through a redirect to another origin", st.State)
				}
				waitStatus(t, b, "redir", "a refused redirect", func(st ServerStatus) bool {
					return strings.Contains(st.LastError, "redirect to another origin") && strings.Contains(st.LastError, `server "redir"`)
				})
			})
		}
	}
	t.Run("same origin", func(t *testing.T) {
		var mu sync.Mutex
		var keys []string
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
		mux := http.NewServeMux()
		mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
		})
		mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			keys = append(keys, r.Header.Get("X-Api-Key"))
			mu.Unlock()
			h.ServeHTTP(w, r)
		})
		url := serveHTTP(t, mux)
		b := newTestBridge(t, ServerConfig{Name: "same", Transport: TransportStreamableHTTP, URL: url + "/old",
			Headers: map[string]string{"X-Api-Key": "key-secret"}})
		waitFor(t, b, "same__echo", func(s *Snapshot) bool { _, ok := s.Lookup("same__echo"); return ok })
		if _, err := b.CallTool(t.Context(), "same__echo", map[string]any{"text": "hi"}, nil); err != nil {
			t.Fatalf("call through a same-origin redirect: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			if k != "key-secret" {
				t.Fatalf("same-origin redirect target got X-Api-Key %q, want the configured one", k)
			}
		}
	})
}

// TestRedirectMidSessionIsRefused: an upstream that starts redirecting
// calls to another origin once the session is up fails those calls with
// UNAVAILABLE redirect_refused naming the server; the other origin sees no
// credentials.
func TestRedirectMidSessionIsRefused(t *testing.T) {
	t.Parallel()
	srv := goSDKServer()
	other := &headerRecorder{h: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	otherURL := serveHTTP(t, other)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var on atomic.Bool
	url := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if on.Load() && r.Method == http.MethodPost {
			http.Redirect(w, r, otherURL+r.URL.Path, http.StatusTemporaryRedirect)
			return
		}
		h.ServeHTTP(w, r)
	}))
	b := newTestBridge(t, ServerConfig{Name: "mid", Transport: TransportStreamableHTTP, URL: url + "/mcp",
		Headers: map[string]string{"X-Api-Key": "key-secret"}})
	waitFor(t, b, "mid__echo", func(s *Snapshot) bool { _, ok := s.Lookup("mid__echo"); return ok })
	on.Store(true)
	_, err := b.CallTool(context.Background(), "mid__echo", map[string]any{"text": "hi"}, nil)
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Reason != ReasonRedirectRefused || ue.Server != "mid" {
		t.Fatalf("call redirected to another origin = %v, want UnavailableError(redirect_refused, mid)", err)
	}
	if got := other.credentials(); len(got) > 0 {
		t.Errorf("the other origin received credentials: %q", got)
	}
}

// hostileTools answers tools/list with the given tools, whatever the
// server has registered: what a hostile upstream can put on the wire.
func hostileTools(tools ...*mcp.Tool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				return &mcp.ListToolsResult{Tools: tools}, nil
			}
			return next(ctx, method, req)
		}
	}
}

// TestUnusableToolNamesAreSkipped: tools listed with an empty name, a name
// with control or format characters, invalid UTF-8, or a 100 KB name are
// never exposed (so never callable); the server's status warns about each,
// with the name escaped and cut short.
func TestUnusableToolNamesAreSkipped(t *testing.T) {
	t.Parallel()
	m := newMemUpstream(t)
	obj := map[string]any{"type": "object"}
	m.server.AddReceivingMiddleware(hostileTools(
		&mcp.Tool{Name: "", InputSchema: obj},
		&mcp.Tool{Name: "echo", InputSchema: obj},
		&mcp.Tool{Name: "red\x1b[31malert", InputSchema: obj},
		&mcp.Tool{Name: "zero\u200bwidth", InputSchema: obj},
		&mcp.Tool{Name: "bad\xffutf8", InputSchema: obj},
		&mcp.Tool{Name: strings.Repeat("a", 100_000), InputSchema: obj},
	))
	b := newTestBridge(t, m.config("h"))
	waitFor(t, b, "h__echo", func(s *Snapshot) bool { _, ok := s.Lookup("h__echo"); return ok })
	var names []string
	for _, tool := range b.Catalog().Current().Tools {
		names = append(names, tool.Name)
	}
	if len(names) != 1 || names[0] != "h__echo" {
		t.Fatalf("exposed tools %q, want only h__echo", names)
	}
	st, _ := b.Server("h")
	if len(st.Warnings) != 5 {
		t.Fatalf("warnings %q, want one per skipped tool (5)", st.Warnings)
	}
	for _, w := range st.Warnings {
		if len(w) > 200 || strings.ContainsAny(w, "\x1b\u200b\ufffd") {
			t.Errorf("warning %q: want the name escaped and cut short", w)
		}
	}
	if _, err := b.CallTool(t.Context(), "h__", nil, nil); !errors.Is(err, ErrToolNotFound) {
		t.Errorf("CallTool(h__) = %v, want ErrToolNotFound (the empty name is not exposed)", err)
	}
}

// bigServer is a go-sdk server with echo and a tool answering n bytes of
// text.
func bigServer() *mcp.Server {
	s := goSDKServer()
	mcp.AddTool(s, &mcp.Tool{Name: "big"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Bytes int `json:"bytes"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", in.Bytes)}}}, nil, nil
	})
	return s
}

// expectTooLargeThenEcho calls big over the limit, wants
// ResponseTooLargeError naming the server and the limit, and then a
// working call on the same session.
func expectTooLargeThenEcho(t *testing.T, b *Bridge, server string, limit int) {
	t.Helper()
	_, err := b.CallTool(t.Context(), server+"__big", map[string]any{"bytes": 3 * limit}, nil)
	var tl *ResponseTooLargeError
	if !errors.As(err, &tl) || tl.Server != server || tl.Limit != limit {
		t.Fatalf("result of %d bytes over a %d-byte limit: %v, want ResponseTooLargeError(%s, %d)", 3*limit, limit, err, server, limit)
	}
	res, err := b.CallTool(t.Context(), server+"__echo", map[string]any{"text": "after"}, nil)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "after" {
		t.Fatalf("call after the oversized result: %v, %v", res, err)
	}
	res, err = b.CallTool(t.Context(), server+"__big", map[string]any{"bytes": limit / 2}, nil)
	if err != nil || len(res.Content[0].(*mcp.TextContent).Text) != limit/2 {
		t.Fatalf("result under the limit: %v", err)
	}
	if st, _ := b.Server(server); st.ConnectCount != 1 {
		t.Fatalf("connect count %d after an oversized result, want 1 (the session survives)", st.ConnectCount)
	}
}

// TestOversizedHTTPResultIsRefusedUnread: a streamable-HTTP result over
// the message limit, as a JSON body or as an SSE event, fails its call
// with ResponseTooLargeError and leaves the session up.
func TestOversizedHTTPResultIsRefusedUnread(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	for _, jsonResponse := range []bool{true, false} {
		name := map[bool]string{true: "json", false: "sse"}[jsonResponse]
		t.Run(name, func(t *testing.T) {
			srv := bigServer()
			url := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
				&mcp.StreamableHTTPOptions{JSONResponse: jsonResponse}))
			b, err := New(Config{MaxMessageBytes: limit, Servers: []ServerConfig{{Name: "h", Transport: TransportStreamableHTTP, URL: url}}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			<-b.Ready()
			expectTooLargeThenEcho(t, b, "h", limit)
		})
	}
}

// TestOversizedStdioResultIsRefused: a stdio upstream (tests/testserver,
// a real go-sdk server in a child process) answering a line over the
// limit fails that call with ResponseTooLargeError, not session_lost, and
// the session goes on.
func TestOversizedStdioResultIsRefused(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "testserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../tests/testserver").CombinedOutput(); err != nil {
		t.Fatalf("building tests/testserver: %v\n%s", err, out)
	}
	const limit = 1 << 20
	b, err := New(Config{MaxMessageBytes: limit, Servers: []ServerConfig{{Name: "s", Transport: TransportStdio, Command: bin}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	<-b.Ready()
	expectTooLargeThenEcho(t, b, "s", limit)
}

// TestFrameScanFindsResponseIDs: the scanner that reads an oversized
// message to its end finds a response's id wherever it sits, and takes
// no id from a request, a notification or a nested object.
func TestFrameScanFindsResponseIDs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ msg, want string }{
		{`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}]}}`, "7"},
		{`{"result":{"id":99,"text":"a \"id\": 3 }"},"jsonrpc":"2.0","id":"abc"}`, `"abc"`},
		{`{"jsonrpc":"2.0", "id" : 12 , "error":{"code":1,"message":"m"}}`, "12"},
		{`{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{}}`, ""},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":5}}`, ""},
		{`{"jsonrpc":"2.0","id":` + strings.Repeat("1", 300) + `,"result":{}}`, ""},
	} {
		var f frameScan
		for i := 0; i < len(c.msg); i += 5 { // fed in pieces, as read
			f.feed([]byte(c.msg[i:min(i+5, len(c.msg))]))
		}
		if got := string(f.responseID()); got != c.want {
			t.Errorf("responseID(%.60s) = %q, want %q", c.msg, got, c.want)
		}
	}
}

// TestOversizedToolsAreSkipped: a tool whose definition is over the bound
// per tool (description or schemas) is never exposed, so one upstream
// cannot make a watch event or a ListTools page that no client accepts; a
// tool just under it is exposed.
func TestOversizedToolsAreSkipped(t *testing.T) {
	t.Parallel()
	m := newMemUpstream(t)
	obj := map[string]any{"type": "object"}
	enum := make([]any, 0, 100_000)
	for i := range 100_000 {
		enum = append(enum, fmt.Sprintf("value-%06d", i)) // about 1.4 MB as JSON
	}
	m.server.AddReceivingMiddleware(hostileTools(
		&mcp.Tool{Name: "echo", InputSchema: obj},
		&mcp.Tool{Name: "bigdesc", Description: strings.Repeat("d", DefaultMaxToolBytes+1), InputSchema: obj},
		&mcp.Tool{Name: "bigschema", InputSchema: map[string]any{"type": "object", "properties": map[string]any{
			"v": map[string]any{"enum": enum}}}},
		&mcp.Tool{Name: "under", Description: strings.Repeat("u", DefaultMaxToolBytes-1000), InputSchema: obj},
	))
	b := newTestBridge(t, m.config("h"))
	waitFor(t, b, "h__echo", func(s *Snapshot) bool { _, ok := s.Lookup("h__echo"); return ok })
	var names []string
	for _, tool := range b.Catalog().Current().Tools {
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, []string{"h__echo", "h__under"}) {
		t.Fatalf("exposed tools %q, want h__echo and h__under", names)
	}
	st, _ := b.Server("h")
	if len(st.Warnings) != 2 {
		t.Fatalf("warnings %q, want one per oversized tool", st.Warnings)
	}
	for _, w := range st.Warnings {
		if !strings.Contains(w, "the limit per tool") {
			t.Errorf("warning %q does not name the limit per tool", w)
		}
	}
}

// TestSkippedToolWarningsAreBounded: a listing of many unusable tools keeps
// the first catalog.MaxListWarnings warnings and a count of the rest.
func TestSkippedToolWarningsAreBounded(t *testing.T) {
	t.Parallel()
	m := newMemUpstream(t)
	obj := map[string]any{"type": "object"}
	tools := []*mcp.Tool{{Name: "echo", InputSchema: obj}}
	for i := range 40 {
		tools = append(tools, &mcp.Tool{Name: fmt.Sprintf("bad\x07%d", i), InputSchema: obj})
	}
	m.server.AddReceivingMiddleware(hostileTools(tools...))
	b := newTestBridge(t, m.config("h"))
	waitFor(t, b, "h__echo", func(s *Snapshot) bool { _, ok := s.Lookup("h__echo"); return ok })
	st, _ := b.Server("h")
	if len(st.Warnings) != catalog.MaxListWarnings+1 || st.Warnings[catalog.MaxListWarnings] != "24 more tools skipped" {
		t.Fatalf("%d warnings, last %q; want %d and \"24 more tools skipped\"", len(st.Warnings), st.Warnings[len(st.Warnings)-1], catalog.MaxListWarnings+1)
	}
}

// TestSSEEndpointOnAnotherOriginIsRefused: a legacy SSE server whose
// endpoint event names another origin gets no session there: the other
// origin receives no request (no initialize, no headers), and the
// server's status names the refusal.
func TestSSEEndpointOnAnotherOriginIsRefused(t *testing.T) {
	t.Parallel()
	srv := goSDKServer()
	other := &headerRecorder{h: mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	var reached atomic.Int32
	otherURL := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		other.ServeHTTP(w, r)
	}))
	url := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: endpoint\ndata: " + otherURL + "/messages?sessionid=x\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	b := newTestBridge(t, ServerConfig{Name: "sse", Transport: TransportSSE, URL: url + "/sse",
		Headers: map[string]string{"X-Api-Key": "key-secret"}})
	waitStatus(t, b, "sse", "a refused endpoint", func(st ServerStatus) bool {
		return strings.Contains(st.LastError, "endpoint event names another origin")
	})
	if n := reached.Load(); n > 0 {
		t.Errorf("the other origin received %d requests (credentials %q)", n, other.credentials())
	}
}

// TestOversizedSSEResultIsRefused: the legacy SSE transport reads events
// through the message limit too: an oversized result fails its call with
// ResponseTooLargeError and the session survives.
func TestOversizedSSEResultIsRefused(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	srv := bigServer()
	url := serveHTTP(t, mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	b, err := New(Config{MaxMessageBytes: limit, Servers: []ServerConfig{{Name: "l", Transport: TransportSSE, URL: url}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	<-b.Ready()
	expectTooLargeThenEcho(t, b, "l", limit)
}

// TestCatalogWarningsAreBounded: an upstream listing one name many times
// (each a "listed more than once" warning in the catalog) leaves at most
// catalog.MaxListWarnings of them and a count; a tool whose annotation title is over
// the bound per tool is skipped like any other oversized tool.
func TestCatalogWarningsAreBounded(t *testing.T) {
	t.Parallel()
	m := newMemUpstream(t)
	obj := map[string]any{"type": "object"}
	tools := []*mcp.Tool{{Name: "echo", InputSchema: obj},
		{Name: "titled", InputSchema: obj, Annotations: &mcp.ToolAnnotations{Title: strings.Repeat("t", DefaultMaxToolBytes)}}}
	for range 100 {
		tools = append(tools, &mcp.Tool{Name: "dup", InputSchema: obj})
	}
	m.server.AddReceivingMiddleware(hostileTools(tools...))
	b := newTestBridge(t, m.config("h"))
	waitFor(t, b, "h__echo", func(s *Snapshot) bool { _, ok := s.Lookup("h__echo"); return ok })
	if _, ok := b.Catalog().Current().Lookup("h__titled"); ok {
		t.Error("a tool with a 1 MiB annotation title is exposed")
	}
	st, _ := b.Server("h")
	if len(st.Warnings) > 2*(catalog.MaxListWarnings+1) {
		t.Fatalf("%d warnings, want at most %d per list", len(st.Warnings), catalog.MaxListWarnings+1)
	}
	found := false
	for _, w := range st.Warnings {
		found = found || w == "83 more warnings"
	}
	if !found {
		t.Errorf("warnings %q lack the count of the duplicates beyond the first %d", st.Warnings, catalog.MaxListWarnings)
	}
}

// TestOversizedReadAndPromptAreRefused: resources/read and prompts/get
// answers over the message limit (a real go-sdk server over streamable
// HTTP) fail with ResponseTooLargeError like a call's, not as an upstream
// error with toolsvc's stand-in code, and the session goes on.
func TestOversizedReadAndPromptAreRefused(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	srv := bigServer()
	srv.AddResource(&mcp.Resource{URI: "big://blob", Name: "blob"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "big://blob", Text: strings.Repeat("r", 2*limit)}}}, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "big"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: strings.Repeat("p", 2*limit)}}}}, nil
	})
	url := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	b, err := New(Config{MaxMessageBytes: limit, Servers: []ServerConfig{{Name: "h", Transport: TransportStreamableHTTP, URL: url}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	<-b.Ready()
	var tl *ResponseTooLargeError
	if _, _, err := b.ReadResource(t.Context(), "h", "big://blob", "", nil); !errors.As(err, &tl) || tl.Server != "h" {
		t.Errorf("ReadResource over the limit: %v, want ResponseTooLargeError(h)", err)
	}
	var p *Prompt
	for deadline := time.Now().Add(defaultTestTimeout); p == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		p, _ = b.ResolvePrompt("h__big") // prompts are listed after the tools
	}
	if p == nil {
		t.Fatal("prompt h__big never listed")
	}
	if _, err := b.GetPrompt(t.Context(), p, nil, "", nil); !errors.As(err, &tl) || tl.Server != "h" {
		t.Errorf("GetPrompt over the limit: %v, want ResponseTooLargeError(h)", err)
	}
	expectTooLargeThenEcho(t, b, "h", limit)
}
