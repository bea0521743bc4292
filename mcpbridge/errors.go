package mcpbridge

import (
	"errors"
	"fmt"
	"time"
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
	// ErrOverloaded: the upstream's maxConcurrentCalls are in flight and its
	// wait queue is full.
	ErrOverloaded = errors.New("upstream concurrency limit reached")
)

// Reasons an upstream is unavailable.
const (
	ReasonNoSession   = "no_session"   // not connected (connecting or backing off)
	ReasonSessionLost = "session_lost" // the session died during the call
	ReasonCircuitOpen = "circuit_open" // the breaker fails calls fast
	ReasonStarting    = "starting"     // the bridge's first discovery round is not finished
	// ReasonRedirectRefused: the upstream redirected a request to another
	// origin, which toolsvc does not follow (RedirectError).
	ReasonRedirectRefused = "redirect_refused"
)

// UnavailableError details ErrUnavailable: errors.Is(err, ErrUnavailable)
// holds for it.
type UnavailableError struct {
	Server string
	Reason string // one of the Reason constants
	// RetryAfter is a hint for when a retry may succeed (0: unknown).
	RetryAfter time.Duration
	// Detail says more, without secrets (ReasonTokenStore: why the store
	// could not be opened at start).
	Detail string
}

func (e *UnavailableError) Error() string {
	switch e.Reason {
	case ReasonCircuitOpen:
		return fmt.Sprintf("upstream unavailable: server %q: circuit breaker open, retry after %s", e.Server, e.RetryAfter.Round(time.Millisecond))
	case ReasonSessionLost:
		return fmt.Sprintf("upstream unavailable: server %q: session lost during the call", e.Server)
	case ReasonRedirectRefused:
		return fmt.Sprintf("upstream unavailable: server %q redirected the call to another origin, which toolsvc refuses (credentials are sent only to the configured origin)", e.Server)
	case ReasonTokenEndpoint:
		return fmt.Sprintf("upstream unavailable: server %q: the authorization server's token endpoint failed or is unreachable", e.Server)
	case ReasonStarting:
		return "upstream unavailable: toolsvc is still discovering its upstreams; retry shortly or on another replica"
	case ReasonTokenStore:
		if e.Detail != "" {
			return fmt.Sprintf("upstream unavailable: server %q: toolsvc's token store (tokenStore) could not be opened at start, so no login can be read or stored: %s (fix it and restart toolsvc)", e.Server, e.Detail)
		}
		return fmt.Sprintf("upstream unavailable: server %q: toolsvc's token store (tokenStore) is unreachable, so the caller's login cannot be read; it is kept, retry shortly", e.Server)
	}
	return fmt.Sprintf("upstream unavailable: server %q has no ready session", e.Server)
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// UpstreamError is a JSON-RPC error answered by an upstream.
// MalformedAnswerError: the upstream answered, but with a result that is
// not valid MCP (go-sdk could not decode it). The session is fine.
type MalformedAnswerError struct {
	Server string
	Detail string // the decoder's complaint, redacted
}

func (e *MalformedAnswerError) Error() string {
	return fmt.Sprintf("upstream %q answered with a result that is not valid MCP: %s", e.Server, e.Detail)
}

type UpstreamError struct {
	Server  string
	Code    int64
	Message string
}

func (e *UpstreamError) Error() string {
	return fmt.Sprintf("upstream %q answered error %d: %s", e.Server, e.Code, e.Message)
}

// TaskRequiredError is an upstream's refusal of a call that asked no task
// because the tool runs only as one: a 2026-07-28 server's -32021 whose
// data.requiredCapabilities.extensions names the tasks extension
// (fastmcp-tasks' answer for a mode "required" tool). Tool is the exposed
// name. It unwraps to the upstream's error.
type TaskRequiredError struct {
	*UpstreamError
	Tool string
}

func (e *TaskRequiredError) Unwrap() error { return e.UpstreamError }
