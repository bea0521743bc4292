package mcpbridge

import (
	"errors"
	"fmt"
)

var (
	// ErrToolNotFound: no tool with that exposed name in the catalog.
	ErrToolNotFound = errors.New("tool not found")
	// ErrServerNotFound: no upstream with that name.
	ErrServerNotFound = errors.New("server not found")
	// ErrUnavailable: the upstream has no usable session, or the session
	// died during the call. Retrying later may succeed.
	ErrUnavailable = errors.New("upstream unavailable")
	// ErrClosed: the bridge is shut down.
	ErrClosed = errors.New("bridge closed")
	// ErrInvalidArguments: the call's arguments are not a JSON object.
	ErrInvalidArguments = errors.New("arguments must be a JSON object")
)

// UpstreamError is a JSON-RPC error answered by an upstream.
type UpstreamError struct {
	Server  string
	Code    int64
	Message string
}

func (e *UpstreamError) Error() string {
	return fmt.Sprintf("upstream %q answered error %d: %s", e.Server, e.Code, e.Message)
}
