// Command console measures the operator console's goals (issue 43) in a
// real browser against a toolsvc built without -race:
//
//   - render: the Catalog's first render with -tools generated tools (20,000),
//     from the navigation's start and from the page's mount, and the first
//     search keystroke typed right after it, end to end; each round on a
//     freshly started toolsvc (nothing built ahead by an earlier round);
//   - cpu: toolsvc's CPU time (every thread's, from /proc) over -calls tool
//     calls made by -callers goroutines, with 0 console pages open and with
//     each count of -pages; the figure is the CPU a page adds, per page, as a
//     percentage of the CPU of the calls with no page open. The counts are
//     interleaved within each round, so load from the rest of the machine hits
//     them alike.
//
// It prints a table and, last, one line of JSON. docs/console.md, "Figures",
// has the results and how to read them.
//
//	go run ./tests/bench/console             # both phases, 5 rounds
//	go run ./tests/bench/console -h          # flags
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

var (
	rounds     = flag.Int("rounds", 5, "rounds of each phase (figures: medians over rounds, with the spread)")
	tools      = flag.Int("tools", 20000, "generated tools of the render phase's upstream")
	calls      = flag.Int("calls", 20000, "tool calls per measurement of the cpu phase")
	callers    = flag.Int("callers", 8, "goroutines making the cpu phase's calls")
	pagesFlag  = flag.String("pages", "1,8", "open console pages in the cpu phase, besides 0 (at most 8: a principal's bound)")
	cpuTools   = flag.Int("cpu-tools", 1000, "generated tools of the cpu phase's upstream")
	query      = flag.String("query", "tool 01234", "what the render phase types into the search box right after the first render")
	query2     = flag.String("query2", "record verbose", "what it types once toolsvc has prepared the search index")
	prepared   = flag.Bool("prepared", true, "wait for toolsvc's \"search index prepared\" log line before the second search (false: a toolsvc from before it)")
	verbose    = flag.Bool("v", false, "log each render round's resource timeline")
	skip       = flag.String("skip", "", "comma-separated phases to leave out: render, cpu")
	toolsvcBin = flag.String("toolsvc", "", "toolsvc binary (default: go build ./cmd/toolsvc, without -race)")
)

func main() {
	flag.Parse()
	log.SetFlags(log.Ltime)
	log.SetPrefix("console-bench: ")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		log.Fatal(err)
	}
}

type env struct {
	root, tmp, toolsvc, upstream string
	browser                      context.Context // chromium, one tab per page
}

func run(ctx context.Context) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "console-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	e := &env{root: root, tmp: tmp, toolsvc: *toolsvcBin, upstream: filepath.Join(tmp, "upstream")}
	if e.toolsvc == "" {
		e.toolsvc = filepath.Join(tmp, "toolsvc")
		if err := goBuild(root, e.toolsvc, "./cmd/toolsvc"); err != nil {
			return err
		}
	}
	if err := goBuild(root, e.upstream, "./tests/bench/upstream"); err != nil {
		return err
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		return errors.New("chromium is not installed: run scripts/interop-deps.sh (it installs Debian's chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.WindowSize(1400, 900), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	if _, err := chromedp.Run(bctx, chromedp.Navigate("about:blank")); err != nil { // starts the browser
		return fmt.Errorf("starting chromium: %w", err)
	}
	e.browser = bctx
	defer func() { _ = chromedp.Cancel(bctx) }()

	res := map[string]any{}
	if la, ok := loadAverage(); ok {
		res["load_avg_1m_at_start"] = la
	}
	var table [][3]string
	skipped := func(p string) bool { return slices.Contains(strings.Split(*skip, ","), p) }
	if !skipped("render") {
		rows, err := renderPhase(ctx, e, res)
		if err != nil {
			return fmt.Errorf("render phase: %w", err)
		}
		table = append(table, rows...)
	}
	if !skipped("cpu") {
		rows, err := cpuPhase(ctx, e, res)
		if err != nil {
			return fmt.Errorf("cpu phase: %w", err)
		}
		table = append(table, rows...)
	}
	if la, ok := loadAverage(); ok {
		res["load_avg_1m_at_end"] = la
	}
	fmt.Printf("\n%-58s %-28s %s\n", "figure", "value", "goal")
	for _, r := range table {
		fmt.Printf("%-58s %-28s %s\n", r[0], r[1], r[2])
	}
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
	return nil
}

