package console

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service/core"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newConsole is a console over a bridge with no upstream (the browser
// tests in tests/console_test.go run it against real ones).
func newConsole(t *testing.T, auth core.AuthConfig) *Console {
	t.Helper()
	b, err := mcpbridge.New(mcpbridge.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return New(core.New(b, core.Options{Auth: auth}), Options{})
}

func do(t *testing.T, h http.Handler, r *http.Request) (*httptest.ResponseRecorder, errorBody) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var e errorBody
	if w.Code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
			t.Fatalf("%s %s: %d %q: %v", r.Method, r.URL, w.Code, w.Body, err)
		}
	}
	return w, e
}

// TestLoopbackOnlyWithoutAuth: without an auth section only callers on
// this machine are answered (as AdminService), each as an operator.
func TestLoopbackOnlyWithoutAuth(t *testing.T) {
	h := newConsole(t, core.AuthConfig{}).Handler()
	r := httptest.NewRequest("GET", "/ui/api/me", nil)
	r.RemoteAddr = "192.0.2.7:4000"
	w, e := do(t, h, r)
	if w.Code != http.StatusForbidden || e.Reason != ReasonLoopbackOnly || e.Meta["peer"] != "192.0.2.7:4000" {
		t.Fatalf("a remote caller: %d %+v; want 403 %s naming the peer", w.Code, e, ReasonLoopbackOnly)
	}
	r = httptest.NewRequest("GET", "/ui/api/me", nil)
	r.RemoteAddr = "[::1]:4000"
	w, _ = do(t, h, r)
	var me meBody
	if err := json.Unmarshal(w.Body.Bytes(), &me); err != nil || w.Code != 200 || !me.Admin || me.Auth || me.CSRF == "" {
		t.Fatalf("a loopback caller: %d %s", w.Code, w.Body)
	}
	if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
}

