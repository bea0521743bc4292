package service

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// ErrorDomain is the google.rpc.ErrorInfo domain of every toolsvc error.
const ErrorDomain = "toolsvc.dev"

// ErrorInfo reasons. Every non-OK status toolsvc returns carries a
// google.rpc.ErrorInfo with one of these, domain ErrorDomain, and metadata
// "server" and "tool" when the error concerns a tool call. The README's
// Errors section documents them for callers.
const (
	ReasonToolNotFound        = "TOOL_NOT_FOUND"       // NOT_FOUND: no tool with that name in the catalog
	ReasonServerNotFound      = "SERVER_NOT_FOUND"     // NOT_FOUND: no configured upstream with that name
	ReasonRequestInvalid      = "REQUEST_INVALID"      // INVALID_ARGUMENT: a request field (not the arguments) is wrong; BadRequest names it
	ReasonArgumentsInvalid    = "ARGUMENTS_INVALID"    // INVALID_ARGUMENT: arguments are not an object or violate the inputSchema; BadRequest names the JSON path
	ReasonUpstreamUnavailable = "UPSTREAM_UNAVAILABLE" // UNAVAILABLE: no ready session, or it died mid-call (metadata "unavailable_reason": no_session | session_lost | starting)
	ReasonCircuitOpen         = "CIRCUIT_OPEN"         // UNAVAILABLE: the upstream's breaker fails calls fast; RetryInfo says when the next trial is allowed
	ReasonShuttingDown        = "SHUTTING_DOWN"        // UNAVAILABLE: this replica is shutting down; retry on another
	ReasonDeadline            = "DEADLINE"             // DEADLINE_EXCEEDED: the deadline passed first (metadata "deadline_source": caller | call_timeout)
	ReasonCancelled           = "CANCELLED"            // CANCELLED: the caller cancelled; the upstream was sent notifications/cancelled
	ReasonOverloaded          = "OVERLOADED"           // RESOURCE_EXHAUSTED: the upstream's concurrency limit and queue are full
	ReasonRateLimited         = "RATE_LIMITED"         // RESOURCE_EXHAUSTED: the principal is over its auth.rateLimits rule (metadata "principal", "limit": calls_per_second | max_concurrent); RetryInfo says when to retry
	ReasonRequestTooLarge     = "REQUEST_TOO_LARGE"    // RESOURCE_EXHAUSTED: the request is over the limit (metadata "limit_bytes", "size_bytes")
	ReasonResponseTooLarge    = "RESPONSE_TOO_LARGE"   // RESOURCE_EXHAUSTED: the tool's result is over the limit (metadata "limit_bytes", "size_bytes"; no "size_bytes" when the upstream message was discarded unread)
	ReasonUpstreamError       = "UPSTREAM_ERROR"       // the upstream answered a JSON-RPC error (metadata "upstream_code"): InvalidParams → INVALID_ARGUMENT, MethodNotFound → UNIMPLEMENTED, else INTERNAL
	ReasonInternal            = "INTERNAL"             // INTERNAL: anything else; the message is generic and the log has the cause
	ReasonUnauthenticated     = "UNAUTHENTICATED"      // UNAUTHENTICATED: no, or no valid, bearer token, JWT or client certificate
	ReasonPermissionDenied    = "PERMISSION_DENIED"    // PERMISSION_DENIED: the principal's rules do not allow the tool (or AdminService)
	ReasonSlowConsumer        = "SLOW_CONSUMER"        // UNAVAILABLE: a watch client did not read for the send timeout; resume with the last revision
	ReasonNoConfigFile        = "NO_CONFIG_FILE"       // FAILED_PRECONDITION: ReloadConfig on a server running the built-in demo
	ReasonAdminLoopbackOnly   = "ADMIN_LOOPBACK_ONLY"  // PERMISSION_DENIED: no auth section, and AdminService answers loopback callers only (metadata "peer")

	// Resources and prompts (service/resources.go). Their errors carry
	// metadata "server" and "uri" (resources) or "prompt" (prompts) instead
	// of "tool"; every other reason above applies to them as to tool calls
	// (ARGUMENTS_INVALID: a required prompt argument is missing, BadRequest
	// field "arguments.<name>"; REQUEST_INVALID: a missing uri or name, or
	// "server" left empty for a URI several servers offer, metadata
	// "candidates").
	ReasonResourceNotFound         = "RESOURCE_NOT_FOUND"        // NOT_FOUND: the upstream has no such resource (it answered -32002 or InvalidParams to resources/read), or no upstream lists it or has a template matching it
	ReasonPromptNotFound           = "PROMPT_NOT_FOUND"          // NOT_FOUND: no prompt with that exposed name
	ReasonSubscriptionsUnsupported = "SUBSCRIPTIONS_UNSUPPORTED" // FAILED_PRECONDITION: the upstream does not declare resources.subscribe
)

// plainError is a status with ErrorInfo and no call metadata.
func plainError(code codes.Code, reason, msg string, meta map[string]string) error {
	return (&richError{code: code, reason: reason, msg: msg, meta: meta}).err()
}

