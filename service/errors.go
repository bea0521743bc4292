package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

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
	var uerr *mcpbridge.UpstreamError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded before the upstream answered")
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "call cancelled by the caller")
	case errors.Is(err, mcpbridge.ErrToolNotFound), errors.Is(err, mcpbridge.ErrServerNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, mcpbridge.ErrInvalidArguments):
		return invalidArgument("arguments", err.Error())
	case errors.Is(err, mcpbridge.ErrUnavailable), errors.Is(err, mcpbridge.ErrClosed):
		return status.Error(codes.Unavailable, err.Error())
	case errors.As(err, &uerr):
		switch uerr.Code {
		case jsonrpc.CodeInvalidParams:
			return invalidArgument("arguments", fmt.Sprintf("upstream %q rejected the call: %s", uerr.Server, uerr.Message))
		case jsonrpc.CodeMethodNotFound:
			return status.Errorf(codes.Unimplemented, "upstream %q does not implement the method: %s", uerr.Server, uerr.Message)
		}
		return status.Errorf(codes.Internal, "upstream %q answered JSON-RPC error %d: %s", uerr.Server, uerr.Code, uerr.Message)
	}
	return status.Error(codes.Internal, "internal error")
}

// invalidArgument is INVALID_ARGUMENT with a google.rpc.BadRequest naming
// the offending field.
func invalidArgument(field, desc string) error {
	st := status.New(codes.InvalidArgument, fmt.Sprintf("%s: %s", field, desc))
	if d, err := st.WithDetails(&errdetails.BadRequest{
		FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: desc}},
	}); err == nil {
		st = d
	}
	return st.Err()
}
