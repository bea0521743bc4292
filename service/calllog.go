package service

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// finishedCallLog logs each finished unary RPC at codeToLevel(its code),
// with the field names of go-grpc-middleware's logging interceptor (which
// streams keep). It asks the logger first: that interceptor builds every
// field (peer address, formatted times, the method split) before the
// logger drops a successful call's debug line, 8 % of toolsvc's CPU per
// tools/call in the bench's profile (go run ./tests/bench -profile);
// here a call whose level is off costs one Enabled check.
func finishedCallLog(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		code := status.Code(err)
		lvl := slog.Level(codeToLevel(code))
		if !log.Enabled(ctx, lvl) {
			return resp, err
		}
		service, method := strings.TrimPrefix(info.FullMethod, "/"), ""
		if i := strings.LastIndexByte(service, '/'); i >= 0 {
			service, method = service[:i], service[i+1:]
		}
		attrs := make([]any, 0, 24)
		attrs = append(attrs, "protocol", "grpc", "grpc.component", "server", "grpc.service", service, "grpc.method", method,
			"grpc.method_type", "unary")
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
		return resp, err
	}
}
