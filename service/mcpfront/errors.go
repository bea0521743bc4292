package mcpfront

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/service/core"
)

// The MCP form of the core's one error value (service/core/errors.go),
// mapped here, once. The message is the error's own, bounded; it was
// built with the front door's field names (mcpFields), so nothing here
// edits text.

// mcpFields are the MCP names of the request fields the core's errors
// concern: tools/call has one "arguments" (JSON), lists continue from a
// "cursor", resources/read names no server, and completion/complete has a
// "ref" (a prompt's "name" or a resource template's "uri") and an
// "argument" (its "name"); a 2026-07-28 retry carries "requestState" and
// "inputResponses".
var mcpFields = core.Fields{ArgumentsJSON: "arguments", PageToken: "cursor", NextPageToken: "nextCursor",
	CompleteRef: "ref", CompletePrompt: "ref.name", CompleteTemplate: "ref.uri", CompleteArgument: "argument.name",
	TaskHandle: "taskId", RequestState: "requestState", InputResponses: "inputResponses"}

// mcpCallFailure is the MCP form of a refused or failed tool call:
// arguments the model can fix are a tool error (isError, so the model sees
// why; _meta[ErrorMetaKey] carries what a JSON-RPC error's data does);
// everything else is a JSON-RPC error (mcpError).
func mcpCallFailure(e *core.Error) (*mcp.CallToolResult, error) {
	if e.Reason == core.ReasonArgumentsInvalid {
		e = e.Bounded()
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: e.Message}},
			Meta: mcp.Meta{ErrorMetaKey: errorData(e)}}, nil
	}
	return nil, mcpError(e)
}

// ErrorMetaKey is the _meta key of a tools/call isError result that
// toolsvc made (ARGUMENTS_INVALID): its value is the object a JSON-RPC
// error of the front door carries as data.
const ErrorMetaKey = "dev.toolsvc/error"

// mcpError is the JSON-RPC error of e. Codes: -32002 for
// RESOURCE_NOT_FOUND (the MCP spec's resource not found), MethodNotFound
// for METHOD_NOT_FOUND and -32020 for HEADER_MISMATCH (the codes the
// specs give them), InvalidParams
// for INVALID_ARGUMENT and other NOT_FOUNDs (the MCP spec's unknown tool
// and unknown task: TASK_HANDLE_INVALID, TASK_NOT_FOUND) and for
// TASK_NOT_YOURS (to the tasks specs, another's task is an unknown one),
// InternalError for INTERNAL, and the server error -32000 for the rest
// (unavailable, deadline, cancelled, over a limit, permission; and
// UNIMPLEMENTED, an upstream's MethodNotFound: codeUnimplemented in
// gosdk.go). data carries what the gRPC status carries in
// its details: "code" (the canonical code's name), "reason", "metadata",
// "retryAfterSeconds" and "fields" (the violations' field paths).
func mcpError(e *core.Error) *jsonrpc.Error {
	e = e.Bounded()
	code := int64(-32000)
	switch {
	case e.Reason == core.ReasonResourceNotFound:
		code = mcpCodeResourceNotFound
	case e.Reason == core.ReasonMethodNotFound:
		code = jsonrpc.CodeMethodNotFound
	case e.Reason == core.ReasonHeaderMismatch:
		code = codeHeaderMismatch
	case e.Reason == core.ReasonTaskNotYours:
		// The tasks specs' unknown task: another principal's task is not
		// one of the caller's (data.reason tells toolsvc's clients).
		code = jsonrpc.CodeInvalidParams
	case e.Code == core.InvalidArgument, e.Code == core.NotFound:
		code = jsonrpc.CodeInvalidParams
	case e.Code == core.Unimplemented:
		code = codeUnimplemented
	case e.Code == core.Internal:
		code = jsonrpc.CodeInternalError
	}
	raw, _ := json.Marshal(errorData(e))
	return &jsonrpc.Error{Code: code, Message: e.Message, Data: raw}
}

// errorData is the data of the front door's errors (e bounded).
func errorData(e *core.Error) map[string]any {
	data := map[string]any{"code": e.Code.String(), "reason": e.Reason}
	if len(e.Meta) > 0 {
		data["metadata"] = e.Meta
	}
	if e.RetryAfter > 0 {
		data["retryAfterSeconds"] = e.RetryAfter.Seconds()
	}
	if len(e.Violations) > 0 {
		fields := make([]string, len(e.Violations))
		for i, v := range e.Violations {
			fields[i] = v.Field
		}
		data["fields"] = fields
	}
	return data
}

// mcpCodeResourceNotFound is the MCP spec's error code for a resource
// that does not exist.
const mcpCodeResourceNotFound = -32002

// codeMissingCapability is 2026-07-28's JSON-RPC error for a request that
// lacks a capability the server requires of its client; its data's
// requiredCapabilities names what is missing.
const codeMissingCapability = -32021

// taskRequiredError is TASK_REQUIRED (a call that asked no task of a tool
// that runs only as one) in the client's protocol: 2025-11-25's tasks spec
// has the server answer it with -32601 (Method not found; go-sdk sends
// that code bare, without message and data: gosdk.go); 2026-07-28 with
// -32021 whose data.requiredCapabilities.extensions names the tasks
// extension, the client's to opt in to. toolsvc's data is kept beside it.
func taskRequiredError(e *core.Error, modern bool) *jsonrpc.Error {
	e = e.Bounded()
	data := errorData(e)
	code := int64(jsonrpc.CodeMethodNotFound)
	if modern {
		code = codeMissingCapability
		data["requiredCapabilities"] = map[string]any{"extensions": map[string]any{core.TasksExtension: map[string]any{}}}
	}
	raw, _ := json.Marshal(data)
	return &jsonrpc.Error{Code: code, Message: e.Message, Data: raw}
}