// renderPhase: each round starts toolsvc with an upstream of -tools tools,
// opens the Catalog in a new tab, and reads the page's own timings.
func renderPhase(ctx context.Context, e *env, res map[string]any) ([][3]string, error) {
	var nav, mount, key, key2, prep, lexical []float64
	ranks := map[string]int{}
	for i := range *rounds {
		ts, err := startToolsvc(ctx, e, fmt.Sprintf("render%d", i), *tools)
		if err != nil {
			return nil, err
		}
		r, err := renderRound(ctx, e, ts)
		ts.stop()
		if err != nil {
			return nil, err
		}
		log.Printf("render round %d: first render %.0f ms from navigation (%.0f ms from mount, %d rows), a search typed at once %.0f ms (ranked %q), "+
			"the index's lexical stage in %.0f ms, prepared in %.0f ms, a search after that %.0f ms", i+1, r.At, r.Mount, r.Rows, r.Key, r.Rank, r.Lexical, r.Prepare, r.Key2)
		nav, mount, key = append(nav, r.At), append(mount, r.Mount), append(key, r.Key)
		key2, prep, lexical = append(key2, r.Key2), append(prep, r.Prepare), append(lexical, r.Lexical)
		ranks[r.Rank]++
	}
	n := fmt.Sprint(*tools + 1)
	res["console_tools"] = *tools + 1
	res["console_first_render_ms"], res["console_first_render_ms_rounds"] = median(nav), nav
	res["console_first_render_mount_ms"], res["console_first_render_mount_ms_rounds"] = median(mount), mount
	res["console_first_keystroke_ms"], res["console_first_keystroke_ms_rounds"] = median(key), key
	res["console_keystroke_prepared_ms"], res["console_keystroke_prepared_ms_rounds"] = median(key2), key2
	res["console_index_prepare_ms"], res["console_index_prepare_ms_rounds"] = median(prep), prep
	res["console_index_lexical_stage_ms"], res["console_index_lexical_stage_ms_rounds"] = median(lexical), lexical
	res["console_first_keystroke_rankings"] = ranks
	return [][3]string{
		{"Catalog first render, " + n + " tools (ms, from navigation)", spread(nav), "≤ 500"},
		{"Catalog first render, " + n + " tools (ms, from mount)", spread(mount), ""},
		{"a search typed right after it (ms, end to end)", spread(key), ""},
		{"the search index's lexical stage (ms, toolsvc's log; 0: not staged)", spread(lexical), ""},
		{"the search index prepared (ms, toolsvc's log)", spread(prep), ""},
		{"a search typed once it is prepared (ms, end to end)", spread(key2), "≤ 100"},
	}, nil
}

type renderResult struct {
	At    float64 `json:"at"`
	Mount float64 `json:"mount"`
	Rows  int     `json:"rows"`
	Key   float64 `json:"key"`
	Key2  float64 `json:"key2"`
	// Rank is the ranking the first search's answer said it used
	// ("lexical (stage)": the index's lexical stage; "" from a toolsvc
	// before rankings were reported).
	Rank    string  `json:"rank"`
	Prepare float64 `json:"-"` // the index's preparation, as toolsvc logged it
	// Lexical is its lexical stage (the time until a search is answered,
	// lexically), as toolsvc logged it (0: a toolsvc before staging).
	Lexical float64 `json:"-"`
}

var lexicalStageRE = regexp.MustCompile(`msg="search index prepared" .* lexical_stage=(\S+)`)

var gcLineRE = regexp.MustCompile(`(?m)^gc \d+ @.*$`)

var preparedRE = regexp.MustCompile(`msg="search index prepared" .* took=(\S+)`)

