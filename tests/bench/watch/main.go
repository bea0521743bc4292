// Command watch benchmarks WatchCatalog fan-out against a real toolsvc
// process (built from ./cmd/toolsvc without -race) in front of a real go-sdk
// MCP upstream over streamable HTTP (in this process), on loopback:
//
//	go run ./tests/bench/watch [-watchers 10000] [-conns 100] [-tools 50]
//	                           [-storm-watchers 1000] [-storm-every 10ms] [-storm-for 10s]
//
// Phase 1 opens -watchers streams, waits until each has its snapshot, lets
// the server settle and reads its RSS: (RSS - RSS before the watchers) /
// watchers is the memory per idle watcher. Then one upstream change (a new
// tool): the latency from the upstream change to each watcher's receipt
// (p50/p99/max), and the fan-out spread (from the first watcher's receipt).
//
// Phase 2 keeps -storm-watchers streams open while the upstream changes a
// tool every -storm-every for -storm-for, and divides the server's CPU time
// (utime+stime from /proc) by the number of events delivered (-storm-for 0:
// no phase 2).
//
// -replicas N runs N toolsvc processes (one config file and one
// --state-key-file for all, as replicas behind a load balancer share them),
// each with its own session to the same upstream; connection i goes to
// replica i mod N and watcher j to connection j mod -conns, so the
// watchers spread evenly. Latencies are over every watcher of every
// replica; RSS and CPU are summed over the replicas (and the busiest
// replica's CPU is reported too). -decode=false makes the watchers find
// the change in the message's bytes instead of decoding it (the client's
// own cost, which shares the machine's cores with the servers).
//
// It prints a table and, last, one JSON line. It is not part of go test.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

var (
	watchers      = flag.Int("watchers", 10000, "concurrent watchers in phase 1")
	conns         = flag.Int("conns", 100, "gRPC connections the watchers share")
	tools         = flag.Int("tools", 50, "tools on the upstream")
	stormWatchers = flag.Int("storm-watchers", 1000, "watchers in phase 2")
	stormEvery    = flag.Duration("storm-every", 10*time.Millisecond, "upstream change interval in phase 2")
	stormFor      = flag.Duration("storm-for", 10*time.Second, "phase 2 duration")
	toolsvcBin    = flag.String("toolsvc", "", "toolsvc binary (default: go build ./cmd/toolsvc)")
	rounds        = flag.Int("rounds", 5, "one-change rounds in phase 1 (each a new tool); p99 is the median round's, with the spread")
	resources     = flag.Int("resources", 0, "resources and as many prompts on the upstream; with any, every watch sets include_resources and include_prompts")
	replicas      = flag.Int("replicas", 1, "toolsvc processes sharing one config and state key; connections and watchers spread over them")
	decode        = flag.Bool("decode", true, "watchers decode every message (false: they look for the change in its bytes)")
	client        = flag.String("client", "grpc", "the watchers' client: grpc (grpc-go, a goroutine per watcher) or h2 (a lean HTTP/2 reader, a goroutine per connection; implies -decode=false)")
)

