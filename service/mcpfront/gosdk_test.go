package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk behaviour gosdk.go relies on, pinned. When one of these fails
// after a go-sdk upgrade, re-check the workaround it names, then update
// the pin.

// TestGoSDKVersion: the workarounds were written against go-sdk v1.8.0.
func TestGoSDKVersion(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/modelcontextprotocol/go-sdk").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	if v := strings.TrimSpace(string(out)); v != "v1.8.0" {
		t.Fatalf("go-sdk %s: re-check every workaround in gosdk.go against it, then update this pin", v)
	}
}

// TestGoSDKMarkersSendOneListChanged: adding and removing a marker makes
// go-sdk send exactly one list_changed of its kind to a connected session
// (the markers: notifyListChanged, notifyResourcesChanged,
// notifyPromptsChanged).
func TestGoSDKMarkersSendOneListChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &Front{server: mcp.NewServer(&mcp.Implementation{Name: "front", Version: "1"}, &mcp.ServerOptions{
			Capabilities: &mcp.ServerCapabilities{
				Tools:     &mcp.ToolCapabilities{ListChanged: true},
				Resources: &mcp.ResourceCapabilities{ListChanged: true},
				Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			}})}
		var tools, resources, prompts atomic.Int32
		client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
			ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { tools.Add(1) },
			ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { resources.Add(1) },
			PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { prompts.Add(1) },
		})
		ct, st := mcp.NewInMemoryTransports()
		ss, err := f.server.Connect(t.Context(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := client.Connect(t.Context(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range []struct {
			name   string
			notify func()
			count  *atomic.Int32
			kind   int // index in before and after
		}{
			{"tools", f.notifyListChanged, &tools, 0},
			{"resources", f.notifyResourcesChanged, &resources, 1},
			{"prompts", f.notifyPromptsChanged, &prompts, 2},
		} {
			before := [3]int32{tools.Load(), resources.Load(), prompts.Load()}
			step.notify()
			time.Sleep(time.Second) // go-sdk's own debounce is 10 ms
			synctest.Wait()
			after := [3]int32{tools.Load(), resources.Load(), prompts.Load()}
			if got := step.count.Load() - before[step.kind]; got != 1 {
				t.Errorf("%s marker: %d list_changed, want 1", step.name, got)
			}
			for i, c := range []*atomic.Int32{&tools, &resources, &prompts} {
				if c != step.count && after[i] != before[i] {
					t.Errorf("%s marker: another kind's list_changed was sent too (%v → %v)", step.name, before, after)
				}
			}
		}
		if res, err := cs.ListTools(t.Context(), nil); err != nil || len(res.Tools) != 0 {
			t.Errorf("after the markers, go-sdk's own tool list = %v, %v; want empty", res, err)
		}
		_ = cs.Close()
		_ = ss.Wait()
	})
}

// TestGoSDKResultTypeOnlyByDecoding: go-sdk's CallToolResult has no
// exported resultType field (so withResultType decodes one), and a result
// made by decoding carries it when encoded.
func TestGoSDKResultTypeOnlyByDecoding(t *testing.T) {
	if _, ok := reflect.TypeFor[mcp.CallToolResult]().FieldByName("ResultType"); ok {
		t.Fatal("mcp.CallToolResult has an exported ResultType: set it directly and drop withResultType's decoding")
	}
	plain, _ := json.Marshal(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}})
	if strings.Contains(string(plain), "resultType") {
		t.Fatalf("a result built in Go carries resultType: %s", plain)
	}
	raw, err := json.Marshal(withResultType(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}, IsError: true}))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got["resultType"] != "complete" || got["isError"] != true || got["content"] == nil {
		t.Fatalf("withResultType encodes as %s, want resultType complete and the result's fields", raw)
	}
}

// TestGoSDKReplacesMethodNotFound: an error with code -32601 that a
// handler returns reaches the client as go-sdk's own bare "method not
// found", without its message and data (so UNIMPLEMENTED is sent as
// codeUnimplemented), while a server error keeps both.
func TestGoSDKReplacesMethodNotFound(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	code := int64(jsonrpc.CodeMethodNotFound)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "completion/complete" {
				return nil, &jsonrpc.Error{Code: code, Message: "the upstream has no such method", Data: json.RawMessage(`{"reason":"UPSTREAM_ERROR"}`)}
			}
			return next(ctx, method, req)
		}
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	complete := func() *jsonrpc.Error {
		_, err := cs.Complete(t.Context(), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "p"}, Argument: mcp.CompleteParamsArgument{Name: "a"}})
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) {
			t.Fatalf("completion/complete: %v, want a JSON-RPC error", err)
		}
		return werr
	}
	if werr := complete(); werr.Code != jsonrpc.CodeMethodNotFound || len(werr.Data) != 0 || strings.Contains(werr.Message, "upstream") {
		t.Errorf("go-sdk now sends a handler's -32601 as it is (%d %q %s): map UNIMPLEMENTED back to jsonrpc.CodeMethodNotFound (codeUnimplemented)", werr.Code, werr.Message, werr.Data)
	}
	code = codeUnimplemented
	if werr := complete(); werr.Code != codeUnimplemented || string(werr.Data) != `{"reason":"UPSTREAM_ERROR"}` || werr.Message != "the upstream has no such method" {
		t.Errorf("a server error arrives as %d %q %s, want it as sent", werr.Code, werr.Message, werr.Data)
	}
}
