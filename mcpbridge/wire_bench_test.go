package mcpbridge

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/proccpu"
)

// BenchmarkBridgeCall is one tools/call through the bridge (Bridge.Call:
// the request path, the session's go-sdk client, toolsvc's transport
// stack) to tests/testserver's echo in a child process, so that
// -benchmem and the profiles count toolsvc's side of the wire only: the
// upstream's allocations are in another process. stdio: the child is the
// bridge's own stdio upstream; http: it serves streamable HTTP on
// loopback (stateful, 2025-11-25). cpu-ns/op is this process's CPU time
// per call (the bridge, go-sdk's client and the benchmark loop), which a
// busy machine disturbs less than ns/op.
//
//	go test -run XXX -bench BridgeCall -benchmem ./mcpbridge
func BenchmarkBridgeCall(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "testserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../tests/testserver").CombinedOutput(); err != nil {
		b.Fatalf("building tests/testserver: %v\n%s", err, out)
	}
	b.Run("stdio", func(b *testing.B) {
		benchmarkBridgeCall(b, ServerConfig{Name: "s", Transport: TransportStdio, Command: bin, ProtocolVersion: "2025-11-25"})
	})
	b.Run("http", func(b *testing.B) {
		url := startHTTPChild(b, bin)
		benchmarkBridgeCall(b, ServerConfig{Name: "s", Transport: TransportStreamableHTTP, URL: url, ProtocolVersion: "2025-11-25"})
	})
}

func benchmarkBridgeCall(b *testing.B, sc ServerConfig) {
	br, err := New(Config{Servers: []ServerConfig{sc}})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	select {
	case <-br.Ready():
	case <-time.After(defaultTestTimeout):
		b.Fatal("bridge not ready")
	}
	ctx := context.Background()
	args := json.RawMessage(`{"text":"hello"}`)
	call := func() {
		res, err := br.CallTool(ctx, "s__echo", args, nil)
		if err != nil {
			b.Fatal(err)
		}
		if res.IsError || len(res.Content) != 1 {
			b.Fatalf("unexpected result %+v", res)
		}
	}
	for range 200 { // warm up: connection pools, the catalog, the collector
		call()
	}
	b.ReportAllocs()
	cpu0 := proccpu.Used()
	for b.Loop() {
		call()
	}
	// CPU time of this process (the bridge's side; the upstream is a
	// child) per call: steadier than ns/op on a shared machine.
	b.ReportMetric(float64(proccpu.Used()-cpu0)/float64(b.N), "cpu-ns/op")
}

// startHTTPChild starts bin -mode http and returns its URL; the child is
// stopped when the benchmark ends.
func startHTTPChild(tb testing.TB, bin string) string {
	tb.Helper()
	cmd := exec.Command(bin, "-mode", "http")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		tb.Fatalf("reading the child's URL: %v", err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "URL ")
	if !ok {
		tb.Fatalf("child said %q, want its URL", line)
	}
	return url
}

// maxBridgeCallAllocs bounds the allocations of one successful tools/call
// through the bridge on stdio (Bridge.CallTool to tests/testserver's echo:
// the request path, go-sdk's client, toolsvc's stdio connection), as
// TestBridgeCallAllocs counts them (the fewest of five runs; with -race one
// more): 45 (46) when every call formatted its label, built a trace
// carrier and gave each try a context of its own; 37 (38) since
// (docs/benchmarks.md, "The shared call path against its floor").
const maxBridgeCallAllocs = 39

// TestBridgeCallAllocs: a successful, untraced call formats no label for
// logs and errors it does not write, builds no trace-context carrier when
// there is no trace to carry, and derives one context (its deadline, which
// the session's death cancels), not two. Counted against a real stdio
// child.
func TestBridgeCallAllocs(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "testserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../tests/testserver").CombinedOutput(); err != nil {
		t.Fatalf("building tests/testserver: %v\n%s", err, out)
	}
	br, err := New(Config{Servers: []ServerConfig{{Name: "s", Transport: TransportStdio, Command: bin, ProtocolVersion: "2025-11-25"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	select {
	case <-br.Ready():
	case <-time.After(defaultTestTimeout):
		t.Fatal("bridge not ready")
	}
	ctx := context.Background()
	args := json.RawMessage(`{"text":"hello"}`)
	call := func() {
		res, err := br.CallTool(ctx, "s__echo", args, nil)
		if err != nil || res.IsError || len(res.Content) != 1 {
			t.Fatalf("CallTool = %+v, %v", res, err)
		}
	}
	for range 50 { // warm up: the catalog, the connection's buffers
		call()
	}
	// AllocsPerRun counts the whole process: the session's reader (which
	// decodes the answer) belongs to the call, but other goroutines may
	// allocate meanwhile, which only adds: the fewest of a few runs.
	var runs []float64
	for range 5 {
		runs = append(runs, testing.AllocsPerRun(200, call))
	}
	if got := slices.Min(runs); got > maxBridgeCallAllocs {
		t.Errorf("a call allocates %.1f times (runs %v), want at most %d", got, runs, maxBridgeCallAllocs)
	}
}
