package mcpgrpcup

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// handler runs one JSON-RPC method as its RPC and returns the result in
// the MCP JSON shape (what go-sdk decodes), or as the value go-sdk would
// decode it into (an mcp.Result: handed over as it is, result.go).
type handler func(ctx context.Context, c pb.McpClient, params json.RawMessage) (any, error)

// handlers are the methods the binding has an RPC for. The binding has no
// paging: a list is one response, so no nextCursor is ever set.
var handlers = map[string]handler{
	"tools/list": func(ctx context.Context, c pb.McpClient, _ json.RawMessage) (any, error) {
		r, err := c.ListTools(ctx, &pb.ListToolsRequest{})
		if err != nil {
			return nil, err
		}
		tools := make([]any, 0, len(r.GetTools()))
		for _, t := range r.GetTools() {
			tools = append(tools, toolJSON(t))
		}
		return listJSON("tools", tools, r.GetTtl(), r.GetCacheScope()), nil
	},
	"resources/list": func(ctx context.Context, c pb.McpClient, _ json.RawMessage) (any, error) {
		r, err := c.ListResources(ctx, &pb.ListResourcesRequest{})
		if err != nil {
			return nil, err
		}
		out := make([]any, 0, len(r.GetResources()))
		for _, x := range r.GetResources() {
			out = append(out, resourceJSON(x))
		}
		return listJSON("resources", out, r.GetTtl(), r.GetCacheScope()), nil
	},
	"resources/templates/list": func(ctx context.Context, c pb.McpClient, _ json.RawMessage) (any, error) {
		r, err := c.ListResourceTemplates(ctx, &pb.ListResourceTemplatesRequest{})
		if err != nil {
			return nil, err
		}
		out := make([]any, 0, len(r.GetResourceTemplates()))
		for _, x := range r.GetResourceTemplates() {
			out = append(out, omitEmpty(map[string]any{"uriTemplate": x.GetUriTemplate(), "name": x.GetName(), "title": x.GetTitle(),
				"description": x.GetDescription(), "mimeType": x.GetMimeType(), "_meta": structMap(x.GetMetadata())}))
		}
		return listJSON("resourceTemplates", out, r.GetTtl(), r.GetCacheScope()), nil
	},
	"prompts/list": func(ctx context.Context, c pb.McpClient, _ json.RawMessage) (any, error) {
		r, err := c.ListPrompts(ctx, &pb.ListPromptsRequest{})
		if err != nil {
			return nil, err
		}
		out := make([]any, 0, len(r.GetPrompts()))
		for _, p := range r.GetPrompts() {
			args := make([]any, 0, len(p.GetArguments()))
			for _, a := range p.GetArguments() {
				args = append(args, omitEmpty(map[string]any{"name": a.GetName(), "title": a.GetTitle(), "description": a.GetDescription(),
					"required": a.GetRequired()}))
			}
			out = append(out, omitEmpty(map[string]any{"name": p.GetName(), "title": p.GetTitle(), "description": p.GetDescription(),
				"arguments": args, "_meta": structMap(p.GetMetadata())}))
		}
		return listJSON("prompts", out, r.GetTtl(), r.GetCacheScope()), nil
	},
	"tools/call": func(ctx context.Context, c pb.McpClient, params json.RawMessage) (any, error) {
		if name, args, ok := decodedCall(ctx); ok {
			return callTool(ctx, c, &pb.CallToolRequest{Request: &pb.CallToolRequest_Request{Name: name, Arguments: args}})
		}
		var p struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
			retryParams
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, invalidParams("tools/call: %v", err)
		}
		args, err := structpb.NewStruct(p.Arguments)
		if err != nil {
			return nil, invalidParams("tools/call: arguments: %v", err)
		}
		common, err := p.common()
		if err != nil {
			return nil, err
		}
		return callTool(ctx, c, &pb.CallToolRequest{Common: common, Request: &pb.CallToolRequest_Request{Name: p.Name, Arguments: args}})
	},
	"resources/read": func(ctx context.Context, c pb.McpClient, params json.RawMessage) (any, error) {
		var p struct {
			URI string `json:"uri"`
			retryParams
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, invalidParams("resources/read: %v", err)
		}
		common, err := p.common()
		if err != nil {
			return nil, err
		}
		r, err := c.ReadResource(ctx, &pb.ReadResourceRequest{Common: common, Uri: p.URI})
		if err != nil {
			return nil, err
		}
		if r.GetCommon().GetResultType() == pb.ResultType_RESULT_TYPE_INPUT_REQUIRED {
			return inputRequiredJSON(r.GetCommon())
		}
		if v := readResultValue(r); v != nil {
			return v, nil
		}
		return readJSON(r), nil
	},
	"prompts/get": func(ctx context.Context, c pb.McpClient, params json.RawMessage) (any, error) {
		var p struct {
			Name      string            `json:"name"`
			Arguments map[string]string `json:"arguments"`
			retryParams
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, invalidParams("prompts/get: %v", err)
		}
		common, err := p.common()
		if err != nil {
			return nil, err
		}
		r, err := c.GetPrompt(ctx, &pb.GetPromptRequest{Common: common, Name: p.Name, Arguments: p.Arguments})
		if err != nil {
			return nil, err
		}
		if r.GetCommon().GetResultType() == pb.ResultType_RESULT_TYPE_INPUT_REQUIRED {
			return inputRequiredJSON(r.GetCommon())
		}
		if v := promptResultValue(r); v != nil {
			return v, nil
		}
		return promptJSON(r), nil
	},
	"completion/complete": func(ctx context.Context, c pb.McpClient, params json.RawMessage) (any, error) {
		var p struct {
			Ref struct {
				Type string `json:"type"`
				Name string `json:"name"`
				URI  string `json:"uri"`
			} `json:"ref"`
			Argument struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"argument"`
			Context *struct {
				Arguments map[string]string `json:"arguments"`
			} `json:"context"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, invalidParams("completion/complete: %v", err)
		}
		req := &pb.CompletionRequest{Argument: &pb.CompletionRequest_Argument{Name: p.Argument.Name, Value: p.Argument.Value}}
		switch p.Ref.Type {
		case "ref/prompt":
			req.PromptReference = &pb.PromptReference{Name: p.Ref.Name}
		case "ref/resource":
			req.ResourceReference = &pb.ResourceReference{Uri: p.Ref.URI}
		default:
			return nil, invalidParams("completion/complete: ref.type %q", p.Ref.Type)
		}
		if p.Context != nil {
			req.Context = &pb.CompletionRequest_Context{Arguments: p.Context.Arguments}
		}
		r, err := c.Complete(ctx, req)
		if err != nil {
			return nil, err
		}
		return completeResultValue(r), nil
	},
}

