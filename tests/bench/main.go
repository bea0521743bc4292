// Command bench measures toolsvc side by side with direct MCP calls and with
// peer gateways, and prints a table and, last, one line of JSON. Every
// figure is a ratio of two things measured in the same run, interleaved, on
// the same machine. See README.md.
//
//	go run ./tests/bench            # the full run (a few minutes)
//	go run ./tests/bench -h         # flags
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	calls      = flag.Int("calls", 2000, "sequential calls per path per round")
	rounds     = flag.Int("rounds", 5, "rounds; each round measures every path once, in turn (final figures: at least 5)")
	warmup     = flag.Int("warmup", 300, "calls per path before measuring")
	callers    = flag.Int("callers", 32, "concurrent callers in the throughput phase")
	concCalls  = flag.Int("conc-calls", 8000, "calls per path per round in the throughput phase")
	peers      = flag.Bool("peers", true, "measure the peer gateways: npm (npm ci in tests/bench/node on first use) and, with -py-peers, Python (scripts/pyenv.sh bench/...)")
	catUps     = flag.Int("catalog-upstreams", 20, "upstreams in the catalog phase")
	catTools   = flag.Int("catalog-tools", 1000, "generated tools per upstream in the catalog phase")
	listReps   = flag.Int("list-reps", 7, "full listings per side in the catalog phase")
	storm      = flag.Int("storm", 10000, "list_changed notifications in the storm")
	stormCalls = flag.Int("storm-baseline-calls", 3000, "calls measured before the storm")
	stormSink  = flag.Bool("storm-sink", false, "also run the storm with its notifications going to a trivial sink in the bench instead of toolsvc (storm_sink_* figures: the floor set by the storm server's own CPU)")
	watchMode  = flag.String("watch", "auto", "watch fan-out (item 3): auto runs ./tests/bench/watch if it exists, off skips")
	watchArgs  = flag.String("watch-args", "", "extra arguments for ./tests/bench/watch")
	// Issue 30: the same benchmark over replicas.
	watchReplicas     = flag.Bool("watch-replicas", true, "with -watch, also run ./tests/bench/watch with -watch-replicas-args (watch_p99_ms_100k_3r)")
	watchReplicasArgs = flag.String("watch-replicas-args", "-watchers 100000 -conns 300 -replicas 3 -client h2 -storm-for 0",
		"arguments for the replicas run of ./tests/bench/watch")
	profileDir  = flag.String("profile", "", "write toolsvc CPU and allocation profiles of the call phase into this directory")
	profileSecs = flag.Int("profile-seconds", 20, "length of the profiled call load")
	toolsvcBin  = flag.String("toolsvc", "", "toolsvc binary (default: go build ./cmd/toolsvc)")
	toolsvcEnv  = flag.String("toolsvc-env", "", "extra environment for toolsvc, space-separated K=V (e.g. GOGC=400)")
	skipPhases  = flag.String("skip", "", "comma-separated phases to leave out: calls (the peers too), peercatalog, continuation, python, node, catalog, storm, fleet, front, tasks, peruser, grpcup (their figures are marked not measured)")
	upstreamBin = flag.String("upstream", "", "upstream binary (default: go build ./tests/bench/upstream)")
	directSDK   = flag.String("direct-sdk", "patched", "the go-sdk the direct client and the upstream are built with: patched (this module's, as toolsvc's) or stock (v1.8.0 as released, what the SDK's users have: the bench rebuilds itself with it and runs that build)")
)

// notMeasured is the JSON value of a figure this run did not measure; the
// reason is under "not_measured".
const notMeasuredMark = "not measured in this run"

func main() {
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	if up := os.Getenv(floorProxyEnv); up != "" { // the front phase's floor proxy (frontfloor.go)
		log.SetPrefix("floor proxy: ")
		if err := floorProxyMain(up); err != nil {
			log.Fatal(err)
		}
		return
	}
	flag.Parse()
	log.SetPrefix("bench: ")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	stopAll()
	if err != nil {
		log.Fatal(err)
	}
}

// env is what every phase needs.
type env struct {
	root       string // module root
	tmp        string
	toolsvc    string
	upstream   string
	testserver string // tests/testserver, built by the continuation phase
	nodeDir    string // tests/node (storm server)
	peersDir   string // tests/bench/node
}

