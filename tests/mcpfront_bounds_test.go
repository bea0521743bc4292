package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The front door's bounds end to end: a real
// toolsvc with two principals, raw HTTP and TCP clients (every request's
// answer is visible) and a go-sdk client.

const (
	aliceToken = "tok-alice-0123456789"
	bobToken   = "tok-bob-0123456789ab"
)

func startBoundsFront(t *testing.T, extraArgs ...string) (*toolsvcProc, string) {
	t.Helper()
	url := startHTTPUpstream(t)
	c := cfg{Servers: servers{"h": goHTTP(url, upstream{})},
		Auth: &authCfg{Tokens: map[string]string{"alice": aliceToken, "bob": bobToken}, Rules: []rule{{Principal: "alice"}, {Principal: "bob"}}}}
	p := startToolsvc(t, c, append([]string{"--mcp-listen", "127.0.0.1:0"}, extraArgs...)...)
	return p, "http://" + p.mcpAddr
}

// frontPOST posts one JSON-RPC message to /mcp as token (in session sid
// if not empty) and returns the answer's status, session ID and body.
func frontPOST(t *testing.T, ctx context.Context, base, token, sid, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

const frontInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bounds-test","version":"1"}}}`

// frontSession initializes a 2025-11-25 session as token and returns its ID.
func frontSession(t *testing.T, ctx context.Context, base, token string) string {
	t.Helper()
	code, sid, body := frontPOST(t, ctx, base, token, "", frontInitialize)
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: HTTP %d, session %q: %s", code, sid, body)
	}
	if code, _, body := frontPOST(t, ctx, base, token, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code/100 != 2 {
		t.Fatalf("notifications/initialized: HTTP %d: %s", code, body)
	}
	return sid
}

// openStream opens the session's GET stream (its client listening for
// list_changed: the session is busy while it is open) and returns once
// toolsvc answered; cancel closes it.
func openStream(t *testing.T, ctx context.Context, base, token, sid string) context.CancelFunc {
	t.Helper()
	sctx, cancel := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(sctx, http.MethodGet, base+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		resp.Body.Close()
		t.Fatalf("GET stream of %s: HTTP %d", sid, resp.StatusCode)
	}
	go func() {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	t.Cleanup(cancel)
	return cancel
}

// TestMCPFrontSessionsBounded: sessions nobody uses again are capped per
// principal and per replica, the oldest idle giving way to the newcomer
// (toolsvc_front_sessions stays at the cap, every abandoned session past
// it is closed); an evicted session's client carries on (adopted under the
// same ID); when every session that could give way is busy (a GET stream
// open), the newcomer gets HTTP 503 naming the cap.
func TestMCPFrontSessionsBounded(t *testing.T) {
	t.Parallel()
	p, base := startBoundsFront(t, "--mcp-max-sessions", "6", "--mcp-max-sessions-per-principal", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// alice opens 50 sessions and walks away from each.
	var first string
	for i := range 50 {
		sid := frontSession(t, ctx, base, aliceToken)
		if i == 0 {
			first = sid
		}
	}
	if n := metricValue(t, p, "toolsvc_front_sessions"); n != 4 {
		t.Errorf("after 50 abandoned sessions of one principal: toolsvc_front_sessions %v, want 4 (its cap)", n)
	}
	if n := metricValue(t, p, "toolsvc_front_sessions_evicted_total"); n != 46 {
		t.Errorf("toolsvc_front_sessions_evicted_total %v, want 46", n)
	}
	// The first was evicted long ago; its client comes back and is served.
	if code, _, body := frontPOST(t, ctx, base, aliceToken, first, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); code != http.StatusOK || !strings.Contains(body, "h__echo") {
		t.Errorf("tools/list in an evicted session: HTTP %d: %s", code, body)
	}

	// bob's sessions, each with its GET stream open (busy), take the
	// replica's two free places, then two of alice's idle ones.
	var bobs []context.CancelFunc
	for range 4 {
		bobs = append(bobs, openStream(t, ctx, base, bobToken, frontSession(t, ctx, base, bobToken)))
	}
	if n := metricValue(t, p, "toolsvc_front_sessions"); n != 6 {
		t.Errorf("toolsvc_front_sessions %v, want 6 (the replica's cap)", n)
	}
	code, sid, body := frontPOST(t, ctx, base, bobToken, "", frontInitialize)
	if code != http.StatusServiceUnavailable || sid != "" || !strings.Contains(body, "--mcp-max-sessions-per-principal") {
		t.Errorf("bob's fifth session, his four busy: HTTP %d %q: %s; want 503 naming --mcp-max-sessions-per-principal", code, sid, body)
	}
	var msg struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil || msg.Error.Message == "" {
		t.Errorf("the 503 is not a JSON-RPC error: %v: %s", err, body)
	}

	// alice's two left: the one idle gives way to her next session;
	// with that one busy too, the replica's cap refuses her.
	a := frontSession(t, ctx, base, aliceToken)
	openStream(t, ctx, base, aliceToken, a)
	b := frontSession(t, ctx, base, aliceToken)
	openStream(t, ctx, base, aliceToken, b)
	code, _, body = frontPOST(t, ctx, base, aliceToken, "", frontInitialize)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "--mcp-max-sessions)") {
		t.Errorf("a new session with all six busy: HTTP %d: %s; want 503 naming --mcp-max-sessions", code, body)
	}
	if n := metricValue(t, p, "toolsvc_front_sessions"); n != 6 {
		t.Errorf("toolsvc_front_sessions %v, want 6", n)
	}

	// bob's streams end: his sessions are idle, and a go-sdk client of
	// alice's gets a session (evicting one) and calls.
	for _, c := range bobs {
		c()
	}
	var c *mcp.ClientSession
	eventually(t, 30*time.Second, "a go-sdk session once bob's are idle", func() bool {
		cl := mcp.NewClient(&mcp.Implementation{Name: "bounds-test", Version: "1"}, nil)
		s, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp",
			HTTPClient: &http.Client{Transport: headerRoundTripper{"Authorization": "Bearer " + aliceToken}}},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		c = s
		return err == nil
	})
	defer c.Close()
	res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "h__echo", Arguments: map[string]any{"text": "bounded"}})
	if err != nil || callText(t, res) != "bounded" {
		t.Fatalf("h__echo: %v %+v", err, res)
	}
	if n := metricValue(t, p, "toolsvc_front_sessions"); n > 6 {
		t.Errorf("toolsvc_front_sessions %v, over the cap of 6", n)
	}
}

