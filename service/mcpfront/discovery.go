package mcpfront

import (
	"context"
	"encoding/json"
	"path"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/service/core"
)

// Progressive discovery: for a big catalog, tools/list returns a small
// core set of tools plus one tool, search_tools, that ranks the whole
// catalog (the core's SearchTools) and returns the definitions of the
// best matches; the client then calls any tool by name — tools/call never
// depended on tools/list. Nothing is kept per session, so it works the
// same for stateless (2026-07-28) clients and on every replica.

// SearchToolName is the front door's search tool in progressive mode.
const SearchToolName = "search_tools"

// Discovery configures progressive discovery. The zero value lists every
// tool.
type Discovery struct {
	// Progressive turns it on for this listener.
	Progressive bool
	// CoreTools are globs (path.Match syntax) over exposed tool names: the
	// tools listed besides search_tools.
	CoreTools []string
	// Principals, if set, limits progressive listing to these principals
	// (others list every tool); empty: every principal.
	Principals []string
}

// progressiveFor reports whether the caller of ctx (authenticated) lists
// progressively.
func (f *Front) progressiveFor(ctx context.Context) bool {
	d := &f.opts.Discovery
	if !d.Progressive {
		return false
	}
	if len(d.Principals) == 0 {
		return true
	}
	p, _ := core.PrincipalFrom(ctx)
	return slices.Contains(d.Principals, p.Name)
}

// inCoreSet reports whether an exposed name is one of the core tools.
func (f *Front) inCoreSet(name string) bool {
	for _, g := range f.opts.Discovery.CoreTools {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// searchTool is the definition of search_tools.
var searchTool = &mcp.Tool{
	Name:  SearchToolName,
	Title: "Search tools",
	Description: "Find the tools for a task among every tool this server offers (most are not listed). " +
		"Describe what you need in words; the best matching tools are returned with their input schemas. " +
		"Call any returned tool by its name.",
	InputSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"query":   map[string]any{"type": "string", "description": "What you need to do, in words"},
			"limit":   map[string]any{"type": "integer", "minimum": 1, "maximum": core.MaxSearchLimit, "description": "How many tools to return (default 10)"},
			"servers": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Only tools of these servers"},
		},
		"required":             []any{"query"},
		"additionalProperties": false,
	},
	Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: new(bool), IdempotentHint: true, OpenWorldHint: new(bool)},
}

// searchArgs are search_tools' arguments.
type searchArgs struct {
	Query   string   `json:"query"`
	Limit   int      `json:"limit"`
	Servers []string `json:"servers"`
}

// searchTools answers a call of search_tools: the matches' definitions as
// structured content ({"tools": [...], "revision": ...}) and as JSON text.
// Arguments a model can fix (a missing query, an unknown server) are an
// isError result naming the argument, like any tool's ARGUMENTS_INVALID.
func (f *Front) searchTools(ctx context.Context, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var a searchArgs
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &a); err != nil {
			return mcpCallFailure(core.InvalidArguments(core.Violation("arguments", "not an object of query, limit and servers: "+err.Error())))
		}
	}
	hits, rev, e := f.c.SearchTools(ctx, core.SearchInput{Query: a.Query, Limit: a.Limit, Servers: a.Servers,
		QueryField: "arguments.query", LimitField: "arguments.limit"}, mcpFields)
	if e != nil {
		if e.Code == core.InvalidArgument || e.Reason == core.ReasonServerNotFound {
			e.Reason = core.ReasonArgumentsInvalid
		}
		return mcpCallFailure(e)
	}
	tools := make([]*mcp.Tool, len(hits))
	for i, h := range hits {
		tools[i] = toolToMCP(h.Tool)
	}
	out := map[string]any{"tools": tools, "revision": rev}
	text, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: out}, nil
}
