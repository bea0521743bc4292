package mcpbridge

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func httpAnswer(status int, contentType, body string, h http.Header) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), ContentLength: -1}
}

// initialize drives conn through the 2025-11-25 handshake as go-sdk's
// client does.
func initialize(t *testing.T, ctx context.Context, conn mcp.Connection) {
	t.Helper()
	id, _ := jsonrpc.MakeID(float64(1))
	if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: "initialize", Params: []byte(`{"protocolVersion":"2025-11-25"}`)}); err != nil {
		t.Fatal(err)
	}
	if m, err := conn.Read(ctx); err != nil {
		t.Fatal(err)
	} else if r, ok := m.(*jsonrpc.Response); !ok || r.ID != id {
		t.Fatalf("read %v, want the initialize result", m)
	}
	if err := conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized"}); err != nil {
		t.Fatal(err)
	}
}

// The standalone stream's reconnect backoff: a stream the upstream ends
// without an event is reconnected once (maxRetries 1) after 1–2 s (1 s and
// up to as much jitter), and when that one ends too without progress the
// connection fails, so the session ends and the bridge reconnects. The
// failure reaches Read; the session id is known from the initialize answer
// and sent on every GET.
func TestStreamConnStandaloneGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu   sync.Mutex
			gets []time.Time
			sids []string
		)
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			switch r.Method {
			case http.MethodPost:
				body, _ := io.ReadAll(r.Body)
				if strings.Contains(string(body), `"initialize"`) {
					return httpAnswer(200, "application/json", `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`,
						http.Header{"Mcp-Session-Id": {"sid-1"}}), nil
				}
				return httpAnswer(http.StatusAccepted, "", "", nil), nil
			case http.MethodGet:
				mu.Lock()
				gets = append(gets, time.Now())
				sids = append(sids, r.Header.Get("Mcp-Session-Id"))
				mu.Unlock()
				return httpAnswer(200, "text/event-stream", "", nil), nil // ends at once
			}
			return httpAnswer(200, "", "", nil), nil
		})
		push := newPushChannel()
		st := &streamableTransport{endpoint: "http://upstream.test/mcp", client: &http.Client{Transport: rt}, limit: 1 << 20,
			log: slog.New(slog.DiscardHandler), maxRetries: 1, hooks: streamHooks{push: push}}
		ctx := t.Context()
		conn, err := st.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		initialize(t, ctx, conn)
		_, err = conn.Read(ctx)
		if err == nil || !strings.Contains(err.Error(), "exceeded 1 retries without progress") {
			t.Fatalf("Read = %v, want the standalone stream given up", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(gets) != 2 {
			t.Fatalf("%d GETs, want the first and one reconnect", len(gets))
		}
		if d := gets[1].Sub(gets[0]); d < time.Second || d >= 2*time.Second {
			t.Errorf("reconnected after %v, want 1–2 s", d)
		}
		for _, s := range sids {
			if s != "sid-1" {
				t.Errorf("a GET carried session id %q, want sid-1", s)
			}
		}
		if st, _, _ := push.status(); st != pushDown {
			t.Errorf("push channel %v after its stream ended, want down", st)
		}
	})
}

// reconnectDelay is go-sdk's client's backoff: none for the first attempt,
// then 1 s growing by 1.5, capped at 30 s, plus up to as much jitter.
func TestReconnectDelay(t *testing.T) {
	for attempt, base := range map[int]time.Duration{1: time.Second, 2: 1500 * time.Millisecond, 3: 2250 * time.Millisecond, 20: 30 * time.Second} {
		for range 20 {
			if d := reconnectDelay(attempt); d < base || d >= 2*base {
				t.Fatalf("reconnectDelay(%d) = %v, want [%v, %v)", attempt, d, base, 2*base)
			}
		}
	}
	if d := reconnectDelay(0); d != 0 {
		t.Errorf("reconnectDelay(0) = %v, want 0", d)
	}
}

