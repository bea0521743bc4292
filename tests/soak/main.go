// Command soak is toolsvc's chaos soak: three real toolsvc replicas, twelve
// real upstream MCP servers (go-sdk, TypeScript and Python SDKs over stdio,
// streamable HTTP with and without sessions, and legacy SSE), a hostile
// one (tests/hostileserver -mode soak) and two that run tasks (tasks.go),
// mixed load with hostile input and hostile interactive calls (parked.go),
// three principals, one of them flooding another's replica
// (principals.go), 100+ resuming catalog watchers, and a
// random fault every few seconds (one of them 100 watched tasks across a
// rolling restart of the replicas),
// with invariants checked at every quiet period. It prints one JSON line of
// results, writes a PNG plot, stops every process it started, and exits
// non-zero when an invariant fails.
//
//	go run ./tests/soak -duration 30m -plot docs/soak.png
//
// See docs/soak.md for what is checked and the faults' allowed failures.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
)

type soak struct {
	run           string // the SOAK_RUN marker
	root          string // repository root
	dir           string // work directory: binaries, configs, logs
	toolsvc       string
	testserver    string
	hostileserver string
	start         time.Time
	duration      time.Duration
	verbose       bool
	race          bool // toolsvc built with -race

	rngMu sync.Mutex
	rng   *rand.Rand

	upstreams []*upstream       // the twelve matrix upstreams
	hostile   *upstream         // the hostile stdio upstream (hostile.go)
	taskUps   []*upstream       // the two task upstreams (tasks.go)
	stateKey  string            // the replicas' shared --state-key-file
	tokens    map[string]string // bearer token by principal (principals.go)
	runCtx    context.Context
	replicas  []*replica
	cfgMu     sync.Mutex
	extras    map[string]*upstream // servers added by config reloads
	extraSeq  int

	watchers     []*watcherState
	watcherConns map[int][]*grpc.ClientConn

	// gates: load and faults hold them shared; a quiet period takes them.
	loadGate  sync.RWMutex
	faultGate sync.RWMutex

	calls       atomic.Int64
	callsFailed atomic.Int64
	cancelled   atomic.Int64
	progress    atomic.Int64
	listings    atomic.Int64
	watchEvents atomic.Int64
	repeated    atomic.Int64
	hung        atomic.Int64
	resumes     atomic.Int64

	abandonedCalls atomic.Int64 // interactive calls left unanswered (interactive.go)
	ownLogLines    atomic.Int64 // log lines the principal-flood's streams got of their own calls

	tasksStarted   atomic.Int64 // tasks the tasks-rolling-restart fault created (tasks.go)
	tasksCompleted atomic.Int64 // of them, watched to their exact result
	taskResumes    atomic.Int64 // WatchTask calls again after a broken watch

	mu              sync.Mutex
	faults          []*fault
	failures        []callFailure
	hungDetail      []string
	leaked          int
	leakDetail      []string
	lost            int
	lostDetail      []string
	repDetail       []string
	disagree        int
	disDetail       []string
	unsettled       int
	unsDetail       []string
	exitDetail      []string
	maxSettle       time.Duration
	quietPeriods    int
	hostileChecks   map[string]int // hostile load operations by case
	abandonFaults   int            // abandon-input faults started
	overdue         []string       // abandoned calls whose upstream call outlived its bound
	maxInputLate    time.Duration  // the latest an abandoned call\'s upstream call was cancelled after its bound
	waitingLeft     int            // checks that found toolsvc_interactive_calls_waiting above 0
	waitingDetail   []string
	notDeclined     []string // ask_flood requests not answered with the decline (parked.go)
	expiryChecks    int      // expired parked requests whose decline was checked (interactive.go)
	quietBound      []string // quiet periods past a replica's goroutine or heap bound (quiet.go)
	floodViolations []string // the principal-flood's violations (principals.go)
	flooderRefused  int      // flooder's calls refused TOO_MANY_WAITING
	taskFaults      int      // tasks-rolling-restart faults started
	tasksLost       []string // tasks that did not end with their exact result
	timeline        []sample
	leakChecks      sync.WaitGroup
}

