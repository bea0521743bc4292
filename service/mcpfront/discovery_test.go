package mcpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/service/core"
)

// TestProgressiveDiscovery: tools/list is the core set plus search_tools
// and call_tool; search_tools returns definitions of tools that were not
// listed, and they can be called by name and through call_tool, in the
// stateful and the stateless era. A stateful session's list then has the
// found tool too, and the session is sent list_changed; a stateless
// client's list stays the core set.
func TestProgressiveDiscovery(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 40, core.AuthConfig{})
	f.upstream.AddTool(&mcp.Tool{Name: "translate_text", Description: "Translate text into another language.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "bonjour"}}}, nil
		})
	ctx, srv := serveFront(t, f.core, Options{ListenAddr: "127.0.0.1:0", Discovery: Discovery{Progressive: true, CoreTools: []string{"mem__echo"}}}, 0)
	for _, version := range []string{"2025-11-25", ""} {
		t.Run("version="+version, func(t *testing.T) {
			changed := make(chan struct{}, 16)
			cs := connectFront(t, ctx, mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
					select {
					case changed <- struct{}{}:
					default:
					}
				}}), srv.URL, "", version)
			list := func() []string {
				var names []string
				for tool, err := range cs.Tools(ctx, nil) {
					if err != nil {
						t.Fatal(err)
					}
					names = append(names, tool.Name)
				}
				return names
			}
			deadline := ctxT(t)
			var names []string
			for {
				names = names[:0]
				for tool, err := range cs.Tools(ctx, nil) {
					if err != nil {
						t.Fatal(err)
					}
					names = append(names, tool.Name)
				}
				if _, ok := f.bridge.Catalog().Current().Lookup("mem__translate_text"); ok || deadline.Err() != nil {
					break
				}
			}
			if !slices.Equal(names, []string{SearchToolName, CallToolName, "mem__echo"}) {
				t.Fatalf("tools/list = %v, want search_tools, call_tool and the core set", names)
			}
			for len(changed) > 0 { // the catalog's own, while it loaded
				<-changed
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: SearchToolName, Arguments: map[string]any{"query": "translation of a sentence", "limit": 3}})
			if err != nil || res.IsError {
				t.Fatalf("search_tools: %v %+v", err, res)
			}
			var found struct {
				Tools    []mcp.Tool `json:"tools"`
				Revision string     `json:"revision"`
			}
			b, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(b, &found); err != nil {
				t.Fatal(err)
			}
			if len(found.Tools) == 0 || found.Tools[0].Name != "mem__translate_text" || found.Tools[0].InputSchema == nil || found.Revision == "" {
				t.Fatalf("search_tools found %+v", found)
			}
			out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: found.Tools[0].Name, Arguments: map[string]any{"text": "hello"}})
			if err != nil || out.IsError {
				t.Fatalf("calling the found tool: %v %+v", err, out)
			}
			if version == "2025-11-25" {
				select {
				case <-changed:
				case <-deadline.Done():
					t.Fatal("no list_changed after the search found tools")
				}
				if got := list(); !slices.Contains(got, "mem__translate_text") || !slices.Contains(got, "mem__echo") {
					t.Errorf("tools/list after the search = %v, want the core set and the found tool", got)
				}
			} else if got := list(); !slices.Equal(got, []string{SearchToolName, CallToolName, "mem__echo"}) {
				t.Errorf("stateless tools/list after the search = %v, want the core set", got)
			}
			through, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: CallToolName,
				Arguments: map[string]any{"name": found.Tools[0].Name, "arguments": map[string]any{"text": "hello"}}})
			if err != nil || through.IsError || len(through.Content) == 0 || through.Content[0].(*mcp.TextContent).Text != "bonjour" {
				t.Fatalf("call_tool: %v %+v", err, through)
			}
			// call_tool's refusals are the model's to fix: isError results
			// naming call_tool's own arguments.
			for _, c := range []struct {
				args  map[string]any
				field string
			}{
				{map[string]any{"arguments": map[string]any{}}, "arguments.name"},
				{map[string]any{"name": "mem__no_such_tool"}, "arguments.name"},
				{map[string]any{"name": "mem__echo", "arguments": map[string]any{"text": 3}}, "arguments.arguments.text"},
				{map[string]any{"name": "mem__echo", "arguments": "text"}, "arguments.arguments"},
			} {
				bad, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: CallToolName, Arguments: c.args})
				if err != nil || !bad.IsError {
					t.Fatalf("call_tool %v: %v %+v, want an isError result", c.args, err, bad)
				}
				data, _ := json.Marshal(bad.Meta[ErrorMetaKey])
				var e struct {
					Fields []string `json:"fields"`
				}
				_ = json.Unmarshal(data, &e)
				if !slices.Contains(e.Fields, c.field) {
					t.Errorf("call_tool %v: error data %s does not name %s", c.args, data, c.field)
				}
			}
			// An argument a model can fix is an isError result naming it.
			bad, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: SearchToolName, Arguments: map[string]any{}})
			if err != nil || !bad.IsError {
				t.Fatalf("search_tools without a query: %v %+v", err, bad)
			}
			data, _ := json.Marshal(bad.Meta[ErrorMetaKey])
			var e struct {
				Fields []string `json:"fields"`
			}
			_ = json.Unmarshal(data, &e)
			if !slices.Contains(e.Fields, "arguments.query") {
				t.Errorf("error data %s does not name arguments.query", data)
			}
		})
	}
}

