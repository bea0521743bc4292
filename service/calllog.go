package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// finishedCallLog logs each finished unary RPC at codeToLevel(its code),
// with the field names of go-grpc-middleware's logging interceptor. It asks the logger first: that interceptor builds every
// field (peer address, formatted times, the method split) before the
// logger drops a successful call's debug line, 8 % of toolsvc's CPU per
// tools/call in the bench's profile (go run ./tests/bench -profile);
// here a call whose level is off costs one Enabled check.
func finishedCallLog(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		logFinished(ctx, log, info.FullMethod, "unary", start, err)
		return resp, err
	}
}

// finishedStreamLog is finishedCallLog for streams: the line
// go-grpc-middleware's stream interceptor wrote (an io.EOF the handler
// returns is success, as there), and nothing built when its level is off.
// That interceptor built its fields and wrapped the stream for every
// CallToolStream, 48 allocations and about 10 µs a stream for a line the
// default level drops (BenchmarkStreamLog); its stream wrapper also took
// the clock twice per message.
func finishedStreamLog(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		err := handler(srv, ss)
		logged := err
		if errors.Is(logged, io.EOF) {
			logged = nil
		}
		logFinished(ss.Context(), log, info.FullMethod, string(methodType(info.IsClientStream, info.IsServerStream)), start, logged)
		return err
	}
}

// logFinished writes the "finished call" line of a call that began at
// start and ended with err, at its code's level, when that level is on.
func logFinished(ctx context.Context, log *slog.Logger, fullMethod, methodType string, start time.Time, err error) {
	code := status.Code(err)
	lvl := slog.Level(codeToLevel(code))
	if !log.Enabled(ctx, lvl) {
		return
	}
	service, method := strings.TrimPrefix(fullMethod, "/"), ""
	if i := strings.LastIndexByte(service, '/'); i >= 0 {
		service, method = service[:i], service[i+1:]
	}
	attrs := make([]any, 0, 24)
	attrs = append(attrs, "protocol", "grpc", "grpc.component", "server", "grpc.service", service, "grpc.method", method,
		"grpc.method_type", methodType)
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		attrs = append(attrs, "peer.address", p.Addr.String())
	}
	attrs = append(attrs, "grpc.start_time", start.Format(time.RFC3339))
	if d, ok := ctx.Deadline(); ok {
		attrs = append(attrs, "grpc.request.deadline", d.Format(time.RFC3339))
	}
	attrs = append(attrs, "grpc.code", code.String())
	if err != nil {
		attrs = append(attrs, "grpc.error", fmt.Sprintf("%v", err))
	}
	attrs = append(attrs, "grpc.time_ms", fmt.Sprintf("%v", float32(time.Since(start).Microseconds())/1000))
	log.Log(ctx, lvl, "finished call", attrs...)
}
