package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// fleetFigures are the phase's headline keys.
var fleetFigures = []string{"fleet_listed_ms", "fleet_heap_kib_per_upstream", "fleet_rss_kib_per_upstream", "fleet_goroutines_per_upstream",
	"fleet_relisted_ms", "fleet_quiet_p99_ratio"}

var (
	fleetUps   = flag.Int("fleet-upstreams", 500, "HTTP upstreams in the fleet phase (one upstream process serving them all)")
	fleetTools = flag.Int("fleet-tools", 100, "tools per upstream in the fleet phase, echo included")
	fleetCalls = flag.Int("fleet-calls", 2000, "sequential calls to the quiet upstream measured before the fleet's list_changed")
	fleetWait  = flag.Duration("fleet-timeout", 2*time.Minute, "how long the fleet phase waits for all upstreams to be listed (at start, and after the list_changed)")
)

// benchFleet is the 500-upstream phase : one replica in front of
// -fleet-upstreams HTTP upstreams of -fleet-tools tools each (one bench
// upstream process serves them all, at /mcp/<i>), and a quiet HTTP
// upstream "q" of its own. It measures the time from toolsvc's start to
// every upstream connected and listed; the heap, resident memory and
// goroutines per idle upstream (the fleet replica against one with "q"
// alone); and, when every upstream announces tools/list_changed at once
// (the upstream process adds a tool to each), the time until all are
// listed again and the p99 of calls to "q" meanwhile against before.
// Progress is read from toolsvc's metrics (toolsvc_upstream_tools).
func benchFleet(ctx context.Context, e *env, r *results) error {
	defer stopAll()
	n, tools := *fleetUps, *fleetTools
	_, fleetURL, err := startUpstream(ctx, e, "http", "-servers", fmt.Sprint(n), "-tools", fmt.Sprint(tools-1))
	if err != nil {
		return err
	}
	base := strings.TrimSuffix(fleetURL, "/mcp")
	_, quietURL, err := startUpstream(ctx, e, "http")
	if err != nil {
		return err
	}
	quiet := fmt.Sprintf(`"q": {"url": %q}`, quietURL)

	var profEnv []string
	if *fleetProfile != "" {
		if err := os.MkdirAll(*fleetProfile, 0o755); err != nil {
			return err
		}
		profEnv = []string{"TOOLSVC_BENCH_PPROF=127.0.0.1:0", fmt.Sprintf("TOOLSVC_BENCH_MEMPROFILERATE=%d", *fleetProfileRate)}
	}

	// The replica with the quiet upstream alone: the baseline.
	idle0, err := fleetIdle(ctx, e, "fleet-base", quiet, nil, profEnv)
	if err != nil {
		return err
	}
	// Beyond the tools: n upstreams of one tool (fleetlean.go).
	if err := benchFleetLean(ctx, e, r, n, quiet, profEnv); err != nil {
		return err
	}

	servers := []string{quiet}
	for i := range n {
		servers = append(servers, fmt.Sprintf(`"u%03d": {"url": "%s/mcp/%d"}`, i, base, i))
	}
	admin, err := freePort()
	if err != nil {
		return err
	}
	adminAddr := fmt.Sprintf("127.0.0.1:%d", admin)
	// With -fleet-profile, the connect storm's profile starts as the
	// process does.
	var prof *fleetProf
	started := func(p *proc) error {
		if profEnv == nil {
			return nil
		}
		var err error
		if prof, err = newFleetProf(ctx, p); err == nil {
			prof.storm(ctx, "connect")
		}
		return err
	}
	t0 := time.Now()
	ts, err := startToolsvcHook(ctx, e, "fleet", fmt.Sprintf(`{"refreshInterval": "1h", "mcpServers": {%s}}`, strings.Join(servers, ", ")),
		[]string{"--admin-listen", adminAddr}, started, profEnv...)
	if err != nil {
		return err
	}
	defer ts.close()
	want := n*tools + 1 // and the quiet upstream's echo
	listed, err := waitFleetTools(ctx, adminAddr, want, *fleetWait)
	if err != nil {
		return err
	}
	ready := time.Since(t0)
	r.set("fleet_upstreams", n)
	r.set("fleet_tools", n*tools)
	if listed < want {
		r.skipMany(fleetFigures, "fleet", fmt.Sprintf("only %d of %d tools listed within -fleet-timeout", listed, want))
		r.row(fmt.Sprintf("fleet: %d upstreams × %d tools, all listed after start", n, tools),
			fmt.Sprintf("%d of %d tools after %s", listed, want, ready.Round(time.Millisecond)), "≤ 10 s")
		return nil
	}
	r.set("fleet_listed_ms", ms(ready))
	r.row(fmt.Sprintf("fleet: %d upstreams × %d tools, all listed after start", n, tools), ready.Round(time.Millisecond).String(), "≤ 10 s")

	// Idle: what each upstream costs once listed.
	time.Sleep(5 * time.Second)
	if prof != nil {
		if err := prof.wait(); err != nil {
			return err
		}
	}
	m, err := scrapeMetrics(ctx, adminAddr)
	if err != nil {
		return err
	}
	if prof != nil {
		if err := prof.idle(ctx, "fleet"); err != nil {
			return err
		}
		table, err := fleetBreakdown(prof.dir, n)
		if err != nil {
			return err
		}
		log.Printf("fleet: idle cost by site (also in %s):\n%s", filepath.Join(prof.dir, "fleet-idle.txt"), table)
	}
	idle := idleOf(m, ts.rssKiB())
	heapPer := (idle.heapKiB - idle0.heapKiB) / float64(n)
	rssPer := (idle.rssKiB - idle0.rssKiB) / float64(n)
	gorPer := (idle.goroutines - idle0.goroutines) / float64(n)
	r.set("fleet_heap_kib_per_upstream", round3(heapPer))
	r.set("fleet_rss_kib_per_upstream", round3(rssPer))
	r.set("fleet_goroutines_per_upstream", round3(gorPer))
	// Goroutine stacks are outside the heap: 8 KiB each at least.
	r.set("fleet_stack_kib_per_upstream", round3((idle.stackKiB-idle0.stackKiB)/float64(n)))
	r.row("fleet: per idle upstream (of its tools too): heap in use / RSS KiB, goroutines",
		fmt.Sprintf("%.0f / %.0f KiB, %.2f", heapPer, rssPer, gorPer), "≤ 64 KiB, ≤ 4")

	// Calls to the quiet upstream, before and during the fleet's
	// list_changed.
	echo := path{name: "quiet", call: toolsvcEcho(ts.client, "q")}
	if _, err := sequential(ctx, echo, *warmup); err != nil {
		return err
	}
	before, err := sequential(ctx, echo, *fleetCalls)
	if err != nil {
		return err
	}
	var during []time.Duration
	var callErr error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			t := time.Now()
			if err := echo.call(ctx); err != nil {
				callErr = err
				return
			}
			during = append(during, time.Since(t))
		}
	})
	if prof != nil {
		prof.storm(ctx, "relist")
	}
	t1 := time.Now()
	if err := postChanged(ctx, base); err != nil {
		close(stop)
		wg.Wait()
		return err
	}
	relisted, werr := waitFleetTools(ctx, adminAddr, want+n, *fleetWait)
	storm := time.Since(t1)
	close(stop)
	wg.Wait()
	if werr != nil {
		return werr
	}
	if prof != nil {
		if err := prof.wait(); err != nil {
			return err
		}
		// What the re-list allocated: this heap's alloc_space less the
		// idle one's (fleet-heap.pprof, taken before the list_changed).
		if err := prof.heap(ctx, "relisted"); err != nil {
			return err
		}
	}
	if callErr != nil {
		return fmt.Errorf("calls to the quiet upstream during the fleet's list_changed: %w", callErr)
	}
	p99b, p99d := pct(before, 99), pct(during, 99)
	r.set("fleet_quiet_p99_before_ms", ms(p99b))
	r.set("fleet_quiet_p99_during_ms", ms(p99d))
	r.set("fleet_quiet_calls_during", len(during))
	if p99b > 0 && len(during) > 0 {
		r.set("fleet_quiet_p99_ratio", round3(float64(p99d)/float64(p99b)))
	} else {
		r.skip("fleet_quiet_p99_ratio", "no call measured")
	}
	if relisted < want+n {
		r.skip("fleet_relisted_ms", "not every upstream re-listed within -fleet-timeout")
		r.row("fleet: all upstreams announce list_changed at once: re-listed",
			fmt.Sprintf("%d of %d new tools after %s", relisted-want, n, storm.Round(time.Millisecond)), "≤ 5 s")
	} else {
		r.set("fleet_relisted_ms", ms(storm))
		r.row("fleet: all upstreams announce list_changed at once: all re-listed after", storm.Round(time.Millisecond).String(), "≤ 5 s")
	}
	r.row("fleet: quiet upstream call p99 before / during (calls during)",
		fmt.Sprintf("%.2f / %.2f ms (%d)", ms(p99b), ms(p99d), len(during)), "≤ 2×")
	return nil
}