// callTool runs a tools/call's RPC and returns its result as go-sdk's
// *mcp.CallToolResult (result.go), or in the MCP JSON shape when it must
// go as JSON.
func callTool(ctx context.Context, c pb.McpClient, req *pb.CallToolRequest) (any, error) {
	r, err := c.CallTool(ctx, req)
	if err != nil {
		return nil, err
	}
	if r.GetCommon().GetResultType() == pb.ResultType_RESULT_TYPE_INPUT_REQUIRED {
		return inputRequiredJSON(r.GetCommon())
	}
	if v := callResultValue(r); v != nil {
		return v, nil
	}
	return callToolJSON(r), nil
}

// readJSON is a complete resources/read result in the MCP JSON shape.
func readJSON(r *pb.ReadResourceResponse) map[string]any {
	contents := make([]any, 0, len(r.GetResource()))
	for _, x := range r.GetResource() {
		contents = append(contents, contentsJSON(x))
	}
	return map[string]any{"contents": contents}
}

// promptJSON is a complete prompts/get result in the MCP JSON shape.
func promptJSON(r *pb.GetPromptResponse) map[string]any {
	msgs := make([]any, 0, len(r.GetMessages()))
	for _, m := range r.GetMessages() {
		msgs = append(msgs, map[string]any{"role": roleJSON(m.GetRole()),
			"content": contentJSON(m.GetText(), m.GetImage(), m.GetAudio(), m.GetEmbeddedResource(), m.GetResourceLink())})
	}
	return omitEmpty(map[string]any{"description": r.GetDescription(), "messages": msgs})
}

// callToolJSON is a complete tools/call result in the MCP JSON shape.
func callToolJSON(r *pb.CallToolResponse) *callResultJSON {
	out := &callResultJSON{Content: make([]any, 0, len(r.GetContent())), IsError: r.GetIsError(),
		StructuredContent: structMap(r.GetStructuredContent())}
	for _, b := range r.GetContent() {
		out.Content = append(out.Content, contentJSON(b.GetText(), b.GetImage(), b.GetAudio(), b.GetEmbeddedResource(), b.GetResourceLink()))
	}
	return out
}

// decodedCall is the tools/call being written with ctx as its name and
// its arguments' Struct, built from the values its caller decoded
// (mcpbridge.DecodedCallOf) instead of decoding the request's JSON, which
// go-sdk encoded from those same values a moment ago: about 3 µs and 14
// allocations a call of one string argument. ok is false, and the request
// is decoded as before, when the caller handed none over (a continued
// interactive call, a caller that did not decode them) or when the values
// hold what decoding the JSON would not give (a number JSON cannot carry
// as a float64, which the decode refuses: an infinity from an overflowing
// literal), or what a Struct cannot hold.
func decodedCall(ctx context.Context) (string, *structpb.Struct, bool) {
	name, args, ok := mcpbridge.DecodedCallOf(ctx)
	if !ok || !finite(args) {
		return "", nil, false
	}
	st, err := structpb.NewStruct(args)
	if err != nil {
		return "", nil, false
	}
	return name, st, true
}

