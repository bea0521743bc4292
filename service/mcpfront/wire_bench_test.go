package mcpfront

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/toolsvc/toolsvc/internal/proccpu"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service/core"
)

// BenchmarkFrontCall is one tools/call through the front door (its HTTP
// handler, go-sdk's server, the pipeline, the bridge) to tests/testserver's
// echo in a child process over stdio (protocol 2025-11-25), from a lean
// HTTP client in this process that posts fixed bytes, so that -benchmem
// and cpu-ns/op (this process's CPU time per call, getrusage) count the
// front door's side and little else: the upstream's work is in another
// process. Sub-benchmarks: the client's era (a 2025-11-25 session, or
// 2026-07-28 stateless requests), the capabilities it declares (none, or
// roots: go-sdk's client default, which makes every call an interactive
// flight in the core), and the result's path: passed through as the
// upstream sent it, or encoded from go-sdk's value (the pass-through off:
// what the front door did before it).
//
//	go test -run XXX -bench FrontCall -benchmem ./service/mcpfront
func BenchmarkFrontCall(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "testserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../../tests/testserver").CombinedOutput(); err != nil {
		b.Fatalf("building tests/testserver: %v\n%s", err, out)
	}
	br, err := mcpbridge.New(mcpbridge.Config{Servers: []mcpbridge.ServerConfig{{Name: "s", Transport: mcpbridge.TransportStdio,
		Command: bin, Args: []string{"-mode", "stdio"}, ProtocolVersion: "2025-11-25"}}})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	select {
	case <-br.Ready():
	case <-time.After(defaultTestTimeout):
		b.Fatal("bridge not ready")
	}
	c := core.New(br, core.Options{})
	// The floor: a bare go-sdk server whose tools/call handler calls a
	// go-sdk ClientSession over stdio (the bench's floor proxy,
	// tests/bench/frontfloor.go), for the same client and upstream.
	for _, caps := range []string{"none", "roots"} {
		for _, jsonResponse := range []bool{false, true} {
			answer := "sse"
			if jsonResponse {
				answer = "json"
			}
			b.Run(fmt.Sprintf("floor/%s/echo/%s", caps, answer), func(b *testing.B) {
				srv := httptest.NewServer(floorProxy(b, bin, jsonResponse))
				defer srv.Close()
				benchmarkFrontCall(b, nil, srv.URL+"/mcp", "2025-11-25", caps, "echo")
			})
		}
	}
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		for _, caps := range []string{"none", "roots"} {
			for _, result := range []string{"echo", "text16k"} {
				for _, path := range []string{"passed", "encoded"} {
					b.Run(fmt.Sprintf("%s/%s/%s/%s", era, caps, result, path), func(b *testing.B) {
						f := New(c, Options{ListenAddr: "127.0.0.1:0"})
						f.noPass = path == "encoded"
						defer f.Close()
						srv := httptest.NewServer(f.Handler())
						defer srv.Close()
						benchmarkFrontCall(b, f, srv.URL+"/mcp", era, caps, result)
					})
				}
			}
		}
	}
}

func benchmarkFrontCall(b *testing.B, f *Front, url, era, caps, result string) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer hc.CloseIdleConnections()
	capsJSON := `{}`
	if caps == "roots" {
		capsJSON = `{"roots":{"listChanged":true}}`
	}
	hdr := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}, "Mcp-Protocol-Version": {era}}
	// echo: {"text":"hello"} back; text16k: tests/testserver's big, 16 KiB
	// of text.
	tool, args, want := "s__echo", `{"text":"hello"}`, []byte(`"text":"hello"`)
	if result == "text16k" {
		tool, args, want = "s__big", `{"bytes":16384}`, []byte(`"text":"xxxxxxxx`)
	}
	post := func(body []byte) []byte {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header = hdr.Clone()
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			b.Fatalf("HTTP %d: %s", resp.StatusCode, out)
		}
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			hdr.Set("Mcp-Session-Id", sid)
		}
		return out
	}
	var call []byte
	if era == "2025-11-25" {
		post([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + capsJSON + `,"clientInfo":{"name":"bench","version":"1"}}}`))
		post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		call = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`)
	} else {
		hdr.Set("Mcp-Method", "tools/call")
		hdr.Set("Mcp-Name", tool)
		call = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `,"_meta":{` +
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},` +
			`"io.modelcontextprotocol/clientCapabilities":` + capsJSON + `}}}`)
	}
	one := func() {
		if out := post(call); !bytes.Contains(out, want) {
			b.Fatalf("unexpected answer %s", out)
		}
	}
	for range 200 { // warm up: connections, the catalog, the collector
		one()
	}
	passed := func() float64 { return 0 }
	if f != nil {
		passed = func() float64 { return testutil.ToFloat64(f.paths.callPassed) }
	}
	before := passed()
	b.ReportAllocs()
	cpu0 := proccpu.Used()
	for b.Loop() {
		one()
	}
	b.ReportMetric(float64(proccpu.Used()-cpu0)/float64(b.N), "cpu-ns/op")
	if f != nil {
		b.ReportMetric((passed()-before)/float64(b.N), "passed/op")
	}
}

// floorProxy is the floor of BenchmarkFrontCall: go-sdk's streamable
// HTTP handler (stateful, as go-sdk answers by default or as JSON) whose
// server has the upstream's tools under the front door's names, each
// answered by calling it on a go-sdk ClientSession to bin over stdio.
func floorProxy(b *testing.B, bin string, jsonResponse bool) http.Handler {
	ctx, cancel := context.WithTimeout(b.Context(), defaultTestTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "floor", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	up, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, "-mode", "stdio")},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = up.Close() })
	srv := mcp.NewServer(&mcp.Implementation{Name: "floor", Version: "1"}, nil)
	for t, err := range up.Tools(ctx, nil) {
		if err != nil {
			b.Fatal(err)
		}
		name := t.Name
		t.Name = "s__" + name
		srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return up.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: req.Params.Arguments})
		})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
	b.Cleanup(func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	return h
}