// fleetCost is what a replica holds once idle.
type fleetCost struct{ heapKiB, stackKiB, rssKiB, goroutines float64 }

func idleOf(m map[string]float64, rssKiB int64) fleetCost {
	return fleetCost{heapKiB: m["go_memstats_heap_inuse_bytes"] / 1024, stackKiB: m["go_memstats_stack_inuse_bytes"] / 1024,
		rssKiB: float64(rssKiB), goroutines: m["go_goroutines"]}
}

// fleetIdle starts a replica with servers, waits until it is idle and
// returns its cost.
func fleetIdle(ctx context.Context, e *env, name, servers string, args, env []string) (fleetCost, error) {
	admin, err := freePort()
	if err != nil {
		return fleetCost{}, err
	}
	adminAddr := fmt.Sprintf("127.0.0.1:%d", admin)
	ts, err := startToolsvcArgs(ctx, e, name, fmt.Sprintf(`{"refreshInterval": "1h", "mcpServers": {%s}}`, servers),
		append([]string{"--admin-listen", adminAddr}, args...), env...)
	if err != nil {
		return fleetCost{}, err
	}
	defer ts.close()
	if _, err := waitFleetTools(ctx, adminAddr, 1, *fleetWait); err != nil {
		return fleetCost{}, err
	}
	time.Sleep(5 * time.Second)
	m, err := scrapeMetrics(ctx, adminAddr)
	if err != nil {
		return fleetCost{}, err
	}
	if len(env) > 0 { // -fleet-profile
		prof, err := newFleetProf(ctx, ts.proc)
		if err != nil {
			return fleetCost{}, err
		}
		if err := prof.idle(ctx, "base"); err != nil {
			return fleetCost{}, err
		}
	}
	return idleOf(m, ts.rssKiB()), nil
}

