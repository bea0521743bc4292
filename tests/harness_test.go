// Package tests holds toolsvc's end-to-end scenarios: the real toolsvc
// binary, real MCP servers in subprocesses (go-sdk and TypeScript SDK), and
// real gRPC over loopback.
package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

const defaultTestTimeout = 60 * time.Second

// helperBinaries holds one build per helper program of tests/ (a hostile
// upstream, a fixture), made the first time a test asks for it.
var helperBinaries sync.Map // dir → func() (string, error)

// helperBinary builds the program in tests/<dir> once per test binary, next
// to the toolsvc under test, and returns its path.
func helperBinary(t testing.TB, dir string) string {
	t.Helper()
	build, _ := helperBinaries.LoadOrStore(dir, sync.OnceValues(func() (string, error) {
		out := filepath.Join(filepath.Dir(bin.toolsvc), dir)
		if b, err := exec.Command("go", "build", "-o", out, "./"+dir).CombinedOutput(); err != nil {
			return "", fmt.Errorf("building tests/%s: %v\n%s", dir, err, b)
		}
		return out, nil
	}))
	path, err := build.(func() (string, error))()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Paths of the binaries TestMain builds.
var bin struct {
	toolsvc    string
	testserver string
	nodeDir    string
}

func TestMain(m *testing.M) {
	code := run(m)
	os.Exit(code)
}

func run(m *testing.M) int {
	// The race runtime sleeps a second before a race-built process exits
	// (TSan's atexit_sleep_ms, 1000 by default): every toolsvc stopped, and
	// its race-built demo child, would add it. Children inherit this.
	if !strings.Contains(os.Getenv("GORACE"), "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	}
	dir, err := os.MkdirTemp("", "toolsvc-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin.toolsvc = filepath.Join(dir, "toolsvc")
	bin.testserver = filepath.Join(dir, "testserver")
	// toolsvc is built with -race, so a data race in the real binary fails
	// the test that stops it (exit status 66).
	for _, b := range []struct {
		out, pkg string
		race     bool
	}{{bin.toolsvc, "../cmd/toolsvc", true}, {bin.testserver, "./testserver", false}} {
		args := []string{"build", "-o", b.out}
		if b.race {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, b.pkg)...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n", b.pkg, err)
			return 1
		}
	}
	wd, _ := os.Getwd()
	bin.nodeDir = filepath.Join(wd, "node")
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			return 1
		}
	}
	return code
}

// logBuffer collects a process's stderr and lets tests wait for a line.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
	cond  chan struct{} // closed and replaced on every line
}

func newLogBuffer() *logBuffer { return &logBuffer{cond: make(chan struct{})} }

func (b *logBuffer) consume(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b.mu.Lock()
		b.lines = append(b.lines, sc.Text())
		close(b.cond)
		b.cond = make(chan struct{})
		b.mu.Unlock()
	}
}

// waitFor returns the first submatch of re in any line, waiting for it.
func (b *logBuffer) waitFor(t *testing.T, re *regexp.Regexp, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		b.mu.Lock()
		for _, l := range b.lines {
			if m := re.FindStringSubmatch(l); m != nil {
				b.mu.Unlock()
				if len(m) > 1 {
					return m[1]
				}
				return m[0]
			}
		}
		ch := b.cond
		b.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no log line matching %q within %s; log:\n%s", re, timeout, b.String())
		}
	}
}

