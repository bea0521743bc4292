package tests

import (
	"context"
	"regexp"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestFinishedCallLogLines: toolsvc (at debug, as the harness runs it)
// writes one "finished call" line per RPC with go-grpc-middleware's field
// names, for unary calls and for streams (service/calllog.go writes both
// since the stream's interceptor was replaced): the method, its type, the
// peer, the code, and the error of a failed one, over real gRPC to a real
// upstream.
func TestFinishedCallLogLines(t *testing.T) {
	t.Parallel()
	p := startCallFixture(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	if _, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "s__echo", ArgumentsJson: `{"text": "a"}`}); err != nil {
		t.Fatal(err)
	}
	s, err := p.client.CallToolStream(ctx, &toolsvcv1.CallToolStreamRequest{Name: "h__echo", ArgumentsJson: `{"text": "b"}`})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := readStream(t, s); err != nil {
		t.Fatal(err)
	}
	s, err = p.client.CallToolStream(ctx, &toolsvcv1.CallToolStreamRequest{Name: "s__nope"})
	if err == nil {
		_, _, err = readStream(t, s)
	}
	if status.Code(err) != codes.NotFound {
		t.Fatalf("CallToolStream of an unknown tool: %v, want NOT_FOUND", err)
	}
	common := `msg="finished call" protocol=grpc grpc.component=server grpc.service=toolsvc.v1.ToolService `
	for _, re := range []string{
		common + `grpc.method=CallTool grpc.method_type=unary peer.address=127.0.0.1:\d+ grpc.start_time=\S+ grpc.request.deadline=\S+ grpc.code=OK grpc.time_ms=[\d.]+`,
		common + `grpc.method=CallToolStream grpc.method_type=server_stream peer.address=127.0.0.1:\d+ grpc.start_time=\S+ grpc.request.deadline=\S+ grpc.code=OK grpc.time_ms=[\d.]+`,
		common + `grpc.method=CallToolStream grpc.method_type=server_stream peer.address=127.0.0.1:\d+ grpc.start_time=\S+ grpc.request.deadline=\S+ grpc.code=NotFound grpc.error="rpc error: code = NotFound .*s__nope.*" grpc.time_ms=[\d.]+`,
	} {
		p.log.waitFor(t, regexp.MustCompile(re), 30*time.Second)
	}
}
