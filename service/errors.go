package service

import (
	"errors"

	"google.golang.org/grpc/status"

	"github.com/toolsvc/toolsvc/service/core"
	"github.com/toolsvc/toolsvc/service/grpcedge"
)

// The gRPC form of the core's one error value (service/core/errors.go):
// mapped here, once, to a status with google.rpc.ErrorInfo (reason,
// domain ErrorDomain, metadata), RetryInfo and BadRequest. The message is
// the error's own, bounded (core.Error.Bounded); nothing here edits text.

// ErrorDomain is the google.rpc.ErrorInfo domain of every toolsvc error.
const ErrorDomain = core.Domain

// ErrorInfo reasons. Every non-OK status toolsvc returns carries a
// google.rpc.ErrorInfo with one of these, domain ErrorDomain, and metadata
// "server" and "tool" when the error concerns a tool call. docs/errors.md
// documents them for callers; service/core/errors.go says
// what each means.
const (
	ReasonToolNotFound             = core.ReasonToolNotFound
	ReasonServerNotFound           = core.ReasonServerNotFound
	ReasonRequestInvalid           = core.ReasonRequestInvalid
	ReasonArgumentsInvalid         = core.ReasonArgumentsInvalid
	ReasonUpstreamUnavailable      = core.ReasonUpstreamUnavailable
	ReasonCircuitOpen              = core.ReasonCircuitOpen
	ReasonShuttingDown             = core.ReasonShuttingDown
	ReasonDeadline                 = core.ReasonDeadline
	ReasonCancelled                = core.ReasonCancelled
	ReasonOverloaded               = core.ReasonOverloaded
	ReasonRateLimited              = core.ReasonRateLimited
	ReasonRequestTooLarge          = core.ReasonRequestTooLarge
	ReasonResponseTooLarge         = core.ReasonResponseTooLarge
	ReasonUpstreamError            = core.ReasonUpstreamError
	ReasonInternal                 = core.ReasonInternal
	ReasonUnauthenticated          = core.ReasonUnauthenticated
	ReasonPermissionDenied         = core.ReasonPermissionDenied
	ReasonSlowConsumer             = core.ReasonSlowConsumer
	ReasonNoConfigFile             = core.ReasonNoConfigFile
	ReasonAdminLoopbackOnly        = core.ReasonAdminLoopbackOnly
	ReasonCredentialsRefused       = core.ReasonCredentialsRefused
	ReasonLoginRequired            = core.ReasonLoginRequired
	ReasonResourceNotFound         = core.ReasonResourceNotFound
	ReasonPromptNotFound           = core.ReasonPromptNotFound
	ReasonSubscriptionsUnsupported = core.ReasonSubscriptionsUnsupported
)

// grpcFields are the gRPC API's names for the fields the core's errors
// concern.
var grpcFields = core.Fields{ArgumentsJSON: "arguments_json", PageToken: "page_token", NextPageToken: "next_page_token", Server: "server",
	CompleteRef: "ref", CompletePrompt: "prompt", CompleteServer: "resource_template.server", CompleteTemplate: "resource_template.uri",
	CompleteArgument: "argument_name"}

// grpcStatus is the gRPC status of e (grpcedge.Status: the one mapping
// every gRPC wire shares).
func grpcStatus(e *core.Error) *status.Status { return grpcedge.Status(e) }

// toStatus is the gRPC status of any error a handler returns: a status as
// it is, a core error mapped by grpcStatus, a bridge error classified
// first. Handlers return toStatus(err), so that whatever reaches the wire
// is mapped exactly once.
func toStatus(err error) error {
	return statusOf(err, core.ClassifyOptions{Fields: grpcFields})
}

// statusOf is toStatus with the classification's options.
func statusOf(err error, o core.ClassifyOptions) error {
	if err == nil {
		return nil
	}
	var e *core.Error
	if errors.As(err, &e) {
		return grpcStatus(e).Err()
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return grpcStatus(core.Classify(err, o)).Err()
}

// invalidArgument is INVALID_ARGUMENT, REQUEST_INVALID, naming the field.
func invalidArgument(field, desc string) error {
	return grpcStatus(core.InvalidField(field, desc)).Err()
}

// plainError is a status with ErrorInfo and no call metadata.
func plainError(code core.Code, reason, msg string, meta map[string]string) error {
	return grpcStatus(core.NewError(code, reason, msg, meta)).Err()
}

// clipText bounds caller text echoed into a message.
func clipText(s string) string { return core.Clip(s) }