// TestAuthAndCSRF: with tokens, a request needs one (header or the login
// cookie); the login form checks it and sets an HttpOnly SameSite=Strict
// cookie; an action needs the page's CSRF token and an operator.
func TestAuthAndCSRF(t *testing.T) {
	authn := core.NewAuthenticator(map[string]string{"tok-ops": "ops", "tok-bob": "bob"}, nil, false)
	cs := newConsole(t, core.AuthConfig{Authenticator: authn, Authorizer: core.NewAuthorizer(nil, []string{"ops"})})
	h := cs.Handler()

	w, e := do(t, h, httptest.NewRequest("GET", "/ui/api/upstreams", nil))
	if w.Code != http.StatusUnauthorized || e.Reason != core.ReasonUnauthenticated {
		t.Fatalf("no credentials: %d %+v", w.Code, e)
	}
	w, _ = do(t, h, httptest.NewRequest("GET", "/ui/", nil))
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/ui/login" {
		t.Fatalf("the page without credentials: %d %v; want the login form", w.Code, w.Header())
	}

	login := func(tok string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/ui/login", strings.NewReader(url.Values{"token": {tok}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Sec-Fetch-Site", "same-origin")
		w, _ := do(t, h, r)
		return w
	}
	if w, e := do(t, h, func() *http.Request {
		r := httptest.NewRequest("POST", "/ui/login", strings.NewReader("token=x"))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return r
	}()); w.Code != http.StatusUnauthorized || e.Reason != core.ReasonUnauthenticated {
		t.Fatalf("a wrong token: %d %+v", w.Code, e)
	}
	w = login("tok-bob")
	cookies := w.Result().Cookies()
	if w.Code != http.StatusSeeOther || len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Path != Prefix {
		t.Fatalf("login: %d %v", w.Code, cookies)
	}
	asBob := func(method, path string) *http.Request {
		r := httptest.NewRequest(method, path, nil)
		r.AddCookie(cookies[0])
		return r
	}
	w, _ = do(t, h, asBob("GET", "/ui/api/me"))
	var me meBody
	if err := json.Unmarshal(w.Body.Bytes(), &me); err != nil || me.Principal != "bob" || me.Admin {
		t.Fatalf("bob's me: %s", w.Body)
	}
	w, e = do(t, h, asBob("POST", "/ui/api/upstreams/x/reconnect"))
	if w.Code != http.StatusForbidden || e.Reason != ReasonCSRF {
		t.Fatalf("an action without the CSRF token: %d %+v", w.Code, e)
	}
	w, e = do(t, h, asBob("POST", "/ui/api/call/stream"))
	if w.Code != http.StatusForbidden || e.Reason != ReasonCSRF {
		t.Fatalf("a Playground call without the CSRF token: %d %+v", w.Code, e)
	}
	r := asBob("POST", "/ui/api/call/stream")
	r.Header.Set("X-Toolsvc-CSRF", me.CSRF)
	r.Body = io.NopCloser(strings.NewReader(`{"name": "", "arguments": {}}`))
	if w, e = do(t, h, r); w.Code != http.StatusBadRequest || len(e.Fields) != 1 || e.Fields[0].Field != "name" {
		t.Fatalf("a call without a name: %d %+v", w.Code, e)
	}
	r = asBob("POST", "/ui/api/upstreams/x/reconnect")
	r.Header.Set("X-Toolsvc-CSRF", me.CSRF)
	w, e = do(t, h, r)
	if w.Code != http.StatusForbidden || e.Reason != core.ReasonPermissionDenied {
		t.Fatalf("bob's action: %d %+v; want PERMISSION_DENIED (not an admin)", w.Code, e)
	}
	r = httptest.NewRequest("POST", "/ui/api/upstreams/x/reconnect", nil)
	r.Header.Set("Authorization", "Bearer tok-ops")
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	if w, _ = do(t, h, r); w.Code != http.StatusForbidden {
		t.Fatalf("a cross-site action: %d, want 403", w.Code)
	}
	r = httptest.NewRequest("POST", "/ui/api/upstreams/nosuch/reconnect", nil)
	r.Header.Set("Authorization", "Bearer tok-ops")
	w, _ = do(t, h, func() *http.Request {
		m := httptest.NewRequest("GET", "/ui/api/me", nil)
		m.Header.Set("Authorization", "Bearer tok-ops")
		return m
	}())
	var ops meBody
	_ = json.Unmarshal(w.Body.Bytes(), &ops)
	r.Header.Set("X-Toolsvc-CSRF", ops.CSRF)
	w, e = do(t, h, r)
	if w.Code != http.StatusNotFound || e.Reason != core.ReasonServerNotFound {
		t.Fatalf("an operator's action on an unknown upstream: %d %+v", w.Code, e)
	}
	if ops.CSRF == me.CSRF {
		t.Error("two principals got the same CSRF token")
	}
}

// TestQueryBounds: a query parameter over MaxQueryBytes is refused naming
// it.
func TestQueryBounds(t *testing.T) {
	h := newConsole(t, core.AuthConfig{}).Handler()
	r := httptest.NewRequest("GET", "/ui/api/search?q="+strings.Repeat("a", MaxQueryBytes+1), nil)
	r.RemoteAddr = "127.0.0.1:1"
	w, e := do(t, h, r)
	if w.Code != http.StatusBadRequest || e.Reason != core.ReasonRequestInvalid || len(e.Fields) != 1 || e.Fields[0].Field != "q" {
		t.Fatalf("an over-long query: %d %+v", w.Code, e)
	}
}

// TestStreamBounds: a principal holds at most MaxStreamsPerPrincipal event
// streams, the replica MaxStreams, so no principal takes the pool alone.
func TestStreamBounds(t *testing.T) {
	cs := newConsole(t, core.AuthConfig{})
	var releases []func()
	for range MaxStreamsPerPrincipal {
		rel, e := cs.acquireStream("alice")
		if e != nil {
			t.Fatal(e)
		}
		releases = append(releases, rel)
	}
	if _, e := cs.acquireStream("alice"); e == nil || e.Reason != ReasonTooManyStreams || e.Meta["principal"] != "alice" {
		t.Fatalf("alice's stream past the bound: %+v", e)
	}
	for i := 0; len(releases) < MaxStreams; i++ {
		rel, e := cs.acquireStream(string(rune('a' + i/MaxStreamsPerPrincipal)))
		if e != nil {
			t.Fatal(e)
		}
		releases = append(releases, rel)
	}
	if _, e := cs.acquireStream("zed"); e == nil || e.Reason != ReasonTooManyStreams {
		t.Fatalf("a stream past the replica's bound: %+v", e)
	}
	releases[0]()
	releases[0]() // idempotent
	if rel, e := cs.acquireStream("alice"); e != nil {
		t.Fatalf("after a release: %v", e)
	} else {
		rel()
	}
	for _, rel := range releases[1:] {
		rel()
	}
	if cs.streams != 0 || len(cs.perStreamer) != 0 {
		t.Errorf("after every release: %d streams, %v", cs.streams, cs.perStreamer)
	}
}