// finite reports whether every number in v is finite (v is a decoded JSON
// value: a map, a slice, or a scalar).
func finite(v any) bool {
	switch v := v.(type) {
	case float64:
		return !math.IsInf(v, 0) && !math.IsNaN(v)
	case float32:
		return !math.IsInf(float64(v), 0) && !math.IsNaN(float64(v))
	case map[string]any:
		for _, e := range v {
			if !finite(e) {
				return false
			}
		}
	case []any:
		for _, e := range v {
			if !finite(e) {
				return false
			}
		}
	}
	return true
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// listJSON is a list result with the upstream's ttl as ttlMs (the bridge's
// refresher re-lists when it runs out, never sooner than its minimum
// interval) and its cache scope.
func listJSON(key string, items []any, ttl *durationpb.Duration, scope pb.CacheScope) map[string]any {
	out := map[string]any{key: items}
	if ttl != nil && ttl.AsDuration() > 0 {
		out["ttlMs"] = ttl.AsDuration().Milliseconds()
	}
	switch scope {
	case pb.CacheScope_CACHE_SCOPE_PRIVATE:
		out["cacheScope"] = "private"
	case pb.CacheScope_CACHE_SCOPE_PUBLIC:
		out["cacheScope"] = "public"
	}
	return out
}

func toolJSON(t *pb.Tool) map[string]any {
	in := structMap(t.GetInputSchema())
	if in == nil {
		in = map[string]any{"type": "object"}
	}
	out := omitEmpty(map[string]any{"name": t.GetName(), "title": t.GetTitle(), "description": t.GetDescription(),
		"outputSchema": structMap(t.GetOutputSchema()), "_meta": structMap(t.GetMetadata())})
	out["inputSchema"] = in
	if a := t.GetAnnotations(); a != nil {
		out["annotations"] = omitEmpty(map[string]any{"title": a.GetTitle(), "readOnlyHint": a.GetReadOnlyHint(),
			"destructiveHint": a.GetDestructiveHint(), "idempotentHint": a.GetIdempotentHint(), "openWorldHint": a.GetOpenWorldHint()})
	}
	return out
}

func resourceJSON(r *pb.Resource) map[string]any {
	out := omitEmpty(map[string]any{"uri": r.GetUri(), "name": r.GetName(), "title": r.GetTitle(), "description": r.GetDescription(),
		"mimeType": r.GetMimeType(), "_meta": structMap(r.GetMetadata())})
	if r.GetSize() > 0 {
		out["size"] = r.GetSize()
	}
	return out
}

func contentsJSON(c *pb.ResourceContents) map[string]any {
	out := omitEmpty(map[string]any{"uri": c.GetUri(), "mimeType": c.GetMimeType(), "_meta": structMap(c.GetMetadata())})
	if c.GetBlob() != nil {
		out["blob"] = c.GetBlob() // base64 in JSON, as MCP's blob is
	} else {
		out["text"] = c.GetText()
	}
	return out
}

// callResultJSON is a tools/call result in the MCP JSON shape, and
// textJSON a text block: structs, not maps, as every call encodes one
// (encoding/json sorts a map's keys and allocates for each entry: 8 of the
// transport's allocations per call of one text block).
type callResultJSON struct {
	Content           []any          `json:"content"`
	IsError           bool           `json:"isError,omitempty"`
	StructuredContent map[string]any `json:"structuredContent,omitempty"`
}

type textJSON struct {
	Type string         `json:"type"`
	Text string         `json:"text"`
	Meta map[string]any `json:"_meta,omitempty"`
}

// contentJSON is one content block (the first of the binding's oneof-like
// fields that is set).
func contentJSON(text *pb.TextContent, image *pb.ImageContent, audio *pb.AudioContent, res *pb.EmbeddedResource, link *pb.Resource) any {
	switch {
	case text != nil:
		return &textJSON{Type: "text", Text: text.GetText(), Meta: structMap(text.GetMetadata())}
	case image != nil:
		return omitEmpty(map[string]any{"type": "image", "data": image.GetData(), "mimeType": image.GetMimeType(), "_meta": structMap(image.GetMetadata())})
	case audio != nil:
		return omitEmpty(map[string]any{"type": "audio", "data": audio.GetData(), "mimeType": audio.GetMimeType(), "_meta": structMap(audio.GetMetadata())})
	case res != nil && res.GetContents() != nil:
		return omitEmpty(map[string]any{"type": "resource", "resource": contentsJSON(res.GetContents()), "_meta": structMap(res.GetMetadata())})
	case link != nil:
		out := resourceJSON(link)
		out["type"] = "resource_link"
		return out
	}
	return &textJSON{Type: "text"}
}

func roleJSON(r pb.Role) string {
	if r == pb.Role_ROLE_ASSISTANT {
		return "assistant"
	}
	return "user"
}

func structMap(s *structpb.Struct) map[string]any {
	if s == nil {
		return nil
	}
	return s.AsMap()
}

// omitEmpty drops the zero values the binding cannot tell from unset.
func omitEmpty(m map[string]any) map[string]any {
	for k, v := range m {
		switch v := v.(type) {
		case string:
			if v == "" {
				delete(m, k)
			}
		case bool:
			if !v {
				delete(m, k)
			}
		case map[string]any:
			if v == nil {
				delete(m, k)
			}
		}
	}
	return m
}
