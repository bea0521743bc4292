package mcpgrpc

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
	"github.com/toolsvc/toolsvc/internal/memupstream"
	"github.com/toolsvc/toolsvc/service/core"
)

// serve is the Mcp service over a core of a real go-sdk upstream ("mem":
// three numbered tools and echo, in-memory), served by a real gRPC server
// over bufconn; it returns a client.
func serve(t *testing.T, auth core.AuthConfig) pb.McpClient {
	t.Helper()
	u := memupstream.New(t, 3)
	gs := grpc.NewServer()
	New(core.New(u.Bridge, core.Options{Auth: auth}), nil).Register(gs)
	lis := bufconn.Listen(1 << 20)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient("passthrough:///bufconn", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewMcpClient(conn)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wantRefused checks err's code, ErrorInfo reason and BadRequest fields.
func wantRefused(t *testing.T, what string, err error, code codes.Code, reason string, fields ...string) {
	t.Helper()
	st := status.Convert(err)
	var gotReason string
	var gotFields []string
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			gotReason = d.GetReason()
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				gotFields = append(gotFields, v.GetField())
			}
		}
	}
	if st.Code() != code || gotReason != reason || !slices.Equal(gotFields, fields) {
		t.Errorf("%s = %v (reason %q, fields %q), want %v %s %q", what, err, gotReason, gotFields, code, reason, fields)
	}
}

// TestListsAndCall: a list is whole, ttl 0, public when every caller sees
// the same (no auth), and says the protocol version; a call's result comes
// back in the binding's form.
func TestListsAndCall(t *testing.T) {
	t.Parallel()
	c := serve(t, core.AuthConfig{})
	ctx := ctxT(t)
	eventuallyTools(t, ctx, c, 4)
	res, err := c.ListTools(ctx, &pb.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetTtl().AsDuration() != 0 || res.GetCacheScope() != pb.CacheScope_CACHE_SCOPE_PUBLIC ||
		res.GetCommon().GetResultType() != pb.ResultType_RESULT_TYPE_COMPLETE ||
		res.GetCommon().GetMetadata().GetFields()[MetaProtocolVersion].GetStringValue() != ProtocolVersion {
		t.Errorf("ListTools ttl %v, scope %v, common %v", res.GetTtl(), res.GetCacheScope(), res.GetCommon())
	}
	args, _ := structpb.NewStruct(map[string]any{"text": "hi"})
	out, err := c.CallTool(metadata.AppendToOutgoingContext(ctx, HeaderTool, "mem__echo"),
		&pb.CallToolRequest{Request: &pb.CallToolRequest_Request{Name: "mem__echo", Arguments: args}})
	if err != nil || len(out.GetContent()) != 1 || out.GetContent()[0].GetText().GetText() != "hi" || out.GetIsError() {
		t.Errorf("CallTool mem__echo = %v, %v", out, err)
	}
}

// TestListsPrivateWithAuth: with authentication, what a caller sees
// depends on who it is: private.
func TestListsPrivateWithAuth(t *testing.T) {
	t.Parallel()
	c := serve(t, core.AuthConfig{Authenticator: core.NewAuthenticator(map[string]string{"alice-token-0123456789": "alice"}, nil, false)})
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "authorization", "Bearer alice-token-0123456789")
	eventuallyTools(t, ctx, c, 4)
	res, err := c.ListTools(ctx, &pb.ListToolsRequest{})
	if err != nil || res.GetCacheScope() != pb.CacheScope_CACHE_SCOPE_PRIVATE {
		t.Errorf("ListTools = scope %v, %v; want private", res.GetCacheScope(), err)
	}
	_, err = c.ListTools(ctxT(t), &pb.ListToolsRequest{})
	wantRefused(t, "ListTools without credentials", err, codes.Unauthenticated, core.ReasonUnauthenticated)
}

// TestRequestChecks: every routing header against its body, the protocol
// version, a call without its request.
func TestRequestChecks(t *testing.T) {
	t.Parallel()
	c := serve(t, core.AuthConfig{})
	ctx := ctxT(t)
	eventuallyTools(t, ctx, c, 4)
	with := func(k, v string) context.Context { return metadata.AppendToOutgoingContext(ctx, k, v) }
	_, err := c.CallTool(with(HeaderTool, "mem__t0001"), &pb.CallToolRequest{Request: &pb.CallToolRequest_Request{Name: "mem__echo"}})
	wantRefused(t, "CallTool, mcp_tool names another tool", err, codes.InvalidArgument, core.ReasonRequestInvalid, HeaderTool)
	_, err = c.GetPrompt(with(HeaderPrompt, "mem__a"), &pb.GetPromptRequest{Name: "mem__b"})
	wantRefused(t, "GetPrompt, mcp_prompt names another prompt", err, codes.InvalidArgument, core.ReasonRequestInvalid, HeaderPrompt)
	_, err = c.ReadResource(with(HeaderResource, "mem://a"), &pb.ReadResourceRequest{Uri: "mem://b"})
	wantRefused(t, "ReadResource, mcp_resource names another URI", err, codes.InvalidArgument, core.ReasonRequestInvalid, HeaderResource)
	_, err = c.Complete(with(HeaderResource, "mem__a"), &pb.CompletionRequest{PromptReference: &pb.PromptReference{Name: "mem__b"},
		Argument: &pb.CompletionRequest_Argument{Name: "x"}})
	wantRefused(t, "Complete, mcp_resource names another prompt", err, codes.InvalidArgument, core.ReasonRequestInvalid, HeaderResource)
	_, err = c.CallTool(ctx, &pb.CallToolRequest{})
	wantRefused(t, "CallTool without request", err, codes.InvalidArgument, core.ReasonRequestInvalid, "request")
	md, _ := structpb.NewStruct(map[string]any{MetaProtocolVersion: "2025-11-25"})
	_, err = c.ListPrompts(ctx, &pb.ListPromptsRequest{Common: &pb.RequestFields{Metadata: md}})
	wantRefused(t, "ListPrompts in 2025-11-25", err, codes.InvalidArgument, core.ReasonRequestInvalid, `common.metadata["`+MetaProtocolVersion+`"]`)
	_, err = c.Complete(ctx, &pb.CompletionRequest{PromptReference: &pb.PromptReference{Name: "mem__b"}, ResourceReference: &pb.ResourceReference{Uri: "x"}})
	wantRefused(t, "Complete naming a prompt and a resource", err, codes.InvalidArgument, core.ReasonRequestInvalid, "prompt_reference")
}

// eventuallyTools waits until ListTools lists n tools (the bridge lists its
// upstream once it is connected).
func eventuallyTools(t *testing.T, ctx context.Context, c pb.McpClient, n int) {
	t.Helper()
	for {
		res, err := c.ListTools(ctx, &pb.ListToolsRequest{})
		if err == nil && len(res.GetTools()) == n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("ListTools never listed %d tools: %v, %v", n, res, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