func (s *soak) intn(n int) int {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.IntN(n)
}

func (s *soak) durn(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(s.intn(int(hi-lo)+1))
}

func (s *soak) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%7.1fs "+format+"\n", append([]any{time.Since(s.start).Seconds()}, args...)...)
}

func (s *soak) commonServerKeys() map[string]any {
	return map[string]any{
		"backoff": map[string]string{"base": "100ms", "max": "2s"},
		"breaker": map[string]any{"failures": 3, "cooldown": "1s", "maxCooldown": "5s"},
	}
}

// callTimeout is toolsvc's callTimeout in the soak's config: the deadline
// of calls that set none.
const callTimeout = 5 * time.Second

// writeConfigs writes every replica's config file (the same content).
func (s *soak) writeConfigs() error {
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	servers := map[string]any{}
	for _, u := range s.base() {
		servers[u.name] = u.serverConfig()
	}
	for _, u := range s.extras {
		servers[u.name] = u.serverConfig()
	}
	cfg := map[string]any{
		"callTimeout":     callTimeout.String(),
		"connectTimeout":  "5s",
		"startupTimeout":  "30s",
		"pingInterval":    "1s",
		"pingTimeout":     "1s",
		"refreshInterval": "10s",
		"mcpServers":      servers,
		"auth":            s.authConfig(),
	}
	for _, r := range s.replicas {
		if err := writeFileAtomic(r.configPath, cfg); err != nil {
			return err
		}
	}
	return nil
}

// checkGone checks, 10 s from now, that no live process carries the
// marker, and counts any that do as leaked.
func (s *soak) checkGone(what, marker string) {
	s.leakChecks.Add(1)
	go func() {
		defer s.leakChecks.Done()
		deadline := time.Now().Add(10 * time.Second)
		var pids []int
		for {
			pids = procsWithEnv("SOAK_RUN="+s.run, marker)
			if len(pids) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if len(pids) == 0 {
			return
		}
		s.mu.Lock()
		s.leaked += len(pids)
		for _, pid := range pids {
			s.leakDetail = append(s.leakDetail, fmt.Sprintf("%s: pid %d (%s) alive 10s later", what, pid, cmdline(pid)))
			_ = syscall.Kill(pid, syscall.SIGCONT)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		s.mu.Unlock()
	}()
}

func (s *soak) noteReplicaExit(d string) {
	s.mu.Lock()
	s.exitDetail = append(s.exitDetail, d)
	s.mu.Unlock()
	s.logf("UNCLEAN EXIT %s", d)
}

func findRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	mod := string(out)
	for len(mod) > 0 && (mod[len(mod)-1] == '\n' || mod[len(mod)-1] == '\r') {
		mod = mod[:len(mod)-1]
	}
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the toolsvc module")
	}
	return filepath.Dir(mod), nil
}

func main() {
	os.Exit(run())
}

