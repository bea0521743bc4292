package service

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

// countingStream counts the messages an interceptor's wrapper sees.
type countingStream struct {
	grpc.ServerStream
	sent *atomic.Int64
}

func (c *countingStream) SendMsg(m any) error {
	c.sent.Add(1)
	return c.ServerStream.SendMsg(m)
}

// TestWatchPastMessageInterceptors: WatchCatalog's messages go past the
// interceptors' per-message wrappers (directSendMethods), the call does
// not: an unauthenticated watch is refused by the chain, an authenticated
// one sees only what its rules allow, every watch is counted as started
// and handled with its code, an interceptor below sees each call but none
// of its messages, and toolsvc_watch_messages_sent_total counts them
// instead. Another server stream (CallToolStream) still passes every
// message through the chain.
func TestWatchPastMessageInterceptors(t *testing.T) {
	t.Parallel()
	a := authGen(tokA, "a")
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	f := newWatchFixture(t, &serverOpts{Authenticator: a.Authenticator, Authorizer: a.Authorizer, RateLimits: a.RateLimits, Metrics: m},
		map[string][]string{"a": {"x", "y"}, "b": {"x"}})
	m.Attach(f.bridge)
	var calls, sent atomic.Int64
	extra := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		calls.Add(1)
		if _, ok := core.PrincipalFrom(ss.Context()); !ok {
			t.Errorf("%s: the interceptor below auth sees no principal", info.FullMethod)
		}
		return handler(srv, &countingStream{ServerStream: ss, sent: &sent})
	}
	gs, _ := NewGRPCServer(f.svc, GRPCOptions{Registry: reg, StreamWorkers: -1, ExtraStream: []grpc.StreamServerInterceptor{extra}})
	client := toolsvcv1.NewToolServiceClient(serveBufconn(t, gs))
	t.Cleanup(f.svc.Shutdown)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()

	st, err := client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{})
	if err == nil {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("WatchCatalog without a token: %v, want UNAUTHENTICATED", err)
	}

	wctx, wcancel := context.WithCancel(bearer(ctx, tokA))
	defer wcancel()
	st, err = client.WatchCatalog(wctx, &toolsvcv1.WatchCatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(ev.GetSnapshot().GetTools()); got != "a__x a__y " {
		t.Fatalf("first event's tools = %q, want a__x,a__y (principal p may use server a only)", got)
	}
	f.servers["a"].put("z", "v1")
	if ev, err = st.Recv(); err != nil || len(ev.GetChanges().GetUpserted()) != 1 {
		t.Fatalf("second event = %v, %v; want the change adding a__z", ev, err)
	}
	wcancel()
	if _, err := st.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("Recv after cancel: %v, want CANCELED", err)
	}

	cs, err := client.CallToolStream(bearer(ctx, tokA), &toolsvcv1.CallToolStreamRequest{Name: "a__x", ArgumentsJson: "{}"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := cs.Recv(); err != nil {
			break
		}
	}

	method := func(name, code string) map[string]string {
		l := map[string]string{"grpc_service": "toolsvc.v1.ToolService", "grpc_method": name}
		if code != "" {
			l["grpc_code"] = code
		}
		return l
	}
	deadline := time.Now().Add(defaultTestTimeout)
	for metricValue(t, reg, "grpc_server_handled_total", method("WatchCatalog", "Canceled")) != 1 {
		if time.Now().After(deadline) { // the return is counted after the client saw the status
			t.Fatal("the canceled watch was not counted as handled")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"grpc_server_started_total", method("WatchCatalog", ""), 2},
		{"grpc_server_handled_total", method("WatchCatalog", "Unauthenticated"), 1},
		{"grpc_server_handled_total", method("WatchCatalog", "OK"), 0},
		{"grpc_server_handling_seconds_count", method("WatchCatalog", ""), 2},
		{"grpc_server_msg_sent_total", method("WatchCatalog", ""), 0},
		{"toolsvc_watch_messages_sent_total", nil, 2},
		{"grpc_server_msg_sent_total", method("CallToolStream", ""), 1},
	} {
		if got := metricValue(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// The unauthenticated watch never reached the interceptor below auth.
	if c, s := calls.Load(), sent.Load(); c != 2 || s != 1 {
		t.Errorf("the interceptor below auth saw %d calls and %d messages, want 2 (the watch, the call) and 1 (the call's result)", c, s)
	}
}

// metricValue is the value of the sample of family name whose labels
// include labels (a histogram's sample count for name_count), or -1.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	family, count := name, false
	if base, ok := strings.CutSuffix(name, "_count"); ok {
		family, count = base, true
	}
	for _, mf := range fams {
		if mf.GetName() != family {
			continue
		}
	samples:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue samples
				}
			}
			switch {
			case count:
				return float64(m.GetHistogram().GetSampleCount())
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			default:
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}
