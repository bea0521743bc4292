package tests

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// The upstream interop matrix: every SDK × transport × protocol
// cell the SDK can serve, each against a real toolsvc and a real upstream
// process, checked through toolsvc's gRPC API. docs/interop.md describes
// each check and the per-SDK quirks; it has the table too.

const (
	proto0618 = "2025-06-18"
	proto1125 = "2025-11-25"
	proto0728 = "2026-07-28"
	// protoDefault: the config sets no protocolVersion, so the cell runs
	// what a user gets (mcpbridge.DefaultProtocolVersion).
	protoDefault = "default"

	// matrixPing is every cell's pingInterval: short, so that the idle
	// check (matrixIdlePings intervals) covers several probes quickly.
	matrixPing      = 300 * time.Millisecond
	matrixIdlePings = 4 // ≥ 3 × pingInterval, plus one interval of slack
	// pushBound: a list_changed push reaches an open watch within this.
	pushBound = 2 * time.Second
	// relistBound: an upstream without a push channel is re-listed every
	// pushlessRefresh (1 s by default), so its runtime tool reaches the
	// watch within this.
	relistBound = 3 * time.Second
	// deadlineMS is the caller's deadline in the cancellation check; the
	// tool would run waitMS unless cancelled.
	deadlineMS = 500
	waitMS     = 3000
)

var (
	matrixSDKs       = []string{sdkGo, sdkTS, sdkPython}
	matrixTransports = []string{trStdio, trHTTP, trStateless, trSSE}
	matrixProtocols  = []string{proto0618, proto1125, proto0728, protoDefault}
)

// cellSpec is what a cell expects: where the SDK or the protocol cannot do
// something, the behaviour that applies instead (asserted, not skipped).
type cellSpec struct {
	sdk, transport, protocol string
	negotiated               string // protocol_version ListServers must report
	fresh                    string // how runtime tool changes arrive: freshPush or freshRelist
	cancels                  bool   // the tool's context ends when the caller's deadline passes; else it runs to the end
	notes                    []string
}

// How a cell's runtime tool changes reach toolsvc.
const (
	freshPush   = "push"    // list_changed, within pushBound
	freshRelist = "re-list" // no push channel: the pushlessRefresh re-list, within relistBound
)

// matrixSpec is the matrix's documented expectations (docs/interop.md says
// why each quirk holds).
func matrixSpec(sdk, transport, protocol string) cellSpec {
	if protocol == protoDefault {
		// protocolVersion "auto" (the default) starts at
		// mcpbridge.DefaultProtocolVersion, and connects a stateless
		// server (no GET stream) again at the newest version, where its
		// pushes ride subscriptions/listen.
		pinned := mcpbridge.DefaultProtocolVersion
		if transport == trStateless {
			pinned = proto0728
		}
		c := matrixSpec(sdk, transport, pinned)
		c.protocol = protoDefault
		if transport == trStateless && (sdk == sdkGo || sdk == sdkPython) && c.fresh != freshPush {
			// Issue 13: by default, a stateless server that speaks
			// 2026-07-28 gets its runtime tool changes to watchers
			// within 2 s.
			c.fresh = freshPush
			c.notes = append(c.notes, "by default a stateless 2026-07-28 server's changes reach watchers within 2 s")
		}
		return c
	}
	c := cellSpec{sdk: sdk, transport: transport, protocol: protocol, negotiated: protocol, fresh: freshPush, cancels: true}
	if sdk == sdkTS && protocol == proto0728 {
		// TS SDK 1.32.2 knows versions up to 2025-11-25: it answers
		// server/discover with MethodNotFound and go-sdk falls back to
		// initialize at 2025-11-25.
		c.negotiated = proto1125
		c.notes = append(c.notes, "TS SDK has no 2026-07-28: served at 2025-11-25")
	}
	if sdk == sdkGo && (transport == trHTTP || transport == trSSE) && protocol == proto0728 {
		// go-sdk's stateful streamable and SSE handlers reject
		// server/discover; go-sdk's client falls back to initialize.
		c.negotiated = proto1125
		c.notes = append(c.notes, "go-sdk serves server/discover only over stdio and stateless HTTP: served at 2025-11-25")
	}
	if transport == trStateless && c.negotiated != proto0728 {
		// No session, so no stream for pushes: go-sdk and TS refuse the
		// standalone GET, Python's MCPServer holds an empty one open but
		// gives no Mcp-Session-Id. toolsvc knows either way and re-lists
		// every pushlessRefresh.
		c.fresh = freshRelist
		c.notes = append(c.notes, "stateless before 2026-07-28: no push channel: runtime tools arrive with the pushlessRefresh re-list")
	}
	if transport == trStateless && sdk == sdkGo {
		c.cancels = false
		c.notes = append(c.notes, "go-sdk stateless server never cancels a running handler")
	}
	return c
}

