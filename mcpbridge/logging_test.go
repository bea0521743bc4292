package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logUpstream is a go-sdk server with a tool that logs n messages at
// rotating levels during the call, then answers; release, when set, holds
// the answer until closed; entered, when set, receives each call's tag as
// its handler begins.
func logUpstream(release chan struct{}, entered chan<- string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "logger", Version: "1"}, nil)
	levels := []mcp.LoggingLevel{"debug", "info", "warning", "error"}
	mcp.AddTool(s, &mcp.Tool{Name: "chatty"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		N   int    `json:"n"`
		Tag string `json:"tag"`
	}) (*mcp.CallToolResult, any, error) {
		if entered != nil {
			entered <- in.Tag
		}
		for i := range in.N {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: levels[i%len(levels)], Logger: "chatty",
				Data: fmt.Sprintf("%s %d", in.Tag, i)})
		}
		if release != nil {
			<-release
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done " + in.Tag}}}, nil, nil
	})
	return s
}

type logCollector struct {
	mu   sync.Mutex
	logs []Log
}

func (c *logCollector) add(l Log) {
	c.mu.Lock()
	c.logs = append(c.logs, l)
	c.mu.Unlock()
}

func (c *logCollector) data() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, l := range c.logs {
		var s string
		_ = json.Unmarshal(l.Data, &s)
		out = append(out, string(l.Level)+":"+s)
	}
	return out
}

// A call's log messages reach its OnLog in order, all of them before Call
// returns, on an in-memory (no origins) and a streamable HTTP (by stream)
// session, in both protocol eras: setLevel debug at connect before
// 2026-07-28, the call's _meta level from it on.
func TestCallLogs(t *testing.T) {
	t.Parallel()
	srv := logUpstream(nil, nil)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	mem := &memUpstream{t: t, server: srv}
	t.Cleanup(mem.killSessions)
	memNew := mem.config("mem")
	memNew.Name, memNew.ProtocolVersion = "memnew", ProtocolStateless
	httpCfg := ServerConfig{Name: "web", Transport: TransportStreamableHTTP, URL: hs.URL}
	httpNew := httpCfg
	httpNew.Name, httpNew.ProtocolVersion = "webnew", ProtocolStateless
	b := newTestBridge(t, mem.config("mem"), memNew, httpCfg, httpNew)
	want := []string{"debug:x 0", "info:x 1", "warning:x 2", "error:x 3", "debug:x 4", "info:x 5"}
	for _, server := range []string{"mem", "memnew", "web", "webnew"} {
		t.Run(server, func(t *testing.T) {
			for range 5 { // a late message would show up as a flake here
				var got logCollector
				res, err := b.CallTool(t.Context(), server+"__chatty", map[string]any{"n": 6, "tag": "x"}, &CallOptions{OnLog: got.add})
				if err != nil || res.IsError {
					t.Fatalf("CallTool(%s__chatty) = %v, %v", server, res, err)
				}
				if d := got.data(); strings.Join(d, "|") != strings.Join(want, "|") {
					t.Fatalf("logs = %q, want %q", d, want)
				}
				for _, l := range got.logs {
					if l.Server != server || l.Logger != "chatty" {
						t.Fatalf("log %+v: want server %q, logger chatty", l, server)
					}
				}
			}
		})
	}
}

