package tests

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/health" // client-side health checking (healthCheckConfig)
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/toolsvc/toolsvc/catalogwatch"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// The client-side settings documented in docs/kubernetes.md ("Client-side
// load balancing") and used by the examples: round_robin, health-checked
// subchannels, retries of UNAVAILABLE on the idempotent methods.
const lbServiceConfigPath = "../examples/lb/service_config.json"

// fleetShutdownTimeout is each replica's --shutdown-timeout (its drain bound).
const fleetShutdownTimeout = 5 * time.Second

// fleet is three toolsvc replicas in front of the same upstreams, each
// restartable on its own address (as a pod keeps its Service membership).
type fleet struct {
	t      *testing.T
	config cfg
	procs  []*toolsvcProc
	addrs  []string
	drains []time.Duration
}

func (f *fleet) start(i int) {
	args := []string{"--shutdown-timeout", fleetShutdownTimeout.String()}
	if f.addrs[i] != "" {
		args = append(args, "--listen", f.addrs[i])
	}
	p := startToolsvcWith(f.t, f.config, startOpts{args: args})
	f.procs[i], f.addrs[i] = p, p.addr
}

// restart sends SIGTERM, waits for the exit (the harness fails the test on a
// non-zero exit), checks that the drain stayed within its bound, and starts
// the replica again on the same address.
func (f *fleet) stop(i int) {
	t := f.t
	p := f.procs[i]
	start := time.Now()
	p.stop()
	d := time.Since(start)
	f.drains = append(f.drains, d)
	// The process bounds itself: calls get 2/3 of the timeout, upstream
	// sessions the rest (at least 1 s), the admin server 1 s.
	if bound := fleetShutdownTimeout + 2*time.Second; d > bound {
		t.Errorf("replica %d took %s to drain, over its bound %s", i, d, bound)
	}
	if strings.Contains(p.log.String(), "drain bound reached") {
		t.Errorf("replica %d cancelled calls at its drain bound (short echo calls should finish); log:\n%s", i, p.log)
	}
}

// callStats counts the load's outcomes.
type callStats struct {
	mu        sync.Mutex
	calls     int // logical calls (a retried call counts once)
	ok        int
	failed    []error
	retries   map[string]int // by ErrorInfo reason ("transport" without one)
	byReplica map[string]int
}

// reasonOf is the ErrorInfo reason of a gRPC error, "transport" for a status
// the client library made up (connection refused or closed, no details).
func reasonOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			if r := ei.GetMetadata()["unavailable_reason"]; r != "" {
				return ei.GetReason() + "/" + r
			}
			return ei.GetReason()
		}
	}
	return "transport"
}

// callWithRetry is the documented CallTool retry for an idempotent tool:
// UNAVAILABLE is retried (at most 5 attempts, jittered exponential backoff);
// every other outcome is final.
func callWithRetry(ctx context.Context, c toolsvcv1.ToolServiceClient, req *toolsvcv1.CallToolRequest, st *callStats) (*toolsvcv1.CallToolResponse, error) {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		var p peer.Peer
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := c.CallTool(cctx, req, grpc.Peer(&p))
		cancel()
		if err == nil {
			st.mu.Lock()
			if p.Addr != nil {
				st.byReplica[p.Addr.String()]++
			}
			st.mu.Unlock()
			return resp, nil
		}
		if status.Code(err) != codes.Unavailable || attempt == 5 || ctx.Err() != nil {
			return nil, err
		}
		st.mu.Lock()
		st.retries[reasonOf(err)]++
		st.mu.Unlock()
		select {
		case <-time.After(backoff/2 + rand.N(backoff/2)):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		backoff *= 2
	}
}

// watchLog checks every event of the resuming watcher against a mirror of
// the catalog and counts resumes by kind.
type watchLog struct {
	mu      sync.Mutex
	mirror  map[string]*toolsvcv1.Tool
	errs    []string
	events  map[catalogwatch.Kind]int
	resumes map[catalogwatch.Kind]int
}

