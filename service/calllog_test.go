package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
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

// TestFinishedStreamLogSameLine: finishedStreamLog writes, for every
// outcome of a stream, the line go-grpc-middleware's logging stream
// interceptor (which it replaced) wrote: the same message, level and
// fields in the same order with the same values (the times aside: each
// reads its own clock), and nothing when the level is off; and the
// handler sees the same stream's messages and returns the same error.
func TestFinishedStreamLogSameLine(t *testing.T) {
	t.Parallel()
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4242}})
	withDeadline, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	infos := []*grpc.StreamServerInfo{
		{FullMethod: "/toolsvc.v1.ToolService/CallToolStream", IsServerStream: true},
		{FullMethod: "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", IsClientStream: true, IsServerStream: true},
		{FullMethod: "/x.Up/Load", IsClientStream: true},
	}
	errs := []error{nil, io.EOF, status.Error(codes.Unavailable, "upstream down"), status.Error(codes.InvalidArgument, "bad"),
		errors.New("boom"), context.Canceled, status.Error(codes.Internal, "internal error")}
	lines := 0
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelError} {
		for _, c := range []context.Context{ctx, withDeadline} {
			for _, info := range infos {
				for _, herr := range errs {
					var oldBuf, newBuf bytes.Buffer
					oldLog := slog.New(slog.NewJSONHandler(&oldBuf, &slog.HandlerOptions{Level: level}))
					newLog := slog.New(slog.NewJSONHandler(&newBuf, &slog.HandlerOptions{Level: level}))
					old := logging.StreamServerInterceptor(interceptorLogger(oldLog), logging.WithLogOnEvents(logging.FinishCall), logging.WithLevels(codeToLevel))
					oldSS, newSS := &memStream{ctx: c}, &memStream{ctx: c}
					handler := func(_ any, s grpc.ServerStream) error {
						_ = s.RecvMsg(nil)
						_ = s.SendMsg(nil)
						return herr
					}
					oldErr := old(nil, oldSS, info, handler)
					newErr := finishedStreamLog(newLog)(nil, newSS, info, handler)
					if oldErr != newErr || oldSS.sent != newSS.sent || oldSS.recvd != newSS.recvd {
						t.Errorf("%s, %v: the handler's outcome changed: %v (%d/%d messages) against %v (%d/%d)",
							info.FullMethod, herr, newErr, newSS.recvd, newSS.sent, oldErr, oldSS.recvd, oldSS.sent)
					}
					want, got := logKeys(t, oldBuf.Bytes()), logKeys(t, newBuf.Bytes())
					if len(want) > 0 {
						lines++
					}
					if !slices.Equal(got, want) {
						t.Errorf("level %v, %s, %v:\n got %q\nwant %q", level, info.FullMethod, herr, got, want)
					}
				}
			}
		}
	}
	if lines < 50 {
		t.Errorf("the old interceptor wrote %d lines over these cases; they were meant to log most", lines)
	}
}

// interceptorLogger adapts slog to go-grpc-middleware's logging, as the
// server did before finishedStreamLog.
func interceptorLogger(l *slog.Logger) logging.Logger {
	return logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
		l.Log(ctx, slog.Level(lvl), msg, fields...)
	})
}

// memStream is a grpc.ServerStream that counts what its handler sends and
// receives.
type memStream struct {
	grpc.ServerStream
	ctx         context.Context
	sent, recvd int
}

func (s *memStream) Context() context.Context { return s.ctx }
func (s *memStream) SendMsg(any) error        { s.sent++; return nil }
func (s *memStream) RecvMsg(any) error        { s.recvd++; return nil }

// logKeys is a JSON log line's keys and values in order, the times
// (time, grpc.start_time, grpc.time_ms) by their key only; nil for no line.
func logKeys(t *testing.T, line []byte) []string {
	t.Helper()
	if len(line) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	var out []string
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		v, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		switch k {
		case "time", "grpc.start_time", "grpc.time_ms":
			out = append(out, fmt.Sprint(k))
		default:
			out = append(out, fmt.Sprintf("%v=%v", k, v))
		}
	}
	return out
}

// BenchmarkStreamLog is one server stream's finished-call log at the
// default level (a success: no line), go-grpc-middleware's interceptor
// (old) against finishedStreamLog (new).
func BenchmarkStreamLog(b *testing.B) {
	log := slog.New(slog.DiscardHandler)
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4242}})
	info := &grpc.StreamServerInfo{FullMethod: "/toolsvc.v1.ToolService/CallToolStream", IsServerStream: true}
	h := func(_ any, s grpc.ServerStream) error {
		_ = s.RecvMsg(nil)
		_ = s.SendMsg(nil)
		_ = s.SendMsg(nil)
		return nil
	}
	for _, c := range []struct {
		name string
		i    grpc.StreamServerInterceptor
	}{
		{"old", logging.StreamServerInterceptor(interceptorLogger(log), logging.WithLogOnEvents(logging.FinishCall), logging.WithLevels(codeToLevel))},
		{"new", finishedStreamLog(log)},
	} {
		b.Run(c.name, func(b *testing.B) {
			ss := &memStream{ctx: ctx}
			b.ReportAllocs()
			for b.Loop() {
				_ = c.i(nil, ss, info, h)
			}
		})
	}
}