// callTarget names the tool an error concerns, for ErrorInfo metadata.
type callTarget struct {
	tool   string // exposed name
	server string
}

// richError is a status under construction: code, message and details. It
// is also the error value of the call pipeline's own refusals, mapped to a
// status once, at the edge (callStatus).
type richError struct {
	code       codes.Code
	reason     string
	msg        string
	meta       map[string]string
	retryAfter time.Duration
	violations []*errdetails.BadRequest_FieldViolation
}

func (e *richError) Error() string { return e.msg }

func (e *richError) err() error {
	// Every status is bounded, whatever it echoes: caller text (names,
	// URIs, paths) and upstream text alike.
	st := status.New(e.code, clipTo(e.msg, maxStatusMessageLen))
	meta := make(map[string]string, len(e.meta))
	for k, v := range e.meta {
		meta[k] = clipText(v)
	}
	if n := len(e.violations); n > maxViolations {
		// additionalProperties: false with 300,000 extra keys made 300,000
		// violations: a 28 MB status.
		e.violations = append(e.violations[:maxViolations-1:maxViolations-1], &errdetails.BadRequest_FieldViolation{
			Field:       e.violations[maxViolations-1].Field,
			Description: fmt.Sprintf("and %d more violations", n-maxViolations+1),
		})
	}
	for _, v := range e.violations {
		v.Field, v.Description = clipTo(v.Field, maxStatusMessageLen/4), clipTo(v.Description, maxStatusMessageLen/2)
	}
	details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: e.reason, Domain: ErrorDomain, Metadata: meta}}
	if e.retryAfter > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(e.retryAfter)})
	}
	if len(e.violations) > 0 {
		details = append(details, &errdetails.BadRequest{FieldViolations: e.violations})
	}
	if d, err := st.WithDetails(details...); err == nil {
		st = d
	}
	return st.Err()
}

func (e *richError) with(t callTarget) *richError {
	if e.meta == nil {
		e.meta = map[string]string{}
	}
	if t.tool != "" {
		e.meta["tool"] = t.tool
	}
	if t.server != "" {
		e.meta["server"] = t.server
	}
	return e
}

// toStatus maps a bridge error to a gRPC status, once, at the edge. Messages
// never carry upstream URLs, headers or tokens: bridge errors are built
// without them, and anything unrecognised becomes a generic INTERNAL.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return classify(err, false).err()
}