func (l *watchLog) resumeCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.resumes {
		n += c
	}
	return n
}

func (l *watchLog) apply(ev catalogwatch.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events[ev.Kind]++
	if ev.Resumed {
		l.resumes[ev.Kind]++
	}
	switch ev.Kind {
	case catalogwatch.Snapshot, catalogwatch.Reset:
		l.mirror = map[string]*toolsvcv1.Tool{}
		for _, t := range ev.Tools {
			l.mirror[t.GetName()] = t
		}
	case catalogwatch.Changes:
		if len(ev.Upserted)+len(ev.Removed) == 0 {
			l.errs = append(l.errs, fmt.Sprintf("empty changes event at %s", ev.Revision))
		}
		for _, n := range ev.Removed {
			if _, ok := l.mirror[n]; !ok {
				l.errs = append(l.errs, fmt.Sprintf("changes at %s remove %s, which the catalog does not hold (repeat)", ev.Revision, n))
			}
			delete(l.mirror, n)
		}
		for _, t := range ev.Upserted {
			if old, ok := l.mirror[t.GetName()]; ok && proto.Equal(old, t) {
				l.errs = append(l.errs, fmt.Sprintf("changes at %s upsert %s unchanged (repeat)", ev.Revision, t.GetName()))
			}
			l.mirror[t.GetName()] = t
		}
	}
}

