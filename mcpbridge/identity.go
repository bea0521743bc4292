package mcpbridge

import "github.com/modelcontextprotocol/go-sdk/mcp"

// PrincipalMetaKey is the _meta key under which a tools/call request
// carries the calling principal when the server's ForwardPrincipal is set
// (a "dev.toolsvc/" prefix, as MCP reserves unprefixed and
// "modelcontextprotocol" keys). The value is an object:
//
//	{"name": "team-a"}
//
// It tells the upstream who asked, for its audit log; it is an assertion
// by toolsvc, not a credential: an upstream should trust it only as far as
// it trusts toolsvc's own authentication to it.
const PrincipalMetaKey = "dev.toolsvc/principal"

// forwardPrincipal puts the caller in the request's _meta when the server
// asks for it.
func (s *session) forwardPrincipal(params *mcp.CallToolParams, opts *CallOptions) {
	if !s.u.cfg.ForwardPrincipal || opts == nil || opts.Principal == "" {
		return
	}
	if params.Meta == nil {
		params.Meta = mcp.Meta{}
	}
	params.Meta[PrincipalMetaKey] = map[string]any{"name": opts.Principal}
}
