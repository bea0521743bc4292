package tests

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// fastSupervision makes faults visible within a test's patience.
// It sets u's ping, refresh, backoff and stability settings.
func fastSupervision(u upstream) upstream {
	u.PingInterval, u.PingTimeout, u.RefreshInterval = "200ms", "300ms", "1h"
	u.Backoff, u.StableAfter = &backoff{Base: "100ms", Max: "500ms"}, "500ms"
	return u
}

func args(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitAvailability waits on a watch until every tool of server has the
// given availability.
func waitAvailability(t *testing.T, w *watcher, cat map[string]*toolsvcv1.Tool, server string, want bool, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		n, ok := 0, true
		for _, tool := range cat {
			if tool.GetServer() == server {
				n++
				ok = ok && tool.GetAvailable() == want
			}
		}
		if n > 0 && ok {
			return
		}
		ev := w.next(t, time.Until(deadline))
		if s := ev.GetSnapshot(); s != nil {
			clear(cat)
			for _, tool := range s.GetTools() {
				cat[tool.GetName()] = tool
			}
		}
		for _, tool := range ev.GetChanges().GetUpserted() {
			cat[tool.GetName()] = tool
		}
		for _, name := range ev.GetChanges().GetRemoved() {
			delete(cat, name)
		}
	}
}

// TestKillUpstreamDuringCall: SIGKILL an upstream under an in-flight call.
// The call fails with UNAVAILABLE at once, the tools turn unavailable on an
// open watch, and once the upstream is back (respawned for stdio, restarted
// for HTTP) they turn available again with no manual action.
func TestKillUpstreamDuringCall(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			var server upstream
			var hu *httpUpstream
			if transport == "http" {
				hu = newHTTPUpstream(t)
				server = goHTTP(hu.url(), fastSupervision(upstream{}))
			} else {
				server = goStdio(fastSupervision(upstream{}))
			}
			p := startToolsvc(t, cfg{Servers: servers{"up": server}})
			ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
			defer cancel()
			w := startWatch(t, ctx, p.client, "")
			cat := map[string]*toolsvcv1.Tool{}
			waitAvailability(t, w, cat, "up", true, 10*time.Second)

			type result struct {
				err error
				at  time.Time
			}
			// Three calls in flight: one death must fail them all, and count
			// once towards the circuit breaker.
			const inFlight = 3
			done := make(chan result, inFlight)
			for i := 0; i < inFlight; i++ {
				go func() {
					_, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__progress", Arguments: args(t, map[string]any{"steps": 200, "step_ms": 100})})
					done <- result{err, time.Now()}
				}()
			}
			eventually(t, 10*time.Second, "the calls to be in flight", func() bool {
				return serverStatus(t, ctx, p.client, "up").GetInFlightCalls() == inFlight
			})
			killed := time.Now()
			if hu != nil {
				hu.kill()
			} else {
				pids := childPIDs(p.cmd.Process.Pid, bin.testserver)
				if len(pids) != 1 {
					t.Fatalf("toolsvc has %d testserver children, want 1", len(pids))
				}
				_ = syscall.Kill(pids[0], syscall.SIGKILL)
			}
			var took time.Duration
			for i := 0; i < inFlight; i++ {
				var r result
				select {
				case r = <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("an in-flight call did not fail after its upstream was killed")
				}
				took = max(took, r.at.Sub(killed))
				if status.Code(r.err) != codes.Unavailable {
					t.Fatalf("in-flight call = %v, want UNAVAILABLE", r.err)
				}
			}
			if took > time.Second {
				t.Errorf("in-flight calls failed up to %v after the kill, want within 1s", took)
			}
			if hu == nil { // (HTTP reconnect attempts to the dead port add failures of their own)
				if n := serverStatus(t, ctx, p.client, "up").GetConsecutiveFailures(); n != 1 {
					t.Errorf("one death under %d calls counted %d times towards the breaker, want 1", inFlight, n)
				}
			}
			waitAvailability(t, w, cat, "up", false, 10*time.Second)
			if hu != nil {
				hu.start()
			}
			waitAvailability(t, w, cat, "up", true, 20*time.Second)
			res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__ping_me", Arguments: args(t, map[string]any{"x": 1})})
			if err != nil || resultText(res) != "2" {
				t.Fatalf("call after recovery = %v, %v", res, err)
			}
			if st := serverStatus(t, ctx, p.client, "up"); st.GetConnectCount() < 2 {
				t.Errorf("connect_count %d after recovery, want ≥ 2", st.GetConnectCount())
			}
			t.Logf("%s: in-flight call failed with UNAVAILABLE %v after SIGKILL", transport, took.Round(time.Millisecond))
		})
	}
}

