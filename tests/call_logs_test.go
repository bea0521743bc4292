package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Upstream log messages (MCP notifications/message) during a call reach
// the caller: CallToolStream's log events (input_capabilities.log_level)
// and the front door's notifications/message (docs/calls.md, "Log messages").

// streamEvents reads a CallToolStream to its end: one line per event
// ("p<progress>" or "log <level> <logger> <server> <data_json>"), the
// result, and the final error.
func streamEvents(t *testing.T, s grpc.ServerStreamingClient[toolsvcv1.CallToolStreamResponse]) ([]string, *toolsvcv1.CallToolResponse, error) {
	t.Helper()
	var events []string
	var result *toolsvcv1.CallToolResponse
	for {
		msg, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return events, result, nil
		}
		if err != nil {
			return events, result, err
		}
		if result != nil {
			t.Fatalf("a message after the result: %v", msg)
		}
		switch ev := msg.GetEvent().(type) {
		case *toolsvcv1.CallToolStreamResponse_Progress:
			events = append(events, fmt.Sprintf("p%v", ev.Progress.GetProgress()))
		case *toolsvcv1.CallToolStreamResponse_Log:
			l := ev.Log
			events = append(events, fmt.Sprintf("log %s %s %s %s", l.GetLevel(), l.GetLogger(), l.GetServer(), l.GetDataJson()))
		case *toolsvcv1.CallToolStreamResponse_Result:
			result = ev.Result
		default:
			t.Fatalf("stream message with no event: %v", msg)
		}
	}
}

// levelsEvents is what log_levels streams from level from on: a log event
// for each level at or above from, each followed by its progress step.
func levelsEvents(server, tag, from string) []string {
	var out []string
	on := false
	for i, l := range []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"} {
		on = on || l == from
		if on && from != "" {
			out = append(out, fmt.Sprintf(`log %s levels %s {"i":%d,"tag":%q}`, l, server, i, tag))
		}
		out = append(out, fmt.Sprintf("p%d", i+1))
	}
	return out
}

// TestCallToolStreamLogs: a tool that logs at every level streams the log
// events at or above the caller's level, in order with its progress and
// before the result, from stdio and HTTP upstreams of both protocol eras
// (go-sdk) and from Python SDK servers (ctx.debug/info/warning/error);
// without log_level nothing is logged to the caller; an invalid level is
// INVALID_ARGUMENT naming input_capabilities.log_level; unary CallTool
// accepts the field and sends no logs.
func TestCallToolStreamLogs(t *testing.T) {
	t.Parallel()
	script := filepath.Join(rootDir(t), "tests", "python", "logging_server.py")
	py := venvBin(t, "mcp", "python")
	port := freePort(t)
	pyHTTP := startProc(t, exec.Command(py, script, "streamable-http", fmt.Sprint(port)))
	waitTCP(t, fmt.Sprintf("127.0.0.1:%d", port), 30*time.Second, pyHTTP)
	statelessURL := startProc(t, exec.Command(bin.testserver, "-mode", "http-stateless")).log.waitFor(t, urlLineRE, 30*time.Second)
	p := startCallFixture(t, servers{
		"s26": goStdio(upstream{ProtocolVersion: "2026-07-28"}),
		"h26": goHTTP(statelessURL, upstream{ProtocolVersion: "2026-07-28"}),
		"py":  {Command: py, Args: []string{script, "stdio"}},
		"pyh": goHTTP(fmt.Sprintf("http://127.0.0.1:%d/mcp", port), upstream{}),
	})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	stream := func(tool, args, level string) ([]string, *toolsvcv1.CallToolResponse, error) {
		req := &toolsvcv1.CallToolStreamRequest{Name: tool, ArgumentsJson: args}
		if level != "" {
			req.InputCapabilities = &toolsvcv1.InputCapabilities{LogLevel: level}
		}
		s, err := p.client.CallToolStream(ctx, req)
		if err != nil {
			return nil, nil, err
		}
		return streamEvents(t, s)
	}

	for _, server := range []string{"s", "h", "s26", "h26"} {
		t.Run(server, func(t *testing.T) {
			for _, level := range []string{"debug", "warning", "emergency", ""} {
				tag := server + "-" + level
				events, res, err := stream(server+"__log_levels", fmt.Sprintf(`{"tag":%q}`, tag), level)
				if err != nil || resultText(res) != "logged "+tag {
					t.Fatalf("CallToolStream(%s__log_levels, log_level %q) = %v, %v", server, level, res, err)
				}
				if level == "" {
					// Progress alone may lose its last steps to the result
					// (the bridge waits for it only while it is incomplete);
					// what matters here is that no log event comes.
					for _, e := range events {
						if strings.HasPrefix(e, "log ") {
							t.Errorf("without log_level: event %q", e)
						}
					}
					continue
				}
				if want := levelsEvents(server, tag, level); strings.Join(events, "\n") != strings.Join(want, "\n") {
					t.Errorf("log_level %q: events\n%s\nwant\n%s", level, strings.Join(events, "\n"), strings.Join(want, "\n"))
				}
			}
		})
	}
	for _, server := range []string{"py", "pyh"} {
		t.Run(server, func(t *testing.T) {
			events, res, err := stream(server+"__chatty", `{"tag":"t"}`, "info")
			if err != nil || resultText(res) != "chatty t" {
				t.Fatalf("CallToolStream(%s__chatty) = %v, %v", server, res, err)
			}
			var logs []string
			for _, e := range events {
				if strings.HasPrefix(e, "log ") {
					logs = append(logs, e)
				}
			}
			want := []string{
				fmt.Sprintf(`log info chatty %s "t info"`, server),
				fmt.Sprintf(`log warning chatty %s "t warning"`, server),
				fmt.Sprintf(`log error chatty %s "t error"`, server),
			}
			if strings.Join(logs, "\n") != strings.Join(want, "\n") {
				t.Errorf("log events\n%s\nwant\n%s", strings.Join(logs, "\n"), strings.Join(want, "\n"))
			}
		})
	}

	_, _, err := stream("s__log_levels", "", "verbose")
	wantStatus(t, err, codes.InvalidArgument, "REQUEST_INVALID", "", "")
	if f := fieldViolations(err); len(f) != 1 || f[0] != "input_capabilities.log_level" {
		t.Errorf("violations %v, want input_capabilities.log_level", f)
	}
	_, err = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "s__log_levels", InputCapabilities: &toolsvcv1.InputCapabilities{LogLevel: "WARN"}})
	wantStatus(t, err, codes.InvalidArgument, "REQUEST_INVALID", "", "")
	res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "s__log_levels", ArgumentsJson: `{"tag":"u"}`,
		InputCapabilities: &toolsvcv1.InputCapabilities{LogLevel: "debug"}})
	if err != nil || resultText(res) != "logged u" || res.GetInputRequired() != nil {
		t.Errorf("unary CallTool with log_level = %v, %v; want the plain result", res, err)
	}
}

