package mcpgrpcup

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// BenchmarkGRPCUpstreamCall is one tools/call to tests/mcpgrpcupstream's
// echo, a child process serving the binding on loopback, so that
// -benchmem and the profiles count toolsvc's side of the wire only.
// bridge: through the bridge (Bridge.CallTool: the request path, the
// session's go-sdk client, this transport); direct: the same RPC from a
// plain generated client, the floor the bridge adds to. cpu-ns/op is this
// process's CPU time per call, which a busy machine disturbs less than
// ns/op.
//
//	go test -run XXX -bench GRPCUpstreamCall -benchmem -cpuprofile cpu.out ./internal/mcpgrpcup
func BenchmarkGRPCUpstreamCall(b *testing.B) {
	addr := startUpstreamChild(b)
	b.Run("bridge", func(b *testing.B) { benchBridge(b, addr, nil) })
	// As the core calls: with the arguments it validated, decoded
	// (CallOptions.DecodedArguments), which the binding's request is built
	// from.
	b.Run("bridge-decoded", func(b *testing.B) {
		benchBridge(b, addr, &mcpbridge.CallOptions{DecodedArguments: map[string]any{"text": "hello"}})
	})
	b.Run("direct", func(b *testing.B) {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Close()
		client := pb.NewMcpClient(cc)
		ctx := context.Background()
		benchLoop(b, func() {
			args, _ := structpb.NewStruct(map[string]any{"text": "hello"})
			res, err := client.CallTool(ctx, &pb.CallToolRequest{Request: &pb.CallToolRequest_Request{Name: "echo", Arguments: args}})
			if err != nil {
				b.Fatal(err)
			}
			if len(res.GetContent()) != 1 {
				b.Fatalf("unexpected result %v", res)
			}
		})
	})
}

// benchBridge is one tools/call to echo through a bridge to the upstream
// at addr, with opts.
func benchBridge(b *testing.B, addr string, opts *mcpbridge.CallOptions) {
	br, err := mcpbridge.New(mcpbridge.Config{
		Servers:    []mcpbridge.ServerConfig{{Name: "g", Transport: mcpbridge.TransportGRPC, URL: "grpc://" + addr}},
		Transports: map[mcpbridge.Transport]mcpbridge.TransportFactory{mcpbridge.TransportGRPC: Factory},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	select {
	case <-br.Ready():
	case <-time.After(time.Minute):
		b.Fatal("bridge not ready")
	}
	ctx := context.Background()
	args := json.RawMessage(`{"text":"hello"}`)
	benchLoop(b, func() {
		res, err := br.CallTool(ctx, "g__echo", args, opts)
		if err != nil {
			b.Fatal(err)
		}
		if res.IsError || len(res.Content) != 1 {
			b.Fatalf("unexpected result %+v", res)
		}
	})
}

// benchLoop warms call up (connections, the catalog, the collector), then
// runs it b.N times and reports this process's CPU time per call.
func benchLoop(b *testing.B, call func()) {
	for range 200 {
		call()
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		call()
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// startUpstreamChild builds and starts tests/mcpgrpcupstream on a loopback
// port and returns its address; it is killed when b ends.
func startUpstreamChild(b testing.TB) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "mcpgrpcupstream")
	if out, err := exec.Command("go", "build", "-o", bin, "../../tests/mcpgrpcupstream").CombinedOutput(); err != nil {
		b.Fatalf("building tests/mcpgrpcupstream: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	listening := regexp.MustCompile(`listening on (\S+)`)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if m := listening.FindStringSubmatch(sc.Text()); m != nil {
			go func() { // keep draining its output until it exits
				for sc.Scan() {
				}
			}()
			return m[1]
		}
	}
	b.Fatal("tests/mcpgrpcupstream exited before listening")
	return ""
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
