package service

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

// TestRecoveredPanicIsTheOneErrorValue: a panic below the recovery
// interceptor (here in the innermost interceptors an embedder adds, on the
// server the binary builds) answers the one error value as every refusal
// does: INTERNAL with ErrorInfo reason INTERNAL (domain toolsvc.dev) and
// the generic message, never the panic's text, on a unary and a stream
// RPC; the server goes on serving.
func TestRecoveredPanicIsTheOneErrorValue(t *testing.T) {
	t.Parallel()
	const secret = "panic-text-with-a-secret"
	f := newFixtureWith(t, 1, GRPCOptions{
		ExtraUnary: []grpc.UnaryServerInterceptor{func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if info.FullMethod == toolsvcv1.ToolService_CallTool_FullMethodName {
				panic(secret)
			}
			return h(ctx, req)
		}},
		ExtraStream: []grpc.StreamServerInterceptor{func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if info.FullMethod == toolsvcv1.ToolService_CallToolStream_FullMethodName {
				panic(secret)
			}
			return h(srv, ss)
		}},
	})
	ctx := ctxT(t)
	_, unaryErr := f.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "mem__echo"})
	var streamErr error
	if st, err := f.client.CallToolStream(ctx, &toolsvcv1.CallToolStreamRequest{Name: "mem__echo"}); err != nil {
		streamErr = err
	} else {
		_, streamErr = st.Recv()
	}
	for rpc, err := range map[string]error{"CallTool": unaryErr, "CallToolStream": streamErr} {
		st, _ := status.FromError(err)
		info := errorInfoOf(err)
		if st.Code() != codes.Internal || info == nil || info.GetReason() != core.ReasonInternal || info.GetDomain() != ErrorDomain {
			t.Errorf("%s after a panic = %v (ErrorInfo %v), want INTERNAL with reason %s, domain %s", rpc, err, info, core.ReasonInternal, ErrorDomain)
		}
		if st.Message() != "internal error" || strings.Contains(err.Error(), secret) {
			t.Errorf("%s after a panic: message %q, want the generic one", rpc, st.Message())
		}
	}
	if _, err := f.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{}); err != nil {
		t.Errorf("ListTools after the panics = %v", err)
	}
}