func p50(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// TestWedgedUpstream: SIGSTOP one of two stdio upstreams. Calls to it end
// at their deadline, the healthy one keeps its latency, the prober declares
// the wedged one dead, and its whole process group is gone afterwards.
func TestWedgedUpstream(t *testing.T) {
	p := startToolsvc(t, cfg{Servers: servers{"wedged": goStdio(fastSupervision(upstream{})), "healthy": goStdio(fastSupervision(upstream{}))}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	healthyP50 := func() time.Duration {
		var ds []time.Duration
		for i := 0; i < 40; i++ {
			s := time.Now()
			if _, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "healthy__echo", Arguments: args(t, map[string]any{"text": "x"})}); err != nil {
				t.Fatalf("healthy call: %v", err)
			}
			ds = append(ds, time.Since(s))
		}
		return p50(ds)
	}
	before := healthyP50()

	// Find the wedged server's child: the one that answers for it.
	pids := childPIDs(p.cmd.Process.Pid, bin.testserver)
	if len(pids) != 2 {
		t.Fatalf("toolsvc has %d testserver children, want 2", len(pids))
	}
	// Stop both candidates one at a time and keep the one whose server
	// stops answering; simpler: stop all, resume the one that is healthy's.
	var wedgedPID int
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
		waitStopped(t, pid)
		cctx, ccancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err := p.client.CallTool(cctx, &toolsvcv1.CallToolRequest{Name: "wedged__echo", Arguments: args(t, map[string]any{"text": "x"})})
		ccancel()
		// Stopped under its call: the deadline passes, or (on a loaded
		// box) the prober has already declared the session dead.
		if c := status.Code(err); c == codes.DeadlineExceeded || c == codes.Unavailable {
			wedgedPID = pid
			break
		}
		if err != nil {
			t.Logf("with child %d stopped, wedged__echo = %v", pid, err)
		}
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	if wedgedPID == 0 {
		t.Fatal("could not tell which child serves the wedged upstream")
	}
	defer syscall.Kill(wedgedPID, syscall.SIGCONT)

	// A call to the wedged upstream ends at its deadline.
	start := time.Now()
	cctx, ccancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := p.client.CallTool(cctx, &toolsvcv1.CallToolRequest{Name: "wedged__echo", Arguments: args(t, map[string]any{"text": "x"})})
	ccancel()
	took := time.Since(start)
	if c := status.Code(err); c != codes.DeadlineExceeded && c != codes.Unavailable {
		t.Fatalf("call to the wedged upstream = %v, want DEADLINE_EXCEEDED (or UNAVAILABLE once declared dead)", err)
	}
	during := healthyP50()

	// The prober declares it dead; a new child replaces it, and the stopped
	// process (its group) is gone.
	eventually(t, 15*time.Second, "the wedged upstream to be reconnected", func() bool {
		st := serverStatus(t, ctx, p.client, "wedged")
		return st.GetConnectCount() >= 2 && st.GetState() == toolsvcv1.ServerState_SERVER_STATE_READY
	})
	eventually(t, 10*time.Second, "the stopped child to be killed and reaped", func() bool { return !alive(wedgedPID) })
	res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "wedged__ping_me", Arguments: args(t, map[string]any{"x": 1})})
	if err != nil || resultText(res) != "2" {
		t.Fatalf("call after the wedge was replaced = %v, %v", res, err)
	}
	// Healthy latency: the wedge must not leak into it. The bound is loose
	// (a noisy 2-core box): an order of magnitude, not a percentage.
	if during > 5*before+5*time.Millisecond {
		t.Errorf("healthy p50 %v during the wedge vs %v before", during, before)
	}
	t.Logf("wedged call ended after %v (deadline 300ms); healthy p50 before %v, during %v", took.Round(time.Millisecond), before, during)
}

