// Package grpcedge is what every gRPC wire of the core shares: the gRPC form
// of the core's one error value, the credentials read off a call, and the
// Struct form of the JSON objects both wires send (Struct, AnyStruct). The
// gRPC edge (package service: ToolService, AdminService) and the MCP gRPC
// binding (package service/mcpgrpc: model_context_protocol.Mcp) are served
// by one gRPC server behind one interceptor chain, so a refusal has one
// gRPC form and a caller one identity on both; neither wire imports the
// other.
package grpcedge

import (
	"context"
	"encoding/json"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	grpcmd "google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolsvc/toolsvc/service/core"
)

// Status is the gRPC status of e: its code and bounded message
// (core.Error.Bounded; nothing here edits text), with google.rpc.ErrorInfo
// (reason, domain core.Domain, metadata), RetryInfo when it says when to
// retry, and BadRequest when it names fields.
func Status(e *core.Error) *status.Status {
	e = e.Bounded()
	st := status.New(codes.Code(e.Code), e.Message)
	details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: e.Reason, Domain: core.Domain, Metadata: e.Meta}}
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

// Credentials is what a gRPC caller presented: the bearer credential of
// its "authorization" metadata, the client certificate chains of its TLS
// connection, and its connection's peer address.
func Credentials(ctx context.Context) core.Credentials {
	var c core.Credentials
	// The one key, not a copy of every header (metadata.ExtractIncoming
	// copies the map): this runs on every call.
	if v := grpcmd.ValueFromIncomingContext(ctx, "authorization"); len(v) > 0 {
		c.Bearer = core.BearerOf(v[0])
	}
	if p, ok := peer.FromContext(ctx); ok {
		c.Peer = p.Addr
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			c.VerifiedChains = ti.State.VerifiedChains
		}
	}
	return c
}

// RPCContext is a handler's context made ready for the core: every
// handler hands the core this, never its bare context. A call the
// interceptor chain already authenticated carries its principal, and the
// core decides on that; any other gets its credentials read here.
func RPCContext(ctx context.Context) context.Context {
	if _, ok := core.PrincipalFrom(ctx); ok {
		return ctx
	}
	return core.WithCredentials(ctx, Credentials(ctx))
}

// Struct is a decoded JSON object as a google.protobuf.Struct, the form
// both gRPC wires give schemas, structured content, arguments and
// metadata: nil for nil, and for a value that is not JSON (impossible for
// decoded upstream data, which is dropped rather than fail the answer).
func Struct(m map[string]any) *structpb.Struct {
	if m == nil {
		return nil
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		return nil
	}
	return s
}

// AnyStruct is any JSON-encodable object value (a tool's structured
// content, which go-sdk may hold as a typed value) as a Struct; nil when
// it is not an object.
func AnyStruct(v any) *structpb.Struct {
	switch v := v.(type) {
	case nil:
		return nil
	case map[string]any:
		return Struct(v)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return Struct(m)
}