// TestFoundToolsBounded: a session's found tools are bounded by
// MaxFoundPerSession, the oldest found leaving first; a search that finds
// nothing new reports no change (no list_changed); sessions do not share
// their sets, and a forgotten session's set is gone.
func TestFoundToolsBounded(t *testing.T) {
	var ft foundTools
	a, b := new(mcp.ServerSession), new(mcp.ServerSession)
	name := func(i int) string { return "s__t" + strconv.Itoa(i) }
	for i := range MaxFoundPerSession + 50 {
		if !ft.add(a, []string{name(i)}) {
			t.Fatalf("add %s: not new", name(i))
		}
	}
	if ft.add(a, []string{name(MaxFoundPerSession + 49), name(MaxFoundPerSession)}) {
		t.Error("a search that found only listed tools reports a change")
	}
	has := ft.of(a)
	for i := range MaxFoundPerSession + 50 {
		if want := i >= 50; has(name(i)) != want {
			t.Errorf("%s listed = %v, want %v", name(i), has(name(i)), want)
		}
	}
	if ft.of(b) != nil {
		t.Error("another session lists a's found tools")
	}
	ft.add(b, []string{"s__other"})
	ft.forget(a)
	if ft.of(a) != nil || ft.len() != 1 || !ft.of(b)("s__other") {
		t.Errorf("after forgetting a: %d sessions", ft.len())
	}
}

// len is the number of sessions with found tools.
func (ft *foundTools) len() int {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return len(ft.m)
}

// TestCallThroughRefusalAudited: a call through call_tool of a tool that
// does not exist is refused as call_tool's bad argument (an isError result,
// ARGUMENTS_INVALID on arguments.name), and the core builds it so: the
// audit line's outcome is what the caller got, not the TOOL_NOT_FOUND the
// front door used to relabel after the line was written.
func TestCallThroughRefusalAudited(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var audit bytes.Buffer
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return audit.Write(p)
	}), nil))
	f := newFixture(t, 1, core.AuthConfig{AuditLog: logger})
	ctx, srv := serveFront(t, f.core, Options{ListenAddr: "127.0.0.1:0", Discovery: Discovery{Progressive: true}}, 0)
	cs := connectFront(t, ctx, mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil), srv.URL, "", "2025-11-25")
	bad, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: CallToolName, Arguments: map[string]any{"name": "mem__no_such_tool"}})
	if err != nil || !bad.IsError {
		t.Fatalf("call_tool of no tool: %v %+v, want an isError result", err, bad)
	}
	data, _ := json.Marshal(bad.Meta[ErrorMetaKey])
	var e struct {
		Code, Reason string
		Fields       []string
	}
	if json.Unmarshal(data, &e) != nil || e.Code != "InvalidArgument" || e.Reason != core.ReasonArgumentsInvalid || !slices.Equal(e.Fields, []string{"arguments.name"}) {
		t.Errorf("call_tool of no tool: error data %s, want InvalidArgument / ARGUMENTS_INVALID on arguments.name", data)
	}
	mu.Lock()
	line := audit.String()
	mu.Unlock()
	if !strings.Contains(line, `msg="tool call"`) || !strings.Contains(line, "tool=mem__no_such_tool") || !strings.Contains(line, "outcome=InvalidArgument") {
		t.Errorf("audit line %q, want the tool call with outcome=InvalidArgument (what the caller got)", line)
	}
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }
