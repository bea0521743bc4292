// The core's error model: one
// value, built by the bridge's classification or by the core's own checks,
// that each wire maps once to its own form (service/errors.go: a gRPC
// status with google.rpc.ErrorInfo, RetryInfo and BadRequest; the MCP front
// door: a JSON-RPC error, or an isError result for arguments a model can
// fix). No wire edits an error's text: the field names a wire uses are
// chosen when the message is built (Fields).

package core

import (
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Code is the canonical error code of an Error: the google.rpc.Code set,
// with the same numbers and names (gRPC's codes.Code is the same set, so
// the gRPC edge converts by number).
type Code uint32

// The canonical codes.
const (
	OK                 Code = 0
	Canceled           Code = 1
	Unknown            Code = 2
	InvalidArgument    Code = 3
	DeadlineExceeded   Code = 4
	NotFound           Code = 5
	AlreadyExists      Code = 6
	PermissionDenied   Code = 7
	ResourceExhausted  Code = 8
	FailedPrecondition Code = 9
	Aborted            Code = 10
	OutOfRange         Code = 11
	Unimplemented      Code = 12
	Internal           Code = 13
	Unavailable        Code = 14
	DataLoss           Code = 15
	Unauthenticated    Code = 16
)

var codeNames = [...]string{"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
	"AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange",
	"Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated"}

// String is the code's name as gRPC spells it ("InvalidArgument"): the
// outcome label of the metrics and audit lines, and data.code of the
// front door's JSON-RPC errors.
func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Code(" + strconv.FormatUint(uint64(c), 10) + ")"
}

// Domain is the google.rpc.ErrorInfo domain of every toolsvc error.
const Domain = "toolsvc.dev"

// Error reasons: the documented, stable half of every error (clients
// branch on them; docs/errors.md lists them). Every non-OK
// answer carries one, with metadata "server" and "tool" when it concerns a
// tool call.
const (
	ReasonToolNotFound        = "TOOL_NOT_FOUND"       // NOT_FOUND: no tool with that name in the catalog
	ReasonServerNotFound      = "SERVER_NOT_FOUND"     // NOT_FOUND: no configured upstream with that name
	ReasonRequestInvalid      = "REQUEST_INVALID"      // INVALID_ARGUMENT: a request field (not the arguments) is wrong; the violations name it
	ReasonArgumentsInvalid    = "ARGUMENTS_INVALID"    // INVALID_ARGUMENT: arguments are not an object or violate the inputSchema; the violations name the JSON path
	ReasonUpstreamUnavailable = "UPSTREAM_UNAVAILABLE" // UNAVAILABLE: no ready session, or it died mid-call (metadata "unavailable_reason": no_session | session_lost | starting)
	ReasonCircuitOpen         = "CIRCUIT_OPEN"         // UNAVAILABLE: the upstream's breaker fails calls fast; the retry delay says when the next trial is allowed
	ReasonShuttingDown        = "SHUTTING_DOWN"        // UNAVAILABLE: this replica is shutting down; retry on another
	ReasonDeadline            = "DEADLINE"             // DEADLINE_EXCEEDED: the deadline passed first (metadata "deadline_source": caller | call_timeout)
	ReasonCancelled           = "CANCELLED"            // CANCELLED: the caller cancelled; the upstream was sent notifications/cancelled
	ReasonOverloaded          = "OVERLOADED"           // RESOURCE_EXHAUSTED: the upstream's concurrency limit and queue are full
	ReasonRateLimited         = "RATE_LIMITED"         // RESOURCE_EXHAUSTED: the principal is over its auth.rateLimits rule (metadata "principal", "limit": calls_per_second | max_concurrent); the retry delay says when to retry
	ReasonRequestTooLarge     = "REQUEST_TOO_LARGE"    // RESOURCE_EXHAUSTED: the request is over the limit (metadata "limit_bytes", "size_bytes")
	ReasonResponseTooLarge    = "RESPONSE_TOO_LARGE"   // RESOURCE_EXHAUSTED: the result is over the limit (metadata "limit_bytes", "size_bytes"; no "size_bytes" when the upstream message was discarded unread)
	ReasonUpstreamError       = "UPSTREAM_ERROR"       // the upstream answered a JSON-RPC error (metadata "upstream_code"): InvalidParams → INVALID_ARGUMENT, MethodNotFound → UNIMPLEMENTED, else INTERNAL
	ReasonUpstreamMalformed   = "UPSTREAM_MALFORMED"   // INTERNAL: the upstream answered with a result that is not valid MCP (the message says what); its session is fine
	ReasonInternal            = "INTERNAL"             // INTERNAL: anything else, a recovered panic included; the message is generic and the log has the cause
	ReasonMethodNotFound      = "METHOD_NOT_FOUND"     // UNIMPLEMENTED: the front door's method is not one of the request's protocol version (tasks/list and tasks/result in 2026-07-28, tasks/update in 2025-11-25); JSON-RPC MethodNotFound (-32601)
	ReasonHeaderMismatch      = "HEADER_MISMATCH"      // INVALID_ARGUMENT: a 2026-07-28 request's Mcp-Name header names another target than its params (field "Mcp-Name"); JSON-RPC -32020, HTTP 400
	ReasonUnauthenticated     = "UNAUTHENTICATED"      // UNAUTHENTICATED: no, or no valid, bearer token, JWT or client certificate
	ReasonPermissionDenied    = "PERMISSION_DENIED"    // PERMISSION_DENIED: the principal's rules do not allow the tool (or AdminService)
	ReasonSlowConsumer        = "SLOW_CONSUMER"        // UNAVAILABLE: a watch client did not read for the send timeout; resume with the last revision
	ReasonNoConfigFile        = "NO_CONFIG_FILE"       // FAILED_PRECONDITION: ReloadConfig on a server running the built-in demo
	ReasonAdminLoopbackOnly   = "ADMIN_LOOPBACK_ONLY"  // PERMISSION_DENIED: no auth section, and admin actions answer loopback callers only (metadata "peer")
	ReasonCredentialsRefused  = "CREDENTIALS_REFUSED"  // PERMISSION_DENIED: the upstream uses per-user credentials and the caller has none: it was not authenticated by a JWT (metadata "oauth_error": no_subject_token), the authorization server refused to exchange its JWT (tokenExchange; "oauth_error": the RFC 6749 code, e.g. access_denied), its JWT may not be forwarded (passthrough; "oauth_error": audience_mismatch | token_expired | not_a_jwt), or it is anonymous (userOAuth without an auth section; "oauth_error": no_principal)
	ReasonLoginRequired       = "LOGIN_REQUIRED"       // UNAUTHENTICATED: the upstream uses per-user credentials (userOAuth) and the principal has not logged in to it (or logged out, or its token can no longer be refreshed): metadata "server" and "login_url", the link to open in a browser; then call again

	// Resources and prompts carry metadata "server" and "uri" (resources)
	// or "prompt" (prompts) instead of "tool"; every reason above applies
	// to them as to tool calls.
	ReasonResourceNotFound         = "RESOURCE_NOT_FOUND"        // NOT_FOUND: the upstream has no such resource, or no upstream lists it or has a template matching it
	ReasonPromptNotFound           = "PROMPT_NOT_FOUND"          // NOT_FOUND: no prompt with that exposed name
	ReasonSubscriptionsUnsupported = "SUBSCRIPTIONS_UNSUPPORTED" // FAILED_PRECONDITION: the upstream does not declare resources.subscribe
)

// Error is one failure, as every wire reports it: a code, a documented
// reason, a message for people, metadata (small string values naming what
// the failure concerns), a retry delay, and the request fields at fault.
// Build it with the functions of this file, or with Classify from a
// bridge error; wires read it and never change its text.
type Error struct {
	Code       Code
	Reason     string
	Message    string
	Meta       map[string]string
	RetryAfter time.Duration // > 0: when to retry
	Violations []FieldViolation
}

// FieldViolation names a request field at fault (a dotted path, in the
// wire's own field names) and what is wrong with it.
type FieldViolation struct {
	Field       string
	Description string
}

func (e *Error) Error() string { return e.Message }

// NewError is an Error with a code, reason, message and metadata (may be
// nil).
func NewError(code Code, reason, msg string, meta map[string]string) *Error {
	return &Error{Code: code, Reason: reason, Message: msg, Meta: meta}
}

// SetMeta sets metadata key k to v unless it is set already or v is
// empty; it returns e.
func (e *Error) SetMeta(k, v string) *Error {
	if v == "" {
		return e
	}
	if e.Meta == nil {
		e.Meta = map[string]string{}
	}
	if _, set := e.Meta[k]; !set {
		e.Meta[k] = v
	}
	return e
}

// Bounded is e with every text bounded, whatever it echoes (caller text
// such as names, URIs and paths, and upstream text alike): the message to
// MaxMessageLen, metadata values to MaxEchoLen, at most MaxViolations
// violations (the last counting the rest). Every wire sends the bounded
// form. Before, a 4 MB tool name became 8 MB of gRPC trailers, which
// grpc-go clients refuse past their 16 KiB default header list size and
// grpcio clients saw as INTERNAL / RST_STREAM from about 5,000 characters;
// additionalProperties: false with 300,000 extra keys made 300,000
// violations, a 28 MB status.
func (e *Error) Bounded() *Error {
	out := &Error{Code: e.Code, Reason: e.Reason, Message: ClipTo(e.Message, MaxMessageLen), RetryAfter: e.RetryAfter}
	if len(e.Meta) > 0 {
		out.Meta = make(map[string]string, len(e.Meta))
		for k, v := range e.Meta {
			if k == "login_url" {
				// A link toolsvc made (LOGIN_REQUIRED): clipped it would
				// not work; its length is toolsvc's, not a caller's.
				out.Meta[k] = ClipTo(v, MaxLinkLen)
				continue
			}
			out.Meta[k] = Clip(v)
		}
	}
	vs := e.Violations
	if n := len(vs); n > MaxViolations {
		vs = append(vs[:MaxViolations-1:MaxViolations-1], FieldViolation{
			Field:       vs[MaxViolations-1].Field,
			Description: fmt.Sprintf("and %d more violations", n-MaxViolations+1),
		})
	}
	for _, v := range vs {
		out.Violations = append(out.Violations, FieldViolation{
			Field: ClipTo(v.Field, MaxMessageLen/4), Description: ClipTo(v.Description, MaxMessageLen/2)})
	}
	return out
}

// Bounds of an error's text (Bounded), and of caller text echoed into a
// message (Clip).
const (
	MaxEchoLen    = 128
	MaxMessageLen = 1024
	MaxViolations = 20
	// MaxLinkLen bounds metadata "login_url" (about 700 bytes as made).
	MaxLinkLen = 4096
)

// InternalFailure is INTERNAL, INTERNAL, with the generic message: what a
// caller gets for a failure toolsvc cannot classify, or a recovered panic
// (every wire's recovery). The cause is logged, never sent.
func InternalFailure() *Error {
	return &Error{Code: Internal, Reason: ReasonInternal, Message: "internal error"}
}

// Violation is one field at fault.
func Violation(field, desc string) FieldViolation {
	return FieldViolation{Field: field, Description: desc}
}

// Invalid is INVALID_ARGUMENT, REQUEST_INVALID, for violations of request
// fields other than the arguments; the message summarises the first.
func Invalid(vs ...FieldViolation) *Error {
	return &Error{Code: InvalidArgument, Reason: ReasonRequestInvalid, Message: summary(vs), Violations: vs}
}

// InvalidField is Invalid for one violation of field itself.
func InvalidField(field, desc string) *Error { return Invalid(Violation(field, desc)) }

// InvalidArguments is INVALID_ARGUMENT, ARGUMENTS_INVALID, for violations
// of the arguments (paths into them, under the field of the wire that
// carries them); the message summarises the first.
func InvalidArguments(vs ...FieldViolation) *Error {
	return &Error{Code: InvalidArgument, Reason: ReasonArgumentsInvalid, Message: summary(vs), Violations: vs}
}

func summary(vs []FieldViolation) string {
	msg := fmt.Sprintf("%s: %s", vs[0].Field, vs[0].Description)
	if len(vs) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(vs)-1)
	}
	return msg
}

// TooLarge is RESOURCE_EXHAUSTED for a size limit, naming it and its
// value: what is "request" or "response", flag the serve flag that sets
// the limit.
func TooLarge(reason, what, flag string, size, limit int) *Error {
	return &Error{Code: ResourceExhausted, Reason: reason,
		Message: fmt.Sprintf("%s is %d bytes, over the %s limit of %d bytes (serve --%s)", what, size, what, limit, flag),
		Meta:    map[string]string{"limit_bytes": strconv.Itoa(limit), "size_bytes": strconv.Itoa(size), "limit": flag},
	}
}

// Clip is s cut to MaxEchoLen bytes, on a rune boundary, with "…"
// appended when it was cut.
func Clip(s string) string { return ClipTo(s, MaxEchoLen) }

// ClipTo is s cut to at most n bytes on a rune boundary, "…" appended
// when it was cut.
func ClipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func itoa(n int) string { return strconv.Itoa(n) }