// TestDiff: added, changed (a new entry under a name) and removed tools,
// the caller's filter applied, names bounded and counts exact.
func TestDiff(t *testing.T) {
	tool := func(name string) *core.Tool { return &core.Tool{Name: name} }
	same := tool("b")
	a := &core.Snapshot{Revision: "1", Tools: []*core.Tool{tool("a"), same, tool("c"), tool("x_hidden")}}
	b := &core.Snapshot{Revision: "2", Tools: []*core.Tool{same, tool("c"), tool("d"), tool("y_hidden")}}
	keep := func(t *core.Tool) bool { return !strings.HasSuffix(t.Name, "_hidden") }
	ev := diff(a, b, keep)
	if strings.Join(ev.Added, ",") != "d" || strings.Join(ev.Changed, ",") != "c" || strings.Join(ev.Removed, ",") != "a" ||
		ev.NAdded != 1 || ev.NChanged != 1 || ev.NRemoved != 1 || ev.Count != 3 || ev.Previous != "1" || ev.Revision != "2" {
		t.Fatalf("diff = %+v", ev)
	}
	big := &core.Snapshot{Revision: "3"}
	for i := range MaxChangeNames + 50 {
		big.Tools = append(big.Tools, tool(strings.Repeat("z", 3)+string(rune('A'+i/26))+string(rune('a'+i%26))))
	}
	ev = diff(&core.Snapshot{}, big, func(*core.Tool) bool { return true })
	if len(ev.Added) != MaxChangeNames || ev.NAdded != MaxChangeNames+50 {
		t.Fatalf("a large change: %d names, count %d", len(ev.Added), ev.NAdded)
	}
}

// TestToolsWindow: /ui/api/tools?limit=N is the first N rows and the
// count (what the Catalog renders first); a limit that is not an integer
// from 1 to MaxToolsWindow, or an offset that is not one from 0, is
// refused, naming the field.
func TestToolsWindow(t *testing.T) {
	h := newConsole(t, core.AuthConfig{}).Handler()
	get := func(q string) (*httptest.ResponseRecorder, errorBody) {
		r := httptest.NewRequest("GET", "/ui/api/tools"+q, nil)
		r.RemoteAddr = "127.0.0.1:4000"
		return do(t, h, r)
	}
	for _, bad := range []string{"?limit=0", "?limit=-1", "?limit=1001", "?limit=x", "?limit=" + strings.Repeat("9", 600),
		"?offset=-1&limit=10", "?offset=x", "?limit=10&offset=" + strings.Repeat("9", 600)} {
		field := "limit"
		if strings.Contains(bad, "offset") {
			field = "offset"
		}
		w, e := get(bad)
		if w.Code != http.StatusBadRequest || e.Reason != core.ReasonRequestInvalid || len(e.Fields) != 1 || e.Fields[0].Field != field {
			t.Errorf("%s: %d %+v; want 400 %s on %s", bad, w.Code, e, core.ReasonRequestInvalid, field)
		}
	}
	w, _ := get("?limit=1000")
	var b toolsBody
	if err := json.Unmarshal(w.Body.Bytes(), &b); w.Code != 200 || err != nil || b.Total != 0 || b.Partial || len(b.Tools) != 0 {
		t.Fatalf("?limit=1000 of an empty catalog: %d %s", w.Code, w.Body)
	}
}
