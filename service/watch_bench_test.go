package service

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/proccpu"
)

// BenchmarkWatchFanout: one tool change delivered to 10,000 watchers of
// the whole catalog (1,000 with -short) over 16 gRPC connections (bufconn),
// side by side in one run: tools-only watchers, then watchers with
// include_resources and include_prompts, each population opened, measured
// idle, sent fanoutChanges changes and closed in turn within every
// iteration (which goes first alternates). Metrics: p99 delivery latency
// in ms (from the catalog's publication of the change to each watcher's
// receipt; the median of the changes' p99s), bytes per idle watcher (Go heap and stacks after GC, per
// watcher opened: server and client side, both in this process), and
// rich/tools ratios. The watchers do not decode (discardCodec).
// docs/benchmarks.md records runs.
//
//	go test -run '^$' -bench WatchFanout -benchtime 6x ./service
func BenchmarkWatchFanout(b *testing.B) {
	watchers := 10000
	if testing.Short() {
		watchers = 1000
	}
	f := benchFixtureWith(b, 50, 20)
	conns := benchConns(b, f, 16)
	pops := []struct {
		name string
		req  *toolsvcv1.WatchCatalogRequest
	}{{"tools", &toolsvcv1.WatchCatalogRequest{}}, {"rich", &toolsvcv1.WatchCatalogRequest{IncludeResources: true, IncludePrompts: true}}}
	p99s := make([][]time.Duration, len(pops))
	perWatcher := make([][]float64, len(pops))
	change, round := 0, 0
	for b.Loop() {
		for j := range pops {
			i := (j + round) % len(pops) // which goes first alternates
			r := runFanout(b, f, conns, pops[i].req, watchers, &change)
			p99s[i] = append(p99s[i], r.p99s...)
			perWatcher[i] = append(perWatcher[i], r.bytesPerWatcher)
		}
		round++
	}
	for i, p := range pops {
		b.ReportMetric(float64(median(p99s[i]))/1e6, p.name+"-p99-ms")
		b.ReportMetric(medianF(perWatcher[i]), p.name+"-B/watcher")
	}
	b.ReportMetric(float64(median(p99s[1]))/float64(median(p99s[0])), "rich/tools-p99")
	b.ReportMetric(medianF(perWatcher[1])/medianF(perWatcher[0]), "rich/tools-B")
	b.ReportMetric(0, "ns/op") // an iteration opens and closes 2 × watchers streams: not a figure
}

// BenchmarkWatchFanoutChain: what the gRPC server's interceptor chain
// costs a fan-out. One tool change to 10,000 tools-only
// watchers (1,000 with -short) over 16 bufconn connections, side by side
// in one run: a server with only the service's own options ("bare", as
// BenchmarkWatchFanout) and one built by NewGRPCServer with a metrics
// registry ("chain": metrics, logging, recovery, auth, as package server
// serves), alternating within every iteration. Metrics: p99 delivery
// latency (as BenchmarkWatchFanout) and the process's CPU time per change
// (server and clients, both in this process), and chain/bare ratios.
//
//	go test -run '^$' -bench WatchFanoutChain -benchtime 4x ./service
func BenchmarkWatchFanoutChain(b *testing.B) {
	watchers := 10000
	if testing.Short() {
		watchers = 1000
	}
	f := benchFixtureWith(b, 50, 0)
	gs, _ := NewGRPCServer(f.svc, GRPCOptions{Registry: prometheus.NewRegistry()})
	chain := make([]toolsvcv1.ToolServiceClient, 16)
	for i := range chain {
		chain[i] = toolsvcv1.NewToolServiceClient(serveBufconn(b, gs))
	}
	servers := []struct {
		name  string
		conns []toolsvcv1.ToolServiceClient
	}{{"bare", benchConns(b, f, 16)}, {"chain", chain}}
	p99s := make([][]time.Duration, len(servers))
	cpus := make([][]time.Duration, len(servers))
	change, round := 0, 0
	for b.Loop() {
		for j := range servers {
			i := (j + round) % len(servers)
			r := runFanout(b, f, servers[i].conns, &toolsvcv1.WatchCatalogRequest{}, watchers, &change)
			p99s[i] = append(p99s[i], r.p99s...)
			cpus[i] = append(cpus[i], r.cpuPerChange)
		}
		round++
	}
	for i, s := range servers {
		b.ReportMetric(float64(median(p99s[i]))/1e6, s.name+"-p99-ms")
		b.ReportMetric(float64(median(cpus[i]))/1e6, s.name+"-cpu-ms/change")
	}
	b.ReportMetric(float64(median(p99s[1]))/float64(median(p99s[0])), "chain/bare-p99")
	b.ReportMetric(float64(median(cpus[1]))/float64(median(cpus[0])), "chain/bare-cpu")
	b.ReportMetric(0, "ns/op")
}