// A broken call stream with event ids is resumed with Last-Event-ID and
// its answer still reaches Read; a stream that ends with no event id and
// no answer is answered "request terminated without response" for its
// call, and the session goes on.
func TestStreamConnResumesCallStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lastIDs []string
		var mu sync.Mutex
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			switch r.Method {
			case http.MethodPost:
				body, _ := io.ReadAll(r.Body)
				switch {
				case strings.Contains(string(body), `"initialize"`):
					return httpAnswer(200, "application/json", `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`,
						http.Header{"Mcp-Session-Id": {"sid-1"}}), nil
				case strings.Contains(string(body), `"resumed"`):
					return httpAnswer(200, "text/event-stream", "id: e1\nretry: 10\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p\",\"progress\":1}}\n\n", nil), nil
				case strings.Contains(string(body), `"lost"`):
					return httpAnswer(200, "text/event-stream", ": nothing\n\n", nil), nil
				}
				return httpAnswer(http.StatusAccepted, "", "", nil), nil
			case http.MethodGet:
				mu.Lock()
				lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
				mu.Unlock()
				if r.Header.Get("Last-Event-ID") == "e1" {
					return httpAnswer(200, "text/event-stream", "id: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n", nil), nil
				}
				return httpAnswer(http.StatusMethodNotAllowed, "", "", nil), nil
			}
			return httpAnswer(200, "", "", nil), nil
		})
		st := &streamableTransport{endpoint: "http://upstream.test/mcp", client: &http.Client{Transport: rt}, limit: 1 << 20,
			log: slog.New(slog.DiscardHandler), maxRetries: 1}
		ctx := t.Context()
		conn, err := st.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		initialize(t, ctx, conn)
		id2, _ := jsonrpc.MakeID(float64(2))
		if err := conn.Write(ctx, &jsonrpc.Request{ID: id2, Method: "resumed"}); err != nil {
			t.Fatal(err)
		}
		if m, err := conn.Read(ctx); err != nil {
			t.Fatal(err)
		} else if r, ok := m.(*jsonrpc.Request); !ok || r.Method != "notifications/progress" {
			t.Fatalf("read %v, want the progress notification", m)
		}
		if m, err := conn.Read(ctx); err != nil {
			t.Fatal(err)
		} else if r, ok := m.(*jsonrpc.Response); !ok || r.ID != id2 || r.Error != nil {
			t.Fatalf("read %v, want the resumed stream's answer", m)
		}
		id3, _ := jsonrpc.MakeID(float64(3))
		if err := conn.Write(ctx, &jsonrpc.Request{ID: id3, Method: "lost"}); err != nil {
			t.Fatal(err)
		}
		m, err := conn.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := m.(*jsonrpc.Response); !ok || r.ID != id3 || r.Error == nil || !strings.Contains(r.Error.Error(), "terminated without response") {
			t.Fatalf("read %v, want the lost call answered with an error", m)
		}
		mu.Lock()
		defer mu.Unlock()
		// The standalone GET (refused: 405), then the resumption.
		if len(lastIDs) != 2 || lastIDs[1] != "e1" {
			t.Errorf("GETs carried Last-Event-ID %q, want the standalone one without and a resumption from e1", lastIDs)
		}
	})
}

