// Binary testserver is a real MCP server (go-sdk) for toolsvc's end-to-end
// tests. It grows tools at runtime, can make tools/list slow, sends
// progress, and counts the tools/list calls it answers.
//
//	testserver -mode stdio
//	testserver -mode http -addr 127.0.0.1:0    (prints "URL http://…/mcp")
//	testserver -mode http-stateless            (streamable HTTP, Stateless: true)
//	testserver -mode sse                       (legacy HTTP+SSE, prints "URL http://…/sse")
//	testserver -mode http -auth-issuer URL [-auth-audience AUD]
//	                                           (JWT bearer tokens required; tool whoami)
//
// With $MATRIX_DIR set, wait_cancel also records each call in side files
// there (see recordFile), which a test reads even after the process died.
// With $TESTSERVER_RESOURCES_FILE it also offers resources, prompts, a
// resource template and completions (resourcesMode).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	listCalls  atomic.Int64
	slowListMS atomic.Int64
)

type pingArgs struct {
	X int `json:"x"`
}

type extraArgs struct {
	Y int `json:"y"`
}

type echoArgs struct {
	Text string `json:"text"`
}

type msArgs struct {
	MS int `json:"ms"`
}

type progressArgs struct {
	Steps  int `json:"steps"`
	StepMS int `json:"step_ms"`
}

type addToolArgs struct {
	Name string `json:"name"`
	// Schema, if set, is the new tool's inputSchema as JSON text, sent as
	// is (json.RawMessage: exact numbers and key order).
	Schema string `json:"schema,omitempty"`
	// Description, if set, is the new tool's description, verbatim (the
	// console's tests list markup and script as a hostile upstream would).
	Description string `json:"description,omitempty"`
}

type stats struct {
	ListCalls int64 `json:"list_calls"`
}

// cancelRecord is what wait_cancel saw of one call, by the caller's id.
type cancelRecord struct {
	Started   int64 `json:"started_unix_nanos"`
	Cancelled int64 `json:"cancelled_unix_nanos,omitempty"` // when the handler's ctx ended
	Finished  bool  `json:"finished"`                       // ran to the end uncancelled
}

var (
	recMu   sync.Mutex
	records = map[string]*cancelRecord{}

	callMu    sync.Mutex
	callCount = map[string]int64{} // tools/call requests received, by tool name
)

type waitCancelArgs struct {
	ID string `json:"id"`
	MS int    `json:"ms"`
}

type idArgs struct {
	ID string `json:"id"`
}

type stepsArgs struct {
	Steps    int `json:"steps"`
	StepMS   int `json:"step_ms,omitempty"`
	SettleMS int `json:"settle_ms,omitempty"` // wait after the last step, so its notification is not late
	Pad      int `json:"pad,omitempty"`       // bytes of padding in each message
}

type bigArgs struct {
	Bytes int `json:"bytes"`
}

type contentArgs struct {
	IsError bool `json:"is_error,omitempty"`
}

