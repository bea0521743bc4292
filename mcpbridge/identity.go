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

// principalMeta is the request _meta naming the caller when the server
// forwards the principal (ForwardPrincipal), else nil. Calls, reads and
// prompts carry it alike.
func (s *session) principalMeta(principal string) mcp.Meta {
	if !s.u.cfg.ForwardPrincipal || principal == "" {
		return nil
	}
	return mcp.Meta{PrincipalMetaKey: map[string]any{"name": principal}}
}

// forwardPrincipal adds principalMeta to a tools/call request's _meta.
func (s *session) forwardPrincipal(params *mcp.CallToolParams, opts *CallOptions) {
	if opts == nil {
		return
	}
	for k, v := range s.principalMeta(opts.Principal) {
		if params.Meta == nil {
			params.Meta = mcp.Meta{}
		}
		params.Meta[k] = v
	}
}