func run(ctx context.Context) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	switch {
	case *directSDK == "stock" && os.Getenv(stockEnv) == "":
		return runStock(ctx, root)
	case *directSDK != "stock" && *directSDK != "patched":
		return fmt.Errorf("-direct-sdk %q: want patched or stock", *directSDK)
	}
	tmp, err := os.MkdirTemp("", "toolsvc-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	e := &env{root: root, tmp: tmp, toolsvc: *toolsvcBin, upstream: *upstreamBin,
		nodeDir: filepath.Join(root, "tests", "node"), peersDir: filepath.Join(root, "tests", "bench", "node")}
	var tags []string
	if *profileDir != "" || *fleetProfile != "" {
		tags = []string{"-tags", "benchprofile"}
	}
	// Both builds at once: linking dominates and is single-threaded.
	builds := make(chan error, 2)
	if e.toolsvc == "" {
		e.toolsvc = filepath.Join(tmp, "toolsvc")
		go func() { builds <- goBuild(root, e.toolsvc, "./cmd/toolsvc", tags...) }()
	} else {
		builds <- nil
	}
	if e.upstream == "" {
		e.upstream = filepath.Join(tmp, "upstream")
		go func() { builds <- goBuild(root, e.upstream, "./tests/bench/upstream") }()
	} else {
		builds <- nil
	}
	for range 2 {
		if err := <-builds; err != nil {
			return err
		}
	}

	r := newResults()
	r.set("gomaxprocs", runtime.GOMAXPROCS(0))
	r.set("num_cpu", runtime.NumCPU())
	// Final figures need a quiet machine: the load average when the run
	// began is part of the result (null where /proc/loadavg is missing).
	if l, ok := loadAverage(); ok {
		r.set("load_avg_1m_at_start", l)
		r.row("load average (1 min) at start", fmt.Sprint(l), "< 1 for final figures")
		if l >= 1 {
			log.Printf("load average %.2f at start: other work is running; do not take final figures from this run", l)
		}
	} else {
		r.skip("load_avg_1m_at_start", "/proc/loadavg not readable")
	}
	r.set("rounds", *rounds)
	r.set("direct_sdk", *directSDK)
	r.row("go-sdk of the direct client and the upstream", *directSDK, "")

	skipped := map[string]bool{}
	for _, p := range strings.Split(*skipPhases, ",") {
		skipped[strings.TrimSpace(p)] = true
	}
	if skipped["calls"] {
		for _, k := range []string{"call_p50_ratio", "call_p99_ratio", "throughput_ratio", "peer_added_latency_ratio", "floor_call_p50_ratio_stdio", "floor_call_p50_ratio_http"} {
			r.skip(k, "-skip calls")
		}
		skipPeerFigures(r, "-skip calls")
	} else {
		specs, err := benchCalls(ctx, e, r)
		if err != nil {
			return fmt.Errorf("call overhead: %w", err)
		}
		if !*peers {
			r.skip("peer_added_latency_ratio", "-peers=false")
			skipPeerFigures(r, "-peers=false")
		} else if skipped["peercatalog"] {
			for _, sp := range specs {
				if sp.unavailable == "" {
					r.skip(sp.key+"_catalog_max_tools", "-skip peercatalog")
					r.skip(sp.key+"_list_ratio", "-skip peercatalog")
				}
			}
		} else if err := benchPeerCatalog(ctx, e, r, specs); err != nil {
			return fmt.Errorf("peer catalogs: %w", err)
		}
	}
	if skipped["continuation"] {
		r.skipMany([]string{"continuation_ratio_parked", "continuation_ratio_relayed"}, "continuation_ratio", "-skip continuation")
	} else if err := benchContinuation(ctx, e, r); err != nil {
		return fmt.Errorf("continued calls: %w", err)
	}
	if err := pythonPhase(ctx, e, r, skipped["python"]); err != nil {
		return err
	}
	if skipped["catalog"] {
		r.skip("list_ratio", "-skip catalog")
	} else if err := benchCatalog(ctx, e, r); err != nil {
		return fmt.Errorf("catalog scale: %w", err)
	}
	if skipped["storm"] {
		r.skip("storm_lists", "-skip storm")
		r.skip("storm_call_p99_ratio", "-skip storm")
	} else if err := benchStorm(ctx, e, r); err != nil {
		return fmt.Errorf("refresh storm: %w", err)
	}
	if *stormSink && !skipped["storm"] {
		if err := benchStormSink(ctx, e, r); err != nil {
			return fmt.Errorf("storm into a sink: %w", err)
		}
	}
	if skipped["fleet"] {
		r.skipMany(fleetFigures, "fleet", "-skip fleet")
	} else if err := benchFleet(ctx, e, r); err != nil {
		return fmt.Errorf("fleet of HTTP upstreams: %w", err)
	}
	if err := benchNodeAgent(ctx, e, r, skipped["node"]); err != nil {
		return fmt.Errorf("node agent: %w", err)
	}
	if skipped["front"] {
		r.skipMany([]string{"front_peer_added_ratio", "front_2026_peer_added_ratio", "front_no_caps_peer_added_ratio",
			"floor_proxy_peer_added_ratio", "floor_proxy_json_peer_added_ratio", "floor_proxy_2026_peer_added_ratio"}, "front_peer_added_ratio", "-skip front")
	} else if err := benchFront(ctx, e, r); err != nil {
		return fmt.Errorf("MCP front door: %w", err)
	}
	if skipped["tasks"] {
		r.skipMany([]string{"task_watch_terminal_p99_ms_2025", "task_watch_terminal_p99_ms_2026"}, "task_watch_terminal_p99_ms", "-skip tasks")
	} else if err := benchTasks(ctx, e, r); err != nil {
		return fmt.Errorf("task watch: %w", err)
	}
	if skipped["peruser"] {
		r.skipMany([]string{"peruser_session_create_p50_ms", "peruser_idle_session_kib"}, "per-user sessions", "-skip peruser")
	} else if err := benchPerUser(ctx, e, r); err != nil {
		return fmt.Errorf("per-user sessions: %w", err)
	}
	if skipped["grpcup"] {
		r.skip("grpc_upstream_call_p50_ratio", "-skip grpcup")
		r.skip("grpc_upstream_floor_call_p50_ratio", "-skip grpcup")
	} else if err := benchGRPCUpstream(ctx, e, r); err != nil {
		return fmt.Errorf("grpc upstream: %w", err)
	}
	if err := benchWatch(ctx, e, r); err != nil {
		return fmt.Errorf("watch fan-out: %w", err)
	}
	if *profileDir != "" {
		if err := profileCalls(ctx, e); err != nil {
			return fmt.Errorf("profile: %w", err)
		}
	}
	r.print()
	return nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run from inside the toolsvc module")
	}
	return filepath.Dir(mod), nil
}

