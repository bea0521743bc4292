package tests

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// cancelRounds per transport and mode: enough for a median, few enough to
// keep the suite fast (a deadline round costs its 300 ms).
const cancelRounds = 5

// TestCallDeadlineAndCancelReachUpstream: a gRPC deadline and a caller's
// cancel end the call at once with DEADLINE_EXCEEDED / CANCELLED, and the
// upstream tool (which waits 30 s or until cancelled, and records which)
// observes the cancellation, over stdio and HTTP. The time from the
// caller's deadline or cancel to the upstream observing it is logged.
// A server callTimeout applies when the caller sets no deadline, and that
// error reaches the caller with its ErrorInfo.
func TestCallDeadlineAndCancelReachUpstream(t *testing.T) {
	t.Parallel()
	p := startCallFixture(t, servers{"slow": goStdio(upstream{CallTimeout: "300ms"})})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()

	for _, tr := range callTransports {
		t.Run(tr.name, func(t *testing.T) {
			tool := tr.server + "__wait_cancel"
			var deadlineLag, cancelLag []time.Duration
			for i := range cancelRounds {
				// Deadline: 300 ms.
				id := fmt.Sprintf("deadline-%d", i)
				callCtx, callCancel := context.WithTimeout(ctx, 300*time.Millisecond)
				deadline, _ := callCtx.Deadline()
				start := time.Now()
				_, err := p.client.CallTool(callCtx, &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: fmt.Sprintf(`{"id": %q, "ms": 30000}`, id)})
				returned := time.Now()
				callCancel()
				if status.Code(err) != codes.DeadlineExceeded {
					t.Fatalf("CallTool with a 300ms deadline = %v, want DeadlineExceeded", err)
				}
				// The tool would run 30 s: returning well before proves the
				// deadline ended the call.
				if took := returned.Sub(start); returned.Before(deadline) || took > 10*time.Second {
					t.Fatalf("CallTool with a 300ms deadline returned after %v (%v before the deadline)", took, deadline.Sub(returned))
				}
				rec := waitCancelRecord(t, ctx, p.client, tr.server, id, 10*time.Second)
				if rec.finished || rec.cancelled.IsZero() {
					t.Fatalf("upstream record %+v: want the call cancelled, not finished", rec)
				}
				deadlineLag = append(deadlineLag, rec.cancelled.Sub(deadline))

				// Caller cancel once the upstream is running the tool.
				id = fmt.Sprintf("cancel-%d", i)
				callCtx, callCancel = context.WithCancel(ctx)
				errc := make(chan error, 1)
				go func() {
					_, err := p.client.CallTool(callCtx, &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: fmt.Sprintf(`{"id": %q, "ms": 30000}`, id)})
					errc <- err
				}()
				for {
					if _, ok := cancelRecordOf(t, ctx, p.client, tr.server, id); ok {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
				cancelAt := time.Now()
				callCancel()
				if err := <-errc; status.Code(err) != codes.Canceled {
					t.Fatalf("cancelled CallTool = %v, want Canceled", err)
				}
				rec = waitCancelRecord(t, ctx, p.client, tr.server, id, 10*time.Second)
				if rec.finished || rec.cancelled.IsZero() {
					t.Fatalf("upstream record %+v: want the call cancelled, not finished", rec)
				}
				cancelLag = append(cancelLag, rec.cancelled.Sub(cancelAt))
			}
			// The session survived every cancellation.
			res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tr.server + "__echo", ArgumentsJson: `{"text": "still here"}`})
			if err != nil || resultText(res) != "still here" {
				t.Fatalf("echo after the cancellations = %v, %v", res, err)
			}
			if st := serverStatus(t, ctx, p.client, tr.server); st.GetConnectCount() != 1 {
				t.Errorf("connect_count = %d after cancellations, want 1 (no reconnect)", st.GetConnectCount())
			}
			t.Logf("%s: caller deadline -> upstream ctx done: %s", tr.name, lagSummary(deadlineLag))
			t.Logf("%s: caller cancel -> upstream ctx done: %s", tr.name, lagSummary(cancelLag))
		})
	}

	t.Run("call_timeout", func(t *testing.T) {
		// No caller deadline (t.Context has none), so the server's applies.
		start := time.Now()
		_, err := p.client.CallTool(t.Context(), &toolsvcv1.CallToolRequest{Name: "slow__wait_cancel", ArgumentsJson: `{"id": "timeout", "ms": 30000}`})
		took := time.Since(start)
		ei := wantStatus(t, err, codes.DeadlineExceeded, "DEADLINE", "slow", "slow__wait_cancel")
		if ei.GetMetadata()["deadline_source"] != "call_timeout" {
			t.Errorf("deadline_source = %q, want call_timeout", ei.GetMetadata()["deadline_source"])
		}
		if took < 300*time.Millisecond || took > 10*time.Second {
			t.Fatalf("callTimeout 300ms: the call returned after %v", took)
		}
		rec := waitCancelRecord(t, ctx, p.client, "slow", "timeout", 10*time.Second)
		if rec.finished || rec.cancelled.IsZero() {
			t.Fatalf("upstream record %+v: want the call cancelled by the callTimeout", rec)
		}
	})
}

func lagSummary(d []time.Duration) string {
	s := slices.Clone(d)
	slices.Sort(s)
	r := func(x time.Duration) time.Duration { return x.Round(10 * time.Microsecond) }
	return fmt.Sprintf("n=%d min %v median %v max %v", len(s), r(s[0]), r(s[len(s)/2]), r(s[len(s)-1]))
}