func main() {
	flag.Parse()
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	up := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	for i := range *tools {
		addTool(up, fmt.Sprintf("tool_%05d", i), "initial")
	}
	for i := range *resources {
		addResourceAndPrompt(up, i)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil)}
	go func() { _ = hs.Serve(lis) }()
	defer hs.Close()

	srv := startReplicas(fmt.Sprintf("http://%s/mcp", lis.Addr()), max(*replicas, 1))
	defer srv.stop()
	for _, r := range srv {
		log.Printf("toolsvc pid %d at %s; upstream with %d tools", r.cmd.Process.Pid, r.addr, *tools)
	}

	clients := make([]toolsvcv1.ToolServiceClient, *conns)
	for i := range clients {
		connAddrs = append(connAddrs, srv[i%len(srv)].addr)
		if *client == "h2" {
			continue // each pool dials its own
		}
		c, err := grpc.NewClient(srv[i%len(srv)].addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		check(err)
		defer c.Close()
		clients[i] = toolsvcv1.NewToolServiceClient(c)
	}
	res := map[string]any{"watchers": *watchers, "conns": *conns, "tools": *tools, "resources": *resources, "gomaxprocs": runtime.GOMAXPROCS(0),
		"replicas": len(srv), "decode": *decode && *client != "h2", "client": *client, "load_avg_1m_at_start": loadAvg()}

	// Phase 1: idle memory and one-change latency.
	settle()
	rss0 := srv.rss()
	p1 := openWatchers(ctx, clients, *watchers)
	p1.waitSnapshots()
	settle()
	rss1 := srv.rss()
	perWatcher := float64(rss1-rss0) / float64(*watchers)
	log.Printf("phase 1: %d watchers open; server RSS %d -> %d KiB (%.1f KiB per idle watcher)", *watchers, rss0>>10, rss1>>10, perWatcher/1024)

	var lat, spread []time.Duration
	var p99s []float64
	scpu0, ccpu0, rcpu0 := srv.cpu(), selfCPU(), srv.cpuEach()
	for i := range max(*rounds, 1) {
		p1.expect(fmt.Sprintf("tool_new_%d", i), time.Now())
		addTool(up, fmt.Sprintf("tool_new_%d", i), "new")
		l := p1.waitAll()
		first := slices.Min(l)
		for _, d := range l {
			spread = append(spread, d-first)
		}
		p99s = append(p99s, ms(pct(l, 99)))
		lat = append(lat, l...)
		log.Printf("phase 1 round %d: one change to %d watchers, p99 %.2f ms", i+1, *watchers, p99s[len(p99s)-1])
		time.Sleep(500 * time.Millisecond)
	}
	res["one_change_server_cpu_ms"] = ms((srv.cpu() - scpu0) / time.Duration(len(p99s)))
	res["one_change_client_cpu_ms"] = ms((selfCPU() - ccpu0) / time.Duration(len(p99s)))
	var busiest time.Duration
	for i, c := range srv.cpuEach() {
		busiest = max(busiest, c-rcpu0[i])
	}
	res["one_change_server_cpu_ms_max_replica"] = ms(busiest / time.Duration(len(p99s)))
	first := slices.Min(lat)
	p1.close()
	res["rss_before_kib"], res["rss_idle_kib"] = rss0>>10, rss1>>10
	res["rss_per_idle_watcher_kib"] = round(perWatcher / 1024)
	sorted := slices.Sorted(slices.Values(p99s))
	res["rounds"] = len(p99s)
	res["latency_p50_ms"], res["latency_max_ms"] = ms(pct(lat, 50)), ms(slices.Max(lat))
	res["latency_p99_ms"] = sorted[len(sorted)/2] // the median round's p99
	res["latency_p99_ms_spread"] = []float64{sorted[0], sorted[len(sorted)-1]}
	res["first_receipt_ms"] = ms(first)
	res["fanout_p50_ms"], res["fanout_p99_ms"] = ms(pct(spread, 50)), ms(pct(spread, 99))

	// Phase 2: CPU per delivered event under a steady stream of changes.
	if *stormFor <= 0 {
		report(res)
		return
	}
	p2 := openWatchers(ctx, clients, *stormWatchers)
	p2.waitSnapshots()
	settle()
	cpu0, wall0 := srv.cpu(), time.Now()
	ev0 := p2.events.Load()
	changes := 0
	tick := time.NewTicker(*stormEvery)
	for time.Since(wall0) < *stormFor {
		<-tick.C
		addTool(up, fmt.Sprintf("tool_%05d", changes%*tools), fmt.Sprintf("storm %d", changes))
		changes++
	}
	tick.Stop()
	time.Sleep(500 * time.Millisecond) // let the last change arrive
	cpu1, wall1 := srv.cpu(), time.Now()
	delivered := p2.events.Load() - ev0
	p2.close()
	cpuS := (cpu1 - cpu0).Seconds()
	res["storm_watchers"], res["storm_upstream_changes"], res["storm_events_delivered"] = *stormWatchers, changes, delivered
	res["storm_server_cpu_s"] = round(cpuS)
	res["storm_server_cpu_util"] = round(cpuS / wall1.Sub(wall0).Seconds())
	if delivered > 0 {
		res["storm_cpu_us_per_event"] = round(cpuS * 1e6 / float64(delivered))
	}

	report(res)
}

// report prints the table and, last, the JSON line.
func report(res map[string]any) {
	fmt.Println()
	fmt.Printf("%-44s %s\n", "metric", "value")
	row := func(k, label string) {
		if v, ok := res[k]; ok {
			fmt.Printf("%-44s %v\n", label, v)
		}
	}
	row("replicas", "toolsvc replicas")
	row("watchers", "watchers (phase 1)")
	row("rss_per_idle_watcher_kib", "server RSS per idle watcher (KiB)")
	row("latency_p50_ms", "one change: latency p50 (ms)")
	row("latency_p99_ms", "one change: latency p99, median round (ms)")
	row("latency_p99_ms_spread", "one change: p99 over rounds, min–max (ms)")
	row("latency_max_ms", "one change: latency max (ms)")
	row("first_receipt_ms", "one change: first watcher (ms)")
	row("fanout_p99_ms", "one change: fan-out p99 after first (ms)")
	row("one_change_server_cpu_ms", "one change: server CPU (ms)")
	row("one_change_server_cpu_ms_max_replica", "one change: busiest replica's CPU (ms)")
	row("one_change_client_cpu_ms", "one change: watchers' process CPU (ms)")
	row("storm_watchers", "storm: watchers")
	row("storm_upstream_changes", "storm: upstream changes")
	row("storm_events_delivered", "storm: events delivered")
	row("storm_server_cpu_util", "storm: server CPU (cores)")
	row("storm_cpu_us_per_event", "storm: server CPU per event (µs)")
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
}