func renderRound(ctx context.Context, e *env, ts *toolsvcProc) (renderResult, error) {
	tab, cancel := chromedp.NewContext(e.browser)
	defer cancel()
	tctx, cancelT := context.WithTimeout(tab, 3*time.Minute)
	defer cancelT()
	var r renderResult
	if _, err := chromedp.Run(tctx, chromedp.Navigate("http://"+ts.admin+"/ui/#/catalog")); err != nil {
		return r, err
	}
	if err := poll(tctx, `window.__console && window.__console.firstRenderAt !== null`); err != nil {
		return r, fmt.Errorf("waiting for the first render: %w", err)
	}
	// The query typed at once, as a paste: one input event, one search.
	typed := fmt.Sprintf(`(() => { const e = document.getElementById('search'); e.value = %q;
		e.dispatchEvent(new Event('input', {bubbles: true})); return true })()`, *query)
	if _, err := chromedp.Run(tctx, chromedp.Evaluate[bool](typed)); err != nil {
		return r, err
	}
	if err := poll(tctx, `window.__console.keystrokes.length > 0 || !!document.querySelector('#catalog-error')`); err != nil {
		return r, fmt.Errorf("waiting for the search: %w", err)
	}
	// Then, once toolsvc says the index is prepared (core.PrepareSearch's
	// log line), another query: what typing costs from then on.
	// (-prepared=false, for a toolsvc from before core.PrepareSearch: the
	// first search built the index, so the second goes at once.)
	if err := waitFor(ctx, 2*time.Minute, func() bool {
		b, _ := os.ReadFile(ts.logPath)
		return !*prepared || bytes.Contains(b, []byte(`msg="search index prepared"`))
	}); err != nil {
		return r, fmt.Errorf("waiting for the search index: %w", err)
	}
	typed = fmt.Sprintf(`(() => { const e = document.getElementById('search'); e.value = %q;
		e.dispatchEvent(new Event('input', {bubbles: true})); return true })()`, *query2)
	if _, err := chromedp.Run(tctx, chromedp.Evaluate[bool](typed)); err != nil {
		return r, err
	}
	if err := poll(tctx, `window.__console.keystrokes.length > 1 || !!document.querySelector('#catalog-error')`); err != nil {
		return r, fmt.Errorf("waiting for the second search: %w", err)
	}
	v, err := chromedp.Run(tctx, chromedp.Evaluate[renderResult](`({at: window.__console.firstRenderAt, mount: window.__console.firstRender,
		rows: window.__console.firstRenderRows, key: window.__console.keystrokes[0] || -1, key2: window.__console.keystrokes[1] || -1,
		rank: (window.__console.rankings || [])[0] || ''})`))
	if err != nil {
		return r, err
	}
	b0, _ := os.ReadFile(ts.logPath)
	b := b0
	if m := preparedRE.FindSubmatch(b); m != nil {
		d, _ := time.ParseDuration(string(m[1]))
		v.Prepare = float64(d) / 1e6
	}
	if m := lexicalStageRE.FindSubmatch(b); m != nil {
		d, _ := time.ParseDuration(string(m[1]))
		v.Lexical = float64(d) / 1e6
	}
	if *verbose {
		b, _ := chromedp.Run(tctx, chromedp.Evaluate[string](`JSON.stringify(performance.getEntries().map(e => [e.name.replace(location.origin, ''), Math.round(e.startTime), Math.round(e.responseStart || 0), Math.round(e.responseEnd || e.duration), e.transferSize || 0, (e.serverTiming || []).map(s => s.duration)[0] || 0]))`))
		log.Printf("timeline (name, start, first byte, end, bytes, the handler's own ms from its Server-Timing): %s", b)
		// The main thread's long frames (over 50 ms): their script time by
		// invoker, and when rendering and layout started in them.
		b, _ = chromedp.Run(tctx, chromedp.Evaluate[string](`JSON.stringify(performance.getEntriesByType('long-animation-frame').map(e => ({start: Math.round(e.startTime), ms: Math.round(e.duration),
			blocking: Math.round(e.blockingDuration), render: Math.round(e.renderStart - e.startTime), layout: Math.round(e.styleAndLayoutStart - e.startTime),
			scripts: e.scripts.map(s => s.invoker + ' ' + Math.round(s.duration) + ' ms')})))`))
		log.Printf("long frames: %s", b)
		// With GODEBUG=gctrace=1 in the environment, toolsvc's collections
		// (each cycle's stop-the-world and mark times) during the round.
		log.Printf("%d GC cycles in toolsvc's log (GODEBUG=gctrace=1):", len(gcLineRE.FindAll(b0, -1)))
		for _, l := range gcLineRE.FindAll(b0, -1) {
			log.Printf("  %s", l)
		}
	}
	if v.Key < 0 || v.Key2 < 0 {
		return v, errors.New("the search failed: " + pageText(tctx, "#catalog-error"))
	}
	if v.Rows != *tools+1 {
		return v, fmt.Errorf("the first render listed %d tools, want %d", v.Rows, *tools+1)
	}
	return v, nil
}

