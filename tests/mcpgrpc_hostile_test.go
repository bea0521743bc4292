package tests

import (
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
)

// TestMcpGrpcHostileCaller: a hostile caller of the served
// model_context_protocol.Mcp, a real grpc-go client against a real toolsvc
// process and a 2026-07-28 interactive upstream over stdio. Routing headers
// that contradict the body in every position (a second value, an empty one,
// on each RPC that has one, on a call without its request) are refused
// naming the header; a header of another RPC's kind narrows nothing and is
// ignored. A request_state is its principal's and its tool's: another
// principal's retry is PERMISSION_DENIED, a retry of another tool with it
// REQUEST_STATE_INVALID, one with an altered state too, and the owner still
// continues. Metadata past the gRPC server's header bound (64 KiB) is not
// sent (toolsvc advertises the bound; grpc-go's default let 16 MiB in,
// before authentication), and the connection stays usable.
func TestMcpGrpcHostileCaller(t *testing.T) {
	t.Parallel()
	const annToken, bobToken = "ann-token-0123456789", "bob-token-0123456789"
	up := upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}, ProtocolVersion: "2026-07-28"}
	p := startToolsvc(t, cfg{Auth: &authCfg{Tokens: map[string]string{"ann": annToken, "bob": bobToken},
		Rules: []rule{{Principal: "ann", Allow: []string{"*"}}, {Principal: "bob", Allow: []string{"*"}}}},
		Servers: servers{"new": up}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	conn, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mc := pb.NewMcpClient(conn)
	ann := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+annToken)
	bob := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+bobToken)
	with := func(ctx context.Context, kv ...string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, kv...)
	}
	invalid := func(what string, err error, field string) {
		t.Helper()
		if status.Code(err) != codes.InvalidArgument || !slices.Contains(fieldViolations(err), field) {
			t.Errorf("%s: %v, want INVALID_ARGUMENT naming %s", what, err, field)
		}
	}
	echo := func(text string) *pb.CallToolRequest {
		args, _ := structpb.NewStruct(map[string]any{"text": text})
		return &pb.CallToolRequest{Request: &pb.CallToolRequest_Request{Name: "new__echo", Arguments: args}}
	}

	// Routing headers.
	if _, err := mc.CallTool(with(ann, "mcp_tool", "new__echo"), echo("hi")); err != nil {
		t.Fatalf("CallTool with a matching mcp_tool: %v", err)
	}
	_, err = mc.CallTool(with(ann, "mcp_tool", "new__echo", "mcp_tool", "new__ask_name"), echo("hi"))
	invalid("mcp_tool's second value naming another tool", err, "mcp_tool")
	_, err = mc.CallTool(with(ann, "mcp_tool", ""), echo("hi"))
	invalid("an empty mcp_tool", err, "mcp_tool")
	_, err = mc.CallTool(with(ann, "mcp_tool", "new__echo"), &pb.CallToolRequest{})
	invalid("mcp_tool on a call without its request", err, "request")
	_, err = mc.GetPrompt(with(ann, "mcp_prompt", "new__other"), &pb.GetPromptRequest{Name: "new__greet"})
	invalid("mcp_prompt naming another prompt", err, "mcp_prompt")
	_, err = mc.ReadResource(with(ann, "mcp_resource", "test://other"), &pb.ReadResourceRequest{Uri: "test://hello"})
	invalid("mcp_resource naming another URI", err, "mcp_resource")
	_, err = mc.Complete(with(ann, "mcp_resource", "new__other"), &pb.CompletionRequest{
		PromptReference: &pb.PromptReference{Name: "new__greet"}, Argument: &pb.CompletionRequest_Argument{Name: "a", Value: "b"}})
	invalid("mcp_resource naming another prompt on Complete", err, "mcp_resource")
	if _, err := mc.CallTool(with(ann, "mcp_prompt", "new__other", "mcp_resource", "x://y"), echo("hi")); err != nil {
		t.Errorf("CallTool with headers of other kinds (ignored: the body is what is authorized): %v", err)
	}

	// request_state across principals and tools.
	caps, _ := structpb.NewStruct(map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}})
	ask := &pb.CallToolRequest{Common: &pb.RequestFields{Metadata: caps}, Request: &pb.CallToolRequest_Request{Name: "new__ask_name", Arguments: &structpb.Struct{}}}
	res, err := mc.CallTool(ann, ask)
	if err != nil || res.GetCommon().GetResultType() != pb.ResultType_RESULT_TYPE_INPUT_REQUIRED {
		t.Fatalf("new__ask_name as ann: %v, %v; want input required", res, err)
	}
	state := res.GetCommon().GetRequestState()
	answers := func(name string) map[string]*pb.InputResponse {
		out := map[string]*pb.InputResponse{}
		content, _ := structpb.NewStruct(map[string]any{"name": name})
		for id := range res.GetCommon().GetInputRequests() {
			out[id] = &pb.InputResponse{ElicitResult: &pb.ElicitResult{Type: pb.ElicitResult_TYPE_ACCEPT, Content: content}}
		}
		return out
	}
	retry := func(tool, st, name string) *pb.CallToolRequest {
		return &pb.CallToolRequest{Common: &pb.RequestFields{Metadata: caps, RequestState: &st, InputResponses: answers(name)},
			Request: &pb.CallToolRequest_Request{Name: tool, Arguments: &structpb.Struct{}}}
	}
	_, err = mc.CallTool(bob, retry("new__ask_name", state, "Bob"))
	if status.Code(err) != codes.PermissionDenied || errorInfo(t, err).GetReason() != "REQUEST_STATE_NOT_YOURS" {
		t.Errorf("bob's retry with ann's request_state: %v, want PERMISSION_DENIED REQUEST_STATE_NOT_YOURS", err)
	}
	_, err = mc.CallTool(ann, retry("new__echo", state, "Ann"))
	invalid("ann's request_state on another tool", err, "common.request_state")
	_, err = mc.CallTool(ann, retry("new__ask_name", state+"x", "Ann"))
	invalid("an altered request_state", err, "common.request_state")
	_, err = mc.CallTool(with(ann, "mcp_tool", "new__echo"), retry("new__ask_name", state, "Ann"))
	invalid("the retry routed to another tool", err, "mcp_tool")
	done, err := mc.CallTool(ann, retry("new__ask_name", state, "Ann"))
	if err != nil || len(done.GetContent()) == 0 || done.GetContent()[0].GetText().GetText() != "hello Ann" {
		t.Fatalf("ann's own retry: %v, %v; want hello Ann", done, err)
	}

	// Oversized metadata, before and after authentication.
	pad := strings.Repeat("p", 1<<20)
	for what, ctx := range map[string]context.Context{"unauthenticated": ctx, "authenticated": ann} {
		_, err := mc.ListTools(with(ctx, "x-pad", pad), &pb.ListToolsRequest{})
		if err == nil || !strings.Contains(err.Error(), "header list size") {
			t.Errorf("ListTools %s with 1 MiB of metadata: %v, want the header list bound", what, err)
		}
	}
	if _, err := mc.ListTools(with(ann, "x-pad", strings.Repeat("p", 16<<10)), &pb.ListToolsRequest{}); err != nil {
		t.Errorf("ListTools with 16 KiB of metadata, after the refusals: %v", err)
	}
}