// waitFleetTools polls toolsvc's metrics until its upstreams contribute
// want tools in all, or timeout passes; it returns the last count.
func waitFleetTools(ctx context.Context, admin string, want int, timeout time.Duration) (int, error) {
	end := time.Now().Add(timeout)
	got := 0
	for {
		// The one family it needs: a whole exposition of 500 upstreams'
		// series (formatted and gzipped) ten times a second was a fifth of
		// toolsvc's CPU during the re-list, competing with the calls it
		// measures (docs/benchmarks.md: "Calls during a refresh storm:
		// where they wait").
		m, err := scrapeMetrics(ctx, admin, "toolsvc_upstream_tools")
		if err != nil {
			return got, err
		}
		got = int(m["toolsvc_upstream_tools"])
		if got >= want || time.Now().After(end) {
			log.Printf("fleet: %d of %d tools listed", got, want)
			return got, nil
		}
		select {
		case <-ctx.Done():
			return got, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// scrapeMetrics reads a Prometheus text exposition (of the families
// named, if any: promhttp's name[] filter) and sums each metric over its
// labels.
func scrapeMetrics(ctx context.Context, admin string, names ...string) (map[string]float64, error) {
	q := url.Values{"name[]": names}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+"/metrics?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, ok := strings.Cut(line, " ")
		if i := strings.IndexByte(name, '{'); i >= 0 {
			// Labels may hold spaces: the value follows the closing brace.
			end := strings.LastIndexByte(line, '}')
			name, rest, ok = line[:i], strings.TrimSpace(line[end+1:]), end > 0
		}
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
		if err == nil {
			out[name] += v
		}
	}
	return out, sc.Err()
}

// postChanged makes every server of the fleet upstream add a tool.
func postChanged(ctx context.Context, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/changed", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return errors.New("POST /changed: " + resp.Status + ": " + string(b))
	}
	return nil
}
