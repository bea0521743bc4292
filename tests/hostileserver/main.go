// Binary hostileserver is a go-sdk MCP server over stdio that misbehaves
// on purpose, for toolsvc's end-to-end tests of hostile upstreams:
//
//	-mode hang-list   never answers tools/list (blocks until cancelled)
//	-mode bad-names   lists tools with an empty name, control characters,
//	                  a zero-width character and a 100 KB name beside "echo"
//	-mode soak        the chaos soak's hostile upstream (tests/soak): echo;
//	                  selfref, whose inputSchema applies itself
//	                  ({"allOf": [{"$ref": "#"}]}: never evaluated, calls are
//	                  forwarded unvalidated); doubling, whose schema doubles
//	                  per level of nested arrays (anyOf of two items → the
//	                  same definition); big{bytes}, a text of that many
//	                  bytes; and tools toolsvc must skip: a definition over
//	                  1 MiB and four unusable names. selfref, doubling and
//	                  big are answered here, so the answers are known: see
//	                  soakAnswer
//	-mode unsolicited-task
//	                  answers a plain tools/call (no task asked) with a
//	                  task: task2025 with a 2025-11-25 CreateTaskResult
//	                  ({"task": {...}}), task2026 with a 2026-07-28
//	                  tasks-extension answer (resultType "task"); echo
//	                  answers normally. go-sdk's server cannot send either
//	                  for a call that asked none, so its connection
//	                  rewrites the result (taskRewriter)
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	mode := flag.String("mode", "", "hang-list, bad-names, soak or unsolicited-task")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Return text."}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	obj := map[string]any{"type": "object"}
	var tools []*mcp.Tool
	switch *mode {
	case "hang-list":
	case "bad-names":
		tools = []*mcp.Tool{
			{Name: "", InputSchema: obj},
			{Name: "echo", InputSchema: obj},
			{Name: "red\x1b[31malert", InputSchema: obj},
			{Name: "zero\u200bwidth", InputSchema: obj},
			{Name: strings.Repeat("a", 100_000), InputSchema: obj},
		}
	case "soak":
		tools = soakTools()
	case "unsolicited-task":
		tools = []*mcp.Tool{{Name: "echo", InputSchema: obj}}
		for _, name := range []string{"task2025", "task2026"} {
			tool := &mcp.Tool{Name: name, InputSchema: obj}
			s.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the result the task replaces"}}}, nil
			})
			tools = append(tools, tool)
		}
	default:
		log.Fatalf("unknown -mode %q", *mode)
	}
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" && *mode == "soak" {
				if res := soakAnswer(req.(*mcp.CallToolRequest).Params); res != nil {
					return res, nil
				}
			}
			if method != "tools/list" {
				return next(ctx, method, req)
			}
			if *mode == "hang-list" {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return &mcp.ListToolsResult{Tools: tools}, nil
		}
	})
	var t mcp.Transport = &mcp.StdioTransport{}
	if *mode == "unsolicited-task" {
		t = &taskRewriter{Transport: t, calls: map[string]string{}}
	}
	if err := s.Run(ctx, t); err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
}

// taskRewriter is -mode unsolicited-task's transport: its connection
// notes the tools/call requests for task2025 and task2026 as they are
// read, and replaces the result go-sdk's server answers them with by a
// task in that tool's era.
type taskRewriter struct {
	mcp.Transport
	mu    sync.Mutex
	calls map[string]string // request id → tool
}

func (t *taskRewriter) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &taskRewriterConn{Connection: c, t: t}, nil
}

type taskRewriterConn struct {
	mcp.Connection
	t *taskRewriter
}

func (c *taskRewriterConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if req, ok := m.(*jsonrpc.Request); ok && err == nil && req.Method == "tools/call" {
		var p struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(req.Params, &p) == nil && (p.Name == "task2025" || p.Name == "task2026") {
			c.t.mu.Lock()
			c.t.calls[fmt.Sprint(req.ID.Raw())] = p.Name
			c.t.mu.Unlock()
		}
	}
	return m, err
}

func (c *taskRewriterConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		id := fmt.Sprint(resp.ID.Raw())
		c.t.mu.Lock()
		tool, ok := c.t.calls[id]
		delete(c.t.calls, id)
		c.t.mu.Unlock()
		now := time.Now().UTC().Format(time.RFC3339)
		switch {
		case !ok:
		case tool == "task2025":
			resp.Result = json.RawMessage(`{"task": {"taskId": "unasked-2025", "status": "working", "ttl": 60000, ` +
				`"pollInterval": 100, "createdAt": "` + now + `", "lastUpdatedAt": "` + now + `"}}`)
		default:
			resp.Result = json.RawMessage(`{"resultType": "task", "taskId": "unasked-2026", "status": "working", ` +
				`"ttlMs": 60000, "pollIntervalMs": 100, "createdAt": "` + now + `", "lastUpdatedAt": "` + now + `"}`)
		}
	}
	return c.Connection.Write(ctx, msg)
}

// soakTools is what -mode soak lists. The soak (tests/soak/hostile.go)
// expects exactly echo, selfref, doubling and big to be exposed.
func soakTools() []*mcp.Tool {
	obj := map[string]any{"type": "object"}
	schema := func(text string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(text), &m); err != nil {
			panic(err)
		}
		return m
	}
	return []*mcp.Tool{
		{Name: "echo", Description: "Return text.", InputSchema: schema(`{"type": "object", "properties": {"text": {"type": "string"}}}`)},
		{Name: "selfref", Description: "An inputSchema that applies itself.", InputSchema: schema(`{"type": "object", "allOf": [{"$ref": "#"}]}`)},
		{Name: "doubling", Description: "An inputSchema whose cost doubles per level of a.",
			InputSchema: schema(`{"type": "object", "properties": {"a": {"$ref": "#/$defs/t"}},
				"$defs": {"t": {"anyOf": [{"items": {"$ref": "#/$defs/t"}}, {"items": {"$ref": "#/$defs/t"}}]}}}`)},
		{Name: "big", Description: "Return bytes bytes of text.", InputSchema: schema(`{"type": "object", "properties": {"bytes": {"type": "integer"}}}`)},
		{Name: "huge", Description: strings.Repeat("h", 1<<20+1024), InputSchema: obj},
		{Name: "", InputSchema: obj},
		{Name: "red\x1b[31malert", InputSchema: obj},
		{Name: "zero\u200bwidth", InputSchema: obj},
		{Name: strings.Repeat("n", 300), InputSchema: obj},
	}
}

// soakAnswer answers -mode soak's own tools (nil: echo, left to its
// handler): selfref "selfref ok " and its arguments as compact JSON (what
// toolsvc forwarded), doubling "doubling ok", big a text of bytes bytes.
func soakAnswer(p *mcp.CallToolParamsRaw) *mcp.CallToolResult {
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	switch p.Name {
	case "selfref":
		var b bytes.Buffer
		if err := json.Compact(&b, p.Arguments); err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		return text("selfref ok " + b.String())
	case "doubling":
		return text("doubling ok")
	case "big":
		var in struct {
			Bytes int `json:"bytes"`
		}
		_ = json.Unmarshal(p.Arguments, &in)
		return text(strings.Repeat("x", max(0, min(in.Bytes, 64<<20))))
	}
	return nil
}