// callStatus is toStatus for a tool call: ErrorInfo metadata names the
// tool and server, and callerDeadline tells a caller's deadline from the
// server's callTimeout.
func callStatus(err error, t callTarget, callerDeadline bool) error {
	var re *richError
	if errors.As(err, &re) {
		return re.with(t).err()
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return classify(err, callerDeadline).with(t).err()
}

func classify(err error, callerDeadline bool) *richError {
	var (
		uerr   *mcpbridge.UpstreamError
		unerr  *mcpbridge.UnavailableError
		tooBig *mcpbridge.ResponseTooLargeError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		if callerDeadline {
			return &richError{code: codes.DeadlineExceeded, reason: ReasonDeadline,
				msg:  "the caller's deadline passed before the upstream answered; the upstream was sent notifications/cancelled",
				meta: map[string]string{"deadline_source": "caller"}}
		}
		return &richError{code: codes.DeadlineExceeded, reason: ReasonDeadline,
			msg:  "the server's callTimeout passed before the upstream answered (set a gRPC deadline to choose your own); the upstream was sent notifications/cancelled",
			meta: map[string]string{"deadline_source": "call_timeout"}}
	case errors.Is(err, context.Canceled):
		return &richError{code: codes.Canceled, reason: ReasonCancelled,
			msg: "call cancelled by the caller; the upstream was sent notifications/cancelled"}
	case errors.Is(err, mcpbridge.ErrToolNotFound):
		// The bridge's text quotes the name the caller sent.
		return &richError{code: codes.NotFound, reason: ReasonToolNotFound, msg: clipTo(err.Error(), 2*maxEchoLen)}
	case errors.Is(err, mcpbridge.ErrServerNotFound):
		return &richError{code: codes.NotFound, reason: ReasonServerNotFound, msg: clipTo(err.Error(), 2*maxEchoLen)}
	case errors.Is(err, mcpbridge.ErrInvalidArguments):
		return &richError{code: codes.InvalidArgument, reason: ReasonArgumentsInvalid, msg: "arguments: " + err.Error(),
			violations: []*errdetails.BadRequest_FieldViolation{{Field: "arguments", Description: err.Error()}}}
	case errors.As(err, &tooBig):
		// Discarded unread at the transport (mcpbridge/msglimit.go): the
		// size is unknown, only that it passed the limit.
		return &richError{code: codes.ResourceExhausted, reason: ReasonResponseTooLarge,
			msg:  fmt.Sprintf("response: upstream %q answered with a message over the %d-byte limit (6 × serve --max-response-bytes, at least 16 MiB); it was discarded unread", tooBig.Server, tooBig.Limit),
			meta: map[string]string{"server": tooBig.Server, "limit_bytes": strconv.Itoa(tooBig.Limit), "limit": "max-response-bytes"}}
	case errors.Is(err, mcpbridge.ErrOverloaded):
		return &richError{code: codes.ResourceExhausted, reason: ReasonOverloaded, msg: err.Error()}
	case errors.As(err, &unerr):
		e := &richError{code: codes.Unavailable, reason: ReasonUpstreamUnavailable, msg: unerr.Error(),
			retryAfter: unerr.RetryAfter, meta: map[string]string{"server": unerr.Server}}
		if unerr.Reason == mcpbridge.ReasonCircuitOpen {
			e.reason = ReasonCircuitOpen
		} else if unerr.Reason != "" {
			e.meta["unavailable_reason"] = unerr.Reason
		}
		return e
	case errors.Is(err, mcpbridge.ErrClosed):
		return &richError{code: codes.Unavailable, reason: ReasonShuttingDown, msg: "server shutting down; retry on another replica"}
	case errors.Is(err, mcpbridge.ErrUnavailable):
		return &richError{code: codes.Unavailable, reason: ReasonUpstreamUnavailable, msg: err.Error()}
	case errors.As(err, &uerr):
		e := &richError{reason: ReasonUpstreamError,
			meta: map[string]string{"server": uerr.Server, "upstream_code": strconv.FormatInt(uerr.Code, 10)}}
		switch uerr.Code {
		case jsonrpc.CodeInvalidParams:
			e.code = codes.InvalidArgument
			e.msg = fmt.Sprintf("arguments: upstream %q rejected the call: %s", uerr.Server, uerr.Message)
			e.violations = []*errdetails.BadRequest_FieldViolation{{Field: "arguments", Description: fmt.Sprintf("rejected by the upstream: %s", uerr.Message)}}
		case jsonrpc.CodeMethodNotFound:
			e.code = codes.Unimplemented
			e.msg = fmt.Sprintf("upstream %q does not implement the method: %s", uerr.Server, uerr.Message)
		default:
			e.code = codes.Internal
			e.msg = fmt.Sprintf("upstream %q answered JSON-RPC error %d: %s", uerr.Server, uerr.Code, uerr.Message)
		}
		return e
	}
	return &richError{code: codes.Internal, reason: ReasonInternal, msg: "internal error"}
}

// invalidArgument is INVALID_ARGUMENT with a google.rpc.BadRequest naming
// the offending field, and ErrorInfo REQUEST_INVALID (ARGUMENTS_INVALID for
// the arguments fields).
func invalidArgument(field, desc string) error {
	return invalidFields(callTarget{}, field, &errdetails.BadRequest_FieldViolation{Field: field, Description: desc})
}

// invalidFields is INVALID_ARGUMENT for one or more field violations; the
// message summarises the first.
func invalidFields(t callTarget, field string, vs ...*errdetails.BadRequest_FieldViolation) error {
	return fieldsError(field, vs...).with(t).err()
}

// fieldsError is invalidFields as a pipeline error value.
func fieldsError(field string, vs ...*errdetails.BadRequest_FieldViolation) *richError {
	reason := ReasonRequestInvalid
	if field == "arguments" || field == "arguments_json" {
		reason = ReasonArgumentsInvalid
	}
	msg := fmt.Sprintf("%s: %s", vs[0].GetField(), vs[0].GetDescription())
	if len(vs) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(vs)-1)
	}
	return &richError{code: codes.InvalidArgument, reason: reason, msg: msg, violations: vs}
}

// tooLargeError is RESOURCE_EXHAUSTED for a size limit, naming it and its
// value.
func tooLargeError(reason, what, flag string, size, limit int) *richError {
	return &richError{code: codes.ResourceExhausted, reason: reason,
		msg:  fmt.Sprintf("%s is %d bytes, over the %s limit of %d bytes (serve --%s)", what, size, what, limit, flag),
		meta: map[string]string{"limit_bytes": strconv.Itoa(limit), "size_bytes": strconv.Itoa(size), "limit": flag},
	}
}

func violation(field, desc string) *errdetails.BadRequest_FieldViolation {
	return &errdetails.BadRequest_FieldViolation{Field: field, Description: desc}
}

// maxEchoLen bounds caller-supplied text (a name, a URI, a page token)
// echoed into a status message, and every ErrorInfo metadata value; a
// status message is bounded by maxStatusMessageLen (a BadRequest field
// path by a quarter of it, a description by half). Before, a 4 MB tool name
// became 8 MB of trailers (message and ErrorInfo), which grpc-go clients
// refuse past their 16 KiB default header list size and grpcio clients saw
// as INTERNAL / RST_STREAM from about 5,000 characters.
const (
	maxEchoLen          = 128
	maxStatusMessageLen = 1024
)

// clipText is s cut to maxEchoLen bytes, on a rune boundary, with "…"
// appended when it was cut.
func clipText(s string) string { return clipTo(s, maxEchoLen) }

// maxViolations bounds the BadRequest field violations of one status: the
// first ones, then one that counts the rest.
const maxViolations = 20

// clipTo is s cut to at most n bytes on a rune boundary, "…" appended
// when it was cut.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