// wait is waitFor without failing: ok is false after timeout, or once
// stopped is closed (the process exited) without a match.
func (b *logBuffer) wait(re *regexp.Regexp, timeout time.Duration, stopped <-chan struct{}) (string, bool) {
	deadline := time.After(timeout)
	exited := false
	for {
		b.mu.Lock()
		for _, l := range b.lines {
			if m := re.FindStringSubmatch(l); m != nil {
				b.mu.Unlock()
				if len(m) > 1 {
					return m[1], true
				}
				return m[0], true
			}
		}
		ch := b.cond
		b.mu.Unlock()
		if exited {
			return "", false // its whole output was read: no match
		}
		select {
		case <-ch:
		case <-stopped:
			exited = true
		case <-deadline:
			return "", false
		}
	}
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

// toolsvcProc is a running `toolsvc serve` and a client connected to it.
type toolsvcProc struct {
	cmd        *exec.Cmd
	configPath string
	adminAddr  string // admin HTTP (metrics)
	addr       string // gRPC
	mcpAddr    string // the MCP front door; "" unless --mcp-listen
	log        *logBuffer
	client     toolsvcv1.ToolServiceClient
	stop       func() // SIGTERM, wait, and check the exit; idempotent
	proc       *proc
}

// exited is closed once toolsvc has exited (and its log is read).
func (p *toolsvcProc) exited() <-chan struct{} { return p.proc.done }

// exitErr is toolsvc's exit status, once exited.
func (p *toolsvcProc) exitErr() error { <-p.proc.done; return p.proc.err }

var readyRE = regexp.MustCompile(`msg=ready`)

// startToolsvc runs toolsvc with the given config and waits until it is
// ready. Cleanup stops it with SIGTERM and fails the test unless it exits 0
// (a race report exits 66). extraArgs are added to the serve command line.
func startToolsvc(t *testing.T, c cfg, extraArgs ...string) *toolsvcProc {
	t.Helper()
	return startToolsvcWith(t, c, startOpts{args: extraArgs})
}

// startToolsvcEnv is startToolsvc with extra environment variables.
func startToolsvcEnv(t *testing.T, c cfg, env []string, extraArgs ...string) *toolsvcProc {
	t.Helper()
	return startToolsvcWith(t, c, startOpts{env: env, args: extraArgs})
}

type startOpts struct {
	env    []string
	args   []string
	noWait bool     // return once serving, before ready
	wrap   []string // a command that execs toolsvc's command line, given as its arguments (e.g. to enter a cgroup first)
}

// startToolsvcWith starts toolsvc on loopback ports the kernel picks and
// learns them from --addr-file (never from its log).
func startToolsvcWith(t *testing.T, c cfg, o startOpts) *toolsvcProc {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	c.write(t, path)
	addrFile := filepath.Join(dir, "addrs.json")
	argv := []string{bin.toolsvc, "serve", "--config", path, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--addr-file", addrFile}
	if _, ok := c.Serve["logLevel"]; !ok { // a test that sets serve.logLevel sees the file's level
		argv = append(argv, "--log-level", "debug")
	}
	argv = append(argv, o.args...)
	argv = append(append([]string(nil), o.wrap...), argv...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), o.env...)
	pr := startProcWith(t, cmd, procOpts{name: "toolsvc", grace: 20 * time.Second, checkExit: true})
	p := &toolsvcProc{cmd: cmd, configPath: path, log: pr.log, stop: pr.stop, proc: pr}
	a := waitAddrFile(t, addrFile, pr, 30*time.Second)
	p.addr, p.adminAddr, p.mcpAddr = a.GRPC, a.Admin, a.MCP
	conn, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	p.client = toolsvcv1.NewToolServiceClient(conn)
	if !o.noWait {
		waitHealthy(t, conn, p.log, 30*time.Second)
	}
	return p
}

// waitAddrFile waits for toolsvc's --addr-file (written whole, by rename,
// once every listener is bound), failing if the process exits first.
func waitAddrFile(t *testing.T, path string, pr *proc, timeout time.Duration) (a struct{ GRPC, Admin, MCP string }) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			if err := json.Unmarshal(b, &a); err != nil || a.GRPC == "" {
				t.Fatalf("toolsvc's addr file %q: %v", b, err)
			}
			return a
		}
		select {
		case <-pr.done:
			t.Fatalf("toolsvc exited (%v) before listening; log:\n%s", pr.err, pr.log)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("toolsvc wrote no addr file within %s; log:\n%s", timeout, pr.log)
		}
	}
}

// waitHealthy waits until the server's grpc.health.v1 readiness ("") is
// SERVING: toolsvc's first discovery round is over. It watches the status
// (Health.Watch streams every change) rather than polling Check. A server
// this plaintext client cannot talk to (TLS tests) is ready when it logs so.
func waitHealthy(t *testing.T, conn *grpc.ClientConn, log *logBuffer, timeout time.Duration) {
	t.Helper()
	hc := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	var last healthpb.HealthCheckResponse_ServingStatus
	var lastErr error
	for {
		stream, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{})
		for err == nil {
			var resp *healthpb.HealthCheckResponse
			if resp, err = stream.Recv(); err == nil {
				if last = resp.GetStatus(); last == healthpb.HealthCheckResponse_SERVING {
					return
				}
			}
		}
		lastErr = err
		// The stream failed (or never started): a TLS server, or one that
		// is not up yet. Wait briefly for its log to say ready.
		if _, ok := log.wait(readyRE, 20*time.Millisecond, nil); ok {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("toolsvc not SERVING within %s (last: %v, %v); log:\n%s", timeout, last, lastErr, log)
		}
	}
}

// proc is a child process in its own process group whose stdout and stderr
// are collected line by line (tests wait for lines with log.waitFor). It is
// the one way tests start processes: toolsvc, upstreams, peers.
type proc struct {
	cmd  *exec.Cmd
	log  *logBuffer
	done chan struct{} // closed once the process has exited and its output is read
	err  error         // its exit status, once done
	stop func()        // SIGTERM the group, wait (SIGKILL after the grace); idempotent
}

type procOpts struct {
	name      string        // in failure logs (default: the binary's name)
	grace     time.Duration // SIGTERM to SIGKILL (default 5 s)
	checkExit bool          // fail the test unless stop finds a clean exit (0)
}