// TestStreamableParamHeaders: a 2026-07-28 go-sdk server refuses a
// tools/call whose x-mcp-header parameter headers do not match its
// arguments. toolsvc's connection takes them from the input schema the
// session listed (go-sdk's client took the tool from a cache toolsvc's
// connection cannot see), so such a call goes through, with a value that
// must be sent Base64-encoded too.
func TestStreamableParamHeaders(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "hdr", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"}}}`)
	var mu sync.Mutex
	var seen []string
	srv.AddTool(&mcp.Tool{Name: "where", InputSchema: schema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
	})
	escaped := json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-h\u0065ader":"Region"}}}`)
	srv.AddTool(&mcp.Tool{Name: "escaped", InputSchema: escaped}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	url := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("Mcp-Param-Region"); v != "" {
			mu.Lock()
			seen = append(seen, v)
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	b := newTestBridge(t, ServerConfig{Name: "web", Transport: TransportStreamableHTTP, URL: url, ProtocolVersion: ProtocolStateless})
	for _, region := range []string{"eu-west-1", " spaced "} {
		res, err := b.CallTool(t.Context(), "web__where", map[string]any{"region": region, "n": 3}, nil)
		if err != nil || res.IsError {
			t.Fatalf("CallTool(region %q) = %v, %v; want the call through", region, res, err)
		}
	}
	// The key spelled with an escape is the same key to every JSON reader.
	res, err := b.CallTool(t.Context(), "web__escaped", map[string]any{"region": "us-east-2"}, nil)
	if err != nil || res.IsError {
		t.Fatalf("CallTool(escaped) = %v, %v; want the call through", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 || seen[0] != "eu-west-1" || !strings.HasPrefix(seen[1], "=?base64?") || seen[2] != "us-east-2" {
		t.Errorf("Mcp-Param-Region headers %q, want the plain value, a Base64 one and the escaped key's", seen)
	}
}

// What an upstream's event stream says about resuming it is bounded: a
// retry field asks for at most 30 s (reconnectCap) however long it names,
// and an event id over 1 KiB is not kept (nor sent back as Last-Event-ID),
// so a call stream that carries only such ids is not resumable.
func TestStreamConnBoundsEventFields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		longID := strings.Repeat("x", maxEventID+1)
		var mu sync.Mutex
		var gets []time.Time
		var lastIDs []string
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			switch r.Method {
			case http.MethodPost:
				body, _ := io.ReadAll(r.Body)
				switch {
				case strings.Contains(string(body), `"initialize"`):
					return httpAnswer(200, "application/json", `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`,
						http.Header{"Mcp-Session-Id": {"sid-1"}}), nil
				case strings.Contains(string(body), `"longid"`):
					return httpAnswer(200, "text/event-stream", "id: "+longID+"\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p\",\"progress\":1}}\n\n", nil), nil
				}
				return httpAnswer(http.StatusAccepted, "", "", nil), nil
			case http.MethodGet:
				mu.Lock()
				gets = append(gets, time.Now())
				lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
				n := len(gets)
				mu.Unlock()
				if n == 1 {
					// The standalone stream: one event, then it ends, asking
					// for a reconnect in about 31 years.
					return httpAnswer(200, "text/event-stream", "id: e1\nretry: 999999999999\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n", nil), nil
				}
				return httpAnswer(200, "text/event-stream", ": idle\n\n", nil), nil
			}
			return httpAnswer(200, "", "", nil), nil
		})
		st := &streamableTransport{endpoint: "http://upstream.test/mcp", client: &http.Client{Transport: rt}, limit: 1 << 20,
			log: slog.New(slog.DiscardHandler), maxRetries: 1}
		ctx := t.Context()
		conn, err := st.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		initialize(t, ctx, conn)
		id2, _ := jsonrpc.MakeID(float64(2))
		if err := conn.Write(ctx, &jsonrpc.Request{ID: id2, Method: "longid"}); err != nil {
			t.Fatal(err)
		}
		var answered bool
		for !answered {
			m, err := conn.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r, ok := m.(*jsonrpc.Response); ok && r.ID == id2 {
				if r.Error == nil || !strings.Contains(r.Error.Error(), "terminated without response") {
					t.Fatalf("answer %v, want the call's stream given up as not resumable", r)
				}
				answered = true
			}
		}
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(gets) < 2 {
			t.Fatalf("the standalone stream was not reconnected within a minute (%d GETs)", len(gets))
		}
		if d := gets[1].Sub(gets[0]); d > reconnectCap {
			t.Errorf("reconnected after %v, want at most %v", d, reconnectCap)
		}
		for _, id := range lastIDs {
			if len(id) > maxEventID {
				t.Errorf("a GET sent back a %d-byte Last-Event-ID", len(id))
			}
		}
		if lastIDs[1] != "e1" {
			t.Errorf("the standalone stream resumed from %q, want e1", lastIDs[1])
		}
	})
}

// brokenBody gives its data, then fails like a connection cut mid-event.
type brokenBody struct{ r io.Reader }

func (b *brokenBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *brokenBody) Close() error { return nil }

// A call's event stream cut in the middle of an event (the call cancelled,
// the connection dropped) loses that event, not the session: the part
// read is no message to decode, and the call, not resumable, is answered
// "request terminated without response". Found by TestParkedFloodIsBounded:
// a cancelled flood's half-read event was decoded and ended the session.
func TestStreamConnCutMidEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			switch r.Method {
			case http.MethodPost:
				body, _ := io.ReadAll(r.Body)
				switch {
				case strings.Contains(string(body), `"initialize"`):
					return httpAnswer(200, "application/json", `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`,
						http.Header{"Mcp-Session-Id": {"sid-1"}}), nil
				case strings.Contains(string(body), `"cut"`):
					resp := httpAnswer(200, "text/event-stream", "", nil)
					resp.Body = &brokenBody{strings.NewReader("data: {\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"elicitation/create\",\"params\":{\"message\":\"xxxxxxxx")}
					return resp, nil
				}
				return httpAnswer(http.StatusAccepted, "", "", nil), nil
			case http.MethodGet:
				return httpAnswer(http.StatusMethodNotAllowed, "", "", nil), nil
			}
			return httpAnswer(200, "", "", nil), nil
		})
		st := &streamableTransport{endpoint: "http://upstream.test/mcp", client: &http.Client{Transport: rt}, limit: 1 << 20,
			log: slog.New(slog.DiscardHandler), maxRetries: 1}
		ctx := t.Context()
		conn, err := st.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		initialize(t, ctx, conn)
		id2, _ := jsonrpc.MakeID(float64(2))
		if err := conn.Write(ctx, &jsonrpc.Request{ID: id2, Method: "cut"}); err != nil {
			t.Fatal(err)
		}
		m, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("Read = %v: a stream cut mid-event ended the session", err)
		}
		if r, ok := m.(*jsonrpc.Response); !ok || r.ID != id2 || r.Error == nil || !strings.Contains(r.Error.Error(), "terminated without response") {
			t.Fatalf("read %v, want the cut call answered with an error", m)
		}
		if err := conn.Write(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: []byte(`{"requestId":2}`)}); err != nil {
			t.Errorf("the session is no longer usable: %v", err)
		}
	})
}

