package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

func newClient(conn *grpc.ClientConn) toolsvcv1.ToolServiceClient {
	return toolsvcv1.NewToolServiceClient(conn)
}

// hungGrace is how long past its deadline a call may take to return before
// it counts as hung.
const hungGrace = 2 * time.Second

// callFailure is a load operation that failed with a status the operation
// itself did not ask for.
type callFailure struct {
	op        string
	replica   int
	server    string // "" for ListTools
	start     time.Time
	end       time.Time
	code      codes.Code
	reason    string
	msg       string
	explained bool
}

func (f callFailure) String() string {
	return fmt.Sprintf("%s on replica%d server %q at %.1fs-%.1fs: %s/%s %s", f.op, f.replica, f.server,
		f.start.Sub(soakStart).Seconds(), f.end.Sub(soakStart).Seconds(), f.code, f.reason, f.msg)
}

var soakStart = time.Now()

func reasonOf(err error) (codes.Code, string, string) {
	st, _ := status.FromError(err)
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			return st.Code(), ei.GetReason(), st.Message()
		}
	}
	return st.Code(), "", st.Message()
}

// loadWorker runs operations back to back (with short pauses) until ctx
// ends, holding the load gate for each so quiet periods see no load.
func (s *soak) loadWorker(ctx context.Context, id int) {
	seq := 0
	for ctx.Err() == nil {
		s.loadGate.RLock()
		if ctx.Err() != nil {
			s.loadGate.RUnlock()
			return
		}
		seq++
		r := s.replicas[s.intn(len(s.replicas))]
		u := s.upstreams[s.intn(len(s.upstreams))]
		switch n := s.intn(100); {
		case n < 4:
			s.callHostile(ctx, r, fmt.Sprintf("w%d-%d", id, seq))
		case n < 6:
			s.callParked(ctx, r, fmt.Sprintf("w%d-%d", id, seq))
		case n < 50:
			s.callEcho(ctx, r, u, fmt.Sprintf("w%d-%d", id, seq))
		case n < 70:
			s.callStream(ctx, r, u)
		case n < 80:
			s.callCancel(ctx, r, u, fmt.Sprintf("w%d-%d", id, seq))
		case n < 88:
			s.callDeadline(ctx, r, u, fmt.Sprintf("w%d-%d", id, seq))
		default:
			s.listPaged(ctx, r)
		}
		s.loadGate.RUnlock()
		select {
		case <-ctx.Done():
		case <-time.After(s.durn(20*time.Millisecond, 120*time.Millisecond)):
		}
	}
}

func args(kv map[string]any) *structpb.Struct {
	st, err := structpb.NewStruct(kv)
	if err != nil {
		panic(err)
	}
	return st
}

// timed runs a call with either a gRPC deadline (half the calls) or none,
// leaving toolsvc's callTimeout to end it; the outer bound only keeps a
// hung call from hanging the soak. It counts hung calls.
func (s *soak) timed(ctx context.Context, op string, r *replica, u *upstream, deadline time.Duration, f func(context.Context) error) (error, time.Duration) {
	var cctx context.Context
	var cancel context.CancelFunc
	limit := deadline
	if s.intn(2) == 0 {
		cctx, cancel = context.WithTimeout(ctx, deadline)
	} else {
		limit = callTimeout
		cctx, cancel = context.WithTimeout(ctx, callTimeout+30*time.Second)
	}
	defer cancel()
	start := time.Now()
	err := f(cctx)
	took := time.Since(start)
	s.calls.Add(1)
	if took > limit+hungGrace && ctx.Err() == nil {
		s.hung.Add(1)
		s.mu.Lock()
		s.hungDetail = append(s.hungDetail, fmt.Sprintf("%s on replica%d %s took %s (deadline %s): %v", op, r.idx, u.name, took, limit, err))
		s.mu.Unlock()
	}
	return err, took
}

func (s *soak) fail(op string, r *replica, server string, start time.Time, err error) {
	if err == nil {
		return
	}
	code, reason, msg := reasonOf(err)
	s.callsFailed.Add(1)
	s.mu.Lock()
	s.failures = append(s.failures, callFailure{op: op, replica: r.idx, server: server, start: start, end: time.Now(), code: code, reason: reason, msg: msg})
	s.mu.Unlock()
}

// wrongResult records a call that succeeded with the wrong answer: never
// explained by any fault.
func (s *soak) wrongResult(op string, r *replica, u *upstream, start time.Time, what string) {
	s.mu.Lock()
	s.failures = append(s.failures, callFailure{op: op, replica: r.idx, server: u.name, start: start, end: time.Now(), code: codes.OK, reason: "WRONG_RESULT", msg: what})
	s.mu.Unlock()
}

func (s *soak) callEcho(ctx context.Context, r *replica, u *upstream, text string) {
	start := time.Now()
	err, _ := s.timed(ctx, "echo", r, u, 4*time.Second, func(c context.Context) error {
		resp, err := r.client.CallTool(c, &toolsvcv1.CallToolRequest{Name: u.name + "__echo", Arguments: args(map[string]any{"text": text})})
		if err == nil {
			got := ""
			for _, c := range resp.GetContent() {
				got += c.GetText().GetText()
			}
			if got != text || resp.GetIsError() {
				s.wrongResult("echo", r, u, start, fmt.Sprintf("got %q (is_error %v), want %q", got, resp.GetIsError(), text))
			}
		}
		return err
	})
	if ctx.Err() == nil {
		s.fail("echo", r, u.name, start, err)
	}
}

