// Binary frontflood opens MCP front-door sessions and abandons them (an
// initialize each, never used again), then prints what the toolsvc
// process holds: the figures of docs/security.md's session bound.
//
//	toolsvc serve --mcp-listen 127.0.0.1:8080 --admin-listen 127.0.0.1:9090 &
//	go run ./tests/frontflood -mcp http://127.0.0.1:8080/mcp -metrics http://127.0.0.1:9090/metrics -pid $! -n 10000
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

func main() {
	mcpURL := flag.String("mcp", "http://127.0.0.1:8080/mcp", "the front door's /mcp")
	metrics := flag.String("metrics", "http://127.0.0.1:9090/metrics", "toolsvc's /metrics")
	pid := flag.Int("pid", 0, "toolsvc's process ID, for its peak RSS (VmHWM)")
	n := flag.Int("n", 10000, "sessions to open and abandon")
	token := flag.String("token", "", "bearer token (empty: none)")
	workers := flag.Int("c", 8, "concurrent initializes")
	flag.Parse()

	report("before", *metrics, *pid)
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"frontflood","version":"0"}}}`
	var next, ok atomic.Int64
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(*n) {
				req, _ := http.NewRequest(http.MethodPost, *mcpURL, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if *token != "" {
					req.Header.Set("Authorization", "Bearer "+*token)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					log.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				codes[resp.StatusCode]++
				mu.Unlock()
				if resp.Header.Get("Mcp-Session-Id") != "" {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("%d initializes: %d sessions created, HTTP statuses %v\n", *n, ok.Load(), codes)
	report("after", *metrics, *pid)
}

func report(when, metrics string, pid int) {
	resp, err := http.Get(metrics)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		for _, m := range []string{"go_goroutines ", "process_resident_memory_bytes ", "go_memstats_heap_inuse_bytes ", "go_memstats_stack_inuse_bytes ", "toolsvc_front_sessions ", "toolsvc_front_sessions_evicted_total "} {
			if strings.HasPrefix(l, m) {
				out = append(out, l)
			}
		}
	}
	if pid != 0 {
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
			for _, l := range strings.Split(string(st), "\n") {
				if strings.HasPrefix(l, "VmHWM:") || strings.HasPrefix(l, "VmRSS:") {
					out = append(out, strings.Join(strings.Fields(l), " "))
				}
			}
		}
	}
	fmt.Printf("%s: %s\n", when, strings.Join(out, "; "))
}
