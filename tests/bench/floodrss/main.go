// Command floodrss measures toolsvc's peak memory while a hostile upstream
// floods one call with requests for input: the go-sdk
// test server (tests/testserver -mode http -interactive, 2025-11-25 over
// streamable HTTP) answers one call of ask_flood by asking -count
// elicitations of -bytes bytes at once, mid-call, as
// TestParkedFloodIsBounded does. Run from the module root:
//
//	go run ./tests/bench/floodrss [-rounds 3] [-count 1500] [-bytes 200000]
//	                              [-toolsvc BIN] [-testserver BIN] [-window 2m]
//
// Without -toolsvc it builds ./cmd/toolsvc (no -race); without
// -testserver, ./tests/testserver. To measure another commit, build its
// toolsvc (git worktree add /tmp/old COMMIT; cd /tmp/old && go build -o
// /tmp/toolsvc-old ./cmd/toolsvc) and pass -toolsvc /tmp/toolsvc-old: the
// upstream and the command stay the same.
//
// Each round starts a fresh upstream and a fresh toolsvc (serve, default
// bounds, no health probes, as the test), calls a__ask_flood once over
// gRPC offering every kind of input, and watches until the upstream
// records every request answered (flood_record) or -window passes. Until
// then it samples toolsvc's goroutines (go_goroutines on its admin
// /metrics) every 100 ms; then it reads VmHWM from /proc/PID/status (the
// kernel's peak resident set, which no sampling misses). It prints one
// line per round, with the load average (/proc/loadavg) at its start, and
// last one JSON line. It is not part of go test.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

func main() {
	rounds := flag.Int("rounds", 3, "rounds, each with a fresh upstream and toolsvc")
	count := flag.Int("count", 1500, "elicitations the upstream asks in the one call")
	size := flag.Int("bytes", 200000, "bytes of each elicitation's message")
	toolsvc := flag.String("toolsvc", "", "toolsvc binary (default: build ./cmd/toolsvc)")
	testserver := flag.String("testserver", "", "tests/testserver binary (default: build ./tests/testserver)")
	window := flag.Duration("window", 2*time.Minute, "how long a round waits for every request to be answered")
	flag.Parse()
	if err := run(*rounds, *count, *size, *toolsvc, *testserver, *window); err != nil {
		fmt.Fprintln(os.Stderr, "floodrss:", err)
		os.Exit(1)
	}
}

type round struct {
	Round         int     `json:"round"`
	LoadAvg       string  `json:"loadavg"`
	Outcome       string  `json:"outcome"`
	PeakRSSMiB    float64 `json:"peak_rss_mib"`
	RSSBeforeMiB  float64 `json:"rss_before_mib"`
	Goroutines0   int     `json:"goroutines_before"`
	GoroutinesMax int     `json:"goroutines_max"`
	GoroutinesEnd int     `json:"goroutines_end"`
	Answered      bool    `json:"all_answered"`
	Seconds       float64 `json:"seconds"`
}

func run(rounds, count, size int, toolsvc, testserver string, window time.Duration) error {
	dir, err := os.MkdirTemp("", "floodrss")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if toolsvc == "" {
		toolsvc = filepath.Join(dir, "toolsvc")
		if err := build(toolsvc, "./cmd/toolsvc"); err != nil {
			return err
		}
	}
	if testserver == "" {
		testserver = filepath.Join(dir, "testserver")
		if err := build(testserver, "./tests/testserver"); err != nil {
			return err
		}
	}
	var out []round
	fmt.Printf("toolsvc %s; ask_flood count=%d bytes=%d\n", toolsvc, count, size)
	fmt.Printf("%-5s %-16s %-26s %9s %9s %7s %7s %7s %8s %6s\n", "round", "loadavg", "outcome", "peak MiB", "idle MiB", "gor0", "gorMax", "gorEnd", "answered", "s")
	for i := 1; i <= rounds; i++ {
		r, err := oneRound(i, count, size, toolsvc, testserver, filepath.Join(dir, strconv.Itoa(i)), window)
		if err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
		fmt.Printf("%-5d %-16s %-26s %9.1f %9.1f %7d %7d %7d %8v %6.1f\n", r.Round, r.LoadAvg, r.Outcome, r.PeakRSSMiB, r.RSSBeforeMiB,
			r.Goroutines0, r.GoroutinesMax, r.GoroutinesEnd, r.Answered, r.Seconds)
		out = append(out, r)
	}
	b, _ := json.Marshal(map[string]any{"toolsvc": toolsvc, "count": count, "bytes": size, "rounds": out})
	fmt.Println(string(b))
	return nil
}

func build(out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", pkg, err)
	}
	return nil
}

