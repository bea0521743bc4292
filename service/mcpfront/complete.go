package mcpfront

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/service/core"
)

// complete answers completion/complete through the core's completion
// (service/core/complete.go), like the gRPC API's Complete: a ref/prompt
// names a prompt by its exposed name, a ref/resource a resource template
// by its URI template, whose server is the one that lists it among those
// whose resources the caller may use (as a read's server is inferred).
//
// The receiving middleware calls it before go-sdk's own completion
// handler, whose checks of ref and argument.name would answer bare
// InvalidParams errors: the core's errors name the field in their data,
// as everywhere else. It is also the ServerOptions.CompletionHandler, for
// which go-sdk declares the completions capability.
func (f *Front) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	var in core.CompleteInput
	if p := req.Params; p != nil {
		in.Argument, in.Value = p.Argument.Name, p.Argument.Value
		if p.Context != nil {
			in.Context = p.Context.Arguments
		}
		if r := p.Ref; r != nil {
			switch r.Type { // go-sdk refuses any other type when it decodes the request
			case "ref/prompt":
				in.Kind, in.Prompt = core.CompletePrompt, r.Name
			case "ref/resource":
				in.Kind, in.Template = core.CompleteTemplate, r.URI
			}
		}
	}
	res, e := f.c.Complete(principalContext(ctx, req.GetExtra()), in, mcpFields, func(r *mcp.CompleteResult) int {
		raw, err := json.Marshal(r)
		if err != nil {
			return 0
		}
		return len(raw)
	})
	if e != nil {
		return nil, mcpError(e)
	}
	return res, nil
}
