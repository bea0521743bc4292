package core

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// Fields are the names a wire gives the request fields the core's errors
// concern: each wire passes its own, and messages and violations are built
// with them, so that no wire rewrites an error's text.
type Fields struct {
	// ArgumentsJSON carries a call's arguments as JSON text
	// ("arguments_json" on gRPC, "arguments" on MCP).
	ArgumentsJSON string
	// PageToken continues a listing ("page_token", "cursor"), and
	// NextPageToken is the answer's field that holds it
	// ("next_page_token", "nextCursor").
	PageToken, NextPageToken string
	// Server names the server of a resource read ("server" on gRPC); empty
	// when the wire has none (MCP), so that a URI several servers offer is
	// reported on the "uri" field.
	Server string
	// A completion's fields: its reference ("ref", on both wires), the
	// prompt it names ("prompt", "ref.name"), the resource template's
	// server ("resource_template.server"; empty on MCP, which names none:
	// the server is the one that lists the template) and URI template
	// ("resource_template.uri", "ref.uri"), and the argument's name
	// ("argument_name", "argument.name"). Empty ones take the gRPC names,
	// but CompleteServer: empty, the wire names no server.
	CompleteRef, CompletePrompt, CompleteServer, CompleteTemplate, CompleteArgument string
	// TaskHandle names a task's handle ("handle" on gRPC, "taskId" on
	// MCP; empty: "handle").
	TaskHandle string
	// ToolName names a call's tool ("name" on both wires; empty: "name").
	// A call made through another tool (the front door's call_tool) names
	// it in that tool's arguments ("arguments.name", ToolNameInArguments):
	// a refusal of the name (none, too long, no such tool) is then
	// ARGUMENTS_INVALID, the model's to fix, built so by BeginCall, with
	// ToolNameHint after its description.
	ToolName, ToolNameHint string
	ToolNameInArguments    bool
	// RequestState and InputResponses name a continued request's state and
	// answers ("request_state" and "input_responses" on ToolService, where
	// they are top-level; "common.request_state" and
	// "common.input_responses" on the MCP gRPC binding, where they sit in
	// RequestFields). Empty: the ToolService names.
	RequestState, InputResponses string
}

// requestStateField is the wire's name of a request's state.
func (f Fields) requestStateField() string {
	if f.RequestState == "" {
		return "request_state"
	}
	return f.RequestState
}

// inputResponsesField is the wire's name of a request's answers.
func (f Fields) inputResponsesField() string {
	if f.InputResponses == "" {
		return "input_responses"
	}
	return f.InputResponses
}

// badToolName is the refusal of a call's tool name (desc: what is wrong)
// in the wire's terms (Fields.ToolName).
func (f Fields) badToolName(desc string) *Error {
	field := f.ToolName
	if field == "" {
		field = "name"
	}
	if f.ToolNameInArguments {
		return InvalidArguments(Violation(field, desc+f.ToolNameHint))
	}
	return InvalidField(field, desc)
}

// ClassifyOptions say what a bridge error is classified for.
type ClassifyOptions struct {
	// CallerDeadline: the caller set the deadline (else the server's
	// callTimeout did), for DEADLINE's "deadline_source".
	CallerDeadline bool
	// CancelNotice: the operation sends notifications/cancelled to the
	// upstream when it is cancelled or times out (tools/call), and the
	// message says so.
	CancelNotice bool
	// Fields are the wire's field names.
	Fields Fields
}

// Classify maps an error of the bridge (or a context error) to an Error;
// an *Error is returned as it is. Messages never carry upstream URLs,
// headers or tokens: bridge errors are built without them, and anything
// unrecognised becomes a generic INTERNAL (the caller logs the cause).
func Classify(err error, o ClassifyOptions) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if e := classifyContext(err, o); e != nil {
		return e
	}
	if e := classifyLookup(err, o); e != nil {
		return e
	}
	if e := classifyUpstream(err); e != nil {
		return e
	}
	return InternalFailure()
}

const cancelNotice = "; the upstream was sent notifications/cancelled"

