package mcpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service/core"
)

// callShapes are tools/call results as an upstream may send them, and
// whether they pass through unchanged (the rest take the slow path).
var callShapes = []struct {
	raw  string
	pass bool
}{
	{`{"content":[{"type":"text","text":"hi"}]}`, true},
	{`{"isError":true,"content":[{"type":"text","text":"bad"}]}`, true},
	{`{ "content" : [ {"text":"spaced","type":"text"} ] , "isError":false }`, true},
	{`{"content":[{"type":"text","text":"hello","annotations":{"audience":["user","assistant"],"priority":0.5,"lastModified":"2026-01-02T03:04:05Z"},"_meta":{"k":"text"}},` +
		`{"type":"image","data":"iVBORw==","mimeType":"image/png","_meta":{"k":"image"}},{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"},` +
		`{"type":"resource_link","uri":"file:///a.txt","name":"a.txt","title":"A","description":"a file","mimeType":"text/plain","size":4},` +
		`{"type":"resource","resource":{"uri":"mem://t","mimeType":"text/plain","text":"embedded","_meta":{"k":"rc"}}},{"type":"resource","resource":{"uri":"mem://b","blob":"AP8B/g=="}}],` +
		`"structuredContent":{"z":1.0,"a":[1e2,12345678901234567890,"\u00e9\u003c"]},"_meta":{"trace":"abc"}}`, true},
	{`{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"9"}}}`, true},
	{`{"content":[],"_meta":{}}`, true},
	{`{"content":[{"type":"text","text":"x"}],"resultType":"complete"}`, true},
	{`{"content":[{"type":"text","text":"x"}],"structuredContent":[1,2]}`, true},
	{`{"content":[{"type":"text","text":"x","extra":1}]}`, false},
	{`{"content":[{"type":"text","text":"x"}],"extra":true}`, false},
	{`{"content":[{"type":"text","text":"x"}],"structuredContent":null}`, false},
	{`{"content":[{"type":"text","text":"x"}],"_meta":null}`, false},
	{`{"content":[{"type":"image","data":"iVBO","mimeType":"image/png","annotations":{"priority":1,"unknown":1}}]}`, false},
	{`{"content":[{"type":"image","data":"iVBO"}]}`, false},
	{`{"content":[{"type":"resource_link","uri":"file:///a","name":"a","mimeType":""}]}`, false},
	{`{"content":[{"type":"text","text":"a"}],"content":[]}`, false},
	{`{"content":[{"type":"resource","resource":{"text":"no uri"}}]}`, false},
	{`{"isError":true}`, false},
	// Escaped surrogates: a pair passes, a lone one (go-sdk sends U+FFFD) does not.
	{`{"content":[{"type":"text","text":"\ud83d\ude00 ok \u00e9"}]}`, true},
	{`{"content":[{"type":"text","text":"lone \ud800 high"}]}`, false},
	{`{"content":[{"type":"text","text":"lone \udc00 low"}]}`, false},
	{`{"content":[{"type":"text","text":"x"}],"structuredContent":{"k":"\ud800"}}`, false},
	// A key twice in anything passed through (go-sdk keeps the last value,
	// a client's parser may keep the first), or a key spelled with escapes
	// (it may spell another twice): the encoded path sends each key once.
	{`{"content":[{"type":"text","text":"x"}],"structuredContent":{"ok":true,"ok":false}}`, false},
	{`{"content":[{"type":"text","text":"x"}],"structuredContent":{"a":[{"b":1,"c":{"d":1,"d":2}}]}}`, false},
	{`{"content":[{"type":"text","text":"x"}],"structuredContent":{"ok":true,"\u006fk":false}}`, false},
	{`{"content":[{"type":"text","text":"x"}],"structuredContent":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k3":3}}`, false},
	{`{"content":[{"type":"text","text":"x"}],"structuredContent":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"n":null}}`, true},
	{`{"content":[{"type":"text","text":"x"}],"_meta":{"trace":"a","trace":"b"}}`, false},
	{`{"content":[{"type":"text","text":"x"}],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"},"io.modelcontextprotocol\/serverInfo":{"name":"spoof"}}}`, false},
	{`{"content":[{"type":"text","text":"x","_meta":{"k":1,"k":2}}]}`, false},
	{`{"content":[{"type":"resource","resource":{"uri":"mem://t","text":"t","_meta":{"k":1,"k":1}}}]}`, false},
	// Icons are rewritten by go-sdk's Icon type: the encoded path.
	{`{"content":[{"type":"resource_link","uri":"file:///a","name":"a","icons":[{"src":"https://i/x.png","extra":1}]}]}`, false},
}