func addTool(s *mcp.Server, name, desc string) {
	s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
}

// addResourceAndPrompt adds resource and prompt number i to the upstream.
func addResourceAndPrompt(s *mcp.Server, i int) {
	uri := fmt.Sprintf("file:///bench/resource_%05d.txt", i)
	s.AddResource(&mcp.Resource{URI: uri, Name: uri, Description: "a generated resource"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "x"}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: fmt.Sprintf("prompt_%05d", i), Description: "a generated prompt"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
}

// pool is a set of watchers reading their streams.
type pool struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	snaps   sync.WaitGroup
	events  atomic.Int64
	mu      sync.Mutex
	want    string
	got     []time.Duration
	arrived chan struct{}
	t0      time.Time
	n       int
	h2      []*h2Conn // -client h2
}

// connAddrs is the replica each connection goes to.
var connAddrs []string

func openWatchers(ctx context.Context, clients []toolsvcv1.ToolServiceClient, n int) *pool {
	ctx, cancel := context.WithCancel(ctx)
	p := &pool{cancel: cancel, arrived: make(chan struct{}, n), n: n}
	p.snaps.Add(n)
	if *client == "h2" {
		p.openH2(ctx)
		return p
	}
	for i := range n {
		c := clients[i%len(clients)]
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			req := &toolsvcv1.WatchCatalogRequest{IncludeResources: *resources > 0, IncludePrompts: *resources > 0}
			var recv func() (upserted func(want string) bool, err error)
			if *decode {
				st, err := c.WatchCatalog(ctx, req)
				check(err)
				recv = func() (func(string) bool, error) {
					m, err := st.Recv()
					return func(want string) bool {
						for _, t := range m.GetChanges().GetUpserted() {
							if strings.HasSuffix(t.GetName(), want) {
								return true
							}
						}
						return false
					}, err
				}
			} else {
				st, err := c.WatchCatalog(ctx, req, grpc.ForceCodecV2(rawCodec{}))
				check(err)
				recv = func() (func(string) bool, error) {
					var m rawMessage
					err := st.RecvMsg(&m)
					b := m.b.Materialize()
					m.b.Free()
					// The new tool's name is only in the event that adds it.
					return func(want string) bool { return bytes.Contains(b, []byte(want)) }, err
				}
			}
			if _, err := recv(); err != nil {
				log.Fatalf("first Recv: %v", err)
			}
			p.snaps.Done()
			for {
				has, err := recv()
				if err != nil {
					if ctx.Err() == nil {
						log.Fatalf("Recv: %v", err)
					}
					return
				}
				now := time.Now()
				p.events.Add(1)
				p.mu.Lock()
				want, t0 := p.want, p.t0
				p.mu.Unlock()
				if want != "" && has(want) {
					p.mu.Lock()
					p.got = append(p.got, now.Sub(t0))
					p.mu.Unlock()
					p.arrived <- struct{}{}
				}
			}
		}()
	}
	return p
}

// openH2 opens the pool's watchers on connections of its own (-client h2).
func (p *pool) openH2(ctx context.Context) {
	req := &toolsvcv1.WatchCatalogRequest{IncludeResources: *resources > 0, IncludePrompts: *resources > 0}
	onEnd := func(err error) {
		if ctx.Err() == nil {
			log.Fatalf("watch connection: %v", err)
		}
	}
	hc := make([]*h2Conn, len(connAddrs))
	for i, addr := range connAddrs {
		c, err := dialH2(ctx, addr, onEnd)
		check(err)
		hc[i] = c
	}
	p.h2 = hc
	for i := range p.n {
		first := true
		check(hc[i%len(hc)].watch(req, func(b []byte) { // on the connection's reader
			if first {
				first = false
				p.snaps.Done()
				return
			}
			now := time.Now()
			p.events.Add(1)
			p.mu.Lock()
			want, t0 := p.want, p.t0
			if want != "" && bytes.Contains(b, []byte(want)) {
				p.got = append(p.got, now.Sub(t0))
				p.mu.Unlock()
				p.arrived <- struct{}{}
				return
			}
			p.mu.Unlock()
		}))
	}
}

