package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/toolsvc/toolsvc/config"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestRateLimitsEndToEnd: a real toolsvc with auth.rateLimits refuses a
// principal over its callsPerSecond and over its maxConcurrent with
// RESOURCE_EXHAUSTED, ErrorInfo RATE_LIMITED and RetryInfo, leaves other
// principals alone, and counts the refusals by principal in /metrics.
func TestRateLimitsEndToEnd(t *testing.T) {
	t.Parallel()
	const alice, bob = "alice-token-0123456789", "bob-token-0123456789ab"
	p := startToolsvc(t, cfg{
		Auth: &authCfg{Tokens: map[string]string{"alice": alice, "bob": bob},
			RateLimits: []config.RateLimit{{Principal: "alice", CallsPerSecond: 0.02, Burst: 2}, {Principal: "b*", MaxConcurrent: 1}}},
		Servers: servers{"up": goStdio(upstream{PingInterval: "1h"})}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	as := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	}
	ping := &toolsvcv1.CallToolRequest{Name: "up__ping_me", ArgumentsJson: `{"x": 1}`}
	for i := 0; i < 2; i++ {
		if _, err := p.client.CallTool(as(alice), ping); err != nil {
			t.Fatalf("alice call %d within her burst = %v", i, err)
		}
	}
	_, err := p.client.CallTool(as(alice), ping)
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("alice's third call = %v, want RESOURCE_EXHAUSTED", err)
	}
	var reason string
	var retry time.Duration
	for _, d := range status.Convert(err).Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			reason = d.GetReason()
		case *errdetails.RetryInfo:
			retry = d.GetRetryDelay().AsDuration()
		}
	}
	if reason != "RATE_LIMITED" || retry < 40*time.Second || retry > 50*time.Second {
		t.Fatalf("alice's third call: reason %q retry %v, want RATE_LIMITED and about 50 s (one token at 0.02/s)", reason, retry)
	}
	// bob: no rate, one call at a time.
	slow := make(chan error, 1)
	go func() {
		for {
			_, err := p.client.CallTool(as(bob), &toolsvcv1.CallToolRequest{Name: "up__wait_cancel", ArgumentsJson: `{"ms": 1500, "id": "rl"}`})
			if status.Code(err) == codes.ResourceExhausted && strings.Contains(err.Error(), "in flight") && ctx.Err() == nil {
				// One of the pings below held bob's slot first: try again.
				time.Sleep(5 * time.Millisecond)
				continue
			}
			slow <- err
			return
		}
	}()
	// Only once the slow call holds bob's slot: otherwise a ping may take
	// it first and the slow call is the one refused.
	eventually(t, 10*time.Second, "bob's slow call in flight", func() bool {
		return strings.Contains(scrape(t, p.adminAddr), `toolsvc_principal_calls_in_flight{principal="bob"} 1`)
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := p.client.CallTool(as(bob), ping)
		if status.Code(err) == codes.ResourceExhausted && strings.Contains(err.Error(), "in flight") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob's concurrent call was never refused (last: %v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	if _, err := p.client.CallTool(as(bob), ping); err != nil {
		t.Fatalf("bob's call once the slot is free = %v", err)
	}
	text := scrape(t, p.adminAddr)
	for _, want := range []string{
		`toolsvc_rate_limited_total{limit="calls_per_second",principal="alice"} 1`,
		`toolsvc_rate_limited_total{limit="max_concurrent",principal="bob"}`,
		`toolsvc_principal_calls_in_flight{principal="bob"} 0`,
		`toolsvc_calls_total{outcome="ResourceExhausted",server="up",tool="up__ping_me"}`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
