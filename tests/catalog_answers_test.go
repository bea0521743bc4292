package tests

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// catalogAnswersGolden holds the catalog answers of TestCatalogAnswersUnchanged
// as a toolsvc built from main before the re-list kept schemas as text
// (aaa3c5e) gave them; TOOLSVC_UPDATE_GOLDEN=1 writes it anew.
const catalogAnswersGolden = "testdata/catalog_answers.golden.json"

// TestCatalogAnswersUnchanged: what a caller reads of the catalog —
// ListTools with Struct and with JSON schemas, WatchCatalog's snapshot,
// the front door's tools/list — from real go-sdk (stdio and streamable
// HTTP), TypeScript SDK and Python SDK upstreams is byte for byte what the
// toolsvc before the change answered (the golden file), after the first
// listing and again after each upstream was re-listed with nothing
// changed: the re-list path that shares the schemas decoded before.
func TestCatalogAnswersUnchanged(t *testing.T) {
	t.Parallel()
	ts := startMatrixUpstream(t, sdkTS, trHTTP)
	py := startMatrixUpstream(t, sdkPython, trHTTP)
	c := cfg{Servers: servers{
		"gostdio": goStdio(upstream{PingInterval: "1h"}),
		"gohttp":  goHTTP(startHTTPUpstream(t), upstream{PingInterval: "1h"}),
		"ts":      ts.server(upstream{PingInterval: "1h"}),
		"tsstdio": startMatrixUpstream(t, sdkTS, trStdio).server(upstream{PingInterval: "1h"}),
		"py":      py.server(upstream{PingInterval: "1h"}),
	}}
	p := startToolsvc(t, c, "--mcp-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), 3*defaultTestTimeout)
	defer cancel()
	names := []string{"gohttp", "gostdio", "py", "ts", "tsstdio"}
	eventually(t, 60*time.Second, "every upstream listed", func() bool {
		resp, err := p.client.ListServers(ctx, &toolsvcv1.ListServersRequest{})
		if err != nil {
			return false
		}
		listed := 0
		for _, s := range resp.GetServers() {
			if s.GetToolCount() > 0 {
				listed++
			}
		}
		return listed == len(names)
	})
	got := map[string]string{}
	collect := func(round string) {
		got[round+" ListTools"] = listToolsBytes(t, ctx, p.client, toolsvcv1.SchemaFormat_SCHEMA_FORMAT_UNSPECIFIED)
		got[round+" ListTools JSON"] = listToolsBytes(t, ctx, p.client, toolsvcv1.SchemaFormat_SCHEMA_FORMAT_JSON)
		got[round+" WatchCatalog"] = watchSnapshotBytes(t, ctx, p.client)
		got[round+" front door tools/list"] = frontToolsList(t, ctx, "http://"+p.mcpAddr)
	}
	collect("listed")
	admin := toolsvcv1.NewAdminServiceClient(grpcConn(t, p.addr))
	for _, name := range names {
		if _, err := admin.RefreshServer(ctx, &toolsvcv1.RefreshServerRequest{Name: name}); err != nil {
			t.Fatalf("RefreshServer %s: %v", name, err)
		}
	}
	collect("re-listed")
	for _, what := range []string{"ListTools", "ListTools JSON", "WatchCatalog", "front door tools/list"} {
		if got["listed "+what] != got["re-listed "+what] {
			t.Errorf("%s changed when the upstreams were re-listed with nothing changed", what)
		}
	}
	if os.Getenv("TOOLSVC_UPDATE_GOLDEN") == "1" {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(catalogAnswersGolden, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", catalogAnswersGolden)
		return
	}
	b, err := os.ReadFile(filepath.Clean(catalogAnswersGolden))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(got) {
		t.Fatalf("the golden file has %d answers, the test %d", len(want), len(got))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s differs from the answer before the change:\n got %s\nwant %s", k, readable(t, k, got[k]), readable(t, k, w))
		}
	}
}

// listToolsBytes is every page of ListTools in format, as the messages'
// deterministic wire bytes (base64, one line a page).
func listToolsBytes(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient, format toolsvcv1.SchemaFormat) string {
	t.Helper()
	var out []string
	tok := ""
	for {
		resp, err := c.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: 7, PageToken: tok, SchemaFormat: format})
		if err != nil {
			t.Fatalf("ListTools: %v", err)
		}
		tok = resp.GetNextPageToken()
		resp.NextPageToken = "" // a token names its replica's pin, not the content
		out = append(out, wireBytes(t, resp))
		if tok == "" {
			break
		}
	}
	return strings.Join(out, "\n")
}

// watchSnapshotBytes is WatchCatalog's first snapshot (its fragments
// joined), as deterministic wire bytes.
func watchSnapshotBytes(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient) string {
	t.Helper()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := startWatch(t, wctx, c, "")
	var out []string
	for {
		ev := w.next(t, 30*time.Second)
		if ev.GetSnapshot() == nil {
			continue
		}
		out = append(out, wireBytes(t, ev))
		if !ev.GetFragment() {
			return strings.Join(out, "\n")
		}
	}
}

func wireBytes(t *testing.T, m proto.Message) string {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// frontToolsList is the front door's JSON-RPC answer to tools/list in a
// 2025-11-25 session.
func frontToolsList(t *testing.T, ctx context.Context, base string) string {
	t.Helper()
	post := func(sid, body string) (string, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
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
		if resp.StatusCode/100 != 2 {
			t.Fatalf("front door %s: HTTP %d: %s", body, resp.StatusCode, b)
		}
		return resp.Header.Get("Mcp-Session-Id"), string(b)
	}
	sid, _ := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"answers-test","version":"1"}}}`)
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	_, body := post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	// The JSON-RPC answer, whether it came as application/json or as an
	// event stream's data (how it is framed is not the catalog's answer).
	var data []string
	for _, line := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(data, d)
		}
	}
	if len(data) > 0 {
		return strings.Join(data, "\n")
	}
	return strings.TrimSpace(body)
}

// readable shows an answer for a failure message: the front door's as it
// is, a gRPC answer as text.
func readable(t *testing.T, key, s string) string {
	if strings.HasSuffix(key, "tools/list") {
		return s
	}
	var parts []string
	for _, line := range strings.Split(s, "\n") {
		b, err := base64.StdEncoding.DecodeString(line)
		if err != nil {
			return s
		}
		var m proto.Message = &toolsvcv1.ListToolsResponse{}
		if strings.HasSuffix(key, "WatchCatalog") {
			m = &toolsvcv1.WatchCatalogResponse{}
		}
		if err := proto.Unmarshal(b, m); err != nil {
			return s
		}
		parts = append(parts, prototext.Format(m))
	}
	return fmt.Sprint(parts)
}