// cellResult is one cell's row in the table.
type cellResult struct {
	spec       cellSpec
	negotiated string
	checks     map[string]string // check -> outcome shown in the table
	failed     bool
}

var matrixChecks = []string{"list", "call", "runtime_tool", "deadline", "idle", "kill"}

// matrixParallel cells run at once. The cells mostly wait (probe
// intervals, deadlines, restarts), so they run concurrently whatever go
// test's -parallel is (t.Run from several goroutines).
const matrixParallel = 6

// runConcurrently runs f for every name as a subtest of t, at most
// matrixParallel at a time, starting them in order, and returns when all
// are done.
func runConcurrently(t *testing.T, names []string, f func(t *testing.T, i int)) {
	sem := make(chan struct{}, matrixParallel)
	var wg sync.WaitGroup
	for i, name := range names {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t.Run(name, func(t *testing.T) { f(t, i) })
		}()
	}
	wg.Wait()
}

// TestMatrix runs every cell and prints the table. Subtest names are
// TestMatrix/<sdk>/<transport>/<protocol>/<check>.
//
// Serial: the cells bound push, re-list and recovery times, and already
// run matrixParallel at a time.
func TestMatrix(t *testing.T) {
	// Cells start interleaved (protocol, then transport, then SDK), so
	// that the slow starters (Python's interpreter, -race toolsvc) are
	// spread over the run; the table keeps SDK order.
	var (
		names   []string
		results []*cellResult
	)
	for _, pv := range matrixProtocols {
		for _, tr := range matrixTransports {
			for _, sdk := range matrixSDKs {
				names = append(names, sdk+"/"+tr+"/"+pv)
				results = append(results, &cellResult{spec: matrixSpec(sdk, tr, pv), checks: map[string]string{}})
			}
		}
	}
	start := time.Now()
	var mu sync.Mutex
	runConcurrently(t, names, func(t *testing.T, i int) {
		r := results[i]
		runCell(t, r.spec, r)
		mu.Lock()
		r.failed = t.Failed()
		mu.Unlock()
	})
	rank := func(list []string, v string) int { return slices.Index(list, v) }
	slices.SortStableFunc(results, func(a, b *cellResult) int {
		if d := rank(matrixSDKs, a.spec.sdk) - rank(matrixSDKs, b.spec.sdk); d != 0 {
			return d
		}
		if d := rank(matrixTransports, a.spec.transport) - rank(matrixTransports, b.spec.transport); d != 0 {
			return d
		}
		return rank(matrixProtocols, a.spec.protocol) - rank(matrixProtocols, b.spec.protocol)
	})
	t.Logf("upstream interop matrix (%d cells, %v):\n%s", len(results), time.Since(start).Round(100*time.Millisecond), matrixTable(results))
}