// fanoutChanges is how many tool changes each population gets per
// iteration.
const fanoutChanges = 5

// benchConns serves f's service on n more in-memory connections.
func benchConns(b *testing.B, f *watchFixture, n int) []toolsvcv1.ToolServiceClient {
	gs := grpc.NewServer(f.svc.ServerOptions()...)
	f.svc.Register(gs)
	out := make([]toolsvcv1.ToolServiceClient, n)
	for i := range out {
		out[i] = toolsvcv1.NewToolServiceClient(serveBufconn(b, gs))
	}
	return out
}

type fanoutResult struct {
	p99s            []time.Duration // one per change
	bytesPerWatcher float64
	cpuPerChange    time.Duration // this process's CPU time (server and clients)
}

// runFanout opens n watches of req over conns, measures the memory they
// hold idle, makes fanoutChanges tool changes (counting in *change), each
// delivered to all of them, and closes them.
func runFanout(b *testing.B, f *watchFixture, conns []toolsvcv1.ToolServiceClient, req *toolsvcv1.WatchCatalogRequest, n int, change *int) fanoutResult {
	ctx, cancel := context.WithCancel(context.Background())
	before := liveBytes()
	recv := make([]time.Time, n)
	got := make(chan struct{}, n)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		waitStreams(b, f, 0)
	}()
	b.StopTimer()
	openWatchers(b, ctx, conns, req, recv, got, &wg)
	res := fanoutResult{bytesPerWatcher: float64(liveBytes()-before) / float64(n)}
	b.StartTimer()
	lat := make([]time.Duration, n)
	for range fanoutChanges {
		*change++
		cpu0 := proccpu.Used()
		f.servers["s"].srv.AddTool(&mcp.Tool{Name: "tool_00000", Description: fmt.Sprint("change ", *change), InputSchema: benchSchema}, noop)
		for range n {
			<-got
		}
		res.cpuPerChange += (proccpu.Used() - cpu0) / fanoutChanges
		created := f.bridge.Catalog().Current().Created
		for i, t := range recv {
			lat[i] = t.Sub(created)
		}
		slices.Sort(lat)
		res.p99s = append(res.p99s, lat[n*99/100])
	}
	return res
}

// openWatchers opens len(recv) watches, each with a reader that notes when
// it received an event in recv and signals got.
func openWatchers(b *testing.B, ctx context.Context, conns []toolsvcv1.ToolServiceClient, req *toolsvcv1.WatchCatalogRequest,
	recv []time.Time, got chan<- struct{}, wg *sync.WaitGroup) {
	for i := range recv {
		st, err := conns[i%len(conns)].WatchCatalog(ctx, req, grpc.ForceCodecV2(discardCodec{}))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := st.Recv(); err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if _, err := st.Recv(); err != nil {
					return
				}
				recv[i] = time.Now()
				got <- struct{}{} // no progress events: the interval is 30 s
			}
		}()
	}
}

// liveBytes is the Go heap and stacks in use after a collection.
func liveBytes() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

func median(ds []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	return s[len(s)/2]
}

func medianF(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}