// TestMcpGrpcParkedAnswersNamed: over the Mcp binding, a 2025-11-25
// upstream's question is parked in toolsvc; a retry whose answers answer
// no request it asked is refused naming the binding's own field,
// common.input_responses (it named ToolService's input_responses), and the
// right answers then complete the call.
func TestMcpGrpcParkedAnswersNamed(t *testing.T) {
	t.Parallel()
	up := upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}, ProtocolVersion: "2025-11-25"}
	p := startToolsvc(t, cfg{Servers: servers{"old": up}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	conn, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mc := pb.NewMcpClient(conn)
	caps, _ := structpb.NewStruct(map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}})
	res, err := mc.CallTool(ctx, &pb.CallToolRequest{Common: &pb.RequestFields{Metadata: caps},
		Request: &pb.CallToolRequest_Request{Name: "old__ask_name", Arguments: &structpb.Struct{}}})
	if err != nil || res.GetCommon().GetResultType() != pb.ResultType_RESULT_TYPE_INPUT_REQUIRED {
		t.Fatalf("old__ask_name: %v, %v; want input required", res, err)
	}
	state := res.GetCommon().GetRequestState()
	content, _ := structpb.NewStruct(map[string]any{"name": "Ann"})
	answer := &pb.InputResponse{ElicitResult: &pb.ElicitResult{Type: pb.ElicitResult_TYPE_ACCEPT, Content: content}}
	retry := func(answers map[string]*pb.InputResponse) (*pb.CallToolResponse, error) {
		return mc.CallTool(ctx, &pb.CallToolRequest{Common: &pb.RequestFields{Metadata: caps, RequestState: &state, InputResponses: answers},
			Request: &pb.CallToolRequest_Request{Name: "old__ask_name", Arguments: &structpb.Struct{}}})
	}
	_, err = retry(map[string]*pb.InputResponse{"not-asked": answer})
	if status.Code(err) != codes.InvalidArgument || !slices.Contains(fieldViolations(err), "common.input_responses") {
		t.Fatalf("answers to no request asked: %v (fields %q), want INVALID_ARGUMENT naming common.input_responses", err, fieldViolations(err))
	}
	right := map[string]*pb.InputResponse{}
	for id := range res.GetCommon().GetInputRequests() {
		right[id] = answer
	}
	done, err := retry(right)
	if err != nil || len(done.GetContent()) == 0 || done.GetContent()[0].GetText().GetText() != "hello Ann" {
		t.Fatalf("the right answers: %v, %v; want hello Ann", done, err)
	}
}