// readShapes are resources/read results.
var readShapes = []struct {
	raw  string
	pass bool
}{
	{`{"contents":[{"uri":"shape://0","mimeType":"text/plain","text":"hello"}]}`, true},
	{`{"contents":[{"uri":"shape://1","blob":"AAEC"}],"_meta":{"k":1}}`, true},
	{`{"contents":[{"uri":"shape://2","text":"x"}],"ttlMs":0,"cacheScope":"private"}`, true}, // ttlMs > 0: go-sdk's client would cache it; 2026-07-28 clients only (passesTo)
	{`{"contents":[{"uri":"shape://3","text":"x","extra":1}]}`, false},
	{`{"contents":[{"uri":"shape://4","text":""}]}`, false},
}

// TestPassThroughShapes: which results pass through, and what a
// 2026-07-28 client gets added (resultType, serverInfo) to the bytes.
func TestPassThroughShapes(t *testing.T) {
	t.Parallel()
	info := string(serverInfoJSON)
	for i, c := range callShapes {
		out, ok := passThrough([]byte(c.raw), kindCall, false, false)
		if ok && !passesTo(t, c.raw, c.pass, false) {
			continue // passes with its 2026-07-28 keys cut (below)
		}
		if ok != c.pass {
			t.Errorf("call shape %d %s: passes %v, want %v", i, c.raw, ok, c.pass)
			continue
		}
		if ok && string(out) != c.raw {
			t.Errorf("call shape %d: 2025-11-25 bytes %s, want the upstream's %s", i, out, c.raw)
		}
	}
	for _, c := range []struct{ raw, want string }{
		{`{"content":[]}`, `{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":` + info + `},"content":[]}`},
		{`{"content":[],"_meta":{}}`, `{"resultType":"complete","content":[],"_meta":{"io.modelcontextprotocol/serverInfo":` + info + `}}`},
		{`{"content":[],"_meta":{"a":1}}`, `{"resultType":"complete","content":[],"_meta":{"io.modelcontextprotocol/serverInfo":` + info + `,"a":1}}`},
		{`{"content":[],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}}}`, `{"content":[],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}}}`},
	} {
		out, ok := passThrough([]byte(c.raw), kindCall, true, true)
		if !ok || string(out) != c.want {
			t.Errorf("2026-07-28 pass-through of %s = %s (%v), want %s", c.raw, out, ok, c.want)
		}
	}
	for i, c := range readShapes {
		for _, modern := range []bool{false, true} {
			if _, ok := passThrough([]byte(c.raw), kindRead, modern, modern); ok != c.pass {
				t.Errorf("read shape %d %s (2026-07-28 %v): passes %v, want %v", i, c.raw, modern, ok, c.pass)
			}
		}
	}
	// A 2026-07-28 read gets resultType, ttlMs and cacheScope when the
	// upstream sent none, cacheScope "private" for any other, ttlMs 0 for a
	// negative one (eraResult's); before 2026-07-28 all three are cut out,
	// with the comma after them, or before the last member.
	for _, c := range []struct {
		modern    bool
		raw, want string
	}{
		{true, `{"contents":[]}`, `{"resultType":"complete","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":` + info + `},"contents":[]}`},
		{true, `{"contents":[],"ttlMs":5000}`, `{"resultType":"complete","cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":` + info + `},"contents":[],"ttlMs":5000}`},
		{true, `{"contents":[],"cacheScope":"public","resultType":"complete"}`, `{"ttlMs":0,"_meta":{"io.modelcontextprotocol/serverInfo":` + info + `},"contents":[],"cacheScope":"private","resultType":"complete"}`},
		{true, `{"ttlMs": -1 ,"contents":[],"cacheScope":"private"}`, `{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":` + info + `},"ttlMs": 0 ,"contents":[],"cacheScope":"private"}`},
		{false, `{"ttlMs":0, "contents":[] , "cacheScope":"public" ,"resultType":"complete"}`, `{ "contents":[] }`},
		{false, `{ "resultType":"complete","contents":[],"_meta":{"a":1},"ttlMs":3}`, `{ "contents":[],"_meta":{"a":1}}`},
	} {
		out, ok := passThrough([]byte(c.raw), kindRead, c.modern, c.modern)
		if !ok || string(out) != c.want {
			t.Errorf("read of %s (2026-07-28 %v) = %s (%v), want %s", c.raw, c.modern, out, ok, c.want)
		}
	}
	if out, ok := passThrough([]byte(`{"resultType":"complete","content":[]}`), kindCall, false, false); !ok || string(out) != `{"content":[]}` {
		t.Errorf("2025-11-25 call of a 2026-07-28 upstream's result = %s (%v), want its resultType cut", out, ok)
	}
	for _, bad := range []string{"", "null", `{"content":[]} x`, `{"content":[}`, `{"content":["text"]}`, "{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}", `{"content":[{"type":"text","text":"a"}]`} {
		if out, ok := passThrough([]byte(bad), kindCall, false, false); ok {
			t.Errorf("%q passes through as %q", bad, out)
		}
	}
}

