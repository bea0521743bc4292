// Binary revflood changes one tool of a large catalog many times and prints
// what the toolsvc process holds: the revision-history figures of
// docs/security.md. The upstream is tests/manytools, whose tool "bump"
// changes tool00000; each change is awaited on a WatchCatalog stream, so
// every bump is one catalog revision.
//
//	go build -o /tmp/manytools ./tests/manytools
//	cat >/tmp/rev.json <<EOF
//	{"mcpServers": {"many": {"command": "/tmp/manytools", "args": ["-tools", "20000", "-schema-bytes", "60000"]}}}
//	EOF
//	toolsvc serve --config /tmp/rev.json --listen 127.0.0.1:50099 --max-connection-age 2h &
//	go run ./tests/revflood -addr 127.0.0.1:50099 -pid $! -n 1000
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "toolsvc's gRPC address")
	pid := flag.Int("pid", 0, "toolsvc's process ID, for its RSS (VmRSS, VmHWM)")
	n := flag.Int("n", 1000, "changes of the one tool")
	tool := flag.String("tool", "many__bump", "the upstream tool that changes one tool")
	flag.Parse()
	if err := run(*addr, *pid, *n, *tool); err != nil {
		log.Fatal(err)
	}
}

func run(addr string, pid, n int, tool string) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := toolsvcv1.NewToolServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	watch, err := client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{Fragment: true})
	if err != nil {
		return err
	}
	// The snapshot (perhaps in parts) comes first.
	tools := 0
	for {
		ev, err := watch.Recv()
		if err != nil {
			return fmt.Errorf("watch: %w", err)
		}
		tools += len(ev.GetSnapshot().GetTools())
		if !ev.GetFragment() {
			break
		}
	}
	report(fmt.Sprintf("before (%d tools)", tools), pid)
	start := time.Now()
	for i := range n {
		if _, err := client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool}); err != nil {
			return fmt.Errorf("change %d: %w", i, err)
		}
		if err := awaitChange(watch); err != nil {
			return fmt.Errorf("change %d: %w", i, err)
		}
		if (i+1)%(max(1, n/5)) == 0 {
			report(fmt.Sprintf("after %d changes (%.0f s)", i+1, time.Since(start).Seconds()), pid)
		}
	}
	return nil
}

// awaitChange reads the watch until an event changes tool00000.
func awaitChange(w grpc.ServerStreamingClient[toolsvcv1.WatchCatalogResponse]) error {
	for {
		ev, err := w.Recv()
		if err != nil {
			return err
		}
		for _, t := range ev.GetChanges().GetUpserted() {
			if strings.HasSuffix(t.GetName(), "tool00000") && !ev.GetFragment() {
				return nil
			}
		}
	}
}

// report prints the process's resident and peak resident memory.
func report(when string, pid int) {
	if pid == 0 {
		fmt.Println(when)
		return
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		log.Fatal(err)
	}
	var rss, hwm string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rss = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			hwm = strings.TrimSpace(v)
		}
	}
	fmt.Printf("%s: VmRSS %s, VmHWM %s\n", when, rss, hwm)
}
