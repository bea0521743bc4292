package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// answerRecorder keeps the body of the last tools/call or resources/read
// POST a front-door client got an answer to (JSON or SSE), as sent.
type answerRecorder struct {
	mu   sync.Mutex
	last []byte
}

func (r *answerRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var sent []byte
	if req.Body != nil {
		sent, _ = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(sent))
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	// Only answers to calls and reads: a listen stream does not end.
	if err != nil || !bytes.Contains(sent, []byte(`"tools/call"`)) && !bytes.Contains(sent, []byte(`"resources/read"`)) {
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

// answer is the result or error of the JSON-RPC response in the last body,
// decoded as a client reads it, without the keys whose absence means the
// same (isError false, an empty _meta: go-sdk's encoding leaves them out,
// the pass-through sends them as the upstream wrote them).
func (r *answerRecorder) answer(t *testing.T) (result, errObj any) {
	t.Helper()
	r.mu.Lock()
	body := r.last
	r.mu.Unlock()
	msgs := [][]byte{body}
	for _, line := range bytes.Split(body, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			msgs = append(msgs, d)
		}
	}
	for _, m := range msgs {
		var w struct {
			Result any `json:"result"`
			Error  any `json:"error"`
		}
		if json.Unmarshal(m, &w) == nil && (w.Result != nil || w.Error != nil) {
			stripSameAsAbsent(w.Result)
			return w.Result, w.Error
		}
	}
	t.Fatalf("no JSON-RPC response in %q", body)
	return nil, nil
}

func stripSameAsAbsent(v any) {
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
				stripSameAsAbsent(e)
			}
		}
	case []any:
		for _, e := range v {
			stripSameAsAbsent(e)
		}
	}
}

// frontResults is toolsvc_front_results_total{method, path} from /metrics.
func frontResults(t *testing.T, p *toolsvcProc, method, path string) int {
	t.Helper()
	n := 0
	for _, line := range strings.Split(scrape(t, p.adminAddr), "\n") {
		if strings.HasPrefix(line, "toolsvc_front_results_total{") && strings.Contains(line, `method="`+method+`"`) && strings.Contains(line, `path="`+path+`"`) {
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			n += int(v)
		}
	}
	return n
}

// TestMCPFrontPassThrough: tools/call and resources/read results cross
// the front door as the upstream sent them when they need no change, with
// real upstreams of both protocol eras (the go-sdk test server over stdio,
// whose results pass through, and over streamable HTTP, whose results
// take the slow path: go-sdk's streamable client connection cannot be
// wrapped) and go-sdk clients of both eras. Every result is what the slow
// path sends for the same call to the same server over HTTP, as a client
// reads it; results over the response limit are refused on the raw bytes;
// and the pass-through is counted (toolsvc_front_results_total).
func TestMCPFrontPassThrough(t *testing.T) {
	t.Parallel()
	stateless := startProc(t, exec.Command(bin.testserver, "-mode", "http-stateless", "-addr", "127.0.0.1:0"))
	statelessURL := stateless.log.waitFor(t, urlLineRE, 30*time.Second)
	// s and h: 2025-11-25; n and hn: 2026-07-28 (go-sdk's stateful HTTP
	// server has no 2026-07-28, its stateless one has).
	p, base := startFrontFixture(t, servers{
		"n":  goStdio(upstream{ProtocolVersion: "2026-07-28"}),
		"hn": goHTTP(statelessURL, upstream{ProtocolVersion: "2026-07-28"}),
	}, "--max-response-bytes", "4096")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	type op struct {
		name string
		do   func(cs *mcp.ClientSession, server string) error
	}
	call := func(tool string, args map[string]any) op {
		return op{tool, func(cs *mcp.ClientSession, server string) error {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server + "__" + tool, Arguments: args})
			return err
		}}
	}
	ops := []op{
		call("all_content", nil),
		call("echo", map[string]any{"text": "héllo <&> \u2028"}),
		call("big", map[string]any{"bytes": 3000}),
	}
	for _, client := range []struct{ name, version string }{{"2025-11-25", "2025-11-25"}, {"2026-07-28", ""}} {
		t.Run("client-"+client.name, func(t *testing.T) {
			rec := &answerRecorder{}
			c := connectGoFront(t, ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: rec}}, client.version)
			for _, pair := range [][2]string{{"s", "h"}, {"n", "hn"}} {
				for _, o := range ops {
					callsBefore := frontResults(t, p, "tools/call", "passed")
					rawErr := o.do(c.cs, pair[0])
					rawRes, rawErrObj := rec.answer(t)
					passed := frontResults(t, p, "tools/call", "passed") - callsBefore
					slowErr := o.do(c.cs, pair[1])
					slowRes, slowErrObj := rec.answer(t)
					if (rawErr == nil) != (slowErr == nil) || !reflect.DeepEqual(rawRes, slowRes) || !reflect.DeepEqual(rawErrObj, slowErrObj) {
						t.Errorf("%s on %s (stdio) and %s (HTTP):\n stdio: %v %v %v\n  HTTP: %v %v %v", o.name, pair[0], pair[1], rawErr, rawRes, rawErrObj, slowErr, slowRes, slowErrObj)
					}
					if passed != 1 {
						t.Errorf("%s on %s: %d results passed through, want 1", o.name, pair[0], passed)
					}
				}
			}
			// The front door's own result (arguments its schema refuses) is
			// encoded.
			before := frontResults(t, p, "tools/call", "encoded")
			res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__echo", Arguments: map[string]any{"text": 5}})
			if err != nil || !res.IsError {
				t.Errorf("s__echo with a number: %v %+v, want a tool error", err, res)
			}
			if n := frontResults(t, p, "tools/call", "encoded") - before; n != 1 {
				t.Errorf("the front door's own result: %d encoded, want 1", n)
			}
			// A result over the response limit, refused on the raw bytes.
			_, err = c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__big", Arguments: map[string]any{"bytes": 5000}})
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || !strings.Contains(string(werr.Data), "RESPONSE_TOO_LARGE") {
				t.Errorf("a 5000-byte result over a 4096-byte limit: %v, want RESPONSE_TOO_LARGE", err)
			}
		})
	}
	t.Logf("results passed through: %d calls, %d reads; encoded: %d calls, %d reads",
		frontResults(t, p, "tools/call", "passed"), frontResults(t, p, "resources/read", "passed"),
		frontResults(t, p, "tools/call", "encoded"), frontResults(t, p, "resources/read", "encoded"))
}