// cpuPhase: one toolsvc; per round, for 0 pages and each -pages count in
// turn (rotated), open that many Upstreams pages, wait until each has its
// first push, make -calls calls and read toolsvc's CPU time.
func cpuPhase(ctx context.Context, e *env, res map[string]any) ([][3]string, error) {
	counts := []int{0}
	for _, f := range strings.Split(*pagesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 8 {
			return nil, fmt.Errorf("-pages: %q is not a count from 1 to 8", f)
		}
		counts = append(counts, n)
	}
	ts, err := startToolsvc(ctx, e, "cpu", *cpuTools)
	if err != nil {
		return nil, err
	}
	defer ts.stop()
	// Warm up: the connection, the upstream's session, the page's assets.
	if _, err := ts.callMany(ctx, 500, *callers); err != nil {
		return nil, err
	}
	cpu := map[int][]float64{} // pages → CPU seconds per measurement
	secs := map[int][]float64{}
	for i := range *rounds {
		order := slices.Clone(counts)
		for j := 0; j < i%len(order); j++ {
			order = append(order[1:], order[0])
		}
		for _, n := range order {
			closePages, err := openPages(ctx, e, ts, n)
			if err != nil {
				return nil, err
			}
			c0, err := cpuTime(ts.pid())
			if err != nil {
				closePages()
				return nil, err
			}
			wall, err := ts.callMany(ctx, *calls, *callers)
			c1, err2 := cpuTime(ts.pid())
			closePages()
			if err = errors.Join(err, err2); err != nil {
				return nil, err
			}
			cpu[n] = append(cpu[n], (c1 - c0).Seconds())
			secs[n] = append(secs[n], wall.Seconds())
			log.Printf("cpu round %d: %d pages: %.3f s of toolsvc CPU for %d calls in %.2f s", i+1, n, (c1 - c0).Seconds(), *calls, wall.Seconds())
		}
	}
	var rows [][3]string
	base := median(cpu[0])
	res["console_cpu_calls"] = *calls
	res["console_cpu_s_0_pages"], res["console_cpu_s_0_pages_rounds"] = base, cpu[0]
	rows = append(rows, [3]string{fmt.Sprintf("toolsvc CPU for %d calls, no page open (s)", *calls), spread(cpu[0]), ""})
	for _, n := range counts[1:] {
		// Per round: (CPU with n pages − CPU with none) / n / CPU with none.
		var pct []float64
		for i := range cpu[n] {
			pct = append(pct, round3(100*(cpu[n][i]-cpu[0][i])/float64(n)/cpu[0][i]))
		}
		k := fmt.Sprintf("console_cpu_per_page_pct_%d_pages", n)
		res[k], res[k+"_rounds"] = median(pct), pct
		res[fmt.Sprintf("console_cpu_s_%d_pages", n)] = median(cpu[n])
		rows = append(rows, [3]string{fmt.Sprintf("toolsvc CPU, %d pages open (s)", n), spread(cpu[n]), ""},
			[3]string{fmt.Sprintf("CPU per open page, %d open (%% of the calls' CPU)", n), spread(pct), "≤ 2"})
	}
	return rows, nil
}

// openPages opens n tabs on the Upstreams page and waits until each has
// its event stream's first push.
func openPages(ctx context.Context, e *env, ts *toolsvcProc, n int) (func(), error) {
	var cancels []context.CancelFunc
	closeAll := func() {
		for _, c := range cancels {
			c()
		}
	}
	for range n {
		// Each page in its own browser context: a browser opens at most 6
		// connections to one host, and each page's event stream holds one.
		tab, cancel := chromedp.NewContext(e.browser, chromedp.WithNewBrowserContext())
		cancels = append(cancels, cancel)
		tctx, c := context.WithTimeout(tab, time.Minute)
		_, err := chromedp.Run(tctx, chromedp.Navigate("http://"+ts.admin+"/ui/"))
		if err == nil {
			err = poll(tctx, `window.__console && window.__console.events > 0 && document.querySelectorAll('#upstreams tr[data-state="ready"]').length === 1`)
		}
		c()
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("opening a page: %w", err)
		}
	}
	return closeAll, nil
}

func poll(ctx context.Context, expr string) error {
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(5*time.Millisecond)))
	return err
}