// passesTo is whether a shape passes to a client of the era modern says
// as the upstream's very bytes: before 2026-07-28, one with a 2026-07-28
// key (resultType, ttlMs, cacheScope) passes with the key cut out.
func passesTo(t *testing.T, raw string, pass, modern bool) bool {
	t.Helper()
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &keys); err != nil {
		t.Fatalf("shape %s: %v", raw, err)
	}
	_, rt := keys["resultType"]
	_, ttl := keys["ttlMs"]
	_, scope := keys["cacheScope"]
	return pass && (modern || !rt && !ttl && !scope)
}

// shapeConn is the upstream's side of the connection: it answers
// tools/call of "shape" and resources/read of shape://<i> with
// callShapes[i] and readShapes[i], byte for byte, in place of what the
// go-sdk server encoded (which cannot send unknown keys or nulls).
type shapeConn struct {
	mcp.Connection
	mu      sync.Mutex
	pending map[jsonrpc.ID]string
}

func (c *shapeConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	req, ok := m.(*jsonrpc.Request)
	if err != nil || !ok || !req.IsCall() {
		return m, err
	}
	var p struct {
		Name      string `json:"name"`
		URI       string `json:"uri"`
		Arguments struct {
			I int `json:"i"`
		} `json:"arguments"`
	}
	_ = json.Unmarshal(req.Params, &p)
	raw := ""
	switch {
	case req.Method == "tools/call" && p.Name == "shape":
		raw = callShapes[p.Arguments.I].raw
	case req.Method == "resources/read" && strings.HasPrefix(p.URI, "shape://"):
		i, _ := strconv.Atoi(strings.TrimPrefix(p.URI, "shape://"))
		raw = readShapes[i].raw
	}
	if raw != "" {
		c.mu.Lock()
		c.pending[req.ID] = raw
		c.mu.Unlock()
	}
	return m, nil
}

func (c *shapeConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if resp, ok := m.(*jsonrpc.Response); ok {
		c.mu.Lock()
		raw, ok := c.pending[resp.ID]
		delete(c.pending, resp.ID)
		c.mu.Unlock()
		if ok && resp.Error == nil {
			resp = &jsonrpc.Response{ID: resp.ID, Result: json.RawMessage(raw)}
			m = resp
		}
	}
	return c.Connection.Write(ctx, m)
}