func matrixTable(results []*cellResult) string {
	var b strings.Builder
	b.WriteString("| SDK | transport | protocol | negotiated | " + strings.Join(matrixChecks, " | ") + " | notes |\n")
	b.WriteString("|---|---|---|---|" + strings.Repeat("---|", len(matrixChecks)) + "---|\n")
	for _, r := range results {
		cells := []string{r.spec.sdk, r.spec.transport, r.spec.protocol, r.negotiated}
		for _, c := range matrixChecks {
			o := r.checks[c]
			if o == "" {
				o = "not run"
			}
			cells = append(cells, o)
		}
		cells = append(cells, strings.Join(r.spec.notes, "; "))
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

// runCell runs one cell's checks in order; each is a subtest, so a failure
// names the cell and the check (e.g. TestMatrix/ts/http/2025-11-25/kill).
func runCell(t *testing.T, spec cellSpec, r *cellResult) {
	var mu sync.Mutex
	set := func(check, outcome string) {
		mu.Lock()
		r.checks[check] = outcome
		mu.Unlock()
	}
	u := startMatrixUpstream(t, spec.sdk, spec.transport)
	refresh := "1h" // only a push (or the pushless re-list) can bring a runtime tool
	pin := spec.protocol
	if spec.protocol == protoDefault {
		pin = ""
	}
	// connectTimeout is raised from 10 s: a Python server's first
	// initialize (interpreter start, imports) took longer than 10 s on a
	// 2-core box at load 16.
	p := startToolsvc(t, cfg{Servers: servers{"up": u.server(upstream{ProtocolVersion: pin, ConnectTimeout: "20s",
		PingInterval: matrixPing.String(), PingTimeout: "1s", RefreshInterval: refresh, Backoff: &backoff{Base: "50ms", Max: "500ms"},
		Breaker: &breaker{Failures: 3, Cooldown: "200ms", MaxCooldown: "1s"}})}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*defaultTestTimeout)
	defer cancel()
	c := p.client

	run := func(check string, f func(t *testing.T) string) {
		ok := t.Run(check, func(t *testing.T) {
			out := f(t)
			if t.Failed() {
				out = "FAIL"
			}
			set(check, strings.TrimSpace(out))
		})
		if !ok {
			mu.Lock()
			if !strings.HasPrefix(r.checks[check], "FAIL") {
				r.checks[check] = "FAIL"
			}
			mu.Unlock()
		}
	}

	run("list", func(t *testing.T) string {
		tools, _ := listAll(t, ctx, c, 0)
		for _, want := range []string{"up__echo", "up__add_tool", "up__wait_cancel"} {
			if !hasTool(tools, want) {
				t.Errorf("ListTools lacks %s (has %d tools)", want, len(tools))
			}
		}
		st := serverStatus(t, ctx, c, "up")
		mu.Lock()
		r.negotiated = st.GetProtocolVersion()
		mu.Unlock()
		if st.GetState() != toolsvcv1.ServerState_SERVER_STATE_READY {
			t.Errorf("state %v (last error %q), want READY", st.GetState(), st.GetLastError())
		}
		if st.GetProtocolVersion() != spec.negotiated {
			t.Errorf("negotiated protocol %q, want %q", st.GetProtocolVersion(), spec.negotiated)
		}
		return fmt.Sprintf("%d tools", len(tools))
	})

	run("call", func(t *testing.T) string {
		res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__echo", ArgumentsJson: `{"text": "hello matrix"}`})
		if err != nil {
			t.Fatalf("CallTool(up__echo) = %v", err)
		}
		if got := resultText(res); got != "hello matrix" || res.GetIsError() {
			t.Fatalf("CallTool(up__echo) = %q (is_error %v), want %q", got, res.GetIsError(), "hello matrix")
		}
		return "ok"
	})

	// A tool added at runtime and announced with list_changed reaches a
	// watch opened before, and dispatches.
	run("runtime_tool", func(t *testing.T) string {
		w := startWatch(t, ctx, c, "")
		if first := w.next(t, 10*time.Second); first.GetSnapshot() == nil {
			t.Fatalf("first watch event = %v, want a snapshot", first)
		}
		before := serverStatus(t, ctx, c, "up").GetConnectCount()
		if _, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__add_tool", ArgumentsJson: `{"name": "rt_added"}`}); err != nil {
			t.Fatalf("CallTool(up__add_tool) = %v", err)
		}
		bound := map[string]time.Duration{freshPush: pushBound, freshRelist: relistBound}[spec.fresh]
		took, ok := waitUpsertWithin(w, "up__rt_added", bound)
		if !ok {
			t.Fatalf("up__rt_added did not reach the open watch within %v (expected by %s)", bound, spec.fresh)
		}
		res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__rt_added"})
		if err != nil || !strings.Contains(resultText(res), "rt_added ok") {
			t.Errorf("CallTool(up__rt_added) = %q, %v; want \"rt_added ok\"", resultText(res), err)
		}
		if after := serverStatus(t, ctx, c, "up").GetConnectCount(); after != before {
			t.Errorf("connect_count %d -> %d: the tool came from a reconnect", before, after)
		}
		return fmt.Sprintf("%s %dms", spec.fresh, took.Milliseconds())
	})

	// The caller's deadline ends the call and reaches the upstream tool as
	// cancellation (or, where the SDK cannot, the tool runs to its end).
	run("deadline", func(t *testing.T) string {
		callCtx, callCancel := context.WithTimeout(ctx, deadlineMS*time.Millisecond)
		deadline, _ := callCtx.Deadline()
		_, err := c.CallTool(callCtx, &toolsvcv1.CallToolRequest{Name: "up__wait_cancel", ArgumentsJson: fmt.Sprintf(`{"id": "deadline", "ms": %d}`, waitMS)})
		callCancel()
		if status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("CallTool with a %dms deadline = %v, want DEADLINE_EXCEEDED", deadlineMS, err)
		}
		if _, _, ok := u.sideRecord("deadline", "started"); !ok {
			t.Fatalf("the upstream never started the call")
		}
		if spec.cancels {
			_, at, ok := u.waitSideRecord("deadline", "cancelled", 5*time.Second)
			if !ok {
				_, _, fin := u.sideRecord("deadline", "finished")
				t.Fatalf("the upstream tool's context did not end within 5s of the caller's deadline (finished: %v)", fin)
			}
			return fmt.Sprintf("cancelled +%dms", at.Sub(deadline).Milliseconds())
		}
		_, at, ok := u.waitSideRecord("deadline", "finished", waitMS*time.Millisecond+5*time.Second)
		if !ok {
			t.Fatalf("documented: the tool runs to its end; it did not finish")
		}
		if _, _, cancelled := u.sideRecord("deadline", "cancelled"); cancelled {
			t.Fatalf("the tool was cancelled, but this cell documents it is not: update matrixSpec")
		}
		return fmt.Sprintf("runs on (%dms)", at.Sub(deadline.Add(-deadlineMS*time.Millisecond)).Milliseconds())
	})

	// Idle for ≥ 3 × pingInterval: the prober keeps the session.
	run("idle", func(t *testing.T) string {
		before := serverStatus(t, ctx, c, "up")
		time.Sleep(matrixIdlePings * matrixPing)
		after := serverStatus(t, ctx, c, "up")
		if after.GetConnectCount() != before.GetConnectCount() || after.GetState() != toolsvcv1.ServerState_SERVER_STATE_READY {
			t.Fatalf("after %d × pingInterval idle: connect_count %d -> %d, state %v (last error %q); want unchanged and READY",
				matrixIdlePings, before.GetConnectCount(), after.GetConnectCount(), after.GetState(), after.GetLastError())
		}
		return "ok"
	})

	// SIGKILL mid-call: UNAVAILABLE, then recovery (stdio: toolsvc
	// respawns; HTTP: the server restarts on the same port).
	run("kill", func(t *testing.T) string {
		before := serverStatus(t, ctx, c, "up").GetConnectCount()
		errc := make(chan error, 1)
		callCtx, callCancel := context.WithTimeout(ctx, 20*time.Second)
		defer callCancel()
		go func() {
			_, err := c.CallTool(callCtx, &toolsvcv1.CallToolRequest{Name: "up__wait_cancel", ArgumentsJson: `{"id": "kill", "ms": 30000}`})
			errc <- err
		}()
		pid, _, ok := u.waitSideRecord("kill", "started", 10*time.Second)
		if !ok {
			t.Fatalf("the upstream never started the call")
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill %d: %v", pid, err)
		}
		killed := time.Now()
		var err error
		select {
		case err = <-errc:
		case <-time.After(15 * time.Second):
			t.Fatalf("the in-flight call did not end within 15s of the upstream's SIGKILL")
		}
		failedIn := time.Since(killed)
		outcome := strings.ToUpper(status.Code(err).String())
		if ei := matrixErrorInfo(err); ei != nil {
			if r := ei.GetMetadata()["unavailable_reason"]; r != "" {
				outcome += " " + r
			} else {
				outcome += " " + ei.GetReason()
			}
		}
		if status.Code(err) != codes.Unavailable {
			t.Errorf("in-flight call after SIGKILL = %v, want UNAVAILABLE", err)
		}
		if u.transport != trStdio {
			u.start(t)
		}
		var recovered time.Duration
		deadline := time.Now().Add(20 * time.Second)
		for {
			res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__echo", ArgumentsJson: `{"text": "back"}`})
			if err == nil && resultText(res) == "back" {
				recovered = time.Since(killed)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no recovery within 20s of the kill: last call %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		st := serverStatus(t, ctx, c, "up")
		if st.GetConnectCount() <= before {
			t.Errorf("connect_count %d after recovery, want > %d", st.GetConnectCount(), before)
		}
		return fmt.Sprintf("%s %dms, up %dms", outcome, failedIn.Milliseconds(), recovered.Milliseconds())
	})
}

func matrixErrorInfo(err error) *errdetails.ErrorInfo {
	for _, d := range status.Convert(err).Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			return ei
		}
	}
	return nil
}

// waitUpsertWithin waits for a changes event upserting name; it reports
// how long that took, or false after timeout.
func waitUpsertWithin(w *watcher, name string, timeout time.Duration) (time.Duration, bool) {
	start := time.Now()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-w.events:
			if !ok {
				return 0, false
			}
			if slices.ContainsFunc(ev.GetChanges().GetUpserted(), func(t *toolsvcv1.Tool) bool { return t.GetName() == name }) {
				return time.Since(start), true
			}
		case <-deadline:
			return 0, false
		}
	}
}