// startProc starts cmd with the default options.
func startProc(t *testing.T, cmd *exec.Cmd) *proc {
	t.Helper()
	return startProcWith(t, cmd, procOpts{})
}

// startProcWith starts cmd in its own process group. Cleanup stops it and,
// if the test failed, attaches its output to the test log.
func startProcWith(t *testing.T, cmd *exec.Cmd, o procOpts) *proc {
	t.Helper()
	if o.name == "" {
		o.name = filepath.Base(cmd.Path)
	}
	if o.grace == 0 {
		o.grace = 5 * time.Second
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", o.name, err)
	}
	p := &proc{cmd: cmd, log: newLogBuffer(), done: make(chan struct{})}
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		p.log.consume(pr)
	}()
	go func() {
		p.err = cmd.Wait()
		pw.Close()
		<-logDone
		close(p.done)
	}()
	var once sync.Once
	p.stop = func() {
		once.Do(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-p.done:
				if o.checkExit && p.err != nil {
					t.Errorf("%s exited with %v; output:\n%s", o.name, p.err, p.log)
				}
			case <-time.After(o.grace):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-p.done
				if o.checkExit {
					t.Errorf("%s did not stop within %s of SIGTERM; output:\n%s", o.name, o.grace, p.log)
				}
			}
		})
	}
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s output:\n%s", o.name, p.log)
		}
	})
	return p
}

// kill SIGKILLs the process group and waits for the exit.
func (p *proc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// startHTTPUpstream runs the go-sdk test server over streamable HTTP and
// returns its URL.
func startHTTPUpstream(t *testing.T) string {
	t.Helper()
	p := startProc(t, exec.Command(bin.testserver, "-mode", "http", "-addr", "127.0.0.1:0"))
	return p.log.waitFor(t, urlLineRE, 30*time.Second)
}

// watcher consumes a WatchCatalog stream in the background.
type watcher struct {
	events chan *toolsvcv1.WatchCatalogResponse
	done   chan error
}

func startWatch(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient, resume string) *watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	stream, err := c.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{ResumeToken: resume})
	if err != nil {
		cancel()
		t.Fatalf("WatchCatalog: %v", err)
	}
	w := &watcher{events: make(chan *toolsvcv1.WatchCatalogResponse, 1024), done: make(chan error, 1)}
	go func() {
		defer close(w.events)
		for {
			ev, err := stream.Recv()
			if err != nil {
				w.done <- err
				return
			}
			w.events <- ev
		}
	}()
	t.Cleanup(func() {
		cancel()
		for range w.events {
		}
	})
	return w
}

// next returns the next event or fails after timeout.
func (w *watcher) next(t *testing.T, timeout time.Duration) *toolsvcv1.WatchCatalogResponse {
	t.Helper()
	select {
	case ev, ok := <-w.events:
		if !ok {
			t.Fatalf("watch ended: %v", <-w.done)
		}
		return ev
	case <-time.After(timeout):
		t.Fatalf("no watch event within %s", timeout)
	}
	return nil
}

// waitUpsert waits for a changes event that upserts the named tool.
func (w *watcher) waitUpsert(t *testing.T, name string, timeout time.Duration) *toolsvcv1.Tool {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ev := w.next(t, time.Until(deadline))
		for _, tool := range ev.GetChanges().GetUpserted() {
			if tool.GetName() == name {
				return tool
			}
		}
	}
}

// listAll pages through ListTools.
func listAll(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient, pageSize int32) ([]*toolsvcv1.Tool, string) {
	t.Helper()
	var all []*toolsvcv1.Tool
	tok, rev := "", ""
	for {
		resp, err := c.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: pageSize, PageToken: tok})
		if err != nil {
			t.Fatalf("ListTools: %v", err)
		}
		if rev != "" && resp.GetRevision() != rev {
			t.Fatalf("ListTools page revision %s, want %s (pages must not mix revisions)", resp.GetRevision(), rev)
		}
		rev = resp.GetRevision()
		all = append(all, resp.GetTools()...)
		if tok = resp.GetNextPageToken(); tok == "" {
			return all, rev
		}
	}
}

func hasTool(tools []*toolsvcv1.Tool, name string) bool {
	for _, t := range tools {
		if t.GetName() == name {
			return true
		}
	}
	return false
}

func serverStatus(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient, name string) *toolsvcv1.Server {
	t.Helper()
	resp, err := c.ListServers(ctx, &toolsvcv1.ListServersRequest{})
	if err != nil {
		t.Fatalf("ListServers: %v", err)
	}
	for _, s := range resp.GetServers() {
		if s.GetName() == name {
			return s
		}
	}
	t.Fatalf("ListServers has no server %q", name)
	return nil
}

func resultText(r *toolsvcv1.CallToolResponse) string {
	var b strings.Builder
	for _, c := range r.GetContent() {
		b.WriteString(c.GetText().GetText())
	}
	return b.String()
}

func jsonString(s string) string { return fmt.Sprintf("%q", s) }
