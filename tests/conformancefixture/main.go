// Command conformancefixture is a go-sdk MCP server over stdio that serves
// the tool fixtures the MCP conformance suite
// (@modelcontextprotocol/conformance) calls in server mode: test_simple_text,
// test_image_content, test_audio_content, test_embedded_resource,
// test_multiple_content_types, test_error_handling, test_tool_with_progress,
// test_tool_with_logging, test_sampling, test_elicitation,
// test_elicitation_sep1034_defaults, test_elicitation_sep1330_enums, test_reconnection
// and json_schema_2020_12_tool, each returning what the suite checks; and the
// resources (test://static-text, test://static-binary,
// test://watched-resource, the template test://template/{id}/data) and
// prompts (test_simple_prompt, test_prompt_with_arguments,
// test_prompt_with_embedded_resource, test_prompt_with_image) of its
// resources-* and prompts-* scenarios.
//
// The suite talks to toolsvc's MCP front door; toolsvc runs this server
// behind it with "bareNames": true, so the suite finds the tools under the
// names it calls.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pngRedPixel is a 1x1 red PNG.
const pngRedPixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

// wavSilence is a minimal WAV file: 8 kHz, 8-bit mono, two samples.
var wavSilence = func() []byte {
	b := []byte("RIFF\x26\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x40\x1f\x00\x00\x40\x1f\x00\x00\x01\x00\x08\x00data\x02\x00\x00\x00\x80\x80")
	return b
}()

// step is the pause between the notifications of the progress and logging
// tools (the suite asks for about 50ms).
const step = 50 * time.Millisecond

