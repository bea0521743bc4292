package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// contentTypes records, for each tools/call a client POSTs, the
// Content-Type of the front door's answer, by a key the test gives the
// call (its arguments' "text", or the tool's name).
type contentTypes struct {
	mu   sync.Mutex
	next http.RoundTripper
	got  map[string]string
}

func (c *contentTypes) RoundTrip(r *http.Request) (*http.Response, error) {
	var key string
	if r.Method == http.MethodPost && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			Method string `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					Text string `json:"text"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
			key = m.Params.Arguments.Text
			if key == "" {
				key = m.Params.Name
			}
		}
	}
	resp, err := c.next.RoundTrip(r)
	if err == nil && key != "" {
		c.mu.Lock()
		c.got[key] = resp.Header.Get("Content-Type")
		c.mu.Unlock()
	}
	return resp, err
}

func (c *contentTypes) of(key string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.got[key]
}

// TestMCPFrontJSONWhenNoStream: the front door answers a tools/call with
// one application/json response when nothing can come before the result
// (no progress token, no log level, nobody to ask), and with an event
// stream otherwise — for go-sdk's client in both eras. The answers are
// the same either way. A call answered as JSON is handled on its POST's
// own goroutine (the go-sdk patch's inline path:
// toolsvc_front_calls_inline_total counts it), a streamed one is not.
func TestMCPFrontJSONWhenNoStream(t *testing.T) {
	t.Parallel()
	// "pol": an upstream whose requests for input never reach callers
	// ("input": "policy"): a call to it cannot ask its client anything.
	proc, base := startFrontFixture(t, servers{"pol": goHTTP(startHTTPUpstream(t), upstream{Input: "policy"})})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const (
		sse     = "text/event-stream"
		appJSON = "application/json"
	)
	type call struct {
		tool, text string
		progress   bool
		want       string
	}
	for _, tc := range []struct {
		name, version string
		caps          *mcp.ClientCapabilities // nil: go-sdk's default, roots
		setLevel      bool                    // logging/setLevel before the calls (2025-11-25)
		logMeta       bool                    // a log level in each call's _meta (2026-07-28)
		calls         []call
	}{
		// 2026-07-28: an upstream that asks answers input_required, in
		// the result; only progress or log messages need a stream.
		{name: "stateless-2026-07-28", calls: []call{
			{tool: "h__echo", text: "plain-2026", want: appJSON},
			{tool: "s__echo", text: "plain-2026-stdio", want: appJSON},
			{tool: "h__echo", text: "progress-2026", progress: true, want: sse},
		}},
		{name: "stateless-2026-07-28-log-level", logMeta: true, calls: []call{
			{tool: "h__echo", text: "logs-2026", want: sse},
		}},
		// 2025-11-25, go-sdk's default capabilities (roots): a call may
		// be asked for roots unless its upstream cannot ask.
		{name: "session-2025-11-25-roots", version: "2025-11-25", calls: []call{
			{tool: "h__echo", text: "roots-relay", want: sse},
			{tool: "pol__echo", text: "roots-policy", want: appJSON},
			{tool: "pol__echo", text: "roots-policy-progress", progress: true, want: sse},
		}},
		// A client that declares nothing it could be asked.
		{name: "session-2025-11-25-no-caps", version: "2025-11-25", caps: &mcp.ClientCapabilities{}, calls: []call{
			{tool: "h__echo", text: "nocaps-relay", want: appJSON},
			{tool: "s__echo", text: "nocaps-stdio", want: appJSON},
			{tool: "h__echo", text: "nocaps-progress", progress: true, want: sse},
		}},
		// A session that set a log level gets its calls' log messages.
		{name: "session-2025-11-25-logging", version: "2025-11-25", caps: &mcp.ClientCapabilities{}, setLevel: true, calls: []call{
			{tool: "h__echo", text: "logging-relay", want: sse},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &contentTypes{next: http.DefaultTransport, got: map[string]string{}}
			client := mcp.NewClient(&mcp.Implementation{Name: "frontdoor-json-test", Version: "1"}, &mcp.ClientOptions{Capabilities: tc.caps})
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: rec}},
				&mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			if tc.setLevel {
				if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
					t.Fatalf("logging/setLevel: %v", err)
				}
			}
			// A listing first: a call that arrives while the session's
			// notifications/initialized is still queued is queued behind
			// it, not handled inline.
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			for _, c := range tc.calls {
				inline := metricValue(t, proc, "toolsvc_front_calls_inline_total")
				p := &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{"text": c.text}}
				if tc.logMeta {
					p.Meta = mcp.Meta{mcp.MetaKeyLogLevel: "debug"}
				}
				if c.progress {
					p.SetProgressToken("tok-" + c.text)
				}
				res, err := cs.CallTool(ctx, p)
				if err != nil || res.IsError || callText(t, res) != c.text {
					t.Fatalf("%s(%q): %v %+v", c.tool, c.text, err, res)
				}
				if got := rec.of(c.text); !strings.HasPrefix(got, c.want) {
					t.Errorf("%s(%q), progress token %v: answered with Content-Type %q, want %s", c.tool, c.text, c.progress, got, c.want)
				}
				want := inline
				if c.want == appJSON {
					want++
				}
				if got := metricValue(t, proc, "toolsvc_front_calls_inline_total"); got != want {
					t.Errorf("%s(%q), answered as %s: toolsvc_front_calls_inline_total %v -> %v, want %v", c.tool, c.text, c.want, inline, got, want)
				}
			}
		})
	}
}