func (l *watchLog) names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.mirror))
	for n := range l.mirror {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// TestReplicasRollingRestart: three replicas front one stdio upstream (a
// child each) and one HTTP upstream (shared) whose tools change during the
// test. A client balances over the three with the documented service config
// and runs a steady stream of calls while a catalogwatch.Watcher keeps a
// watch open. Every replica is restarted (SIGTERM, start again on its
// address) twice over, and the HTTP upstream adds and removes tools between
// and during the restarts. Asserted: call success ≥ 99.9 % with the
// documented retry; after every change the watcher's catalog equals the
// upstreams' true catalog (every event consistent: no gap, no repeat); every
// resume while the upstreams are quiet is "synced", never "reset"; every
// replica reports the same revision once the upstreams are quiet; every
// drain stays within its bound.
//
// Serial: each replica comes back on its previous port, which a parallel
// test could take meanwhile; and the drains are bounded in time.
func TestReplicasRollingRestart(t *testing.T) {
	sc, err := os.ReadFile(lbServiceConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	_, rtURL := startRuntimeHTTP(t)
	c := cfg{RefreshInterval: "1h", Servers: servers{"local": goStdio(upstream{}), "rt": goHTTP(rtURL, upstream{})}}
	f := &fleet{t: t, config: c, procs: make([]*toolsvcProc, 3), addrs: make([]string, 3)}
	for i := range 3 {
		f.start(i)
	}

	// The ground truth: the HTTP upstream's own tool list, through a direct
	// MCP session, plus the stdio upstream's (fixed) tools.
	truthClient := mcp.NewClient(&mcp.Implementation{Name: "truth", Version: "0"}, nil)
	truth, err := truthClient.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: rtURL},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer truth.Close()
	initial, _ := listAll(t, ctx, f.procs[0].client, 1000)
	var localNames []string
	for _, tool := range initial {
		if strings.HasPrefix(tool.GetName(), "local__") {
			localNames = append(localNames, tool.GetName())
		}
	}
	trueNames := func() []string {
		res, err := truth.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("upstream tools/list: %v", err)
		}
		names := slices.Clone(localNames)
		for _, tool := range res.Tools {
			names = append(names, "rt__"+tool.Name)
		}
		sort.Strings(names)
		return names
	}
	changeUpstream := func(op, name string) {
		res, err := truth.CallTool(ctx, &mcp.CallToolParams{Name: op, Arguments: map[string]any{"name": name, "via": "session"}})
		if err != nil || res.IsError {
			t.Fatalf("upstream %s %s: %v %v", op, name, err, res)
		}
	}

	// The balanced client: a resolver over the three addresses (in
	// Kubernetes, DNS of the headless Service), the documented config.
	r := manual.NewBuilderWithScheme("fleet")
	var addrs []resolver.Address
	for _, a := range f.addrs {
		addrs = append(addrs, resolver.Address{Addr: a})
	}
	r.InitialState(resolver.State{Addresses: addrs})
	conn, err := grpc.NewClient(r.Scheme()+":///toolsvc", grpc.WithResolvers(r),
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultServiceConfig(string(sc)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := toolsvcv1.NewToolServiceClient(conn)

	// The watcher.
	wl := &watchLog{events: map[catalogwatch.Kind]int{}, resumes: map[catalogwatch.Kind]int{}}
	var quiet atomic.Bool // upstreams unchanged and every replica converged
	var noisyResumes atomic.Int32
	w := catalogwatch.New(client, catalogwatch.Options{
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
		OnEvent: func(ev catalogwatch.Event) {
			if ev.Resumed && !quiet.Load() {
				noisyResumes.Add(1)
			}
			if ev.Resumed && quiet.Load() && ev.Kind != catalogwatch.Synced {
				wl.mu.Lock()
				wl.errs = append(wl.errs, fmt.Sprintf("a resume while the upstreams were quiet got %v at %s, want synced", ev.Kind, ev.Revision))
				wl.mu.Unlock()
			}
			wl.apply(ev)
		},
	})
	watchCtx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan error, 1)
	go func() { watchDone <- w.Run(watchCtx) }()
	defer func() {
		stopWatch()
		<-watchDone
	}()

	// The load: four callers, alternating the stdio and HTTP upstreams.
	st := &callStats{retries: map[string]int{}, byReplica: map[string]int{}}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var load sync.WaitGroup
	for g := range 4 {
		load.Add(1)
		go func() {
			defer load.Done()
			for n := 0; loadCtx.Err() == nil; n++ {
				tool := []string{"local__echo", "rt__echo"}[n%2]
				text := fmt.Sprintf("g%d-%d", g, n)
				resp, err := callWithRetry(loadCtx, client, &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: fmt.Sprintf(`{"text": %q}`, text)}, st)
				if loadCtx.Err() != nil {
					return // stopping: this call does not count
				}
				st.mu.Lock()
				st.calls++
				switch {
				case err != nil:
					st.failed = append(st.failed, fmt.Errorf("%s: %w", tool, err))
				case resultText(resp) != text || resp.GetIsError():
					st.failed = append(st.failed, fmt.Errorf("%s(%q) answered %q is_error=%v", tool, text, resultText(resp), resp.GetIsError()))
				default:
					st.ok++
				}
				st.mu.Unlock()
			}
		}()
	}
	defer func() {
		stopLoad()
		load.Wait()
	}()

	// converge waits until the watcher holds the true catalog and every
	// running replica reports the watcher's revision with the same tools.
	agreements := 0
	converge := func(what string, running []int) {
		t.Helper()
		want := trueNames()
		eventually(t, 30*time.Second, what+": the watcher's catalog equals the upstreams'", func() bool {
			return slices.Equal(wl.names(), want) && slices.Equal(toolNames(w.Tools()), want)
		})
		rev := w.Revision()
		eventually(t, 30*time.Second, what+": every replica at the watcher's revision", func() bool {
			for _, i := range running {
				resp, err := f.procs[i].client.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: 1})
				if err != nil || resp.GetRevision() != rev {
					return false
				}
			}
			return true
		})
		local := w.Tools()
		for _, i := range running {
			tools, r := listAll(t, ctx, f.procs[i].client, 1000)
			if r != rev || len(tools) != len(local) {
				t.Fatalf("%s: replica %d has %d tools at %s, the watcher %d at %s", what, i, len(tools), r, len(local), rev)
			}
			for k := range tools {
				if !proto.Equal(tools[k], local[k]) {
					t.Fatalf("%s: replica %d's %s differs from the watcher's", what, i, tools[k].GetName())
				}
			}
		}
		agreements++
	}

	all := []int{0, 1, 2}
	converge("start", all)
	quiet.Store(true)
	added := 0
	// Let the load reach every replica before the first restart.
	eventually(t, 30*time.Second, "calls on every replica", func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return len(st.byReplica) == 3
	})

	for round := 1; round <= 2; round++ {
		for i := range 3 {
			// A change while all replicas run.
			quiet.Store(false)
			added++
			changeUpstream("add_tool", fmt.Sprintf("t%d", added))
			converge(fmt.Sprintf("round %d, before restarting %d", round, i), all)
			quiet.Store(true)

			// If the watch stream is on replica i, its resume happens while
			// the upstreams are quiet: wait for it before the next change,
			// so that the resume must answer synced (a resume racing the
			// change may rightly answer changes).
			watchedHere := metricValue(t, f.procs[i], "toolsvc_watch_streams") > 0
			resumedBefore := wl.resumeCount()
			f.stop(i)
			if watchedHere {
				eventually(t, 30*time.Second, fmt.Sprintf("round %d: the watcher resumes after replica %d stops", round, i), func() bool {
					return wl.resumeCount() > resumedBefore
				})
			}
			// A change while replica i is down: the survivors take it; the
			// restarted replica starts with it.
			quiet.Store(false)
			if i%2 == 0 {
				changeUpstream("remove_tool", fmt.Sprintf("t%d", added))
			} else {
				changeUpstream("add_tool", fmt.Sprintf("t%db", added))
			}
			survivors := slices.DeleteFunc(slices.Clone(all), func(j int) bool { return j == i })
			converge(fmt.Sprintf("round %d, replica %d down", round, i), survivors)
			quiet.Store(true)
			f.start(i)
			converge(fmt.Sprintf("round %d, replica %d back", round, i), all)
		}
	}
	// Keep the load running on the restored fleet for a moment, then stop.
	eventually(t, 30*time.Second, "calls on every restarted replica", func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.calls >= 1000
	})
	stopLoad()
	load.Wait()

	st.mu.Lock()
	defer st.mu.Unlock()
	wl.mu.Lock()
	defer wl.mu.Unlock()
	rate := float64(st.ok) / float64(st.calls)
	t.Logf("calls: %d, ok %d, failed %d, success %.4f%%; retried attempts by reason %v; served by replica address %v",
		st.calls, st.ok, len(st.failed), 100*rate, st.retries, st.byReplica)
	t.Logf("watch: %d streams, events %v, resumes %v (resumes while upstreams changed: %d); revision agreement checks: %d",
		w.Streams(), kindCounts(wl.events), kindCounts(wl.resumes), noisyResumes.Load(), agreements)
	t.Logf("drains (SIGTERM to exit, bound %s): %v", fleetShutdownTimeout, f.drains)
	if rate < 0.999 {
		t.Errorf("success rate %.4f%% < 99.9%%; failures: %v", 100*rate, st.failed)
	} else if len(st.failed) > 0 {
		t.Logf("failures (within the budget): %v", st.failed)
	}
	for _, e := range wl.errs {
		t.Error(e)
	}
	if wl.resumes[catalogwatch.Reset] > 0 {
		t.Errorf("%d resumes got a reset", wl.resumes[catalogwatch.Reset])
	}
	// Every replica was restarted twice and the watch always lives on one
	// of them: each round ends its stream at least once.
	if n := wl.resumes[catalogwatch.Synced]; n < 2 {
		t.Errorf("%d resumes got synced, want at least 2 (one per round)", n)
	}
	if len(f.drains) != 6 {
		t.Errorf("%d drains, want 6", len(f.drains))
	}
}

