package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	pyPeers   = flag.Bool("py-peers", true, "with -peers, also measure the Python peer gateways: IBM ContextForge (1 worker and -contextforge-workers) and the Python mcp-proxy (scripts/pyenv.sh bench/contextforge, bench/mcp-proxy on first use)")
	cfWorkers = flag.Int("contextforge-workers", 0, "ContextForge's multi-worker run: worker processes (0: its recommended count, 2 × cores + 1, at most 16, as its run-gunicorn.sh computes it)")
	cfEnv     = flag.String("contextforge-env", "", "extra environment for ContextForge and its translate process, space-separated K=V (e.g. USE_STATEFUL_SESSIONS=true)")
)

// peerKeys are the JSON key prefixes of every peer the peers phase knows.
var peerKeys = []string{"mcp_proxy", "supergateway", "mcp_proxy_py", "contextforge_1w", "contextforge_nw"}

// skipPeerFigures marks every peer's headline figures as not measured.
func skipPeerFigures(r *results, why string) {
	var keys []string
	for _, p := range peerKeys {
		for _, f := range peerFigures {
			keys = append(keys, p+f)
		}
	}
	r.skipMany(keys, "peer figures", why)
}

// contextforgeWorkers is the worker count of ContextForge's multi-worker
// run: -contextforge-workers, or what its run-gunicorn.sh picks by default
// ("auto": 2 × CPU cores + 1, capped at 16).
func contextforgeWorkers() int {
	if *cfWorkers > 0 {
		return *cfWorkers
	}
	return min(2*runtime.NumCPU()+1, 16)
}

// pythonPeerSpecs are the Python peer gateways, each installed into its own
// venv by scripts/pyenv.sh (pinned, under .venv/bench/); one that cannot be
// installed here is returned marked unavailable, with the reason.
func pythonPeerSpecs(ctx context.Context, e *env) []peerSpec {
	n := contextforgeWorkers()
	specs := []peerSpec{
		{name: "mcp-proxy-py", key: "mcp_proxy_py", start: startPyMCPProxy},
		{name: "contextforge-1w", key: "contextforge_1w", start: func(ctx context.Context, e *env, upArgs []string) (*peerConn, error) {
			return startContextForge(ctx, e, 1, upArgs)
		}},
		{name: fmt.Sprintf("contextforge-%dw", n), key: "contextforge_nw", start: func(ctx context.Context, e *env, upArgs []string) (*peerConn, error) {
			return startContextForge(ctx, e, n, upArgs)
		}},
	}
	if !*pyPeers {
		for i := range specs {
			specs[i].unavailable = "not measured: -py-peers=false"
		}
		return specs
	}
	venvs := map[string]string{"mcp_proxy_py": "bench/mcp-proxy", "contextforge_1w": "bench/contextforge", "contextforge_nw": "bench/contextforge"}
	why := map[string]string{}
	for i, sp := range specs {
		v := venvs[sp.key]
		if _, done := why[v]; !done {
			why[v] = ensureVenv(ctx, e, v)
		}
		if why[v] != "" {
			specs[i].unavailable = "unavailable: " + why[v]
		}
	}
	return specs
}

// ensureVenv runs scripts/pyenv.sh NAME and returns "" or why it failed
// (the script's last line on stderr).
func ensureVenv(ctx context.Context, e *env, name string) string {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(e.root, "scripts", "pyenv.sh"), name)
	cmd.Dir = e.root
	cmd.Stdout = os.Stderr
	cmd.Stderr = io.MultiWriter(os.Stderr, &stderr)
	if err := cmd.Run(); err != nil {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		return fmt.Sprintf("scripts/pyenv.sh %s: %v: %s", name, err, lines[len(lines)-1])
	}
	return ""
}