// TestHTTPUpstreamRestart404: an HTTP upstream restarts, so our session id
// gets 404; the next call reconnects and succeeds.
func TestHTTPUpstreamRestart404(t *testing.T) {
	t.Parallel()
	hu := newHTTPUpstream(t)
	// Slow probes: the call, not the prober, must meet the dead session.
	p := startToolsvc(t, cfg{Servers: servers{"up": goHTTP(hu.url(), upstream{PingInterval: "1h", Backoff: &backoff{Base: "50ms", Max: "200ms"}})}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	call := func() (*toolsvcv1.CallToolResponse, error) {
		return p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__ping_me", Arguments: args(t, map[string]any{"x": 41})})
	}
	if _, err := call(); err != nil {
		t.Fatal(err)
	}
	hu.kill()
	hu.start()
	res, err := call()
	if err != nil || resultText(res) != "42" {
		t.Fatalf("first call after the restart = %v, %v; want 42", res, err)
	}
	if st := serverStatus(t, ctx, p.client, "up"); st.GetConnectCount() < 2 {
		t.Errorf("connect_count = %d, want a reconnect", st.GetConnectCount())
	}
}

// TestSilentListener: an upstream that accepts TCP and never answers fails
// its connect at connectTimeout; the other upstreams are ready and
// readiness is reached.
//
// Serial (as the other tests here without t.Parallel): it bounds a wait
// in time, which other tests' load would stretch.
func TestSilentListener(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		lis.Close()
		wg.Wait()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	start := time.Now()
	p := startToolsvc(t, cfg{StartupTimeout: "20s", Servers: servers{
		"silent": goHTTP("http://"+lis.Addr().String()+"/mcp", upstream{ConnectTimeout: "1s"}),
		"ok":     goStdio(upstream{ConnectTimeout: "5s"})}})
	ready := time.Since(start)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	silent := serverStatus(t, ctx, p.client, "silent")
	if silent.GetState() == toolsvcv1.ServerState_SERVER_STATE_READY || !strings.Contains(silent.GetLastError(), "timed out after 1s") {
		t.Errorf("silent upstream: state %v, last_error %q; want not ready, timed out after 1s", silent.GetState(), silent.GetLastError())
	}
	if ok := serverStatus(t, ctx, p.client, "ok"); ok.GetState() != toolsvcv1.ServerState_SERVER_STATE_READY {
		t.Errorf("healthy upstream state %v, want READY", ok.GetState())
	}
	if ready > 15*time.Second {
		t.Errorf("readiness took %v with a 1s connectTimeout on the silent upstream", ready)
	}
	t.Logf("ready after %v (silent upstream connectTimeout 1s)", ready.Round(time.Millisecond))
}

// TestSlowListBoundedByRefreshTimeout: a tools/list that takes 10 s is cut
// at refreshTimeout; calls meanwhile are unaffected; the previous tools stay.
func TestSlowListBoundedByRefreshTimeout(t *testing.T) {
	p := startToolsvc(t, cfg{Servers: servers{"up": goStdio(upstream{RefreshTimeout: "1s", RefreshInterval: "1h", Backoff: &backoff{Base: "200ms", Max: "500ms"}})}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	call := func(name string, a map[string]any) string {
		t.Helper()
		res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: name, Arguments: args(t, a)})
		if err != nil {
			t.Fatalf("CallTool(%s) = %v", name, err)
		}
		return resultText(res)
	}
	call("up__set_slow_list", map[string]any{"ms": 10000})
	start := time.Now()
	call("up__add_tool", map[string]any{"name": "late"})
	eventually(t, 8*time.Second, "the refresh to time out", func() bool {
		st := serverStatus(t, ctx, p.client, "up")
		return st.GetLastRefreshOutcome() == toolsvcv1.RefreshOutcome_REFRESH_OUTCOME_FAILED
	})
	failedAfter := time.Since(start)
	st := serverStatus(t, ctx, p.client, "up")
	if !strings.Contains(st.GetLastError(), "timed out after 1s") || st.GetState() != toolsvcv1.ServerState_SERVER_STATE_READY {
		t.Errorf("after the slow list: state %v, last_error %q", st.GetState(), st.GetLastError())
	}
	if got := call("up__echo", map[string]any{"text": "still here"}); got != "still here" {
		t.Errorf("echo during the slow list = %q", got)
	}
	tools, _ := listAll(t, ctx, p.client, 0)
	if !hasTool(tools, "up__echo") || hasTool(tools, "up__late") {
		t.Errorf("catalog after a failed refresh should keep the old tools")
	}
	// Once the list is fast again, the retry lands the new tool.
	call("up__set_slow_list", map[string]any{"ms": 0})
	eventually(t, 20*time.Second, "the retried refresh", func() bool {
		tools, _ := listAll(t, ctx, p.client, 0)
		return hasTool(tools, "up__late")
	})
	if failedAfter > 5*time.Second {
		t.Errorf("the 10s list was abandoned after %v, want about refreshTimeout (1s)", failedAfter)
	}
}

// TestWrapperProcessTreeKilled: a stdio server behind `sh -c 'server; true'`
// leaves no process of its tree once toolsvc stops.
func TestWrapperProcessTreeKilled(t *testing.T) {
	t.Parallel()
	marker := fmt.Sprintf("TOOLSVC_TREE_MARKER=%d", time.Now().UnixNano())
	name, value, _ := strings.Cut(marker, "=")
	p := startToolsvc(t, cfg{Servers: servers{"wrapped": {Command: "sh", Args: []string{"-c", bin.testserver + " -mode stdio; true"},
		Env: map[string]string{name: value}}}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "wrapped__ping_me", Arguments: args(t, map[string]any{"x": 1})})
	if err != nil || resultText(res) != "2" {
		t.Fatalf("call through the wrapper = %v, %v", res, err)
	}
	if n := len(procsWithEnv(marker)); n < 2 {
		t.Fatalf("%d processes carry the marker, want the shell and the server", n)
	}
	p.stop()
	eventually(t, 10*time.Second, "every process of the wrapped tree to exit", func() bool { return len(procsWithEnv(marker)) == 0 })
}

// TestFlappingUpstream: an upstream that dies shortly after every connect.
// Backoff grows, the breaker opens, and the connects stay far below what a
// loop without backoff would make.
func TestFlappingUpstream(t *testing.T) {
	if _, err := exec.LookPath("timeout"); err != nil {
		t.Fatal("coreutils timeout not found")
	}
	const life = 100 * time.Millisecond
	p := startToolsvc(t, cfg{StartupTimeout: "5s", Servers: servers{"flappy": {Command: "timeout", Args: []string{"0.1", bin.testserver, "-mode", "stdio"},
		PingInterval: "1h", RefreshInterval: "1h", StableAfter: "2s",
		Backoff: &backoff{Base: "100ms", Max: "1s"}, Breaker: &breaker{Failures: 3, Cooldown: "500ms", MaxCooldown: "2s"}}}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	const observe = 5 * time.Second
	start := time.Now()
	sawOpen := false
	for time.Since(start) < observe {
		_, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "flappy__echo", Arguments: args(t, map[string]any{"text": "x"})})
		if st, ok := status.FromError(err); ok && st.Code() == codes.Unavailable && strings.Contains(st.Message(), "circuit breaker open") {
			sawOpen = true
		}
		time.Sleep(50 * time.Millisecond)
	}
	st := serverStatus(t, ctx, p.client, "flappy")
	connects := st.GetConnectCount()
	// Without backoff: one connect per session lifetime (plus spawn), i.e.
	// about observe/life = 50. With full-jitter backoff from 100 ms doubling
	// to 1 s, the expected count is about a dozen.
	noBackoff := int64(observe / life)
	if connects > noBackoff/2 {
		t.Errorf("%d connects in %v; a loop without backoff would make about %d", connects, observe, noBackoff)
	}
	if connects < 3 {
		t.Errorf("%d connects in %v: the supervisor stopped retrying", connects, observe)
	}
	if !sawOpen && !strings.Contains(p.log.String(), "circuit breaker opened") {
		t.Error("the breaker never opened for a flapping upstream")
	}
	// Backoff grows: the logged attempt numbers increase.
	attempts := 0
	for _, line := range strings.Split(p.log.String(), "\n") {
		if strings.Contains(line, "upstream down; reconnecting") && strings.Contains(line, "server=flappy") {
			var n int
			if i := strings.Index(line, "attempt="); i >= 0 {
				fmt.Sscanf(line[i:], "attempt=%d", &n)
			}
			attempts = max(attempts, n)
		}
	}
	if attempts < 3 {
		t.Errorf("highest reconnect attempt %d, want the backoff to keep growing", attempts)
	}
	t.Logf("flapping upstream: %d connects in %v (no-backoff loop ≈ %d), highest attempt %d, breaker seen open: %v",
		connects, observe, noBackoff, attempts, sawOpen)
}

// TestWedgedHTTPUpstream: the same wedge over HTTP. Calls end at their
// deadline, the prober declares the session dead (no Wait() involved), the
// upstream stays down while frozen, and recovers once continued.
func TestWedgedHTTPUpstream(t *testing.T) {
	t.Parallel()
	hu := newHTTPUpstream(t)
	p := startToolsvc(t, cfg{Servers: servers{"wedged": goHTTP(hu.url(), fastSupervision(upstream{ConnectTimeout: "1s"})),
		"healthy": goStdio(fastSupervision(upstream{}))}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	hu.freeze()
	start := time.Now()
	cctx, ccancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := p.client.CallTool(cctx, &toolsvcv1.CallToolRequest{Name: "wedged__echo", Arguments: args(t, map[string]any{"text": "x"})})
	ccancel()
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("call to the frozen upstream = %v, want DEADLINE_EXCEEDED", err)
	}
	took := time.Since(start)
	eventually(t, 10*time.Second, "the prober to declare the frozen upstream dead", func() bool {
		st := serverStatus(t, ctx, p.client, "wedged")
		return st.GetState() == toolsvcv1.ServerState_SERVER_STATE_DOWN || st.GetState() == toolsvcv1.ServerState_SERVER_STATE_CONNECTING
	})
	if _, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "healthy__echo", Arguments: args(t, map[string]any{"text": "x"})}); err != nil {
		t.Fatalf("healthy upstream during the freeze: %v", err)
	}
	hu.signal(syscall.SIGCONT)
	eventually(t, 20*time.Second, "the continued upstream to be ready again", func() bool {
		return serverStatus(t, ctx, p.client, "wedged").GetState() == toolsvcv1.ServerState_SERVER_STATE_READY
	})
	res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "wedged__ping_me", Arguments: args(t, map[string]any{"x": 1})})
	if err != nil || resultText(res) != "2" {
		t.Fatalf("call after SIGCONT = %v, %v", res, err)
	}
	t.Logf("frozen HTTP upstream: call ended after %v (deadline 300ms)", took.Round(time.Millisecond))
}
