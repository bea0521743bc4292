package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// The demo upstream: a few harmless tools, served over stdio by this same
// binary ("toolsvc demo-server"), so that `toolsvc serve` with no config
// shows a working service with nothing else installed.

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo back"`
}

type addArgs struct {
	A float64 `json:"a" jsonschema:"first addend"`
	B float64 `json:"b" jsonschema:"second addend"`
}

type addResult struct {
	Sum float64 `json:"sum"`
}

type sleepArgs struct {
	MS int `json:"ms" jsonschema:"milliseconds to sleep (at most 600000)"`
}

func newDemoServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "toolsvc-demo", Version: mcpbridge.Version}, &mcp.ServerOptions{
		CompletionHandler: completeDemo, // toolsvc complete --prompt demo__greet --arg name --value A
	})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Return the given text unchanged.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, addResult, error) {
			return nil, addResult{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Sleep for ms milliseconds, reporting progress every 100 ms; honours cancellation.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in sleepArgs) (*mcp.CallToolResult, any, error) {
			if in.MS < 0 || in.MS > 600000 {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "ms must be between 0 and 600000"}}}, nil, nil
			}
			d := time.Duration(in.MS) * time.Millisecond
			start := time.Now()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			done := time.NewTimer(d)
			defer done.Stop()
			tok := req.Params.GetProgressToken()
			for {
				select {
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				case <-done.C:
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("slept %d ms", in.MS)}}}, nil, nil
				case <-tick.C:
					if tok != nil {
						_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
							ProgressToken: tok, Progress: float64(time.Since(start).Milliseconds()), Total: float64(in.MS),
						})
					}
				}
			}
		})
	// A resource and a prompt, so the first commands in the README show
	// resources and prompts too (toolsvc resources / read / prompts /
	// prompt).
	s.AddResource(&mcp.Resource{URI: "demo://readme", Name: "readme", Title: "About the demo upstream",
		Description: "What this demo upstream offers.", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: demoReadme}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greet someone by name.",
		Arguments: []*mcp.PromptArgument{{Name: "name", Description: "who to greet", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			name := req.Params.Arguments["name"]
			if name == "" {
				return nil, fmt.Errorf("argument name is required")
			}
			return &mcp.GetPromptResult{Description: "A greeting.", Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf("Please greet %s warmly, in one sentence.", name)}},
			}}, nil
		})
	return s
}

const demoReadme = `toolsvc demo upstream: tools echo, add and sleep; this resource
(demo://readme); and the prompt greet (argument name, which completes).`

// demoNames complete the greet prompt's argument name.
var demoNames = []string{"Ada", "Alan", "Barbara", "Grace", "Linus"}

func completeDemo(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	vs := []string{}
	if p := req.Params; p.Ref.Type == "ref/prompt" && p.Ref.Name == "greet" && p.Argument.Name == "name" {
		for _, n := range demoNames {
			if strings.HasPrefix(strings.ToLower(n), strings.ToLower(p.Argument.Value)) {
				vs = append(vs, n)
			}
		}
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: vs, Total: len(vs)}}, nil
}

// RunDemoServer serves the built-in demo upstream (toolsvc demo-server) on
// stdin and stdout: what serve runs without a config file.
func RunDemoServer(ctx context.Context) error {
	return newDemoServer().Run(ctx, &mcp.StdioTransport{})
}