// startPyMCPProxy runs the Python mcp-proxy (stdio → streamable HTTP on
// /mcp) in front of its own stdio child of the upstream. Its log level is
// WARNING: at the default INFO the MCP SDK logs a line per request
// (supergateway runs with --logLevel none for the same reason).
func startPyMCPProxy(ctx context.Context, e *env, upArgs []string) (*peerConn, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(e.root, ".venv", "bench", "mcp-proxy", "bin", "mcp-proxy")
	p, err := start("mcp-proxy-py", nil, e.root, append([]string{bin, "--host", "127.0.0.1", "--port", fmt.Sprint(port),
		"--log-level", "WARNING", "--", e.upstream, "-mode", "stdio"}, upArgs...)...)
	if err != nil {
		return nil, err
	}
	c := &peerConn{echo: "echo", procs: []*proc{p}}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := waitPort(ctx, p, addr, 60*time.Second); err != nil {
		c.close()
		return nil, err
	}
	for range 50 {
		if c.s, err = connectMCP(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", MaxRetries: -1, HTTPClient: peerHTTP}); err == nil {
			return c, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.close()
	return nil, fmt.Errorf("mcp-proxy-py: connect: %w; output:\n%s", err, p.output())
}

// cfAdmin is ContextForge's bootstrap admin (its default).
const cfAdmin = "admin@example.com"

// startContextForge runs IBM ContextForge with its embedded SQLite database
// (a new file per start) and `workers` worker processes, in front of its own
// stdio child of the upstream, the documented way: mcpgateway.translate
// exposes the stdio server over streamable HTTP, and the gateway registers
// that URL through its REST API (POST /gateways, bearer token from
// mcpgateway.utils.create_jwt_token). Clients use the gateway's /mcp
// (streamable HTTP, every registered tool; the upstream's echo is
// "bench-echo").
//
// Settings that differ from its defaults, and why: secrets are generated
// per start (it refuses to start without strong ones); SSRF_ALLOW_LOCALHOST
// (the upstream is on loopback, blocked by default); RATE_LIMITING_ENABLED
// false (the default allows 100 MCP requests a minute); the admin UI off
// (not used). Authentication stays on, as shipped: every request carries a
// JWT that the gateway verifies.
func startContextForge(ctx context.Context, e *env, workers int, upArgs []string) (*peerConn, error) {
	venv := filepath.Join(e.root, ".venv", "bench", "contextforge", "bin")
	dir, err := os.MkdirTemp(e.tmp, "contextforge-")
	if err != nil {
		return nil, err
	}
	jwt := randomHex(32)
	env := []string{
		"JWT_SECRET_KEY=" + jwt,
		"AUTH_ENCRYPTION_SECRET=" + randomHex(32),
		"PLATFORM_ADMIN_EMAIL=" + cfAdmin,
		"PLATFORM_ADMIN_PASSWORD=Bench-" + randomHex(12),
		"DEFAULT_USER_PASSWORD=Bench-" + randomHex(12),
		"BASIC_AUTH_PASSWORD=Bench-" + randomHex(12),
		"DATABASE_URL=sqlite:///" + filepath.Join(dir, "mcp.db"),
		"MCPGATEWAY_UI_ENABLED=false",
		"MCPGATEWAY_ADMIN_API_ENABLED=true",
		"SSRF_ALLOW_LOCALHOST=true",
		"RATE_LIMITING_ENABLED=false",
	}
	env = append(env, strings.Fields(*cfEnv)...)
	name := fmt.Sprintf("contextforge-%dw", workers)
	tport, err := freePort()
	if err != nil {
		return nil, err
	}
	stdio := strings.Join(append([]string{e.upstream, "-mode", "stdio"}, upArgs...), " ")
	tr, err := start(name+" translate", env, dir, filepath.Join(venv, "python"), "-m", "mcpgateway.translate",
		"--stdio", stdio, "--expose-streamable-http", "--host", "127.0.0.1", "--port", fmt.Sprint(tport), "--logLevel", "warning")
	if err != nil {
		return nil, err
	}
	c := &peerConn{echo: "bench-echo", procs: []*proc{tr}}
	fail := func(err error) (*peerConn, error) {
		c.close()
		return nil, err
	}
	if err := waitPort(ctx, tr, fmt.Sprintf("127.0.0.1:%d", tport), 2*time.Minute); err != nil {
		return fail(err)
	}
	gport, err := freePort()
	if err != nil {
		return fail(err)
	}
	gw, err := start(name, env, dir, filepath.Join(venv, "mcpgateway"), "--host", "127.0.0.1", "--port", fmt.Sprint(gport), "--workers", fmt.Sprint(workers))
	if err != nil {
		return fail(err)
	}
	c.procs = append(c.procs, gw)
	base := fmt.Sprintf("http://127.0.0.1:%d", gport)
	if err := waitHealthy(ctx, gw, base+"/health", 3*time.Minute); err != nil {
		return fail(err)
	}
	tok := exec.CommandContext(ctx, filepath.Join(venv, "python"), "-m", "mcpgateway.utils.create_jwt_token",
		"--username", cfAdmin, "--exp", "1440", "--secret", jwt)
	tok.Env, tok.Dir = append(os.Environ(), env...), dir
	out, err := tok.Output()
	if err != nil {
		return fail(fmt.Errorf("%s: create_jwt_token: %w", name, err))
	}
	token := lastLine(string(out))
	hc := &http.Client{Transport: bearer{base: peerHTTP.Transport, token: token}}
	reg, _ := json.Marshal(map[string]string{"name": "bench", "url": fmt.Sprintf("http://127.0.0.1:%d/mcp", tport), "transport": "STREAMABLEHTTP"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/gateways", bytes.NewReader(reg))
	if err != nil {
		return fail(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fail(fmt.Errorf("%s: POST /gateways: %w", name, err))
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fail(fmt.Errorf("%s: POST /gateways: %s: %.300s", name, resp.Status, body))
	}
	if c.s, err = connectMCP(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1, HTTPClient: hc}); err != nil {
		return fail(fmt.Errorf("%s: connect: %w; output:\n%s", name, err, gw.output()))
	}
	return c, nil
}

// bearer adds an Authorization header to every request.
type bearer struct {
	base  http.RoundTripper
	token string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// waitHealthy polls url until it answers 200.
func waitHealthy(ctx context.Context, p *proc, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited; output:\n%s", p.name, p.output())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s not healthy after %s; output:\n%s", p.name, url, timeout, p.output())
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// listAll lists every tool on a session, every page, and returns how many.
func listAll(ctx context.Context, s *mcp.ClientSession) (int, error) {
	n, cursor := 0, ""
	for {
		res, err := s.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return n, err
		}
		n += len(res.Tools)
		if cursor = res.NextCursor; cursor == "" {
			return n, nil
		}
	}
}

// benchPeerCatalog is the catalog figure: the largest catalog (of
// -peer-catalog-sizes, largest first) each gateway serves in full in
// tools/list, each in front of its own stdio child of the upstream with that
// many tools, and how long a full listing takes next to toolsvc's MCP front
// door listing the same size (interleaved: -rounds listings of each, in
// turn). One gateway runs at a time, beside the toolsvc reference.
func benchPeerCatalog(ctx context.Context, e *env, r *results, specs []peerSpec) error {
	defer stopAll()
	var sizes []int
	for _, f := range strings.Split(*peerCatalog, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-peer-catalog-sizes: %q is not a size", f)
		}
		sizes = append(sizes, n)
	}
	// The reference: toolsvc's MCP front door (tools/list as the peers
	// serve it), at the largest size it lists in full.
	var ref *mcp.ClientSession
	refN := 0
	var refFail []string
	for _, n := range sizes {
		t0 := time.Now()
		s, err := startToolsvcFront(ctx, e, n)
		if err == nil {
			var k int
			lctx, cancel := context.WithTimeout(ctx, *peerListWait)
			k, err = listAll(lctx, s)
			cancel()
			if err == nil && k != n {
				err = fmt.Errorf("listed %d of %d tools", k, n)
			}
			if err == nil {
				ref, refN = s, n
				r.set("toolsvc_front_catalog_ready_ms", ms(time.Since(t0)))
				break
			}
			s.Close()
		}
		refFail = append(refFail, fmt.Sprintf("%d: %s", n, firstLine(err.Error())))
		stopAll()
	}
	if ref == nil {
		why := "toolsvc's front door listed no size in full: " + strings.Join(refFail, "; ")
		r.skip("toolsvc_front_catalog_max_tools", why)
		for _, sp := range specs {
			if sp.unavailable == "" {
				r.skip(sp.key+"_catalog_max_tools", why)
				r.skip(sp.key+"_list_ratio", why)
			}
		}
		return nil
	}
	defer ref.Close()
	r.set("toolsvc_front_catalog_max_tools", refN)
	var refAll []float64
	listTime := func(s *mcp.ClientSession, want int) (float64, error) {
		lctx, cancel := context.WithTimeout(ctx, *peerListWait)
		defer cancel()
		t0 := time.Now()
		k, err := listAll(lctx, s)
		if err == nil && k != want {
			err = fmt.Errorf("listed %d of %d tools", k, want)
		}
		return float64(time.Since(t0)), err
	}
	for _, sp := range specs {
		if sp.unavailable != "" {
			continue
		}
		var c *peerConn
		got, t0 := 0, time.Now()
		var fails []string
		for _, n := range sizes {
			t0 = time.Now()
			lctx, cancel := context.WithTimeout(ctx, *peerListWait)
			var err error
			c, err = sp.start(lctx, e, []string{"-tools", fmt.Sprint(n - 1)})
			if err == nil {
				var k int
				k, err = listAll(lctx, c.s)
				if err == nil && k != n {
					err = fmt.Errorf("listed %d of %d tools", k, n)
				}
			}
			cancel()
			if err == nil {
				got = n
				break
			}
			log.Printf("peer catalog: %s at %d tools: %v", sp.name, n, err)
			fails = append(fails, fmt.Sprintf("%d: %s", n, firstLine(err.Error())))
			if c != nil {
				c.close()
				c = nil
			}
		}
		if len(fails) > 0 {
			r.set(sp.key+"_catalog_failed", fails)
		}
		if got == 0 {
			why := "listed no size in full: " + strings.Join(fails, "; ")
			r.skip(sp.key+"_catalog_max_tools", why)
			r.skip(sp.key+"_list_ratio", why)
			continue
		}
		r.set(sp.key+"_catalog_max_tools", got)
		r.set(sp.key+"_catalog_ready_ms", ms(time.Since(t0)))
		log.Printf("peer catalog: %s serves %d tools; %d listings each, interleaved with toolsvc's", sp.name, got, *rounds)
		var pl, tl, per []float64
		for i := range max(*rounds, 1) {
			var tp, pp float64
			var err error
			// Alternate which goes first.
			for j := range 2 {
				if (i+j)%2 == 0 {
					tp, err = listTime(ref, refN)
				} else {
					pp, err = listTime(c.s, got)
				}
				if err != nil {
					c.close()
					return fmt.Errorf("%s listing: %w", sp.name, err)
				}
			}
			tl, pl, per = append(tl, tp), append(pl, pp), append(per, tp/pp)
		}
		c.close()
		refAll = append(refAll, tl...)
		r.set(sp.key+"_list_ms", ms(time.Duration(median(pl))))
		r.set(sp.key+"_list_toolsvc_ms", ms(time.Duration(median(tl))))
		if got != refN {
			why := fmt.Sprintf("%s served at most %d tools, toolsvc's listing is of %d", sp.name, got, refN)
			r.skip(sp.key+"_list_ratio", why)
			r.row(fmt.Sprintf("peer catalog: %s, largest / full listing", sp.name), fmt.Sprintf("%d tools / %.0f ms", got, ms(time.Duration(median(pl)))), "")
			continue
		}
		ratio := round3(median(tl) / median(pl))
		r.set(sp.key+"_list_ratio", ratio)
		spread := r.setSpread(sp.key+"_list_ratio", per)
		r.row(fmt.Sprintf("peer catalog: %s, largest / full listing / toolsvc's", sp.name),
			fmt.Sprintf("%d tools / %.0f ms / %.0f ms", got, ms(time.Duration(median(pl))), ms(time.Duration(median(tl)))), "")
		r.row(fmt.Sprintf("peer catalog: list ratio toolsvc / %s (spread)", sp.name), fmt.Sprintf("%v (%s)", ratio, spread), "")
	}
	if len(refAll) > 0 {
		r.set("toolsvc_front_list_ms", ms(time.Duration(median(refAll))))
	}
	r.row("peer catalog: toolsvc's MCP front door serves", fmt.Sprintf("%d tools", refN), "")
	return nil
}

// startToolsvcFront runs toolsvc with its MCP front door in front of a
// stdio upstream with n tools in all and connects a go-sdk client to it.
func startToolsvcFront(ctx context.Context, e *env, n int) (*mcp.ClientSession, error) {
	ts, err := startToolsvcArgs(ctx, e, fmt.Sprintf("peercatalog-%d", n),
		fmt.Sprintf(`{"refreshInterval": "1h", "mcpServers": {"s": {"command": %q, "args": ["-mode", "stdio", "-tools", "%d"]}}}`, e.upstream, n-1),
		[]string{"--mcp-listen", "127.0.0.1:0"})
	if err != nil {
		return nil, err
	}
	addr, err := ts.waitFor(ctx, frontRE, 30*time.Second)
	if err != nil {
		return nil, err
	}
	return connectMCP(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", MaxRetries: -1, HTTPClient: peerHTTP})
}