func goBuild(root, out, pkg string, extra ...string) error {
	log.Printf("go build %s", pkg)
	args := append([]string{"build"}, extra...)
	cmd := exec.Command("go", append(args, "-o", out, pkg)...)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", pkg, err)
	}
	return nil
}

// results holds the figures in the order they were set.
type results struct {
	keys    []string
	vals    map[string]any
	skipped map[string]string
	rows    [][3]string // label, value, goal
}

func newResults() *results {
	return &results{vals: map[string]any{}, skipped: map[string]string{}}
}

func (r *results) set(k string, v any) {
	if _, ok := r.vals[k]; !ok {
		r.keys = append(r.keys, k)
	}
	r.vals[k] = v
}

// skip records a figure as not measured, with the reason.
func (r *results) skip(k, why string) {
	r.set(k, nil)
	r.skipped[k] = why
	r.row(k, notMeasuredMark+" ("+why+")", "")
}

// skipMany records figures as not measured, for one reason, in one row.
func (r *results) skipMany(keys []string, label, why string) {
	for _, k := range keys {
		r.set(k, nil)
		r.skipped[k] = why
	}
	r.row(label, notMeasuredMark+" ("+why+")", "")
}

func (r *results) row(label, value, goal string) {
	r.rows = append(r.rows, [3]string{label, value, goal})
}

func (r *results) print() {
	w := 0
	for _, row := range r.rows {
		w = max(w, len(row[0]))
	}
	fmt.Println()
	fmt.Printf("%-*s  %-28s  %s\n", w, "figure", "value", "goal")
	fmt.Printf("%s\n", strings.Repeat("-", w+44))
	for _, row := range r.rows {
		fmt.Printf("%-*s  %-28s  %s\n", w, row[0], row[1], row[2])
	}
	out := map[string]any{}
	for _, k := range r.keys {
		out[k] = r.vals[k]
	}
	if len(r.skipped) > 0 {
		out["not_measured"] = r.skipped
	}
	b, err := json.Marshal(out)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(b))
}

// Percentiles and rounding.

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

func ms(d time.Duration) float64 { return round3(float64(d) / 1e6) }

func us(d time.Duration) float64 { return round3(float64(d) / 1e3) }

func round3(f float64) float64 {
	const k = 1000
	if f < 0 {
		return -float64(int64(-f*k+0.5)) / k
	}
	return float64(int64(f*k+0.5)) / k
}

// loadAverage is the 1-minute load average.
func loadAverage() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}

// setSpread records a ratio's spread over rounds as key_spread: [min, max]
// of the per-round values, and returns the text "min–max".
func (r *results) setSpread(key string, perRound []float64) string {
	if len(perRound) == 0 {
		return ""
	}
	lo, hi := round3(slices.Min(perRound)), round3(slices.Max(perRound))
	r.set(key+"_spread", []float64{lo, hi})
	return fmt.Sprintf("%v–%v", lo, hi)
}

func median(f []float64) float64 {
	s := slices.Clone(f)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