// TestMCPFrontPassThroughReads: resources/read results from a go-sdk
// upstream over stdio of each era, to go-sdk clients of each era, pass
// through: the contents as the upstream sent them, and the server named
// in _meta as the slow path names it.
func TestMCPFrontPassThroughReads(t *testing.T) {
	t.Parallel()
	for _, upProto := range []string{"2025-11-25", "2026-07-28"} {
		t.Run("upstream-"+upProto, func(t *testing.T) {
			t.Parallel()
			file := resourcesModeFile(t, "resources")
			p := startToolsvc(t, cfg{Servers: servers{"r": goStdio(upstream{ProtocolVersion: upProto, Env: map[string]string{"TESTSERVER_RESOURCES_FILE": file}})}},
				"--mcp-listen", "127.0.0.1:0")
			base := "http://" + p.mcpAddr
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for _, client := range []struct{ name, version string }{{"2025-11-25", "2025-11-25"}, {"2026-07-28", ""}} {
				rec := &answerRecorder{}
				c := connectGoFront(t, ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: rec}}, client.version)
				before := frontResults(t, p, "resources/read", "passed")
				if _, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://hello"}); err != nil {
					t.Fatalf("client %s: read test://hello: %v", client.name, err)
				}
				res, _ := rec.answer(t)
				m, _ := res.(map[string]any)
				want := []any{map[string]any{"uri": "test://hello", "mimeType": "text/plain", "text": "hello from go"}}
				if !reflect.DeepEqual(m["contents"], want) {
					t.Errorf("client %s: contents %v, want %v", client.name, m["contents"], want)
				}
				meta, _ := m["_meta"].(map[string]any)
				info, _ := meta["io.modelcontextprotocol/serverInfo"].(map[string]any)
				// A 2026-07-28 upstream names itself in every result's
				// _meta, which goes to the client as it is (the slow path
				// keeps the upstream's _meta too); otherwise a 2026-07-28
				// client gets toolsvc's name, and an older one none.
				wantName := ""
				switch {
				case upProto == "2026-07-28":
					wantName = "push-victim"
				case client.version == "":
					wantName = "toolsvc"
				}
				if got, _ := info["name"].(string); got != wantName {
					t.Errorf("client %s: serverInfo %v, want the name %q", client.name, info, wantName)
				}
				if n := frontResults(t, p, "resources/read", "passed") - before; n != 1 {
					t.Errorf("client %s: %d reads passed through, want 1", client.name, n)
				}
			}
		})
	}
}