// With two calls in flight on one session (both sent), an unlinked log
// message (stdio, in-memory) belongs to neither: nobody gets another's
// lines. On streamable
// HTTP each call's response stream links its own.
func TestCallLogsAttribution(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		linked bool
	}{{"mem", false}, {"web", true}} {
		t.Run(c.name, func(t *testing.T) {
			release, entered := make(chan struct{}), make(chan string, 2)
			srv := logUpstream(release, entered)
			cfg := ServerConfig{Name: "up", Transport: TransportStreamableHTTP}
			if c.linked {
				hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
				t.Cleanup(hs.Close)
				cfg.URL = hs.URL
			} else {
				mem := &memUpstream{t: t, server: srv}
				t.Cleanup(mem.killSessions)
				cfg = mem.config("up")
			}
			b := newTestBridge(t, cfg)
			ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
			defer cancel()
			var a, other logCollector
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { // in flight first; logs nothing and waits
				defer wg.Done()
				_, _ = b.CallTool(ctx, "up__chatty", map[string]any{"n": 0, "tag": "o"}, &CallOptions{OnLog: other.add})
			}()
			// The other call has reached the upstream (it is on the wire
			// before a's request: a log read after it is not certainly a's).
			if tag := <-entered; tag != "o" {
				t.Fatalf("entered %q first", tag)
			}
			go func() {
				defer wg.Done()
				_, _ = b.CallTool(ctx, "up__chatty", map[string]any{"n": 3, "tag": "a"}, &CallOptions{OnLog: a.add})
			}()
			waitInflight(t, b, "up", 2)
			time.Sleep(100 * time.Millisecond) // a's messages are sent before it waits
			close(release)
			wg.Wait()
			if d := other.data(); len(d) != 0 {
				t.Errorf("the other call got log messages %q", d)
			}
			want := ""
			if c.linked {
				want = "debug:a 0|info:a 1|warning:a 2"
			}
			if d := strings.Join(a.data(), "|"); d != want {
				t.Errorf("the logging call got %q, want %q", d, want)
			}
		})
	}
}