func classifyContext(err error, o ClassifyOptions) *Error {
	notice := ""
	if o.CancelNotice {
		notice = cancelNotice
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		// An interactive call's own callTimeout applies whatever the
		// caller's deadline (mcpbridge.ErrCallTimeout).
		if o.CallerDeadline && !errors.Is(err, mcpbridge.ErrCallTimeout) {
			return &Error{Code: DeadlineExceeded, Reason: ReasonDeadline,
				Message: "the caller's deadline passed before the upstream answered" + notice,
				Meta:    map[string]string{"deadline_source": "caller"}}
		}
		return &Error{Code: DeadlineExceeded, Reason: ReasonDeadline,
			Message: "the server's callTimeout passed before the upstream answered (set a deadline to choose your own)" + notice,
			Meta:    map[string]string{"deadline_source": "call_timeout"}}
	case errors.Is(err, context.Canceled):
		return &Error{Code: Canceled, Reason: ReasonCancelled, Message: "cancelled by the caller" + notice}
	}
	return nil
}

// classifyLookup maps the bridge's refusals of a name, a URI or arguments
// (its texts quote what the caller sent, bounded).
func classifyLookup(err error, o ClassifyOptions) *Error {
	var (
		amb  *mcpbridge.AmbiguousResourceError
		miss *mcpbridge.MissingArgumentsError
		nf   *mcpbridge.TaskNotFoundError
	)
	switch {
	case errors.As(err, &nf):
		// Before the upstream's errors: it wraps the upstream's own
		// InvalidParams, when there was one.
		e := &Error{Code: NotFound, Reason: ReasonTaskNotFound, Message: err.Error()}
		if nf.SessionEnded {
			e.Meta = map[string]string{"session_ended": "true"}
		}
		return e
	case errors.Is(err, mcpbridge.ErrTaskNotFound):
		return &Error{Code: NotFound, Reason: ReasonTaskNotFound, Message: err.Error()}
	case errors.Is(err, mcpbridge.ErrTasksUnsupported):
		return &Error{Code: FailedPrecondition, Reason: ReasonTasksUnsupported, Message: err.Error()}
	case errors.Is(err, mcpbridge.ErrToolNotFound):
		return &Error{Code: NotFound, Reason: ReasonToolNotFound, Message: ClipTo(err.Error(), 2*MaxEchoLen)}
	case errors.Is(err, mcpbridge.ErrServerNotFound):
		return &Error{Code: NotFound, Reason: ReasonServerNotFound, Message: ClipTo(err.Error(), 2*MaxEchoLen)}
	case errors.Is(err, mcpbridge.ErrResourceNotFound):
		return &Error{Code: NotFound, Reason: ReasonResourceNotFound, Message: ClipTo(err.Error(), 2*MaxEchoLen)}
	case errors.Is(err, mcpbridge.ErrPromptNotFound):
		return &Error{Code: NotFound, Reason: ReasonPromptNotFound, Message: ClipTo(err.Error(), 2*MaxEchoLen)}
	case errors.Is(err, mcpbridge.ErrSubscriptionsUnsupported):
		return &Error{Code: FailedPrecondition, Reason: ReasonSubscriptionsUnsupported, Message: err.Error()}
	case errors.Is(err, mcpbridge.ErrInvalidArguments):
		e := InvalidArguments(Violation("arguments", err.Error()))
		e.Message = "arguments: " + err.Error()
		return e
	case errors.As(err, &amb):
		var e *Error
		offer := fmt.Sprintf("several servers offer %q: %s", Clip(amb.URI), strings.Join(amb.Candidates, ", "))
		if o.Fields.Server != "" {
			e = InvalidField(o.Fields.Server, "required: "+offer)
		} else {
			e = InvalidField("uri", "ambiguous: "+offer)
		}
		e.Meta = map[string]string{"candidates": strings.Join(amb.Candidates, ",")}
		return e
	case errors.As(err, &miss):
		vs := make([]FieldViolation, len(miss.Missing))
		for i, m := range miss.Missing {
			vs[i] = Violation("arguments."+m, "required by the prompt")
		}
		e := InvalidArguments(vs...)
		e.Message = miss.Error()
		return e
	}
	return nil
}