func run() int {
	duration := flag.Duration("duration", 2*time.Minute, "how long to run the load and faults")
	race := flag.Bool("race", false, "build toolsvc with -race (a data race fails the soak)")
	nWatchers := flag.Int("watchers", 120, "catalog watchers (spread over the replicas)")
	quietEvery := flag.Duration("quiet-every", 0, "time between quiet periods (default: duration/12, at least 20s)")
	plotPath := flag.String("plot", "", "write the PNG plot here (default: soak.png in the work directory)")
	workDir := flag.String("dir", "", "work directory for binaries, configs and logs (default: a new temp directory, kept)")
	seed := flag.Uint64("seed", 0, "random seed (0: from the clock)")
	verbose := flag.Bool("v", false, "log every fault and quiet period")
	flag.Parse()

	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	s := &soak{
		run:           fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano()),
		duration:      *duration,
		rng:           rand.New(rand.NewPCG(*seed, *seed^0x9e3779b97f4a7c15)),
		extras:        map[string]*upstream{},
		hostileChecks: map[string]int{},
		verbose:       *verbose,
		start:         time.Now(),
	}
	var err error
	if s.root, err = findRoot(); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	if err := checkPeers(s.root); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	s.dir = *workDir
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "toolsvc-soak-"); err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			return 2
		}
	} else if err := os.MkdirAll(s.dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	if *plotPath == "" {
		*plotPath = filepath.Join(s.dir, "soak.png")
	}
	s.logf("seed %d, work directory %s", *seed, s.dir)

	// Stop on SIGINT/SIGTERM too: everything started is torn down below.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	res, err := s.soak(ctx, *race, *nWatchers, *quietEvery, *plotPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	s.writeFailures()
	line, _ := json.Marshal(res)
	fmt.Println(string(line))
	if fails := res.failed(); len(fails) > 0 {
		fmt.Fprintf(os.Stderr, "soak FAILED: %v (logs in %s)\n", fails, s.dir)
		s.printDetails()
		return 1
	}
	fmt.Fprintf(os.Stderr, "soak passed; plot %s\n", *plotPath)
	return 0
}

// writeFailures writes every failed operation, explained or not, every
// lost task and the faults to failures.txt in the work directory.
func (s *soak) writeFailures() {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.Create(filepath.Join(s.dir, "failures.txt"))
	if err != nil {
		return
	}
	defer f.Close()
	for _, x := range s.failures {
		fmt.Fprintf(f, "explained=%v %s\n", x.explained, x)
	}
	for _, l := range s.tasksLost {
		fmt.Fprintf(f, "lost %s\n", l)
	}
	for _, ft := range s.faults {
		fmt.Fprintf(f, "fault %s server=%q replica=%d %.1fs-%.1fs\n", ft.kind, ft.server, ft.replica, ft.start.Sub(s.start).Seconds(), ft.end.Sub(s.start).Seconds())
	}
}

func (s *soak) printDetails() {
	s.mu.Lock()
	defer s.mu.Unlock()
	show := func(what string, d []string) {
		for i, l := range d {
			if i == 20 {
				fmt.Fprintf(os.Stderr, "  ... %d more\n", len(d)-20)
				break
			}
			fmt.Fprintf(os.Stderr, "%s: %s\n", what, l)
		}
	}
	var unexplained []string
	for _, f := range s.failures {
		if !f.explained {
			unexplained = append(unexplained, f.String())
		}
	}
	show("unexplained", unexplained)
	show("hung", s.hungDetail)
	show("leaked", s.leakDetail)
	show("lost", s.lostDetail)
	show("repeated", s.repDetail)
	show("disagreement", s.disDetail)
	show("unsettled", s.unsDetail)
	show("replica exit", s.exitDetail)
	show("overdue", s.overdue)
	show("waiting", s.waitingDetail)
	show("not declined", s.notDeclined)
	show("quiet bound", s.quietBound)
	show("principal flood", s.floodViolations)
	show("task lost", s.tasksLost)
}

// base is every upstream of the base configuration: the twelve, the
// hostile one and the two task upstreams.
func (s *soak) base() []*upstream {
	return append(append(slices.Clip(s.upstreams), s.hostile), s.taskUps...)
}

// build compiles toolsvc and the go-sdk test and hostile servers into the
// work directory.
func (s *soak) build(race bool) error {
	s.toolsvc = filepath.Join(s.dir, "toolsvc")
	s.testserver = filepath.Join(s.dir, "testserver")
	s.hostileserver = filepath.Join(s.dir, "hostileserver")
	for _, b := range []struct {
		out, pkg string
		race     bool
	}{{s.toolsvc, "./cmd/toolsvc", race}, {s.testserver, "./tests/testserver", false}, {s.hostileserver, "./tests/hostileserver", false}} {
		args := []string{"build", "-o", b.out}
		if b.race {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, b.pkg)...)
		cmd.Dir = s.root
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building %s: %w", b.pkg, err)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