// logCollector is a front-door client's LoggingMessageHandler.
type logCollector struct {
	mu   sync.Mutex
	msgs []string
}

func (c *logCollector) handle(_ context.Context, r *mcp.LoggingMessageRequest) {
	data, _ := json.Marshal(r.Params.Data)
	c.mu.Lock()
	c.msgs = append(c.msgs, fmt.Sprintf("%s %s %s", r.Params.Level, r.Params.Logger, data))
	c.mu.Unlock()
}

// waitFor waits until n messages came (the client handles notifications
// on its own queue, so the last may land just after the result), then a
// little more so extra ones would show.
func (c *logCollector) waitFor(n int) []string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		got := len(c.msgs)
		c.mu.Unlock()
		if got >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.msgs
	c.msgs = nil
	return out
}

// TestFrontDoorLogs: the front door relays an upstream's log messages to
// a go-sdk client as notifications/message, logger "<server>/<logger>",
// filtered by the level the client set with logging/setLevel (nothing
// before it set one), or for a 2026-07-28 client by its request's _meta
// level (nothing without one).
func TestFrontDoorLogs(t *testing.T) {
	t.Parallel()
	p := startToolsvc(t, cfg{Servers: servers{"s": goStdio(upstream{}), "n": goStdio(upstream{ProtocolVersion: "2026-07-28"})}},
		"--mcp-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	endpoint := "http://" + p.mcpAddr + "/mcp"
	levels := []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
	want := func(server, tag string, from int) []string {
		var out []string
		for i := from; i < len(levels); i++ {
			out = append(out, fmt.Sprintf(`%s %s/levels {"i":%d,"tag":%q}`, levels[i], server, i, tag))
		}
		return out
	}
	call := func(cs *mcp.ClientSession, tool, tag string, meta mcp.Meta) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"tag": tag}, Meta: meta})
		if err != nil || res.IsError || callText(t, res) != "logged "+tag {
			t.Fatalf("%s through the front door: %v, %v", tool, res, err)
		}
	}

	var old logCollector
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "listener", Version: "1"}, &mcp.ClientOptions{LoggingMessageHandler: old.handle}).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if cs.InitializeResult().Capabilities.Logging == nil {
		t.Error("the front door does not declare the logging capability")
	}
	for _, server := range []string{"s", "n"} {
		call(cs, server+"__log_levels", "unset", nil)
	}
	if got := old.waitFor(1); len(got) != 0 {
		t.Errorf("messages before the client set a level: %q", got)
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "error"}); err != nil {
		t.Fatal(err)
	}
	for _, server := range []string{"s", "n"} {
		call(cs, server+"__log_levels", "set", nil)
		if got, w := old.waitFor(4), want(server, "set", 4); strings.Join(got, "\n") != strings.Join(w, "\n") {
			t.Errorf("%s at level error: got\n%s\nwant\n%s", server, strings.Join(got, "\n"), strings.Join(w, "\n"))
		}
	}

	var nw logCollector
	cs26, err := mcp.NewClient(&mcp.Implementation{Name: "listener26", Version: "1"}, &mcp.ClientOptions{LoggingMessageHandler: nw.handle}).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs26.Close()
	for _, server := range []string{"s", "n"} {
		call(cs26, server+"__log_levels", "none", nil)
		if got := nw.waitFor(1); len(got) != 0 {
			t.Errorf("%s: a 2026-07-28 request without a level got %q", server, got)
		}
		call(cs26, server+"__log_levels", "meta", mcp.Meta{mcp.MetaKeyLogLevel: "critical"})
		if got, w := nw.waitFor(3), want(server, "meta", 5); strings.Join(got, "\n") != strings.Join(w, "\n") {
			t.Errorf("%s at _meta level critical: got\n%s\nwant\n%s", server, strings.Join(got, "\n"), strings.Join(w, "\n"))
		}
	}
}

