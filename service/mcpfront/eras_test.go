package mcpfront

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service/core"
)

// eraBridge is a bridge to a go-sdk upstream ("u") of protocol with a
// tool, a resource (whose read says ttlMs 5000 and cacheScope public), a
// template, a prompt and completions.
func eraBridge(t *testing.T, protocol string) *mcpbridge.Bridge {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "eras", Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"a"}}}, nil
		}})
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "era://r", Name: "r"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			res := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "r"}}}
			res.TTLMs, res.CacheScope = 5000, "public"
			return res, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "era://t/{x}", Name: "t"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "t"}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "p", Arguments: []*mcp.PromptArgument{{Name: "x"}}},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "p"}}}}, nil
		})
	var mu sync.Mutex
	var sessions []*mcp.ServerSession
	b, err := mcpbridge.New(mcpbridge.Config{Servers: []mcpbridge.ServerConfig{{Name: "u", ProtocolVersion: protocol,
		NewTransport: func() (mcp.Transport, error) {
			ct, st := mcp.NewInMemoryTransports()
			ss, err := s.Connect(context.Background(), st, nil)
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

// TestEraResults: every result the front door answers is what its
// request's era has (eras.go), as sent on the wire, from an upstream of
// either era: in 2026-07-28 a resultType "complete" on each, ttlMs and
// cacheScope "private" on each list and read (the read keeps its
// upstream's ttlMs, not its "public"), none on the others; before, none of
// the three anywhere (a 2026-07-28 upstream's resultType included).
func TestEraResults(t *testing.T) {
	for _, upProto := range []string{"2025-11-25", "2026-07-28"} {
		t.Run("upstream-"+upProto, func(t *testing.T) {
			f := New(core.New(eraBridge(t, upProto), core.Options{}), Options{ListenAddr: "127.0.0.1:0"})
			t.Cleanup(f.Close)
			srv := httptest.NewServer(f.Handler())
			t.Cleanup(srv.Close)
			for _, client := range []struct{ name, protocol string }{{"2025-11-25", "2025-11-25"}, {"2026-07-28", ""}} {
				t.Run(client.name, func(t *testing.T) {
					ctx := ctxT(t)
					cs, rec := frontClient(t, srv.URL, client.protocol, nil)
					modern := client.protocol == ""
					for _, m := range []struct {
						method    string
						cacheable bool
						wantTTL   float64
						send      func() error
					}{
						{"tools/list", true, 0, func() error { _, err := cs.ListTools(ctx, nil); return err }},
						{"tools/call", false, 0, func() error {
							_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "u__echo", Arguments: map[string]any{}})
							return err
						}},
						{"resources/list", true, 0, func() error { _, err := cs.ListResources(ctx, nil); return err }},
						{"resources/templates/list", true, 0, func() error { _, err := cs.ListResourceTemplates(ctx, nil); return err }},
						{"resources/read", true, 5000, func() error {
							_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "era://r"})
							return err
						}},
						{"resources/read template", true, 0, func() error {
							_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "era://t/1"})
							return err
						}},
						{"prompts/list", true, 0, func() error { _, err := cs.ListPrompts(ctx, nil); return err }},
						{"prompts/get", false, 0, func() error {
							_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "u__p"})
							return err
						}},
						{"completion/complete", false, 0, func() error {
							_, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "u__p"},
								Argument: mcp.CompleteParamsArgument{Name: "x", Value: ""}})
							return err
						}},
					} {
						if err := m.send(); err != nil {
							t.Fatalf("%s: %v", m.method, err)
						}
						res, errObj := rec.answer(t)
						if errObj != nil {
							t.Fatalf("%s: error %s", m.method, errObj)
						}
						var keys map[string]json.RawMessage
						if err := json.Unmarshal(res, &keys); err != nil {
							t.Fatalf("%s: %s: %v", m.method, res, err)
						}
						rt, hasRT := keys["resultType"]
						ttl, hasTTL := keys["ttlMs"]
						scope, hasScope := keys["cacheScope"]
						switch {
						case !modern && (hasRT || hasTTL || hasScope):
							t.Errorf("%s to a 2025-11-25 client: %s has 2026-07-28 fields", m.method, res)
						case modern && string(rt) != `"complete"`:
							t.Errorf("%s to a 2026-07-28 client: %s has no resultType complete", m.method, res)
						case modern && m.cacheable && (string(scope) != `"private"` || string(ttl) != jsonNumber(m.wantTTL)):
							t.Errorf("%s to a 2026-07-28 client: %s, want ttlMs %v and cacheScope private", m.method, res, m.wantTTL)
						case modern && !m.cacheable && (hasTTL || hasScope):
							t.Errorf("%s to a 2026-07-28 client: %s has cache fields", m.method, res)
						}
					}
				})
			}
		})
	}
}

func jsonNumber(v float64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestRequestEraTaskWithoutParams: a tasks/list comes without params, and
// go-sdk's ProtocolVersion panics on those; requestEra must not (a
// 2025-11-25 client's tasks/list ended the process through eraResult).
func TestRequestEraTaskWithoutParams(t *testing.T) {
	if requestEra(&mcp.ServerRequest[*taskParams]{}) {
		t.Errorf("requestEra(tasks/list without params or session) = true, want false")
	}
}
