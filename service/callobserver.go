package service

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// CallInterceptors return the interceptors that authorize, measure and
// audit CallTool and CallToolStream (other methods pass through). Install
// them after authentication (GRPCOptions.ExtraUnary / ExtraStream).
func (s *Server) CallInterceptors() (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		r, ok := req.(*toolsvcv1.CallToolRequest)
		if !ok || info.FullMethod != toolsvcv1.ToolService_CallTool_FullMethodName {
			return handler(ctx, req)
		}
		call := s.beginCall(ctx, r.GetName(), r.GetArguments(), r.GetArgumentsJson(), proto.Size(r))
		if err := call.authorize(); err != nil {
			call.end(err, nil, 0)
			return nil, err
		}
		resp, err := handler(ctx, req)
		out, _ := resp.(*toolsvcv1.CallToolResponse)
		call.end(err, out, proto.Size(out))
		return resp, err
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if info.FullMethod != toolsvcv1.ToolService_CallToolStream_FullMethodName {
			return handler(srv, ss)
		}
		w := &observedStream{ServerStream: ss, s: s}
		err := handler(srv, w)
		if w.call == nil { // the request never arrived
			return err
		}
		w.call.end(err, w.result, w.sent)
		return err
	}
	return unary, stream
}

type observedStream struct {
	grpc.ServerStream
	s      *Server
	call   *observedCall
	result *toolsvcv1.CallToolResponse
	sent   int
}

func (w *observedStream) RecvMsg(m any) error {
	if err := w.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if r, ok := m.(*toolsvcv1.CallToolStreamRequest); ok && w.call == nil {
		w.call = w.s.beginCall(w.Context(), r.GetName(), r.GetArguments(), r.GetArgumentsJson(), proto.Size(r))
		return w.call.authorize()
	}
	return nil
}

func (w *observedStream) SendMsg(m any) error {
	if r, ok := m.(*toolsvcv1.CallToolStreamResponse); ok {
		w.sent += proto.Size(r)
		if res := r.GetResult(); res != nil {
			w.result = res
		}
	}
	return w.ServerStream.SendMsg(m)
}

type observedCall struct {
	s       *Server
	ctx     context.Context
	tool    string
	server  string
	start   time.Time
	inBytes int
	args    func() string
}

func (s *Server) beginCall(ctx context.Context, tool string, args proto.Message, argsJSON string, size int) *observedCall {
	c := &observedCall{s: s, ctx: ctx, tool: tool, start: time.Now(), inBytes: size}
	if t, ok := s.bridge.Catalog().Current().Lookup(tool); ok {
		c.server = t.Server
	}
	c.args = func() string {
		if argsJSON != "" {
			return argsJSON
		}
		b, _ := protojson.Marshal(args)
		return string(b)
	}
	if s.opts.Metrics != nil {
		s.opts.Metrics.callsInFlight.Inc()
	}
	return c
}

// authorize applies the caller's rules to the tool.
func (c *observedCall) authorize() error {
	if c.s.opts.Authorizer.Allowed(c.ctx, c.tool) {
		return nil
	}
	p, _ := PrincipalFrom(c.ctx)
	return (&richError{code: codes.PermissionDenied, reason: ReasonPermissionDenied,
		msg:  fmt.Sprintf("principal %q may not call tool %q", p.Name, c.tool),
		meta: map[string]string{"principal": p.Name, "tool": c.tool, "server": c.server}}).err()
}

func (c *observedCall) end(err error, res *toolsvcv1.CallToolResponse, outBytes int) {
	took := time.Since(c.start)
	outcome := "ok"
	switch {
	case err != nil:
		outcome = status.Code(err).String()
	case res.GetIsError():
		outcome = "tool_error"
	}
	server := c.server
	if server == "" {
		server = "unknown" // an unknown tool: no catalog label to spend
	}
	if m := c.s.opts.Metrics; m != nil {
		m.callsInFlight.Dec()
		tool := c.tool
		if c.server == "" {
			tool = "unknown"
		}
		m.calls.WithLabelValues(server, tool, outcome).Inc()
		m.callDuration.WithLabelValues(server, outcome).Observe(took.Seconds())
	}
	if a := c.s.opts.AuditLog; a != nil {
		p, _ := PrincipalFrom(c.ctx)
		attrs := []slog.Attr{
			slog.String("principal", p.Name), slog.String("tool", c.tool), slog.String("server", c.server),
			slog.String("outcome", outcome), slog.Duration("duration", took),
			slog.Int("request_bytes", c.inBytes), slog.Int("response_bytes", outBytes),
		}
		if c.s.opts.AuditArguments {
			attrs = append(attrs, slog.Any("arguments", json.RawMessage(c.args())))
		}
		a.LogAttrs(context.Background(), slog.LevelInfo, "tool call", attrs...)
	}
}