// TestFrontDoorAsksNoUnwantedLogs: a call through the front door from a
// 2025-11-25 session whose client set no log level (go-sdk sends it no log
// message) asks a 2026-07-28 upstream for none: its request's _meta has no
// logLevel, so the upstream does not log into a relay that would drop
// every line. Once the client sets a level, the upstream is asked for
// every level (the front door relays them and go-sdk filters by the
// client's).
func TestFrontDoorAsksNoUnwantedLogs(t *testing.T) {
	t.Parallel()
	p := startToolsvc(t, cfg{Servers: servers{"n": goStdio(upstream{ProtocolVersion: "2026-07-28"})}}, "--mcp-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	var logs logCollector
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "quiet", Version: "1"}, &mcp.ClientOptions{LoggingMessageHandler: logs.handle}).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + p.mcpAddr + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	asked := func() string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "n__log_level_asked", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("n__log_level_asked through the front door: %v, %v", res, err)
		}
		return callText(t, res)
	}
	if got := asked(); got != "none" {
		t.Errorf("before the client set a level, the upstream was asked for log level %q; want none", got)
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	if got := asked(); got != "debug" {
		t.Errorf("after the client set a level, the upstream was asked for log level %q; want debug", got)
	}
}

// TestLogsStayWithTheirCaller: with toolsvc at
// --log-level debug, a stdio upstream (go-sdk) logs a backlog of 16,000
// lines during alice's call; bob's call right after, on the same session,
// with log_level debug, gets none of alice's lines, and of his own only
// lines with his tag (a line read while his call was the only request in
// flight is his; one still queued behind alice's backlog when his result
// comes may be dropped, never given to someone else). Alice herself gets
// only lines of hers.
func TestLogsStayWithTheirCaller(t *testing.T) {
	t.Parallel()
	const aliceTok, bobTok = "tok-alice-logs-0123456789", "tok-bob-logs-0123456789"
	p := startToolsvc(t, cfg{
		Auth: &authCfg{Tokens: map[string]string{"alice": aliceTok, "bob": bobTok},
			Rules: []rule{{Principal: "alice", Allow: []string{"s__*"}}, {Principal: "bob", Allow: []string{"s__*"}}}},
		Servers: servers{"s": goStdio(upstream{})},
	}, "--log-level", "debug")
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	stream := func(tok, tag string, repeat int) []string {
		t.Helper()
		s, err := p.client.CallToolStream(bearerCtx(ctx, tok), &toolsvcv1.CallToolStreamRequest{Name: "s__log_levels",
			ArgumentsJson: fmt.Sprintf(`{"tag":%q,"repeat":%d}`, tag, repeat), InputCapabilities: &toolsvcv1.InputCapabilities{LogLevel: "debug"}})
		if err != nil {
			t.Fatalf("CallToolStream(%s) = %v", tag, err)
		}
		events, res, err := streamEvents(t, s)
		if err != nil || resultText(res) != "logged "+tag {
			t.Fatalf("CallToolStream(%s) = %v, %v", tag, res, err)
		}
		var logs []string
		for _, e := range events {
			if strings.HasPrefix(e, "log ") {
				logs = append(logs, e)
			}
		}
		return logs
	}
	for round := range 3 {
		alice := stream(aliceTok, fmt.Sprintf("alice%d", round), 2000)
		bob := stream(bobTok, fmt.Sprintf("bob%d", round), 1)
		for _, l := range alice {
			if !strings.Contains(l, fmt.Sprintf(`"tag":"alice%d"`, round)) {
				t.Fatalf("round %d: alice got a line not of her call: %s", round, l)
			}
		}
		foreign := 0
		for _, l := range bob {
			if !strings.Contains(l, fmt.Sprintf(`"tag":"bob%d"`, round)) {
				foreign++
			}
		}
		if foreign > 0 {
			t.Fatalf("round %d: bob got %d lines not of his call (of %d; alice got %d of her 16000), first %s", round, foreign, len(bob), len(alice), bob[0])
		}
		t.Logf("round %d: alice got %d of her 16000 lines, bob %d of his 8", round, len(alice), len(bob))
	}
}
