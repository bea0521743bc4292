package mcpbridge

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Decoded arguments for a transport whose wire carries values, not JSON
// text: the MCP gRPC binding sends a call's arguments as a
// google.protobuf.Struct. go-sdk's session still encodes every tools/call
// as JSON (the taps read that request, go-sdk registers and retires the
// call, cancellation and progress work as for every transport), but the
// binding's adapter would then decode that JSON into values again, values
// the front door already decoded to validate them (about 3 µs and 14
// allocations a call of one string argument; docs/mcp-grpc.md, "A call's
// arguments: the values toolsvc validated").
//
// So the caller may hand its decoded arguments over with the call
// (CallOptions.DecodedArguments), and the session puts them, with the
// tool's name, in the context it writes the request with, for a gRPC
// upstream only (no other transport reads them). They are the very values
// the request's "arguments" were encoded from or decoded into, so the
// adapter sends the same Struct either way; it decodes the request as
// before whenever they cannot say everything the request does: a
// continued interactive call (its input responses and request state are
// read from the request), or a value a Struct cannot hold as the JSON
// decode would (internal/mcpgrpcup, decodedCall). The core leaves out
// arguments whose text holds the integer -0, which its decoding reads as
// 0 (service/core, negativeZeroInteger).

// decodedCall is one tools/call's name and decoded arguments, as the request
// written with its context carries them.
type decodedCall struct {
	name string
	args map[string]any
}

type decodedCallKey struct{}

// withDecodedCall is ctx carrying the decoded arguments of the tools/call
// about to be written with it, when the session's transport reads them
// (TransportGRPC) and the request carries nothing else the transport
// sends (no input responses or request state).
func (s *session) withDecodedCall(ctx context.Context, params *mcp.CallToolParams, opts *CallOptions) context.Context {
	if opts == nil || opts.DecodedArguments == nil || len(params.InputResponses) > 0 || params.RequestState != "" ||
		s.transport() != TransportGRPC {
		return ctx
	}
	return context.WithValue(ctx, decodedCallKey{}, &decodedCall{name: params.Name, args: opts.DecodedArguments})
}

// DecodedCallOf returns the tool name and the decoded arguments of the
// tools/call being written with ctx, when its caller handed them over
// (CallOptions.DecodedArguments) and the request carries nothing more the
// transport must read from its JSON. The map is shared with the caller:
// read it, never change it.
func DecodedCallOf(ctx context.Context) (name string, args map[string]any, ok bool) {
	w, ok := ctx.Value(decodedCallKey{}).(*decodedCall)
	if !ok {
		return "", nil, false
	}
	return w.name, w.args, true
}
