package mcpbridge

import (
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// codeMalformedAnswer is the JSON-RPC error code a transport uses to say
// that the upstream's answer is not one the bridge may pass on (a
// transport that translates another wire, such as the MCP gRPC binding,
// finds it malformed before go-sdk sees it). Like codeMessageTooLarge it
// is in the implementation-defined server-error range and never comes from
// an upstream: a transport makes it (MalformedAnswer).
const codeMalformedAnswer = -32096

// MalformedAnswer is the error a transport answers a request with when the
// upstream's answer is malformed; the bridge reports it as a
// MalformedAnswerError (UPSTREAM_MALFORMED) with detail, redacted.
func MalformedAnswer(detail string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: codeMalformedAnswer, Message: detail}
}

// malformedDetail is the detail of a transport's MalformedAnswer.
func malformedDetail(err error) (string, bool) {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && werr.Code == codeMalformedAnswer {
		return werr.Message, true
	}
	return "", false
}

// isMalformed reports a transport's MalformedAnswer.
func isMalformed(err error) bool {
	_, ok := malformedDetail(err)
	return ok
}
