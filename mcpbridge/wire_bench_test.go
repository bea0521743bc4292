package mcpbridge

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
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