func oneRound(n, count, size int, toolsvc, testserver, dir string, window time.Duration) (round, error) {
	r := round{Round: n, LoadAvg: loadAvg()}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return r, err
	}
	up, err := start(testserver, "-mode", "http", "-interactive")
	if err != nil {
		return r, err
	}
	defer up.stop()
	line, err := up.waitLine(regexp.MustCompile(`^URL (\S+)`), 30*time.Second)
	if err != nil {
		return r, fmt.Errorf("upstream: %w", err)
	}
	url := strings.Fields(line)[1]
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"a": map[string]any{"url": url, "pingInterval": "1h"}}})
	cfgPath, addrPath := filepath.Join(dir, "config.json"), filepath.Join(dir, "addrs.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		return r, err
	}
	ts, err := start(toolsvc, "serve", "--config", cfgPath, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--addr-file", addrPath, "--log-level", "warn")
	if err != nil {
		return r, err
	}
	defer ts.stop()
	var addrs struct{ GRPC, Admin string }
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(addrPath); err == nil && json.Unmarshal(b, &addrs) == nil && addrs.GRPC != "" {
			break
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("toolsvc wrote no addr file; output:\n%s", ts.output())
		}
		time.Sleep(10 * time.Millisecond)
	}
	conn, err := grpc.NewClient(addrs.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return r, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), window+time.Minute)
	defer cancel()
	for {
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			break
		}
		if ctx.Err() != nil {
			return r, fmt.Errorf("toolsvc not serving; output:\n%s", ts.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	pid := ts.cmd.Process.Pid
	r.RSSBeforeMiB = float64(procStatusKiB(pid, "VmRSS")) / 1024
	r.Goroutines0 = goroutines(addrs.Admin)
	r.GoroutinesMax = r.Goroutines0

	// Sample the goroutines until the round ends.
	stopSampling := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
				if g := goroutines(addrs.Admin); g > 0 {
					mu.Lock()
					r.GoroutinesMax = max(r.GoroutinesMax, g)
					mu.Unlock()
				}
			}
		}
	}()
	begin := time.Now()
	client := toolsvcv1.NewToolServiceClient(conn)
	res, err := client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "a__ask_flood",
		InputCapabilities: &toolsvcv1.InputCapabilities{Elicitation: true, ElicitationUrl: true, Sampling: true, Roots: true},
		ArgumentsJson:     fmt.Sprintf(`{"id": "flood", "count": %d, "bytes": %d}`, count, size)})
	switch {
	case err != nil:
		st := status.Convert(err)
		r.Outcome = st.Code().String()
		for _, d := range st.Details() {
			if ei, ok := d.(interface{ GetReason() string }); ok {
				r.Outcome += " " + ei.GetReason()
			}
		}
	case res.GetInputRequired() != nil:
		r.Outcome = fmt.Sprintf("input_required (%d)", len(res.GetInputRequired().GetRequests()))
	default:
		r.Outcome = "result"
	}
	for time.Since(begin) < window {
		if floodDone(ctx, client) {
			r.Answered = true
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	r.Seconds = time.Since(begin).Seconds()
	close(stopSampling)
	wg.Wait()
	r.PeakRSSMiB = float64(procStatusKiB(pid, "VmHWM")) / 1024
	r.GoroutinesEnd = goroutines(addrs.Admin)
	return r, nil
}

// floodDone is flood_record's "done": every request of the flood answered.
func floodDone(ctx context.Context, c toolsvcv1.ToolServiceClient) bool {
	res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "a__flood_record", ArgumentsJson: `{"id": "flood"}`})
	if err != nil || res.GetIsError() {
		return false
	}
	done, _ := res.GetStructuredContent().AsMap()["done"].(bool)
	return done
}

// goroutines is go_goroutines from toolsvc's admin /metrics (0 when it
// cannot be read).
func goroutines(admin string) int {
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f)
		}
	}
	return 0
}

// procStatusKiB is a field of /proc/PID/status, in KiB.
func procStatusKiB(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// proc is a child in its own process group, its output kept.
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder
	line chan string
	done chan struct{}
}

func start(argv0 string, args ...string) (*proc, error) {
	p := &proc{cmd: exec.Command(argv0, args...), line: make(chan string, 16), done: make(chan struct{})}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = p.cmd.Wait()
		pw.Close()
	}()
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			if p.out.Len() < 1<<20 {
				p.out.WriteString(sc.Text() + "\n")
			}
			p.mu.Unlock()
			select {
			case p.line <- sc.Text():
			default:
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	return p, nil
}

func (p *proc) waitLine(re *regexp.Regexp, timeout time.Duration) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case l := <-p.line:
			if re.MatchString(l) {
				return l, nil
			}
		case <-p.done:
			return "", errors.New("exited: " + p.output())
		case <-t.C:
			return "", errors.New("no line matching " + re.String() + ": " + p.output())
		}
	}
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// stop sends SIGTERM to the group and SIGKILL after 15 s.
func (p *proc) stop() {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
}