func main() {
	png, err := base64.StdEncoding.DecodeString(pngRedPixel)
	if err != nil {
		log.Fatal(err)
	}
	// Subscriptions are accepted (the resources-subscribe scenarios); the
	// fixture's resources never change.
	s := mcp.NewServer(&mcp.Implementation{Name: "conformancefixture", Version: "1.0.0"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	noArgs := json.RawMessage(`{"type":"object","properties":{}}`)
	text := func(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }
	add := func(name, desc string, schema json.RawMessage, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: schema}, h)
	}

	add("test_simple_text", "Returns simple text", noArgs, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text("This is a simple text response for testing.")}, nil
	})
	add("test_image_content", "Returns a 1x1 PNG", noArgs, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: png, MIMEType: "image/png"}}}, nil
	})
	add("test_audio_content", "Returns a tiny WAV", noArgs, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: wavSilence, MIMEType: "audio/wav"}}}, nil
	})
	add("test_embedded_resource", "Returns an embedded text resource", noArgs, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content."}}}}, nil
	})
	add("test_multiple_content_types", "Returns text, image and resource", noArgs, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "Multiple content types test:"},
			&mcp.ImageContent{Data: png, MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`}},
		}}, nil
	})
	add("test_error_handling", "Always fails", noArgs, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: text("This tool intentionally returns an error for testing")}, nil
	})
	add("test_tool_with_progress", "Reports progress 0, 50, 100 of 100", noArgs, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		tok := req.Params.GetProgressToken()
		for i, p := range []float64{0, 50, 100} {
			if i > 0 {
				time.Sleep(step)
			}
			if tok != nil {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p, Total: 100}); err != nil {
					return nil, err
				}
			}
		}
		return &mcp.CallToolResult{Content: text("Progress test completed")}, nil
	})
	add("test_tool_with_logging", "Sends three info log messages", noArgs, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i, m := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			if i > 0 {
				time.Sleep(step)
			}
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "conformancefixture", Data: m}); err != nil {
				return nil, err
			}
		}
		return &mcp.CallToolResult{Content: text("Logging test completed")}, nil
	})
	add("test_sampling", "Asks the client to sample", json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}`),
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Prompt string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 100,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: args.Prompt}}}})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: text("sampling failed: " + err.Error())}, nil
			}
			b, _ := json.Marshal(res.Content)
			return &mcp.CallToolResult{Content: text("LLM response: " + string(b))}, nil
		})
	add("test_elicitation", "Asks the client for input", json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`),
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Message string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: args.Message, RequestedSchema: json.RawMessage(
				`{"type":"object","properties":{"username":{"type":"string","description":"User's response"},"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}`)})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: text("elicitation failed: " + err.Error())}, nil
			}
			return &mcp.CallToolResult{Content: text(fmt.Sprintf("User response: action=%s content=%v", res.Action, res.Content))}, nil
		})
	elicitWith := func(schema string) func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Please review and update the form fields",
				RequestedSchema: json.RawMessage(schema)})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: text("elicitation failed: " + err.Error())}, nil
			}
			content, _ := json.Marshal(res.Content)
			return &mcp.CallToolResult{Content: text(fmt.Sprintf("Elicitation completed: action=%s, content=%s", res.Action, content))}, nil
		}
	}
	add("test_elicitation_sep1034_defaults", "Elicits a form whose fields all have defaults (SEP-1034)", noArgs, elicitWith(`{"type":"object","properties":{
		"name":{"type":"string","default":"John Doe"},
		"age":{"type":"integer","default":30},
		"score":{"type":"number","default":95.5},
		"status":{"type":"string","enum":["active","inactive","pending"],"default":"active"},
		"verified":{"type":"boolean","default":true}}}`))
	add("test_elicitation_sep1330_enums", "Elicits a form with the five enum variants (SEP-1330)", noArgs, elicitWith(`{"type":"object","properties":{
		"untitledSingle":{"type":"string","enum":["option1","option2","option3"]},
		"titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
		"legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
		"untitledMulti":{"type":"array","items":{"type":"string","enum":["option1","option2","option3"]}},
		"titledMulti":{"type":"array","items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}`))
	add("test_reconnection", "Answers after a short pause (the suite checks the front door's SSE stream handling)", noArgs,
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			time.Sleep(2 * step)
			return &mcp.CallToolResult{Content: text("Reconnection test completed successfully")}, nil
		})
	add("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", json.RawMessage(`{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type": "object",
		"$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
		"properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
		"additionalProperties": false}`),
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text("ok")}, nil
		})

	// The resources and prompts of the suite's resources-* and prompts-*
	// scenarios.
	textRes := func(mime, body string) mcp.ResourceHandler {
		return func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: mime, Text: body}}}, nil
		}
	}
	s.AddResource(&mcp.Resource{URI: "test://static-text", Name: "static-text", MIMEType: "text/plain"},
		textRes("text/plain", "This is the content of the static text resource."))
	s.AddResource(&mcp.Resource{URI: "test://static-binary", Name: "static-binary", MIMEType: "image/png"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "image/png", Blob: png}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "test://watched-resource", Name: "watched-resource", MIMEType: "text/plain"},
		textRes("text/plain", "Watched resource content."))
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "template", MIMEType: "application/json"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := strings.TrimSuffix(strings.TrimPrefix(r.Params.URI, "test://template/"), "/data")
			body, _ := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "application/json", Text: string(body)}}}, nil
		})
	user := func(c mcp.Content) *mcp.GetPromptResult {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: c}}}
	}
	s.AddPrompt(&mcp.Prompt{Name: "test_simple_prompt", Description: "A simple prompt without arguments"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return user(&mcp.TextContent{Text: "This is a simple prompt for testing."}), nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_arguments", Description: "A prompt with required arguments",
		Arguments: []*mcp.PromptArgument{{Name: "arg1", Description: "First test argument", Required: true}, {Name: "arg2", Description: "Second test argument", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return user(&mcp.TextContent{Text: fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", r.Params.Arguments["arg1"], r.Params.Arguments["arg2"])}), nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_embedded_resource", Description: "A prompt that includes an embedded resource",
		Arguments: []*mcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			uri := r.Params.Arguments["resourceUri"]
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: uri, MIMEType: "text/plain", Text: "Embedded resource content for testing."}}},
				{Role: "user", Content: &mcp.TextContent{Text: "Please process the embedded resource above."}},
			}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_image", Description: "A prompt that includes image content"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.ImageContent{Data: png, MIMEType: "image/png"}},
				{Role: "user", Content: &mcp.TextContent{Text: "Please analyze the image above."}},
			}}, nil
		})

	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "conformancefixture:", err)
		os.Exit(1)
	}
}