func (p *pool) waitSnapshots() { p.snaps.Wait() }

func (p *pool) expect(name string, t0 time.Time) {
	p.mu.Lock()
	p.want, p.t0, p.got = name, t0, nil
	p.mu.Unlock()
}

func (p *pool) waitAll() []time.Duration {
	timeout := time.After(60 * time.Second)
	for range p.n {
		select {
		case <-p.arrived:
		case <-timeout:
			log.Fatalf("only %d of %d watchers got the change within 60s", len(p.got), p.n)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got)
}

func (p *pool) close() {
	p.cancel()
	for _, c := range p.h2 {
		c.close()
	}
	p.wg.Wait()
}

type server struct {
	cmd  *exec.Cmd
	addr string
}

// fleet is the toolsvc processes.
type fleet []*server

// startReplicas starts n toolsvc processes in front of the upstream, with
// one config file and one state key for all.
func startReplicas(upstreamURL string, n int) fleet {
	dir, err := os.MkdirTemp("", "toolsvc-bench-")
	check(err)
	bin := *toolsvcBin
	if bin == "" {
		bin = filepath.Join(dir, "toolsvc")
		b := exec.Command("go", "build", "-o", bin, "./cmd/toolsvc")
		b.Stdout, b.Stderr = os.Stderr, os.Stderr
		check(b.Run())
	}
	cfg := filepath.Join(dir, "config.json")
	check(os.WriteFile(cfg, fmt.Appendf(nil,
		`{"refreshInterval": "1h", "mcpServers": {"bench": {"url": %q, "refreshDebounce": "1ms"}}}`, upstreamURL), 0o600))
	key := make([]byte, 32)
	_, err = rand.Read(key)
	check(err)
	keyFile := filepath.Join(dir, "state.key")
	check(os.WriteFile(keyFile, []byte(hex.EncodeToString(key)), 0o600))
	out := make(fleet, n)
	for i := range out {
		out[i] = startToolsvc(bin, cfg, keyFile)
	}
	tmpDir = dir
	return out
}

// tmpDir holds the config, the key and a built binary; stop removes it.
var tmpDir string

func startToolsvc(bin, cfg, keyFile string) *server {
	cmd := exec.Command(bin, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--state-key-file", keyFile)
	stderr, err := cmd.StderrPipe()
	check(err)
	check(cmd.Start())
	s := &server{cmd: cmd}
	sc := bufio.NewScanner(stderr)
	addrRE, readyRE := regexp.MustCompile(`msg=serving addr=(\S+)`), regexp.MustCompile(`msg=ready`)
	for sc.Scan() {
		if m := addrRE.FindStringSubmatch(sc.Text()); m != nil {
			s.addr = m[1]
		}
		if readyRE.MatchString(sc.Text()) {
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if s.addr == "" {
		log.Fatal("toolsvc did not start")
	}
	return s
}

func (rs fleet) stop() {
	for _, s := range rs {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, s := range rs {
		_ = s.cmd.Wait()
	}
	os.RemoveAll(tmpDir)
}

// rss is the replicas' resident sets in bytes, summed.
func (rs fleet) rss() int64 {
	var sum int64
	for _, s := range rs {
		sum += s.rss()
	}
	return sum
}

// cpu is the replicas' user+system CPU time, summed.
func (rs fleet) cpu() time.Duration {
	var sum time.Duration
	for _, c := range rs.cpuEach() {
		sum += c
	}
	return sum
}

func (rs fleet) cpuEach() []time.Duration {
	out := make([]time.Duration, len(rs))
	for i, s := range rs {
		out[i] = s.cpu()
	}
	return out
}

// rss is the server's resident set in bytes.
func (s *server) rss() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	check(err)
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cpu is the server's user+system CPU time.
func (s *server) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	check(err)
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)        // field 14
	st, _ := strconv.ParseInt(f[12], 10, 64)        // field 15
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// loadAvg is the 1-minute load average.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	check(err)
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}

// rawCodec hands the watchers each message's bytes undecoded (-decode=false).
type rawCodec struct{}

type rawMessage struct{ b mem.BufferSlice }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	data.Ref()
	v.(*rawMessage).b = data
	return nil
}

func (rawCodec) Name() string { return "proto" }

// selfCPU is this process's user+system CPU time (the watchers' side).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	check(syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// settle gives the server time to finish work and its GC a chance to run.
func settle() { time.Sleep(2 * time.Second) }

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}

func ms(d time.Duration) float64 { return round(float64(d) / float64(time.Millisecond)) }

func round(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