func pageText(ctx context.Context, sel string) string {
	v, _ := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ''`, sel)))
	return v
}

// toolsvcProc is a toolsvc serving one stdio upstream ("s").
type toolsvcProc struct {
	cmd     *exec.Cmd
	logPath string
	admin   string
	conn    *grpc.ClientConn
	client  toolsvcv1.ToolServiceClient
}

func startToolsvc(ctx context.Context, e *env, name string, n int) (*toolsvcProc, error) {
	cfg := filepath.Join(e.tmp, name+".json")
	addrs := filepath.Join(e.tmp, name+".addrs")
	conf := fmt.Sprintf(`{"refreshInterval": "1h", "mcpServers": {"s": {"command": %q, "args": ["-mode", "stdio", "-tools", "%d"]}}}`, e.upstream, n)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(e.tmp, name+".log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(e.toolsvc, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--addr-file", addrs, "--log-level", "info")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ts := &toolsvcProc{cmd: cmd, logPath: logf.Name()}
	fail := func(err error) (*toolsvcProc, error) {
		ts.stop()
		b, _ := os.ReadFile(logf.Name())
		return nil, fmt.Errorf("%w; its log:\n%s", err, tail(b))
	}
	var a struct{ GRPC, Admin string }
	if err := waitFor(ctx, time.Minute, func() bool {
		b, err := os.ReadFile(addrs)
		return err == nil && json.Unmarshal(b, &a) == nil
	}); err != nil {
		return fail(fmt.Errorf("toolsvc's --addr-file: %w", err))
	}
	ts.admin = a.Admin
	if ts.conn, err = grpc.NewClient(a.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		return fail(err)
	}
	ts.client = toolsvcv1.NewToolServiceClient(ts.conn)
	if err := waitFor(ctx, 3*time.Minute, func() bool {
		r, err := ts.client.ListServers(ctx, &toolsvcv1.ListServersRequest{})
		return err == nil && len(r.GetServers()) == 1 && int(r.GetServers()[0].GetToolCount()) == n+1
	}); err != nil {
		return fail(fmt.Errorf("waiting for %d tools: %w", n+1, err))
	}
	return ts, nil
}

func (t *toolsvcProc) pid() int { return t.cmd.Process.Pid }

func (t *toolsvcProc) stop() {
	if t.conn != nil {
		t.conn.Close()
	}
	_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = t.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// callMany makes n calls of s__echo from k goroutines; the wall time.
func (t *toolsvcProc) callMany(ctx context.Context, n, k int) (time.Duration, error) {
	start := time.Now()
	var next sync.WaitGroup
	var mu sync.Mutex
	var first error
	jobs := make(chan struct{}, n)
	for range n {
		jobs <- struct{}{}
	}
	close(jobs)
	for range k {
		next.Go(func() {
			req := &toolsvcv1.CallToolRequest{Name: "s__echo", ArgumentsJson: `{"text": "hello"}`}
			for range jobs {
				res, err := t.client.CallTool(ctx, req)
				if err == nil && res.GetIsError() {
					err = errors.New("the call's result is an error")
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	next.Wait()
	return time.Since(start), first
}

// cpuTime is the process's CPU time, every thread's: the sum of
// /proc/PID/task/*/schedstat's first field (nanoseconds on the CPU), finer
// than /proc/PID/stat's clock ticks (10 ms). Go's threads live as long as
// the process, so none takes its time away by exiting.
func cpuTime(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("/proc/%d/task/*/schedstat: %v", pid, err)
	}
	var sum int64
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that just exited
		}
		fields := strings.Fields(string(b))
		if len(fields) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q", f, b)
		}
		sum += ns
	}
	return time.Duration(sum), nil
}

func waitFor(ctx context.Context, d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
}

func goBuild(root, out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", pkg, err)
	}
	return nil
}

func loadAverage() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f, err == nil
}

func tail(b []byte) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	var sb strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(bytes.Join(lines, []byte("\n"))))
	for sc.Scan() {
		sb.WriteString("  " + sc.Text() + "\n")
	}
	return sb.String()
}

func median(f []float64) float64 {
	if len(f) == 0 {
		return 0
	}
	s := slices.Clone(f)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return round3(s[len(s)/2])
	}
	return round3((s[len(s)/2-1] + s[len(s)/2]) / 2)
}

// spread is "median (min–max)".
func spread(f []float64) string {
	if len(f) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3g (%.3g–%.3g)", median(f), slices.Min(f), slices.Max(f))
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
