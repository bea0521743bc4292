package mcpbridge

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// requestUpstream is a real go-sdk server with a tool, a resource, a slow
// resource, a prompt and subscriptions, reached in memory.
func requestUpstream(t *testing.T) *memUpstream {
	up := newMemUpstream(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "mem", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "block", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	srv.AddResource(&mcp.Resource{URI: "mem://r", Name: "r"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "r"}}}, nil
	})
	srv.AddResource(&mcp.Resource{URI: "mem://slow", Name: "slow"}, func(ctx context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	srv.AddPrompt(&mcp.Prompt{Name: "p"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "p"}}}}, nil
	})
	up.server = srv
	return up
}

// TestReadsAndCallsShareTheBreaker pins the one request path (request.go):
// a resource read that runs past the server's callTimeout counts against
// the upstream as a call does (before, reads were outside the breaker's
// accounting); with the breaker open a call, a read, a prompt and a
// subscription all fail fast the same way; half-open, one trial goes
// through at a time whatever its kind (before, reads all went through);
// and a read that succeeds as the trial closes the breaker.
func TestReadsAndCallsShareTheBreaker(t *testing.T) {
	t.Parallel()
	up := requestUpstream(t)
	defer up.killSessions()
	sc := up.config("mem")
	sc.CallTimeout, sc.PingInterval = 200*time.Millisecond, -1
	sc.Breaker = BreakerConfig{Failures: 1, Cooldown: time.Second, MaxCooldown: time.Second}
	b := newTestBridge(t, sc)
	var prompt *Prompt
	eventually(t, "the prompt listed", func() bool { prompt, _ = b.ResolvePrompt("mem__p"); return prompt != nil })

	if _, _, err := b.ReadResource(context.Background(), "mem", "mem://slow", "", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a read past callTimeout: %v, want DeadlineExceeded", err)
	}
	if st, _ := b.Server("mem"); st.Breaker != BreakerOpen || st.ConsecutiveFailures != 1 {
		t.Fatalf("after a read timed out: breaker %s, %d failures; want open after 1", st.Breaker, st.ConsecutiveFailures)
	}
	circuitOpen := func(what string, err error) time.Duration {
		t.Helper()
		var ue *UnavailableError
		if !errors.As(err, &ue) || ue.Reason != ReasonCircuitOpen || ue.Server != "mem" || ue.RetryAfter <= 0 {
			t.Fatalf("%s with the breaker open: %v, want UnavailableError{mem, circuit_open, a retry time}", what, err)
		}
		return ue.RetryAfter
	}
	ctx := t.Context()
	_, err := b.CallTool(ctx, "mem__echo", nil, nil)
	circuitOpen("a call", err)
	_, _, err = b.ReadResource(ctx, "mem", "mem://r", "", nil)
	circuitOpen("a read", err)
	_, err = b.GetPrompt(ctx, prompt, nil, "", nil)
	circuitOpen("a prompt", err)
	_, err = b.SubscribeResource(ctx, "mem", "mem://r")
	circuitOpen("a subscription", err)

	waitStatus(t, b, "mem", "the breaker half-open", func(st ServerStatus) bool { return st.Breaker == BreakerHalfOpen })
	trialCtx, endTrial := context.WithCancel(ctx)
	trialDone := make(chan error, 1)
	go func() {
		_, err := b.CallTool(trialCtx, "mem__block", nil, nil)
		trialDone <- err
	}()
	waitStatus(t, b, "mem", "the trial call in flight", func(st ServerStatus) bool { return st.InFlightCalls == 1 })
	_, _, err = b.ReadResource(ctx, "mem", "mem://r", "", nil)
	if retry := circuitOpen("a read beside the half-open trial", err); retry != time.Second {
		t.Errorf("retry after %s beside a trial, want 1s", retry)
	}
	endTrial() // the caller gave up: no verdict, the trial is free again
	if err := <-trialDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled trial: %v", err)
	}
	if res, _, err := b.ReadResource(ctx, "mem", "mem://r", "", nil); err != nil || len(res.Contents) != 1 {
		t.Fatalf("a read as the trial: %v, %v", res, err)
	}
	if st, _ := b.Server("mem"); st.Breaker != BreakerClosed {
		t.Fatalf("after a successful trial read the breaker is %s, want closed", st.Breaker)
	}
	if _, err := b.CallTool(ctx, "mem__echo", nil, nil); err != nil {
		t.Fatalf("a call after the breaker closed: %v", err)
	}
}

// TestReadOnExpiredSessionIsSentAgain: a read, like a call, that meets an
// upstream which forgot the session (HTTP 404 after a restart behind the
// same URL: a stateful go-sdk server replaced) is sent once more on the
// next session instead of failing.
func TestReadOnExpiredSessionIsSentAgain(t *testing.T) {
	t.Parallel()
	srv := requestUpstream(t).server
	t.Cleanup(func() { // the replaced handler's sessions too
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	h := &swappableHandler{}
	h.set(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	url := serveHTTP(t, h)
	b := newTestBridge(t, ServerConfig{Name: "h", Transport: TransportStreamableHTTP, URL: url, PingInterval: -1,
		BackoffBase: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond})
	h.set(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)) // forgets every session
	res, _, err := b.ReadResource(t.Context(), "h", "mem://r", "", nil)
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("a read on an expired session: %v, %v; want it sent again on a new session", res, err)
	}
	if st, _ := b.Server("h"); st.ConnectCount < 2 {
		t.Fatalf("connects = %d, want a new session", st.ConnectCount)
	}
}

// swappableHandler serves through whichever handler was set last, as an
// upstream restarted behind the same URL does.
type swappableHandler struct{ h atomic.Pointer[http.Handler] }

func (s *swappableHandler) set(h http.Handler) { s.h.Store(&h) }

func (s *swappableHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*s.h.Load()).ServeHTTP(w, r)
}