// classifyUpstream maps the state of the upstream and its own answers.
func classifyUpstream(err error) *Error {
	var (
		cerr   *mcpbridge.CredentialsError
		login  *mcpbridge.LoginRequiredError
		uerr   *mcpbridge.UpstreamError
		unerr  *mcpbridge.UnavailableError
		tooBig *mcpbridge.ResponseTooLargeError
		reqBig *mcpbridge.RequestTooLargeError
		bad    *mcpbridge.MalformedAnswerError
		treq   *mcpbridge.TaskRequiredError
	)
	switch {
	case errors.As(err, &cerr):
		return &Error{Code: PermissionDenied, Reason: ReasonCredentialsRefused, Message: cerr.Error(),
			Meta: map[string]string{"server": cerr.Server, "oauth_error": cerr.Code}}
	case errors.As(err, &login):
		return &Error{Code: Unauthenticated, Reason: ReasonLoginRequired, Message: login.Error(),
			Meta: map[string]string{"server": login.Server, "login_url": login.URL}}
	case errors.As(err, &tooBig):
		// Discarded unread at the transport (mcpbridge/msglimit.go): the
		// size is unknown, only that it passed the limit.
		return &Error{Code: ResourceExhausted, Reason: ReasonResponseTooLarge,
			Message: fmt.Sprintf("response: upstream %q answered with a message over the %d-byte limit (6 × serve --max-response-bytes, at least 16 MiB); it was discarded unread", tooBig.Server, tooBig.Limit),
			Meta:    map[string]string{"server": tooBig.Server, "limit_bytes": strconv.Itoa(tooBig.Limit), "limit": "max-response-bytes"}}
	case errors.As(err, &reqBig):
		// The upstream's own bound, which toolsvc cannot know beforehand:
		// the request failed alone, the session goes on.
		msg := "request: " + reqBig.Error() + "; smaller arguments may pass"
		if reqBig.Status != http.StatusRequestEntityTooLarge {
			// 414, 431: the URL or headers, which are toolsvc's (the
			// upstream's configured URL, credentials), not the caller's.
			msg = "request: " + reqBig.Error() + ": its URL or headers, which toolsvc sets from the upstream's configuration and credentials, not the arguments"
		}
		return &Error{Code: ResourceExhausted, Reason: ReasonRequestTooLarge,
			Message: msg,
			Meta:    map[string]string{"server": reqBig.Server, "limit": "upstream", "http_status": strconv.Itoa(reqBig.Status)}}
	case errors.Is(err, mcpbridge.ErrOverloaded):
		return &Error{Code: ResourceExhausted, Reason: ReasonOverloaded, Message: err.Error()}
	case errors.As(err, &unerr):
		e := &Error{Code: Unavailable, Reason: ReasonUpstreamUnavailable, Message: unerr.Error(),
			RetryAfter: unerr.RetryAfter, Meta: map[string]string{"server": unerr.Server}}
		if unerr.Reason == mcpbridge.ReasonCircuitOpen {
			e.Reason = ReasonCircuitOpen
		} else if unerr.Reason != "" {
			e.Meta["unavailable_reason"] = unerr.Reason
		}
		return e
	case errors.Is(err, mcpbridge.ErrClosed):
		return ShuttingDown("server shutting down; retry on another replica")
	case errors.Is(err, mcpbridge.ErrUnavailable):
		return &Error{Code: Unavailable, Reason: ReasonUpstreamUnavailable, Message: err.Error()}
	case errors.As(err, &bad):
		return &Error{Code: Internal, Reason: ReasonUpstreamMalformed, Message: bad.Error(), Meta: map[string]string{"server": bad.Server}}
	case errors.As(err, &treq):
		// Before the upstream's errors: it wraps the upstream's -32021.
		return TaskRequired(treq.Tool, map[string]string{"server": treq.Server, "upstream_code": strconv.FormatInt(treq.Code, 10)})
	case errors.As(err, &uerr):
		e := &Error{Reason: ReasonUpstreamError,
			Meta: map[string]string{"server": uerr.Server, "upstream_code": strconv.FormatInt(uerr.Code, 10)}}
		switch uerr.Code {
		case jsonrpc.CodeInvalidParams:
			e.Code = InvalidArgument
			e.Message = fmt.Sprintf("arguments: upstream %q rejected the call: %s", uerr.Server, uerr.Message)
			e.Violations = []FieldViolation{Violation("arguments", "rejected by the upstream: "+uerr.Message)}
		case jsonrpc.CodeMethodNotFound:
			e.Code = Unimplemented
			e.Message = fmt.Sprintf("upstream %q does not implement the method: %s", uerr.Server, uerr.Message)
		default:
			e.Code = Internal
			e.Message = fmt.Sprintf("upstream %q answered JSON-RPC error %d: %s", uerr.Server, uerr.Code, uerr.Message)
		}
		return e
	}
	return nil
}

// ShuttingDown is UNAVAILABLE, SHUTTING_DOWN: this replica is stopping.
func ShuttingDown(msg string) *Error {
	return &Error{Code: Unavailable, Reason: ReasonShuttingDown, Message: msg}
}