type shapeTransport struct{ mcp.Transport }

func (t shapeTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &shapeConn{Connection: c, pending: map[jsonrpc.ID]string{}}, nil
}

// shapeBridge is a bridge to a go-sdk upstream over in-memory transports
// (wrapped by the bridge like a stdio upstream's), speaking protocol.
func shapeBridge(t *testing.T, protocol string) *mcpbridge.Bridge {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "shapes", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "shape", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"i": map[string]any{"type": "integer"}}}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "replaced"}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "shape://{i}", Name: "shape"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "replaced"}}}, nil
		})
	var mu sync.Mutex
	var sessions []*mcp.ServerSession
	b, err := mcpbridge.New(mcpbridge.Config{Servers: []mcpbridge.ServerConfig{{Name: "u", ProtocolVersion: protocol,
		NewTransport: func() (mcp.Transport, error) {
			ct, st := mcp.NewInMemoryTransports()
			ss, err := s.Connect(context.Background(), shapeTransport{st}, nil)
			mu.Lock()
			sessions = append(sessions, ss)
			mu.Unlock()
			return ct, err
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, ss := range sessions {
			if ss != nil {
				_ = ss.Close()
			}
		}
	})
	select {
	case <-b.Ready():
	case <-ctxT(t).Done():
		t.Fatal("bridge not ready")
	}
	return b
}

// recorder keeps the body of the last POST answered (JSON or SSE).
type recorder struct {
	mu   sync.Mutex
	last []byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.last = body
	r.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// answer is the result (or error) of the JSON-RPC response in the last
// body, as sent.
func (r *recorder) answer(t *testing.T) (result json.RawMessage, errObj json.RawMessage) {
	t.Helper()
	r.mu.Lock()
	body := r.last
	r.mu.Unlock()
	var msgs [][]byte
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		msgs = append(msgs, body)
	}
	for _, line := range bytes.Split(body, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			msgs = append(msgs, d)
		}
	}
	for _, m := range msgs {
		var w struct {
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(m, &w) == nil && (w.Result != nil || w.Error != nil) {
			return w.Result, w.Error
		}
	}
	t.Fatalf("no JSON-RPC response in %q", body)
	return nil, nil
}

// frontClient is a go-sdk client of the front door at url whose answers
// are recorded as sent.
func frontClient(t *testing.T, url, protocol string, caps *mcp.ClientCapabilities) (*mcp.ClientSession, *recorder) {
	t.Helper()
	rec := &recorder{}
	c := mcp.NewClient(&mcp.Implementation{Name: "pass-test", Version: "1"}, &mcp.ClientOptions{Capabilities: caps})
	cs, err := c.Connect(ctxT(t), &mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: rec}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, rec
}

// decoded is a JSON text as a client reads it: Go values (numbers as
// float64), without the keys whose absence means the same, which go-sdk's
// encoding leaves out and the pass-through sends as the upstream wrote
// them (isError false, an empty _meta).
func decoded(t *testing.T, b []byte) any {
	t.Helper()
	if b == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	var strip func(any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["isError"] == false {
				delete(v, "isError")
			}
			if m, ok := v["_meta"].(map[string]any); ok && len(m) == 0 {
				delete(v, "_meta")
			}
			for k, e := range v {
				if k != "structuredContent" && k != "_meta" {
					strip(e)
				}
			}
		case []any:
			for _, e := range v {
				strip(e)
			}
		}
	}
	strip(v)
	return v
}

// compact is a JSON text without spaces (as the upstream's side of an
// in-memory connection sends it).
func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestMCPFrontPassThrough: every call and read result, from an upstream of
// each era, to a client of each era (declaring roots, so that calls run as
// interactive flights, and declaring nothing), is what the slow path sends
// (a front door with the pass-through off, on the same core), as a client
// reads it; the results that need no change pass through byte for byte
// (a 2025-11-25 client gets the upstream's very bytes) and are counted as
// passed, the others as encoded.
func TestMCPFrontPassThrough(t *testing.T) {
	for _, upProto := range []string{"2025-11-25", "2026-07-28"} {
		t.Run("upstream-"+upProto, func(t *testing.T) {
			c := core.New(shapeBridge(t, upProto), core.Options{})
			pass := New(c, Options{ListenAddr: "127.0.0.1:0"})
			slow := New(c, Options{ListenAddr: "127.0.0.1:0"})
			slow.noPass = true
			t.Cleanup(pass.Close)
			t.Cleanup(slow.Close)
			ps, ss := httptest.NewServer(pass.Handler()), httptest.NewServer(slow.Handler())
			t.Cleanup(ps.Close)
			t.Cleanup(ss.Close)
			for _, client := range []struct {
				name, protocol string
				caps           *mcp.ClientCapabilities
			}{
				{"2025-11-25-roots", "2025-11-25", nil},
				{"2025-11-25-none", "2025-11-25", &mcp.ClientCapabilities{}},
				{"2026-07-28-roots", "", nil},
				{"2026-07-28-none", "", &mcp.ClientCapabilities{}},
			} {
				t.Run(client.name, func(t *testing.T) {
					ctx := ctxT(t)
					pc, prec := frontClient(t, ps.URL, client.protocol, client.caps)
					sc, srec := frontClient(t, ss.URL, client.protocol, client.caps)
					before := testutil.ToFloat64(pass.paths.callPassed)
					passed := 0
					for i, shape := range callShapes {
						call := func(cs *mcp.ClientSession, rec *recorder) (json.RawMessage, json.RawMessage) {
							_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "u__shape", Arguments: map[string]any{"i": i}})
							return rec.answer(t)
						}
						pr, pe := call(pc, prec)
						sr, se := call(sc, srec)
						if !reflect.DeepEqual(decoded(t, pr), decoded(t, sr)) || !reflect.DeepEqual(decoded(t, pe), decoded(t, se)) {
							t.Errorf("call shape %d %s:\npass-through sent %s %s\n   slow path sent %s %s", i, shape.raw, pr, pe, sr, se)
						}
						if shape.pass && se == nil {
							passed++
							if client.protocol != "" && passesTo(t, shape.raw, shape.pass, false) && string(pr) != compact(t, shape.raw) {
								t.Errorf("call shape %d: sent %s, want the upstream's bytes %s", i, pr, shape.raw)
							}
						}
					}
					if got := testutil.ToFloat64(pass.paths.callPassed) - before; got != float64(passed) {
						t.Errorf("%v calls counted passed, want %d", got, passed)
					}
					if n := testutil.ToFloat64(slow.paths.callPassed); n != 0 {
						t.Errorf("the slow front door passed %v calls", n)
					}
					before = testutil.ToFloat64(pass.paths.readPassed)
					passed = 0
					for i, shape := range readShapes {
						read := func(cs *mcp.ClientSession, rec *recorder) (json.RawMessage, json.RawMessage) {
							_, _ = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: fmt.Sprintf("shape://%d", i)})
							return rec.answer(t)
						}
						pr, pe := read(pc, prec)
						sr, se := read(sc, srec)
						pv, sv := decoded(t, pr), decoded(t, sr)
						if !reflect.DeepEqual(pv, sv) || !reflect.DeepEqual(decoded(t, pe), decoded(t, se)) {
							t.Errorf("read shape %d %s:\npass-through sent %s %s\n   slow path sent %s %s", i, shape.raw, pr, pe, sr, se)
						}
						if shape.pass && se == nil {
							passed++
						}
					}
					if got := testutil.ToFloat64(pass.paths.readPassed) - before; got != float64(passed) {
						t.Errorf("%v reads counted passed, want %d", got, passed)
					}
				})
			}
		})
	}
}
