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

// TestGoSDKTasksGaps: go-sdk v1.8.0 knows nothing of MCP tasks (tasks.go):
// its server capabilities have no tasks, its tools no execution, and its
// tools/call params drop params.task on decoding (serveStreamable carries
// it in taskCallHeader instead).
func TestGoSDKTasksGaps(t *testing.T) {
	if _, ok := reflect.TypeFor[mcp.ServerCapabilities]().FieldByName("Tasks"); ok {
		t.Error("mcp.ServerCapabilities has Tasks: declare capabilities.tasks with it (withTasksCapability)")
	}
	if _, ok := reflect.TypeFor[mcp.Tool]().FieldByName("Execution"); ok {
		t.Error("mcp.Tool has Execution: set taskSupport with it (withTaskSupport)")
	}
	var p mcp.CallToolParamsRaw
	if err := json.Unmarshal([]byte(`{"name":"x","task":{"ttl":1000}}`), &p); err != nil {
		t.Fatal(err)
	}
	if raw, _ := json.Marshal(&p); strings.Contains(string(raw), "ttl") {
		t.Errorf("CallToolParamsRaw keeps params.task (%s): read it from the params, not taskCallHeader", raw)
	}
	// Embedding go-sdk's types adds fields (no MarshalJSON of theirs takes
	// over).
	list := &tasksToolList{ListToolsResult: &mcp.ListToolsResult{NextCursor: "c"},
		Tools: []taskTool{{Tool: &mcp.Tool{Name: "x", InputSchema: map[string]any{"type": "object"}}, Execution: &toolExecution{TaskSupport: "optional"}}}}
	raw, err := json.Marshal(list)
	if err != nil || !strings.Contains(string(raw), `"name":"x"`) || !strings.Contains(string(raw), `"execution":{"taskSupport":"optional"}`) ||
		!strings.Contains(string(raw), `"nextCursor":"c"`) {
		t.Errorf("tools/list with execution = %s, %v", raw, err)
	}
}

// TestGoSDKCustomMethods: what the tasks/* methods rely on. A method
// registered with AddReceivingCustomMethod reaches the receiving
// middleware as *mcp.ServerRequest[P]; a result type of the middleware's
// own (jsonResult) is sent as its MarshalJSON writes it, for a custom
// method and for a standard one (initialize); and the request's
// ProtocolVersion panics when the custom request has no params
// (taskRequestVersion).
func TestGoSDKCustomMethods(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "front", Version: "1"}, nil)
	registerTaskMethods(s)
	var panicked, sawNil atomic.Bool
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tasks/list":
				r := req.(*mcp.ServerRequest[*taskParams])
				if r.Params == nil {
					sawNil.Store(true)
					func() {
						defer func() { panicked.Store(recover() != nil) }()
						_ = r.ProtocolVersion()
					}()
				}
				return &jsonResult{v: map[string]any{"tasks": []any{}, "custom": true}}, nil
			case "initialize":
				if _, err := next(ctx, method, req); err != nil {
					return nil, err
				}
				return &jsonResult{v: map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tasks": map[string]any{}},
					"serverInfo": map[string]any{"name": "front", "version": "1"}}}, nil
			}
			return next(ctx, method, req)
		}
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	type listParams struct{ mcp.ParamsBase }
	type raw struct {
		mcp.ResultBase
		Custom bool `json:"custom"`
	}
	if err := mcp.AddSendingCustomMethod[*listParams, *raw](client, "tasks/list"); err != nil {
		t.Fatal(err)
	}
	cs, err := client.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	got, err := mcp.CallCustomMethod[*listParams, *raw](t.Context(), cs, "tasks/list", nil)
	if err != nil || !got.Custom {
		t.Errorf("tasks/list = %+v, %v; want the middleware's own result", got, err)
	}
	// A request without params, as the TypeScript SDK's listTasks()
	// sends it, on a raw connection.
	ct2, st2 := mcp.NewInMemoryTransports()
	ss2, err := s.Connect(t.Context(), st2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss2.Close()
	conn, err := ct2.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i, m := range []string{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":2,"method":"tasks/list"}`} {
		msg, err := jsonrpc.DecodeMessage([]byte(m))
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Write(t.Context(), msg); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			continue
		}
		res, err := conn.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		r, ok := res.(*jsonrpc.Response)
		if !ok || r.Error != nil {
			t.Fatalf("%s: %+v", m, res)
		}
		if i == 0 && !strings.Contains(string(r.Result), `"capabilities":{"tasks":{}}`) {
			t.Errorf("initialize answered %s, not the middleware's own result", r.Result)
		}
	}
	if !sawNil.Load() {
		t.Fatal("a tasks/list sent without params reached the middleware with params")
	}
	if !panicked.Load() {
		t.Error("ServerRequest.ProtocolVersion no longer panics without params: taskRequestVersion can call it")
	}
	if _, err := mcp.CallCustomMethod[*listParams, *raw](t.Context(), cs, "tasks/list", &listParams{}); err != nil {
		t.Errorf("tasks/list with params: %v", err)
	}
}

// resultTap records the results a client connection reads, as sent.
type resultTap struct {
	mcp.Transport
	got chan json.RawMessage
}

func (t *resultTap) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	return &resultTapConn{Connection: c, got: t.got}, err
}

type resultTapConn struct {
	mcp.Connection
	got chan json.RawMessage
}

func (c *resultTapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Response); ok && r.Error == nil {
		select {
		case c.got <- append(json.RawMessage(nil), r.Result...):
		default:
		}
	}
	return m, err
}

// TestGoSDKSendsRawResult: what the pass-through (passthrough.go) relies
// on. A result of the middleware's own type (rawResult) answers tools/call
// and resources/read as its MarshalJSON writes it, in a 2025-11-25 session
// and to a 2026-07-28 request, where go-sdk's annotateServerInfo writes
// into the result's Meta (GetMeta, SetMeta), which MarshalJSON does not
// send: the bytes go out unchanged.
func TestGoSDKSendsRawResult(t *testing.T) {
	const callRaw, readRaw = `{"content":[{"text":"as sent","type":"text"}],"z":1.0}`, `{"contents":[{"uri":"x:y","text":"as sent"}],"z":1.0}`
	for _, protocol := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(protocol, func(t *testing.T) {
			s := mcp.NewServer(&mcp.Implementation{Name: "front", Version: "1"}, nil)
			s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					switch method {
					case "tools/call":
						return newRawResult([]byte(callRaw)), nil
					case "resources/read":
						return newRawResult([]byte(readRaw)), nil
					}
					return next(ctx, method, req)
				}
			})
			s.AddTool(&mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nil, errors.New("not reached")
			})
			s.AddResource(&mcp.Resource{URI: "x:y", Name: "y"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return nil, errors.New("not reached")
			})
			ct, st := mcp.NewInMemoryTransports()
			ss, err := s.Connect(t.Context(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			tap := &resultTap{Transport: ct, got: make(chan json.RawMessage, 1)}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(t.Context(), tap, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if v := cs.InitializeResult().ProtocolVersion; v != protocol {
				t.Fatalf("negotiated %s, want %s", v, protocol)
			}
			for len(tap.got) > 0 {
				<-tap.got
			}
			if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "t"}); err != nil {
				t.Fatal(err)
			}
			if got := string(<-tap.got); got != callRaw {
				t.Errorf("tools/call result sent as %s, want %s", got, callRaw)
			}
			if _, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "x:y"}); err != nil {
				t.Fatal(err)
			}
			if got := string(<-tap.got); got != readRaw {
				t.Errorf("resources/read result sent as %s, want %s", got, readRaw)
			}
		})
	}
}