// TestMCPFrontSessionReplay: a session ID presented by another principal
// is unknown to it, 404 as for any unknown session (the MCP transport
// spec), whether this replica holds the session or not; the session
// itself is untouched (bob's DELETE does not end alice's session).
func TestMCPFrontSessionReplay(t *testing.T) {
	t.Parallel()
	_, base := startBoundsFront(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sid := frontSession(t, ctx, base, aliceToken)
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		}
		req, _ := http.NewRequestWithContext(ctx, method, base+"/mcp", body)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+bobToken)
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "session not found") {
			t.Errorf("bob's %s in alice's session: HTTP %d %q, want 404 session not found", method, resp.StatusCode, b)
		}
	}
	if code, _, body := frontPOST(t, ctx, base, aliceToken, sid, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); code != http.StatusOK || !strings.Contains(body, "h__echo") {
		t.Errorf("alice's tools/list after bob's attempts: HTTP %d: %s", code, body)
	}
}

// trickle writes a request's headers to the front door, then its body one
// byte every interval until stop is closed or the connection fails; sent
// counts the body bytes written.
func trickle(t *testing.T, base, header string, bodyLen int, interval time.Duration, sent *atomic.Int64, stop <-chan struct{}) net.Conn {
	t.Helper()
	u, _ := url.Parse(base)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	head := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: %d\r\n\r\n",
		u.Host, header, bodyLen)
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for range bodyLen {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := conn.Write([]byte{' '}); err != nil {
				return
			}
			sent.Add(1)
		}
	}()
	return conn
}

// TestMCPFrontTrickledBody: a request without credentials is refused
// (401, WWW-Authenticate) from its headers, before its body has arrived;
// an authenticated request whose body trickles in is cut off at
// --mcp-body-timeout (408, connection closed).
func TestMCPFrontTrickledBody(t *testing.T) {
	t.Parallel()
	_, base := startBoundsFront(t, "--mcp-body-timeout", "1s")

	t.Run("unauthenticated", func(t *testing.T) {
		// Headers only: the body never comes, so any answer at all was
		// decided from the headers (nothing timed: without the fix no
		// answer comes before the test's bound).
		var sent atomic.Int64
		stop := make(chan struct{})
		close(stop)
		conn := trickle(t, base, "", 400, time.Hour, &sent, stop)
		_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second)) // the test's bound, not an assertion
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no answer to headers whose body never comes: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("HTTP %d, WWW-Authenticate %q; want 401 with a Bearer challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
		// The connection is closed (the unread body would otherwise be
		// awaited for the next request): EOF, not the deadline.
		_, err = br.ReadByte()
		var ne net.Error
		if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
			t.Errorf("after the 401 the connection is still open (read: %v)", err)
		}
	})

	t.Run("authenticated", func(t *testing.T) {
		var sent atomic.Int64
		stop := make(chan struct{})
		defer close(stop)
		const bodyLen = 100000 // 100 s at 1 ms per byte: never all in
		conn := trickle(t, base, "Authorization: Bearer "+aliceToken+"\r\n", bodyLen, time.Millisecond, &sent, stop)
		_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second)) // the test's bound, not an assertion
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no answer: %v (%d body bytes sent)", err, sent.Load())
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "--mcp-body-timeout") {
			t.Errorf("HTTP %d %q, want 408 naming --mcp-body-timeout", resp.StatusCode, b)
		}
		// The connection is closed: reading past the answer ends at EOF
		// (or a reset, the client still writing), not at the deadline.
		_, err = br.ReadByte()
		var ne net.Error
		if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
			t.Errorf("after the 408 the connection is still open (read: %v)", err)
		}
	})
}
