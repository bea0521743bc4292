package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// TestFinishedCallLog: a finished unary RPC is logged at its code's level
// with go-grpc-middleware's field names, and not at all when that level is
// off (a successful call at the default info level).
func TestFinishedCallLog(t *testing.T) {
	info := &grpc.UnaryServerInfo{FullMethod: "/toolsvc.v1.ToolService/CallTool"}
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4242}})
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, c := range []struct {
		name  string
		level slog.Level
		err   error
		want  map[string]any // nil: no line
	}{
		{"ok at info", slog.LevelInfo, nil, nil},
		{"ok at debug", slog.LevelDebug, nil, map[string]any{"level": "DEBUG", "grpc.code": "OK"}},
		{"unavailable at info", slog.LevelInfo, status.Error(codes.Unavailable, "upstream down"),
			map[string]any{"level": "WARN", "grpc.code": "Unavailable", "grpc.error": "rpc error: code = Unavailable desc = upstream down"}},
		{"internal at error", slog.LevelError, errors.New("boom"), map[string]any{"level": "ERROR", "grpc.code": "Unknown"}},
	} {
		var buf bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: c.level}))
		resp, err := finishedCallLog(log)(ctx, "req", info, func(context.Context, any) (any, error) { return "resp", c.err })
		if resp != "resp" || !errors.Is(err, c.err) {
			t.Errorf("%s: the handler's answer changed: %v, %v", c.name, resp, err)
		}
		if c.want == nil {
			if buf.Len() != 0 {
				t.Errorf("%s: logged %s, want nothing", c.name, buf.String())
			}
			continue
		}
		var got map[string]any
		if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Fatalf("%s: %v: %q", c.name, err, buf.String())
		}
		want := map[string]any{"msg": "finished call", "protocol": "grpc", "grpc.component": "server",
			"grpc.service": "toolsvc.v1.ToolService", "grpc.method": "CallTool", "grpc.method_type": "unary", "peer.address": "127.0.0.1:4242"}
		for k, v := range c.want {
			want[k] = v
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v (line %s)", c.name, k, got[k], v, buf.String())
			}
		}
		for _, k := range []string{"grpc.start_time", "grpc.request.deadline", "grpc.time_ms"} {
			if _, ok := got[k]; !ok {
				t.Errorf("%s: no %s in %s", c.name, k, buf.String())
			}
		}
	}
}