func waitInflight(t *testing.T, b *Bridge, server string, n int) {
	t.Helper()
	deadline := time.Now().Add(defaultTestTimeout)
	for {
		u, err := b.upstream(server)
		if err == nil {
			if s := u.sess.Load(); s != nil && s.interact.inflight.Load() >= int64(n) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d requests never in flight", server, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// logOwner: a message goes to the call its link names while that call is
// in flight and takes logs; an unlinked one to nobody, even with one call
// in flight (the owner is decided where it is read). soleLogCall names the
// only request in flight when it is a call taking logs.
func TestLogOwner(t *testing.T) {
	var x interactions
	a := &Interaction{logs: &logSink{f: func(Log) {}}}
	noLogs := &Interaction{}
	endA := x.begin(a)
	if x.logOwner("") != nil {
		t.Error("an unlinked message was attributed")
	}
	if x.soleLogCall() != a.token {
		t.Error("the only call in flight is not the sole log call")
	}
	endOther := x.begin(nil)
	if x.soleLogCall() != "" {
		t.Error("a sole log call with two requests in flight")
	}
	if x.logOwner(a.token) != a {
		t.Error("a linked message did not reach its call")
	}
	if x.logOwner("forged") != nil {
		t.Error("an unknown link was attributed")
	}
	endOther()
	tok := a.token
	endA()
	if x.logOwner(tok) != nil {
		t.Error("a message linked to a call that returned was attributed")
	}
	endB := x.begin(noLogs)
	if x.soleLogCall() != "" || x.logOwner(noLogs.token) != nil {
		t.Error("a call without OnLog owns a message")
	}
	endB()
}

// settle returns at once with nothing pending, waits for a pending
// message, and gives up on a lost one after the grace (counting it, so
// the next wait is free).
func TestLogCountSettle(t *testing.T) {
	var c logCount
	start := time.Now()
	c.settle(t.Context(), time.Hour)
	if time.Since(start) > time.Second {
		t.Fatal("settle waited with nothing pending")
	}
	c.readOne()
	go func() {
		time.Sleep(20 * time.Millisecond)
		c.handled()
	}()
	c.settle(t.Context(), time.Hour)
	c.readOne() // never handled
	start = time.Now()
	c.settle(t.Context(), 30*time.Millisecond)
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("settle returned after %v with a message pending", d)
	}
	start = time.Now()
	c.settle(t.Context(), time.Hour)
	if time.Since(start) > time.Second {
		t.Error("a lost message made the next settle wait")
	}
}

// Every upstream log message is in toolsvc's log at Debug, attributed or
// not, with the server named, its level and logger, and its data redacted
// and clipped to maxLogDataInLog.
func TestUpstreamLogsInOwnLog(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-token-value"
	s := mcp.NewServer(&mcp.Implementation{Name: "leaky", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "leak"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "notice", Logger: "auth", Data: "token " + secret + " " + strings.Repeat("x", 10<<10)})
		return &mcp.CallToolResult{}, nil, nil
	})
	mem := &memUpstream{t: t, server: s}
	t.Cleanup(mem.killSessions)
	cfg := mem.config("leaky")
	cfg.Secrets = []string{secret}
	var buf syncBuffer
	b, err := New(Config{Servers: []ServerConfig{cfg}, Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	<-b.Ready()
	if _, err := b.CallTool(t.Context(), "leaky__leak", nil, nil); err != nil { // no OnLog: logged only
		t.Fatal(err)
	}
	// Without OnLog the call does not wait for the message: it is logged
	// when the session's notification path gets to it.
	var rec map[string]any
	for deadline := time.Now().Add(10 * time.Second); rec == nil && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, line := range strings.Split(buf.String(), "\n") {
			if strings.Contains(line, `"upstream log message"`) {
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if rec == nil {
		t.Fatalf("no upstream log message in the log:\n%s", buf.String())
	}
	data, _ := rec["data"].(string)
	if rec["level"] != "DEBUG" || rec["log_level"] != "notice" || rec["server"] != "leaky" || rec["logger"] != "auth" || rec["attributed"] != false {
		t.Errorf("log record %.300v: want DEBUG, log_level notice, server leaky, logger auth, not attributed", rec)
	}
	if strings.Contains(buf.String(), secret) || !strings.Contains(data, "<redacted>") {
		t.Errorf("the secret reached the log: %.200q", data)
	}
	if len(data) > maxLogDataInLog+len("…") || len(data) < maxLogDataInLog-8 {
		t.Errorf("data in the log is %d bytes, want about %d", len(data), maxLogDataInLog)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// wireCalls: a log message read while one call taking logs is the only
// request written and not answered is that call's; with two, or with the
// only one a request of no such call, nobody's; pings do not count; a
// cancelled request counts until it is answered or the upstream answers a
// request written after the cancel.
func TestWireCallsSoleLogCall(t *testing.T) {
	w := wireCalls{m: map[jsonrpc.ID]*wireCall{}}
	alice := withInteraction(t.Context(), &Interaction{token: "alice", logs: &logSink{f: func(Log) {}}})
	bob := withInteraction(t.Context(), &Interaction{token: "bob", logs: &logSink{f: func(Log) {}}})
	call := func(ctx context.Context, id int64, method string) jsonrpc.ID {
		rid, err := jsonrpc.MakeID(float64(id))
		if err != nil {
			t.Fatal(err)
		}
		w.wrote(ctx, &jsonrpc.Request{ID: rid, Method: method})
		return rid
	}
	if w.soleLogCall() != "" {
		t.Fatal("a log call with nothing written")
	}
	a := call(alice, 1, "tools/call")
	if got := w.soleLogCall(); got != "alice" {
		t.Fatalf("alice alone: %q", got)
	}
	ping := call(t.Context(), 2, "ping")
	if got := w.soleLogCall(); got != "alice" {
		t.Fatalf("alice with a ping: %q", got)
	}
	l := call(t.Context(), 3, "tools/list")
	if got := w.soleLogCall(); got != "" {
		t.Fatalf("alice with a list in flight: %q", got)
	}
	w.answered(l)
	w.answered(ping)
	// alice gives up: her request stays outstanding after the cancel.
	w.wrote(t.Context(), &jsonrpc.Request{Method: "notifications/cancelled", Params: []byte(`{"requestId":1}`)})
	b := call(bob, 4, "tools/call")
	if got := w.soleLogCall(); got != "" {
		t.Fatalf("bob with alice's cancelled call unanswered: %q", got)
	}
	// An answer to a request written after the cancel: the upstream read it.
	w.answered(call(t.Context(), 5, "ping"))
	if got := w.soleLogCall(); got != "bob" {
		t.Fatalf("bob once the upstream answered after alice's cancel: %q", got)
	}
	w.answered(b)
	w.answered(a) // late, already forgotten
	if len(w.m) != 0 || w.soleLogCall() != "" {
		t.Fatalf("left outstanding: %v", w.m)
	}
}