// callStream runs a streaming call that reports progress: go-sdk's
// progress tool, the TypeScript server's sleep; the Python server has no
// progress tool, so its stream call is a short wait_cancel.
func (s *soak) callStream(ctx context.Context, r *replica, u *upstream) {
	req := &toolsvcv1.CallToolStreamRequest{}
	switch u.sdk {
	case sdkGo:
		req.Name, req.Arguments = u.name+"__progress", args(map[string]any{"steps": 4, "step_ms": 50})
	case sdkTS:
		req.Name, req.Arguments = u.name+"__sleep", args(map[string]any{"ms": 200})
	default:
		req.Name, req.Arguments = u.name+"__wait_cancel", args(map[string]any{"id": "", "ms": 200})
	}
	start := time.Now()
	err, _ := s.timed(ctx, "stream", r, u, 4*time.Second, func(c context.Context) error {
		st, err := r.client.CallToolStream(c, req)
		if err != nil {
			return err
		}
		gotResult := false
		for {
			m, err := st.Recv()
			if errors.Is(err, io.EOF) {
				if !gotResult {
					s.wrongResult("stream", r, u, start, "stream ended without a result")
				}
				return nil
			}
			if err != nil {
				return err
			}
			if m.GetProgress() != nil {
				s.progress.Add(1)
			}
			if m.GetResult() != nil {
				gotResult = true
				if m.GetResult().GetIsError() {
					s.wrongResult("stream", r, u, start, "result is_error")
				}
			}
		}
	})
	if ctx.Err() == nil {
		s.fail("stream", r, u.name, start, err)
	}
}

// callCancel starts a 3 s wait_cancel and cancels it after 50-400 ms: it
// must end CANCELLED, promptly.
func (s *soak) callCancel(ctx context.Context, r *replica, u *upstream, id string) {
	start := time.Now()
	after := s.durn(50*time.Millisecond, 400*time.Millisecond)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t := time.AfterFunc(after, cancel)
	defer t.Stop()
	_, err := r.client.CallTool(cctx, &toolsvcv1.CallToolRequest{Name: u.name + "__wait_cancel", Arguments: args(map[string]any{"id": id, "ms": 3000})})
	took := time.Since(start)
	s.calls.Add(1)
	if ctx.Err() != nil {
		return
	}
	if took > after+hungGrace {
		s.hung.Add(1)
		s.mu.Lock()
		s.hungDetail = append(s.hungDetail, fmt.Sprintf("cancel on replica%d %s returned %s after the cancel at %s", r.idx, u.name, took-after, after))
		s.mu.Unlock()
	}
	if status.Code(err) == codes.Canceled {
		s.cancelled.Add(1)
		return
	}
	if err == nil {
		s.wrongResult("cancel", r, u, start, "a cancelled 3 s call succeeded")
		return
	}
	s.fail("cancel", r, u.name, start, err)
}

// callDeadline sends a 3 s wait_cancel with a 300 ms gRPC deadline: it must
// end DEADLINE_EXCEEDED within the grace.
func (s *soak) callDeadline(ctx context.Context, r *replica, u *upstream, id string) {
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := r.client.CallTool(cctx, &toolsvcv1.CallToolRequest{Name: u.name + "__wait_cancel", Arguments: args(map[string]any{"id": id, "ms": 3000})})
	took := time.Since(start)
	s.calls.Add(1)
	if ctx.Err() != nil {
		return
	}
	if took > 300*time.Millisecond+hungGrace {
		s.hung.Add(1)
		s.mu.Lock()
		s.hungDetail = append(s.hungDetail, fmt.Sprintf("deadline call on replica%d %s took %s (deadline 300ms)", r.idx, u.name, took))
		s.mu.Unlock()
	}
	if status.Code(err) == codes.DeadlineExceeded {
		return
	}
	if err == nil {
		s.wrongResult("deadline", r, u, start, "a 3 s call returned within a 300 ms deadline")
		return
	}
	s.fail("deadline", r, u.name, start, err)
}

// listPaged pages through ListTools with a random page size.
func (s *soak) listPaged(ctx context.Context, r *replica) {
	start := time.Now()
	size := int32(3 + s.intn(40))
	tok, rev := "", ""
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for range 1000 {
		resp, err := r.client.ListTools(cctx, &toolsvcv1.ListToolsRequest{PageSize: size, PageToken: tok})
		if err != nil {
			if ctx.Err() == nil {
				s.calls.Add(1)
				s.fail("list", r, "", start, err)
			}
			return
		}
		if rev != "" && resp.GetRevision() != rev {
			s.mu.Lock()
			s.failures = append(s.failures, callFailure{op: "list", replica: r.idx, start: start, end: time.Now(), reason: "MIXED_REVISIONS", msg: rev + " then " + resp.GetRevision()})
			s.mu.Unlock()
		}
		rev = resp.GetRevision()
		if tok = resp.GetNextPageToken(); tok == "" {
			break
		}
	}
	s.calls.Add(1)
	s.listings.Add(1)
}