// strictSchema is the inputSchema of the strict tool: required, typed and
// closed, with a nested object and an array.
var strictSchema = map[string]any{
	"type":                 "object",
	"required":             []any{"count"},
	"additionalProperties": false,
	"properties": map[string]any{
		"count": map[string]any{"type": "integer", "minimum": 0},
		"label": map[string]any{"type": "string"},
		"opts": map[string]any{
			"type":       "object",
			"required":   []any{"flag"},
			"properties": map[string]any{"flag": map[string]any{"type": "boolean"}},
		},
		"tags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	},
}

type logLevelsArgs struct {
	Tag string `json:"tag,omitempty"`
	// Repeat logs the eight levels that many times (0: once), with "r"
	// (the round) in the data of each message after the first round: a
	// backlog of log lines for the attribution tests.
	Repeat int `json:"repeat,omitempty"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func newServer(mode string) *mcp.Server {
	// Logging: log_levels logs (toolsvc sets the level only when declared).
	opts := &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}, Logging: &mcp.LoggingCapabilities{}}}
	if modeHas(mode, "subscribe") {
		// Subscriptions accepted (and forgotten: nothing here changes a
		// resource): the client matrix subscribes to test://hello.
		opts.SubscribeHandler = func(context.Context, *mcp.SubscribeRequest) error { return nil }
		opts.UnsubscribeHandler = func(context.Context, *mcp.UnsubscribeRequest) error { return nil }
	}
	switch {
	case modeHas(mode, "completions"):
		opts.CompletionHandler = complete
	case modeHas(mode, "completions-undeclared-handler"):
		// The capability declared without a handler: go-sdk answers
		// completion/complete with MethodNotFound.
		opts.Capabilities.Completions = &mcp.CompletionCapabilities{}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "push-victim", Version: "1.0.0"}, opts)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				listCalls.Add(1)
				if ms := slowListMS.Load(); ms > 0 {
					select {
					case <-time.After(time.Duration(ms) * time.Millisecond):
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
			}
			return next(ctx, method, req)
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ping_me", Description: "Return x + 1."},
		func(_ context.Context, _ *mcp.CallToolRequest, in pingArgs) (*mcp.CallToolResult, any, error) {
			return text(fmt.Sprint(in.X + 1)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Return text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "log_level_asked", Description: "Return the log level this request's _meta asked for (io.modelcontextprotocol/logLevel, 2026-07-28), \"none\" without one."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if l, ok := req.Params.GetMeta()[mcp.MetaKeyLogLevel].(string); ok {
				return text(l), nil, nil
			}
			return text("none"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "register_extra", Description: "Register extra_tool, which pushes tools/list_changed while this call is still in flight."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, &mcp.Tool{Name: "extra_tool", Description: "Return y * 2."},
				func(_ context.Context, _ *mcp.CallToolRequest, in extraArgs) (*mcp.CallToolResult, any, error) {
					return text(fmt.Sprint(in.Y * 2)), nil, nil
				})
			// go-sdk sends list_changed 10 ms after the change: stay in
			// flight past that, so the push and this result share the
			// session, as in the seed.
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
			}
			return text("registered"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "Register a tool named name that answers \"<name> ok\"."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addToolArgs) (*mcp.CallToolResult, any, error) {
			name := in.Name
			var schema any = map[string]any{"type": "object"}
			if in.Schema != "" {
				schema = json.RawMessage(in.Schema)
			}
			s.AddTool(&mcp.Tool{Name: name, Description: in.Description, InputSchema: schema},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return text(name + " ok"), nil
				})
			return text("added " + name), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "set_slow_list", Description: "Make every tools/list answer after ms milliseconds (0: fast)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in msArgs) (*mcp.CallToolResult, any, error) {
			slowListMS.Store(int64(in.MS))
			return text("ok"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "progress", Description: "Send steps progress notifications, step_ms apart, then return."},
		func(ctx context.Context, req *mcp.CallToolRequest, in progressArgs) (*mcp.CallToolResult, any, error) {
			tok := req.Params.GetProgressToken()
			for i := 1; i <= in.Steps; i++ {
				select {
				case <-time.After(time.Duration(in.StepMS) * time.Millisecond):
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
				if tok != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: tok, Progress: float64(i), Total: float64(in.Steps),
						Message: fmt.Sprintf("sent %d", time.Now().UnixMicro()),
					})
				}
			}
			return text(fmt.Sprintf("%d steps", in.Steps)), nil, nil
		})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				if r, ok := req.(*mcp.CallToolRequest); ok {
					callMu.Lock()
					callCount[r.Params.Name]++
					callMu.Unlock()
				}
			}
			return next(ctx, method, req)
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "log_levels", Description: "Log one message at each MCP level, debug to emergency (logger \"levels\", data {\"i\": i, \"tag\": tag}), with a progress step after each when asked, repeat times (0: once), then return \"logged\"."},
		func(ctx context.Context, req *mcp.CallToolRequest, in logLevelsArgs) (*mcp.CallToolResult, any, error) {
			tok := req.Params.GetProgressToken()
			for r := range max(in.Repeat, 1) {
				for i, l := range []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"} {
					data := map[string]any{"i": i, "tag": in.Tag}
					if r > 0 {
						data["r"] = r
					}
					_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: l, Logger: "levels", Data: data})
					if tok != nil && r == 0 {
						_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i + 1), Total: 8})
					}
				}
			}
			return text("logged " + in.Tag), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "wait_cancel", Description: "Wait ms milliseconds or until cancelled; record which, under id (see cancel_record)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in waitCancelArgs) (*mcp.CallToolResult, any, error) {
			rec := &cancelRecord{Started: time.Now().UnixNano()}
			recMu.Lock()
			records[in.ID] = rec
			recMu.Unlock()
			recordFile(in.ID, "started")
			select {
			case <-time.After(time.Duration(in.MS) * time.Millisecond):
				recMu.Lock()
				rec.Finished = true
				recMu.Unlock()
				recordFile(in.ID, "finished")
				return text("finished"), nil, nil
			case <-ctx.Done():
				now := time.Now().UnixNano()
				recMu.Lock()
				rec.Cancelled = now
				recMu.Unlock()
				recordFile(in.ID, "cancelled")
				return nil, nil, ctx.Err()
			}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "cancel_record", Description: "What wait_cancel saw of the call with this id."},
		func(_ context.Context, _ *mcp.CallToolRequest, in idArgs) (*mcp.CallToolResult, *cancelRecord, error) {
			recMu.Lock()
			defer recMu.Unlock()
			rec, ok := records[in.ID]
			if !ok {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no call with id " + in.ID}}}, nil, nil
			}
			cp := *rec
			return nil, &cp, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "call_stats", Description: "tools/call requests received, by tool name."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, map[string]int64, error) {
			callMu.Lock()
			defer callMu.Unlock()
			out := make(map[string]int64, len(callCount))
			for k, v := range callCount {
				out[k] = v
			}
			return nil, out, nil
		})
	// strict takes its arguments raw (no server-side validation) and
	// returns them verbatim, so tests see exactly what arrived.
	s.AddTool(&mcp.Tool{Name: "strict", Description: "Return the raw arguments JSON.", InputSchema: strictSchema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(string(req.Params.Arguments)), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "progress_steps", Description: "Report progress steps times (message \"step i\" plus pad bytes), step_ms apart, wait settle_ms, return \"done\"."},
		func(ctx context.Context, req *mcp.CallToolRequest, in stepsArgs) (*mcp.CallToolResult, any, error) {
			tok := req.Params.GetProgressToken()
			pad := strings.Repeat(".", in.Pad)
			for i := 1; i <= in.Steps; i++ {
				if in.StepMS > 0 {
					select {
					case <-time.After(time.Duration(in.StepMS) * time.Millisecond):
					case <-ctx.Done():
						return nil, nil, ctx.Err()
					}
				}
				if tok != nil {
					if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: tok, Progress: float64(i), Total: float64(in.Steps), Message: fmt.Sprintf("step %d%s", i, pad),
					}); err != nil {
						return nil, nil, err
					}
				}
			}
			select {
			case <-time.After(time.Duration(in.SettleMS) * time.Millisecond):
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return text("done"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Return bytes bytes of text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in bigArgs) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("x", in.Bytes)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "all_content", Description: "Return every MCP content type with annotations and _meta, structured content and result _meta."},
		func(_ context.Context, _ *mcp.CallToolRequest, in contentArgs) (*mcp.CallToolResult, any, error) {
			return allContent(in.IsError), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "stats", Description: "Counters."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, stats, error) {
			return nil, stats{ListCalls: listCalls.Load()}, nil
		})
	return s
}

// recordFile writes $MATRIX_DIR/<id>.<event> holding this process's pid
// and the time (Unix nanoseconds), atomically (write, then rename). The
// interop matrix reads these: they name the process to kill and outlive it.
func recordFile(id, event string) {
	dir := os.Getenv("MATRIX_DIR")
	if dir == "" || id == "" || strings.ContainsAny(id, "/\\") {
		return
	}
	final := filepath.Join(dir, id+"."+event)
	tmp := final + ".tmp"
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%d %d\n", os.Getpid(), time.Now().UnixNano()), 0o600); err != nil {
		log.Printf("record %s: %v", final, err)
		return
	}
	if err := os.Rename(tmp, final); err != nil {
		log.Printf("record %s: %v", final, err)
	}
}

// allContent is the fixed result of all_content; tests/call_content_test.go
// expects exactly this.
func allContent(isError bool) *mcp.CallToolResult {
	size := int64(4)
	ann := &mcp.Annotations{Audience: []mcp.Role{"user", "assistant"}, Priority: 0.5, LastModified: "2026-01-02T03:04:05Z"}
	return &mcp.CallToolResult{
		IsError: isError,
		Meta:    mcp.Meta{"trace": "abc", "n": 1.0},
		Content: []mcp.Content{
			&mcp.TextContent{Text: "hello", Annotations: ann, Meta: mcp.Meta{"k": "text"}},
			&mcp.ImageContent{Data: []byte{0x89, 'P', 'N', 'G', 0, 1, 2}, MIMEType: "image/png", Annotations: &mcp.Annotations{Priority: 1}, Meta: mcp.Meta{"k": "image"}},
			&mcp.AudioContent{Data: []byte("RIFF\x00wav"), MIMEType: "audio/wav", Meta: mcp.Meta{"k": "audio"}},
			&mcp.ResourceLink{URI: "file:///tmp/a.txt", Name: "a.txt", Title: "A", Description: "a file", MIMEType: "text/plain", Size: &size,
				Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}}, Meta: mcp.Meta{"k": "link"}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://t", MIMEType: "text/plain", Text: "embedded text", Meta: mcp.Meta{"k": "rc"}},
				Annotations: &mcp.Annotations{Priority: 0.25}, Meta: mcp.Meta{"k": "res-text"}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://b", MIMEType: "application/octet-stream", Blob: []byte{0, 255, 1, 254}},
				Meta: mcp.Meta{"k": "res-blob"}},
		},
		StructuredContent: map[string]any{"answer": 42.0, "list": []any{"a", true, nil}, "nested": map[string]any{"x": 1.5}},
	}
}

func main() {
	mode := flag.String("mode", "stdio", "stdio, http, http-stateless or sse")
	addr := flag.String("addr", "127.0.0.1:0", "listen address for -mode http")
	interactive := flag.Bool("interactive", false, "add the tools that ask their caller for input (interactive.go)")
	authIssuer := flag.String("auth-issuer", "", "http modes: require a JWT access token from this issuer, and add the tool whoami (bearer.go)")
	authAudience := flag.String("auth-audience", "", "with -auth-issuer: the audience the token must carry")
	perCallerTools := flag.Bool("per-caller", false, "with -auth-issuer: each verified subject gets its own server and tools (bearer.go, perCaller)")
	cacheScope := flag.String("cache-scope", "", "with -per-caller: the cacheScope of tools/list results (\"private\")")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res := resourcesMode()
	s := newServer(res)
	addResources(s, res)
	if *interactive {
		addInteractive(s)
		addInteractivePrompts(s)
	}
	switch *mode {
	case "stdio":
		if err := s.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
			log.Fatal(err)
		}
	case "http", "http-stateless", "sse":
		lis, err := net.Listen("tcp", *addr)
		if err != nil {
			log.Fatal(err)
		}
		var h http.Handler
		path := "/mcp"
		getServer := func(*http.Request) *mcp.Server { return s }
		if *perCallerTools {
			getServer = (&perCaller{cacheScope: *cacheScope}).server
		}
		switch *mode {
		case "http":
			h = mcp.NewStreamableHTTPHandler(getServer, nil)
		case "http-stateless":
			h = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{Stateless: true})
		case "sse":
			h, path = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil), "/sse"
		}
		if *authIssuer != "" {
			if h, err = requireBearer(ctx, s, h, *authIssuer, *authAudience); err != nil {
				log.Fatal(err)
			}
		}
		srv := &http.Server{Handler: h}
		fmt.Printf("URL http://%s%s\n", lis.Addr(), path)
		go func() {
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		if err := srv.Serve(lis); err != nil && err != http.ErrServerClosed {
			log.Fatal(err)
		}
	default:
		log.Fatalf("unknown -mode %q", *mode)
	}
}

// resourcesMode is the first line of the file $TESTSERVER_RESOURCES_FILE
// names (read at start, so a restarted process can lose a capability):
// "resources" offers resources, a resource template and prompts
// (addResources), followed by comma-separated options:
//
//	no-templates    resources/templates/list answers MethodNotFound
//	                (docs/upstream-behaviour.md §3)
//	items           also the prompt "trip" {country, city (required)} and
//	                the template test://items/{id}, to complete
//	completions     completion/complete answers (complete)
//	subscribe       resources/subscribe and unsubscribe accepted
//	completions-undeclared-handler
//	                the completions capability is declared without a
//	                handler (go-sdk answers MethodNotFound)
//
// Without the file, or without "resources", the mode is "".
func resourcesMode() string {
	path := os.Getenv("TESTSERVER_RESOURCES_FILE")
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasPrefix(string(b), "resources") {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line)
}

// modeHas reports whether the resources mode has option opt.
func modeHas(mode, opt string) bool {
	return mode != "" && slices.Contains(strings.Split(mode, ","), opt)
}

// Completions (mode "completions"): the prompt "trip" completes "city"
// from a list, narrowed by the context argument "country"; the template
// test://items/{id} completes "id" from 1..150 (at most 100 values, with
// total and hasMore); anything else has no values.
var cities = map[string][]string{"DE": {"Berlin", "Bergen", "Bremen"}, "CH": {"Bern", "Basel"}}

func complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	var all []string
	switch {
	case p.Ref.Type == "ref/prompt" && p.Ref.Name == "trip" && p.Argument.Name == "city":
		for _, country := range []string{"CH", "DE"} {
			if p.Context == nil || p.Context.Arguments["country"] == "" || p.Context.Arguments["country"] == country {
				all = append(all, cities[country]...)
			}
		}
		slices.Sort(all)
	case p.Ref.Type == "ref/resource" && p.Ref.URI == "test://items/{id}" && p.Argument.Name == "id":
		for i := 1; i <= 150; i++ {
			all = append(all, fmt.Sprint(i))
		}
	}
	var vs []string
	for _, v := range all {
		if strings.HasPrefix(v, p.Argument.Value) {
			vs = append(vs, v)
		}
	}
	res := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: vs, Total: len(vs)}}
	if len(vs) > 100 {
		res.Completion.Values, res.Completion.HasMore = vs[:100], true
	}
	if res.Completion.Values == nil {
		res.Completion.Values = []string{}
	}
	return res, nil
}

// addResources offers resources, a resource template and prompts when the
// resources mode (resourcesMode) is on.
func addResources(s *mcp.Server, mode string) {
	if mode == "" {
		return
	}
	s.AddResource(&mcp.Resource{URI: "test://hello", Name: "hello", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			text := "hello from go"
			if p, ok := req.Params.Meta["dev.toolsvc/principal"].(map[string]any); ok {
				text += fmt.Sprintf(", asked by %v", p["name"]) // forwardPrincipal
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "hi", Description: "Say hi."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
		})
	if modeHas(mode, "items") {
		s.AddPrompt(&mcp.Prompt{Name: "trip", Description: "Plan a trip.", Arguments: []*mcp.PromptArgument{{Name: "country"}, {Name: "city", Required: true}}},
			func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "a trip to " + req.Params.Arguments["city"]}}}}, nil
			})
		s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://items/{id}", Name: "item", MIMEType: "text/plain"},
			func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "item " + strings.TrimPrefix(req.Params.URI, "test://items/")}}}, nil
			})
	}
	if modeHas(mode, "no-templates") {
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "resources/templates/list" {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}
				}
				return next(ctx, method, req)
			}
		})
	}
}