// ctxBody blocks until its request's context ends, then fails with it.
type ctxBody struct{ ctx context.Context }

func (b ctxBody) Read([]byte) (int, error) { <-b.ctx.Done(); return 0, b.ctx.Err() }
func (b ctxBody) Close() error             { return nil }

// A call cancelled while its JSON answer is being read loses that answer,
// not the session (go-sdk's client failed the connection on any body read
// error).
func TestStreamConnCancelledJSONAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodPost {
				return httpAnswer(http.StatusMethodNotAllowed, "", "", nil), nil
			}
			body, _ := io.ReadAll(r.Body)
			switch {
			case strings.Contains(string(body), `"initialize"`):
				return httpAnswer(200, "application/json", `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`, nil), nil
			case strings.Contains(string(body), `"slow"`):
				resp := httpAnswer(200, "application/json", "", nil)
				resp.Body = ctxBody{r.Context()}
				return resp, nil
			case strings.Contains(string(body), `"ping"`):
				return httpAnswer(200, "application/json", `{"jsonrpc":"2.0","id":3,"result":{}}`, nil), nil
			}
			return httpAnswer(http.StatusAccepted, "", "", nil), nil
		})
		st := &streamableTransport{endpoint: "http://upstream.test/mcp", client: &http.Client{Transport: rt}, limit: 1 << 20,
			log: slog.New(slog.DiscardHandler), maxRetries: 1}
		ctx := t.Context()
		conn, err := st.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		initialize(t, ctx, conn)
		callCtx, cancel := context.WithCancel(ctx)
		go func() {
			synctest.Wait() // the write is reading the body
			cancel()
		}()
		id2, _ := jsonrpc.MakeID(float64(2))
		_ = conn.Write(callCtx, &jsonrpc.Request{ID: id2, Method: "slow"})
		id3, _ := jsonrpc.MakeID(float64(3))
		if err := conn.Write(ctx, &jsonrpc.Request{ID: id3, Method: "ping"}); err != nil {
			t.Fatalf("after a cancelled call the session refuses writes: %v", err)
		}
		if m, err := conn.Read(ctx); err != nil {
			t.Fatalf("Read = %v: a cancelled call's answer ended the session", err)
		} else if r, ok := m.(*jsonrpc.Response); !ok || r.ID != id3 {
			t.Fatalf("read %v, want the ping's answer", m)
		}
	})
}

// TestDiscoverNotSentIsNoDowngrade: a 2026-07-28 connect whose
// server/discover never reached the upstream (the dial refused: an
// upstream restarting) must fail, not fall back to the 2025-11-25
// initialize. go-sdk falls back on any discover error, so the initialize
// that followed a moment later reached the restarted upstream and the
// session came up in the older era: a Python upstream then declared no
// resource subscriptions and toolsvc refused them
// (TestSubscriptionLifecycleBothWires, once at load). The connection is
// failed instead; the supervisor's next attempt discovers.
func TestDiscoverNotSentIsNoDowngrade(t *testing.T) {
	t.Parallel()
	url := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return goSDKServer() },
		&mcp.StreamableHTTPOptions{Stateless: true})) // go-sdk's server answers server/discover when stateless
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	var refused sync.Once
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		first := false
		refused.Do(func() { first = true })
		if first { // the first request: as if nothing listened yet
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		}
		return base.RoundTrip(r)
	})
	connect := func() (*mcp.ClientSession, error) {
		st := testStreamable(url)
		st.client = &http.Client{Transport: rt}
		return mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).
			Connect(t.Context(), st, sessionOptions(ProtocolStateless))
	}
	if cs, err := connect(); err == nil {
		v := cs.InitializeResult().ProtocolVersion
		_ = cs.Close()
		t.Fatalf("connect whose discover was refused succeeded in %s, want it to fail (no fallback without an answer)", v)
	}
	cs, err := connect()
	if err != nil {
		t.Fatalf("the next connect: %v", err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != ProtocolStateless {
		t.Errorf("the next connect negotiated %s, want %s", v, ProtocolStateless)
	}
}
