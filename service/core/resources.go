package core

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// Resources and prompts go through the operation engine like tool calls
// (operation.go). Authorization: "visible = usable", with the auth rules'
// globs. A prompt is matched by its exposed name ("<prefix>__<prompt>",
// like a tool); a server's resources (listing, templates, reads,
// subscriptions) by the name "<prefix>__@resources". So "github__*"
// covers github's tools, prompts and resources, and a deny of
// "github__@resources" hides only its resources.

// ResourcesAuthName is the auth name of a server's resources; an unknown
// server yields a name no rule can match except "*"-style globs, and the
// lookup that follows reports SERVER_NOT_FOUND.
func (s *Core) ResourcesAuthName(server string) string {
	n, err := s.bridge.ResourcesAuthName(server)
	if err != nil {
		return mcpbridge.ResourcesAuthName(mcpbridge.ServerPrefix(server))
	}
	return n
}

// A resource page token names the revision its listing started from and
// the offset in that snapshot's (sorted) list.
const resourcePageTokenVersion = "r1"

func encodeResourcePageToken(rev string, next int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(resourcePageTokenVersion + ":" + rev + ":" + strconv.Itoa(next)))
}

// resourceCursor resolves a resource listing's page token (empty: the
// current snapshot from its start) to the snapshot it names and the
// offset to continue from; f names the token's field.
func (s *Core) resourceCursor(token string, f Fields) (*mcpbridge.ResourceSnapshot, int, *Error) {
	cat := s.bridge.Resources()
	if token == "" {
		return cat.Current(), 0, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	parts := strings.Split(string(raw), ":")
	if err != nil || len(parts) != 3 || parts[0] != resourcePageTokenVersion || !ValidRevision(parts[1]) {
		return nil, 0, malformedToken(f)
	}
	off, err := strconv.Atoi(parts[2])
	if err != nil || off < 0 {
		return nil, 0, malformedToken(f)
	}
	old, ok := cat.Snapshot(parts[1])
	if !ok {
		return nil, 0, expiredToken(f, "resource", parts[1])
	}
	return old, off, nil
}

// ServerFilter checks the servers field and returns a membership test
// (nil: every server).
func (s *Core) ServerFilter(servers []string) (func(string) bool, error) {
	f, e := s.serverFilter(servers, func(i int, name string) *Error {
		field := fmt.Sprintf("servers[%d]", i)
		return &Error{Code: NotFound, Reason: ReasonServerNotFound, Message: fmt.Sprintf("%s: no configured server %q", field, Clip(name)),
			Violations: []FieldViolation{Violation(field, "not a configured server")}}
	})
	if e != nil {
		return nil, e
	}
	return f, nil
}

// serverFilter is ServerFilter with the refusal of servers[i] built by
// unknown.
func (s *Core) serverFilter(servers []string, unknown func(i int, name string) *Error) (func(string) bool, *Error) {
	if len(servers) == 0 {
		return nil, nil
	}
	for i, name := range servers {
		if _, err := s.bridge.Server(name); err != nil {
			return nil, unknown(i, name)
		}
	}
	return func(n string) bool { return slices.Contains(servers, n) }, nil
}

// resourceVisible returns the caller's filter over servers' resources
// (its View), narrowed to only (nil: every server).
func (s *Core) resourceVisible(ctx context.Context, only func(string) bool) func(server string) bool {
	return s.ViewOf(ctx).servers(only)
}

// ResolveRead checks a read or subscription request and admits it: the
// URI is required, the server is resolved (or inferred), the caller must
// be allowed that server's resources.
func (op *Operation) ResolveRead(server, uri string) (string, error) {
	op.meta["uri"], op.meta["server"] = uri, server
	if uri == "" {
		return "", InvalidField("uri", "required: a resource URI from ListResources, a resource_link, or one a template yields")
	}
	if server == "" {
		// Inferred among the servers whose resources the caller may see:
		// servers it may not see are neither candidates nor named.
		vis := op.s.resourceVisible(op.ctx, nil)
		var cands []string
		for _, n := range op.s.bridge.Resources().Current().ServersFor(uri) {
			if vis(n) {
				cands = append(cands, n)
			}
		}
		switch len(cands) {
		case 0:
			if err := op.s.bridge.Discovered(); err != nil {
				return "", err // closed, or the first discovery round is not finished
			}
			return "", fmt.Errorf("%w: no server you may read lists %q or has a template matching it", mcpbridge.ErrResourceNotFound, Clip(uri))
		case 1:
			server = cands[0]
		default:
			return "", &mcpbridge.AmbiguousResourceError{URI: uri, Candidates: cands}
		}
	}
	op.meta["server"] = server
	// As for tools: authorization is decided before a failed lookup (an
	// unconfigured server) is reported.
	if err := op.admit(op.s.ResourcesAuthName(server), "use the resources of server", Clip(server)); err != nil {
		return "", err
	}
	return op.s.bridge.ResolveResourceServer(server, uri)
}

// GetPrompt renders the prompt of exposed name with args, for every
// wire: the name checked, the caller authorized (before a failed lookup
// is reported, as for tools), the upstream asked. With in, the upstream
// may ask the caller for input as in a tool call (interact.go): the result
// is then input_required (InputRequests and a signed RequestState).
func (op *Operation) GetPrompt(name string, args map[string]string, in *InputOptions) (*mcp.GetPromptResult, error) {
	if err := checkExposedName("name", name, "prompt"); err != nil {
		return nil, err
	}
	op.meta["prompt"] = name
	if name == "" {
		return nil, InvalidField("name", "required: the exposed name of a listed prompt")
	}
	p, rerr := op.s.bridge.ResolvePrompt(name)
	if err := op.admit(name, "use prompt", name); err != nil {
		return nil, err
	}
	if rerr != nil {
		return nil, rerr
	}
	op.meta["server"] = p.Server
	st, e := op.continued(in, promptBound(name))
	if e != nil {
		return nil, e
	}
	x := &exchange{op: op, bound: promptBound(name), server: p.Server, in: in, state: st,
		send: func(ctx context.Context, it *mcpbridge.Interaction) (mcp.Result, error) {
			return op.s.bridge.GetPrompt(ctx, p, args, op.principal.Name, it)
		},
		need: func(reqs mcp.InputRequestMap, state string) mcp.Result {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{}, InputRequests: reqs, RequestState: state}
		}}
	res, err := x.run(op.ctx)
	r, _ := res.(*mcp.GetPromptResult)
	return r, err
}

// ReadResource reads uri on server (resolved by ResolveRead) for the
// operation's principal (server is not empty); it returns the server. in
// is as for GetPrompt.
func (op *Operation) ReadResource(server, uri string, in *InputOptions) (*mcp.ReadResourceResult, string, error) {
	bound := resourceBound(server, uri)
	st, e := op.continued(in, bound)
	if e != nil {
		return nil, server, e
	}
	x := &exchange{op: op, bound: bound, server: server, in: in, state: st,
		send: func(ctx context.Context, it *mcpbridge.Interaction) (mcp.Result, error) {
			res, _, err := op.s.bridge.ReadResource(ctx, server, uri, op.principal.Name, it)
			return res, err
		},
		need: func(reqs mcp.InputRequestMap, state string) mcp.Result {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{}, InputRequests: reqs, RequestState: state}
		}}
	res, err := x.run(op.ctx)
	r, _ := res.(*mcp.ReadResourceResult)
	return r, server, err
}
