package service

import (
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/toolsvc/toolsvc/service/core"
)

// The gRPC form of the core's one error value (service/core/errors.go):
// mapped here, once, to a status with google.rpc.ErrorInfo (reason,
// domain ErrorDomain, metadata), RetryInfo and BadRequest. The message is
// the error's own, bounded (core.Error.Bounded); nothing here edits text.

// ErrorDomain is the google.rpc.ErrorInfo domain of every toolsvc error.
const ErrorDomain = core.Domain

// ErrorInfo reasons. Every non-OK status toolsvc returns carries a
// google.rpc.ErrorInfo with one of these, domain ErrorDomain, and metadata
// "server" and "tool" when the error concerns a tool call. The README's
// Errors section documents them for callers; service/core/errors.go says
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

// grpcStatus is the gRPC status of e.
func grpcStatus(e *core.Error) *status.Status {
	e = e.Bounded()
	st := status.New(codes.Code(e.Code), e.Message)
	details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: e.Reason, Domain: ErrorDomain, Metadata: e.Meta}}
	if e.RetryAfter > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(e.RetryAfter)})
	}
	if len(e.Violations) > 0 {
		br := &errdetails.BadRequest{FieldViolations: make([]*errdetails.BadRequest_FieldViolation, len(e.Violations))}
		for i, v := range e.Violations {
			br.FieldViolations[i] = &errdetails.BadRequest_FieldViolation{Field: v.Field, Description: v.Description}
		}
		details = append(details, br)
	}
	if d, err := st.WithDetails(details...); err == nil {
		st = d
	}
	return st
}

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
