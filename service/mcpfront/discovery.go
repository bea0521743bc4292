package mcpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/service/core"
)

// Progressive discovery: for a big catalog, tools/list returns a small
// core set of tools plus two tools: search_tools, which ranks the whole
// catalog (the core's SearchTools) and returns the definitions of the
// best matches, and call_tool, which calls any tool by name with its
// arguments. tools/call never depended on tools/list, so a client that
// calls what it found by name works too; but agent frameworks only call
// what they were listed (langchain's tools, an openai-agents Agent's), and
// for them the front door does two things:
//
//   - call_tool: a listed tool through which any found tool is called;
//     it works with a tool list fixed at the agent's start, on every
//     replica, in both protocol eras;
//   - a growing list: on a 2025-11-25 (or older) session, the tools a
//     search of that session returned join that session's tools/list
//     (at most MaxFoundPerSession, the oldest found leaving first), and
//     the session alone is sent notifications/tools/list_changed, before
//     the search's result, when the search found tools it was not
//     listed yet. A framework that lists again between turns (an
//     openai-agents MCP server without cache_tools_list) or on
//     list_changed then has the found tool itself. The set lives with
//     the session on the replica that ran the search: a session adopted
//     by another replica lists the core set again there. A 2026-07-28
//     request has no session to keep it in (any replica answers any
//     request), so its list stays the core set, and its client uses
//     call_tool or calls by name.

// SearchToolName is the front door's search tool in progressive mode.
const SearchToolName = "search_tools"

// CallToolName is the front door's call-through tool in progressive mode.
const CallToolName = "call_tool"

// MaxFoundPerSession bounds the found tools one session's tools/list
// adds to the core set: as many as one search may return, so the whole
// latest search is always listed. A name is the catalog's own string, so
// an entry costs a map slot and a slice slot (about 50 bytes): with
// DefaultMaxSessions, at most about 5 MB per replica.
const MaxFoundPerSession = core.MaxSearchLimit

// Discovery configures progressive discovery. The zero value lists every
// tool.
type Discovery struct {
	// Progressive turns it on for this listener.
	Progressive bool
	// CoreTools are globs (path.Match syntax) over exposed tool names: the
	// tools listed besides search_tools and call_tool.
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

// callThroughTool is the definition of call_tool.
var callThroughTool = &mcp.Tool{
	Name:  CallToolName,
	Title: "Call a tool",
	Description: "Call a tool that search_tools returned (or any tool of this server) by its name, " +
		"with the arguments its input schema describes.",
	InputSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name":      map[string]any{"type": "string", "description": "The tool's name, as search_tools returned it"},
			"arguments": map[string]any{"type": "object", "description": "The tool's arguments, as its input schema describes them"},
		},
		"required":             []any{"name"},
		"additionalProperties": false,
	},
}

// callThroughFields are the field names of a call's errors when it came
// through call_tool: the tool's arguments are call_tool's
// arguments.arguments.
var callThroughFields = func() core.Fields {
	f := mcpFields
	f.ArgumentsJSON = "arguments.arguments"
	f.ToolName, f.ToolNameInArguments, f.ToolNameHint = "arguments.name", true, " (search_tools finds tools by what they do)"
	return f
}()

// callThrough decodes call_tool's arguments: the tool's name and its
// arguments (JSON text, "" for none). A refusal names the argument.
func callThrough(raw json.RawMessage) (string, string, *core.Error) {
	var a struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields() // its schema says additionalProperties: false
	if err := dec.Decode(&a); err != nil {
		return "", "", core.InvalidArguments(core.Violation("arguments", "not an object of name and arguments: "+err.Error()))
	}
	switch {
	case a.Name == nil || *a.Name == "":
		return "", "", core.InvalidArguments(core.Violation("arguments.name", "required: the name of a tool search_tools returned"))
	case *a.Name == CallToolName || *a.Name == SearchToolName:
		return "", "", core.InvalidArguments(core.Violation("arguments.name", "call "+*a.Name+" itself, not through call_tool"))
	}
	args := strings.TrimSpace(string(a.Arguments))
	if args == "null" {
		args = ""
	}
	if args != "" && args[0] != '{' {
		return "", "", core.InvalidArguments(core.Violation("arguments.arguments", "must be an object"))
	}
	return *a.Name, args, nil
}

// foundTools are the tools each 2025-11-25 session's searches found, which
// its tools/list adds to the core set.
type foundTools struct {
	mu sync.Mutex
	m  map[*mcp.ServerSession]*foundSet
}

// foundSet is one session's found tools, oldest first.
type foundSet struct {
	order []string
	has   map[string]struct{}
}

// add records names as found by ss, evicting the oldest beyond
// MaxFoundPerSession; it reports whether any was not recorded before.
func (ft *foundTools) add(ss *mcp.ServerSession, names []string) bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if ft.m == nil {
		ft.m = map[*mcp.ServerSession]*foundSet{}
	}
	s := ft.m[ss]
	if s == nil {
		s = &foundSet{has: map[string]struct{}{}}
		ft.m[ss] = s
	}
	added := false
	for _, n := range names {
		if _, ok := s.has[n]; ok {
			continue
		}
		added = true
		s.has[n] = struct{}{}
		s.order = append(s.order, n)
		if len(s.order) > MaxFoundPerSession {
			delete(s.has, s.order[0])
			s.order = slices.Delete(s.order, 0, 1)
		}
	}
	return added
}

// of is ss's found set as a membership test (nil: none found).
func (ft *foundTools) of(ss *mcp.ServerSession) func(string) bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	s := ft.m[ss]
	if s == nil {
		return nil
	}
	has := maps.Clone(s.has)
	return func(name string) bool { _, ok := has[name]; return ok }
}

func (ft *foundTools) forget(ss *mcp.ServerSession) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	delete(ft.m, ss)
}

// reveal adds what a search of req's session found to that session's
// list and, when that added a tool, sends the session (only it)
// notifications/tools/list_changed, on the search's own response stream
// (ctx is the request's), so it arrives before the search's result.
func (f *Front) reveal(ctx context.Context, req *mcp.CallToolRequest, hits []core.SearchHit) {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss == nil || req.ProtocolVersion() >= statelessEra || f.send == nil {
		return
	}
	var names []string
	for _, h := range hits {
		if !f.inCoreSet(h.Tool.Name) {
			names = append(names, h.Tool.Name)
		}
	}
	if len(names) == 0 || !f.found.add(ss, names) {
		return
	}
	_, err := f.send(ctx, "notifications/tools/list_changed",
		&mcp.ServerRequest[*mcp.ToolListChangedParams]{Session: ss, Params: &mcp.ToolListChangedParams{}})
	if err != nil {
		f.log.DebugContext(ctx, "list_changed after a search not delivered", "error", err)
	}
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
func (f *Front) searchTools(ctx context.Context, req *mcp.CallToolRequest, raw json.RawMessage) (*mcp.CallToolResult, error) {
	var a searchArgs
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &a); err != nil {
			return mcpCallFailure(core.InvalidArguments(core.Violation("arguments", "not an object of query, limit and servers: "+err.Error())))
		}
	}
	hits, rev, e := f.c.SearchTools(ctx, core.SearchInput{Query: a.Query, Limit: a.Limit, Servers: a.Servers,
		QueryField: "arguments.query", LimitField: "arguments.limit", ServersField: "arguments.servers", InArguments: true}, mcpFields)
	if e != nil {
		return mcpCallFailure(e)
	}
	f.reveal(ctx, req, hits)
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