func toolNames(tools []*toolsvcv1.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.GetName()
	}
	return out
}

func kindCounts(m map[catalogwatch.Kind]int) string {
	var parts []string
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%v=%d", k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// metricLines are a replica's /metrics sample lines.
func metricLines(t *testing.T, p *toolsvcProc) []string {
	t.Helper()
	resp, err := http.Get("http://" + p.adminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(body), "\n")
}

// sumSamples is the sum of the values of the sample lines keep accepts.
func sumSamples(t *testing.T, lines []string, keep func(string) bool) float64 {
	t.Helper()
	sum := 0.0
	for _, line := range lines {
		if !keep(line) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// metricValue is the sum of a replica's samples of one metric.
func metricValue(t *testing.T, p *toolsvcProc, name string) float64 {
	t.Helper()
	return sumSamples(t, metricLines(t, p), func(line string) bool {
		return strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{")
	})
}

// echoCallsServed is a replica's count of successful local__echo calls, from
// its /metrics (toolsvc_calls_total).
func echoCallsServed(t *testing.T, p *toolsvcProc) int {
	t.Helper()
	return int(sumSamples(t, metricLines(t, p), func(line string) bool {
		return strings.HasPrefix(line, "toolsvc_calls_total{") && strings.Contains(line, `tool="local__echo"`) && strings.Contains(line, `outcome="ok"`)
	}))
}

// TestLoadBalancedExampleClients runs the load-balancing examples (Go,
// Python, Node; all read examples/lb/service_config.json) against two
// replicas: every call succeeds and both replicas serve a share of them.
func TestLoadBalancedExampleClients(t *testing.T) {
	t.Parallel()
	c := cfg{Servers: servers{"local": goStdio(upstream{})}}
	reps := []*toolsvcProc{startToolsvc(t, c), startToolsvc(t, c)}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	list := reps[0].addr + "," + reps[1].addr
	const calls = 40
	clients := []struct {
		lang  string
		setup func(t *testing.T) (cmd []string, env []string)
	}{
		{"go", func(t *testing.T) ([]string, []string) {
			exe := filepath.Join(t.TempDir(), "lb")
			build := exec.Command("go", "build", "-o", exe, "./examples/lb")
			build.Dir = root
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("building examples/lb: %v\n%s", err, out)
			}
			return []string{exe, list}, nil
		}},
		{"python", func(t *testing.T) ([]string, []string) {
			py, env := pythonClient(t, root)
			return []string{py, filepath.Join(root, "examples/python/balanced.py"), "ipv4:" + list}, env
		}},
		{"node", func(t *testing.T) ([]string, []string) {
			return []string{"node", filepath.Join(root, "examples/node/balanced.mjs"), "ipv4:" + list}, nil
		}},
	}
	for _, c := range clients {
		t.Run(c.lang, func(t *testing.T) {
			argv, env := c.setup(t)
			before := []int{echoCallsServed(t, reps[0]), echoCallsServed(t, reps[1])}
			argv = append(argv, strconv.Itoa(calls), "local__echo", `{"text": "hi"}`)
			ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", c.lang, err, out)
			}
			t.Logf("%s output:\n%s", c.lang, out)
			if !strings.Contains(string(out), fmt.Sprintf("calls %d ok\n", calls)) {
				t.Fatalf("%s did not finish its calls", c.lang)
			}
			served := []int{echoCallsServed(t, reps[0]) - before[0], echoCallsServed(t, reps[1]) - before[1]}
			t.Logf("%s: replicas served %v", c.lang, served)
			if served[0]+served[1] != calls {
				t.Errorf("%s: replicas served %v calls, want %d in all", c.lang, served, calls)
			}
			// round_robin alternates over READY subchannels: each replica
			// gets a real share (not one pinned connection).
			if served[0] < calls/4 || served[1] < calls/4 {
				t.Errorf("%s: replicas served %v calls, want each at least a quarter", c.lang, served)
			}
		})
	}
}
