package service

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

// callRequest is what CallToolRequest and CallToolStreamRequest share.
type callRequest interface {
	proto.Message
	inputRequest
	GetName() string
	GetArguments() *structpb.Struct
	GetArgumentsJson() string
}

// callInput is the pipeline's view of a gRPC call request; the request is
// sized here, once. A malformed interactive or task field is the input's
// Invalid, which BeginCall refuses with (and audits).
func callInput(req callRequest) core.CallInput {
	in := core.CallInput{Name: req.GetName(), ArgumentsJSON: req.GetArgumentsJson(), Size: proto.Size(req), Fields: grpcFields}
	if a := req.GetArguments(); a != nil {
		in.Arguments = a.AsMap()
	}
	in.Input, in.Invalid = inputOptions(req)
	if r, ok := req.(*toolsvcv1.CallToolRequest); ok && r.GetTask() != nil && in.Invalid == nil {
		in.Task, in.Invalid = taskOptions(r.GetTask())
	}
	return in
}

// beginCall is BeginCall of a gRPC call request.
func (s *Server) beginCall(ctx context.Context, req callRequest) (*core.Call, error) {
	return s.core.BeginCall(rpcContext(ctx), callInput(req))
}

// CallTool implements toolsvc.v1.ToolService.
func (s *Server) CallTool(ctx context.Context, req *toolsvcv1.CallToolRequest) (*toolsvcv1.CallToolResponse, error) {
	c, err := s.beginCall(ctx, req)
	var out *toolsvcv1.CallToolResponse
	size := 0
	if err == nil {
		var res *mcp.CallToolResult
		if res, err = c.Dispatch(c.Context(), nil); err == nil {
			out = s.callResponse(c, res)
			if t := c.Task(); t != nil {
				out = &toolsvcv1.CallToolResponse{Task: s.taskToProto(t)}
			}
			size = proto.Size(out)
			err = c.CheckResult(size)
		}
	}
	fail := c.Fail(err)
	if fail != nil {
		c.End(fail, false, 0)
		return nil, grpcStatus(fail).Err()
	}
	c.End(nil, out.GetIsError(), size)
	return out, nil
}

// CallToolStream implements toolsvc.v1.ToolService. Progress, and the
// upstream's log messages at or above input_capabilities.log_level when it
// is set, go to the stream in the order they came, then the result. The
// bridge's callbacks run on the upstream session's notification path, so
// they only append to a bounded queue and signal; this stream's sender
// goroutine takes it from there (core.Relay). A reader that keeps up sees
// every notification; a slow one sees merged progress and, past 256
// waiting log messages, a notice of how many were dropped, and never holds
// up the session. What arrives after the result is dropped by the bridge.
func (s *Server) CallToolStream(req *toolsvcv1.CallToolStreamRequest, stream grpc.ServerStreamingServer[toolsvcv1.CallToolStreamResponse]) error {
	c, err := s.beginCall(stream.Context(), req)
	if err != nil {
		fail := c.Fail(err)
		c.End(fail, false, 0)
		return grpcStatus(fail).Err()
	}
	sent, isError, err := s.streamCall(c, stream, mcp.LoggingLevel(req.GetInputCapabilities().GetLogLevel()))
	fail := c.Fail(err)
	c.End(fail, isError, sent)
	if fail != nil {
		return grpcStatus(fail).Err()
	}
	return nil
}

// streamCall dispatches a prepared call and streams its progress, its log
// messages from logLevel ("": none) and its result; it reports the bytes
// sent.
func (s *Server) streamCall(c *core.Call, stream grpc.ServerStreamingServer[toolsvcv1.CallToolStreamResponse], logLevel mcp.LoggingLevel) (sent int, isError bool, err error) {
	callCtx, cancel := context.WithCancel(c.Context())
	defer cancel()
	send := func(m *toolsvcv1.CallToolStreamResponse, size int) error {
		if err := stream.Send(m); err != nil {
			return err
		}
		sent += size
		return nil
	}
	sendProgress := func(pr core.Progress) error {
		m := progressMessage(pr)
		return send(m, proto.Size(m))
	}

	relay := core.Relay{Progress: sendProgress, Stop: cancel}
	if logLevel != "" {
		relay.Log = func(l core.Log) error {
			m := logMessage(l)
			return send(m, proto.Size(m))
		}
		relay.LogLevel = logLevel
	}
	res, callErr, sendErr := relay.Run(func(opts *core.CallOptions) (*mcp.CallToolResult, error) {
		return c.Dispatch(callCtx, opts)
	})
	if sendErr != nil {
		return sent, false, sendErr
	}
	if callErr != nil {
		return sent, false, callErr
	}
	out := s.callResponse(c, res)
	size := proto.Size(out)
	if err := c.CheckResult(size); err != nil {
		return sent, false, err
	}
	// The wrapper adds a tag and a length to the result's size.
	return sent, out.GetIsError(), send(&toolsvcv1.CallToolStreamResponse{Event: &toolsvcv1.CallToolStreamResponse_Result{Result: out}}, size)
}

func progressMessage(pr core.Progress) *toolsvcv1.CallToolStreamResponse {
	m := &toolsvcv1.CallToolProgress{Progress: pr.Progress, Message: pr.Message}
	if pr.Total > 0 {
		total := pr.Total
		m.Total = &total
	}
	return &toolsvcv1.CallToolStreamResponse{Event: &toolsvcv1.CallToolStreamResponse_Progress{Progress: m}}
}

func logMessage(l core.Log) *toolsvcv1.CallToolStreamResponse {
	return &toolsvcv1.CallToolStreamResponse{Event: &toolsvcv1.CallToolStreamResponse_Log{Log: &toolsvcv1.CallToolLog{
		Level: string(l.Level), Logger: l.Logger, DataJson: string(l.Data), Server: l.Server}}}
}
