package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/metadata"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/authtest"
)

// The per-user sessions phase (the goal: "1,000 principals × 3
// upstreams with per-user sessions on one replica: memory per idle per-user
// session ≤ 64 KiB, session creation p50 ≤ 5 ms over loopback HTTP"). All
// real processes: the tests' authorization server (tests/authserver,
// zitadel/oidc), three tests/testserver upstreams that verify its JWTs, and
// a profiling build of toolsvc (-tags benchprofile) that trusts the same
// JWTs and reaches the three upstreams in mode tokenExchange. Each principal
// logs in at the authorization server (code + PKCE), then calls whoami on
// every upstream over gRPC: its first call there is the exchange, a new
// upstream session and the call; a second call on the first upstream is a
// warm call, so creation ≈ first − warm. The principals are split into
// -rounds groups; the spread is over groups. The memory and goroutines per
// idle session come from toolsvc's own runtime after a forced collection
// (/debug/pprof/heap?gc=1&debug=1 of the benchprofile build), before the
// first principal and after the last.

var perUserPrincipals = flag.Int("peruser-principals", 1000, "principals in the per-user sessions phase (each gets a session on each of 3 upstreams)")

var perUserHeap = flag.String("peruser-heap-profile", "", "per-user sessions phase: write toolsvc's heap profile with every session idle to this file")

const perUserUpstreams = 3

func benchPerUser(ctx context.Context, e *env, r *results) error {
	defer stopAll()
	n := *perUserPrincipals
	bins := map[string]string{"authserver": "./tests/authserver", "toolsvc-prof": "./cmd/toolsvc"}
	if e.testserver == "" {
		e.testserver = filepath.Join(e.tmp, "testserver")
		bins["testserver"] = "./tests/testserver"
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(bins))
	for name, pkg := range bins {
		var tags []string
		if name == "toolsvc-prof" {
			tags = []string{"-tags", "benchprofile"}
		}
		wg.Go(func() { errs <- goBuild(e.root, filepath.Join(e.tmp, name), pkg, tags...) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	as, err := start("authserver", nil, e.root, filepath.Join(e.tmp, "authserver"))
	if err != nil {
		return err
	}
	issuer, err := as.waitFor(ctx, urlRE, 30*time.Second)
	if err != nil {
		return err
	}
	var servers []string
	for i := range perUserUpstreams {
		aud := fmt.Sprintf("urn:bench:up%d", i)
		up, err := start("testserver "+aud, nil, e.root, e.testserver, "-mode", "http", "-auth-issuer", issuer, "-auth-audience", aud)
		if err != nil {
			return err
		}
		url, err := up.waitFor(ctx, urlRE, 30*time.Second)
		if err != nil {
			return err
		}
		servers = append(servers, fmt.Sprintf(`"up%d": {"url": %q, "pingInterval": "1h", "credentials": {"mode": "tokenExchange", "issuer": %q, `+
			`"clientId": "toolsvc", "clientSecret": "toolsvc-secret", "audience": %q, "maxSessions": %d, "sessionIdle": "1h"}}`, i, url, issuer, aud, n+10))
	}
	jwks, err := discoverJWKS(ctx, issuer)
	if err != nil {
		return err
	}
	log.Printf("per-user: %d logins at the authorization server", n+1)
	tokens := make([]string, n+1) // tokens[n] warms up
	sem := make(chan struct{}, 8)
	var lerr error
	var lmu sync.Mutex
	for i := range tokens {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			tok, err := authtest.Login(ctx, issuer, authtest.ClientConfig{ID: "agent", RedirectURIs: []string{"http://127.0.0.1/callback"}}, fmt.Sprintf("user%d", i))
			lmu.Lock()
			defer lmu.Unlock()
			if err != nil {
				lerr = fmt.Errorf("login user%d: %w", i, err)
				return
			}
			tokens[i] = tok.AccessToken
		})
	}
	wg.Wait()
	if lerr != nil {
		return lerr
	}
	cfg := fmt.Sprintf(`{"auth": {"jwt": {"jwksURL": %q, "issuer": %q, "audience": "toolsvc"}}, "mcpServers": {%s}}`, jwks, issuer, strings.Join(servers, ", "))
	prof := *e
	prof.toolsvc = filepath.Join(e.tmp, "toolsvc-prof")
	ts, err := startToolsvc(ctx, &prof, "peruser", cfg, "TOOLSVC_BENCH_PPROF=127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ts.close()
	pprofAddr, err := ts.waitFor(ctx, pprofRE, 10*time.Second)
	if err != nil {
		return err
	}
	whoami := func(i, up int) (time.Duration, error) {
		cctx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tokens[i])
		start := time.Now()
		res, err := ts.client.CallTool(cctx, &toolsvcv1.CallToolRequest{Name: fmt.Sprintf("up%d__whoami", up)})
		d := time.Since(start)
		if err != nil {
			return 0, fmt.Errorf("user%d on up%d: %w", i, up, err)
		}
		// Each principal reaches the upstream as itself: a mix-up is an
		// error, not a figure.
		if sub := res.GetStructuredContent().AsMap()["sub"]; sub != fmt.Sprintf("user%d", i) {
			return 0, fmt.Errorf("user%d on up%d: the upstream saw %v", i, up, sub)
		}
		return d, nil
	}
	// Warm-up: the first principal's sessions list the three upstreams.
	for up := range perUserUpstreams {
		if _, err := whoami(n, up); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	heap0, stack0, g0, err := runtimeStats(ctx, pprofAddr)
	if err != nil {
		return err
	}
	log.Printf("per-user: %d principals × %d upstreams, in %d groups", n, perUserUpstreams, *rounds)
	var first, warm []time.Duration
	var firstP50, warmP50, createP50 []float64
	group := max(n / *rounds, 1)
	for lo := 0; lo < n; lo += group {
		var f, w []time.Duration
		for i := lo; i < min(lo+group, n); i++ {
			for up := range perUserUpstreams {
				d, err := whoami(i, up)
				if err != nil {
					return err
				}
				f = append(f, d)
			}
			d, err := whoami(i, 0)
			if err != nil {
				return err
			}
			w = append(w, d)
		}
		first, warm = append(first, f...), append(warm, w...)
		firstP50 = append(firstP50, ms(pct(f, 50)))
		warmP50 = append(warmP50, ms(pct(w, 50)))
		createP50 = append(createP50, round3(ms(pct(f, 50))-ms(pct(w, 50))))
	}
	heap1, stack1, g1, err := runtimeStats(ctx, pprofAddr)
	if err != nil {
		return err
	}
	if *perUserHeap != "" {
		if err := fetchTo(ctx, "http://"+pprofAddr+"/debug/pprof/heap?gc=1", *perUserHeap); err != nil {
			return err
		}
	}
	sessions := float64(n * perUserUpstreams)
	perSession := func(a, b uint64) float64 { return round3((float64(b) - float64(a)) / sessions / 1024) }
	kib, heapKiB, stackKiB := perSession(heap0+stack0, heap1+stack1), perSession(heap0, heap1), perSession(stack0, stack1)
	gor := round3(float64(g1-g0) / sessions)
	r.set("peruser_sessions", n*perUserUpstreams)
	r.set("peruser_first_call_p50_ms", ms(pct(first, 50)))
	r.set("peruser_first_call_p99_ms", ms(pct(first, 99)))
	r.set("peruser_warm_call_p50_ms", ms(pct(warm, 50)))
	r.set("peruser_session_create_p50_ms", round3(ms(pct(first, 50))-ms(pct(warm, 50))))
	r.set("peruser_idle_session_kib", kib)
	r.set("peruser_idle_session_goroutines", gor)
	r.row(fmt.Sprintf("per-user: first call p50 / p99 (%d principals × %d upstreams; spread of p50)", n, perUserUpstreams),
		fmt.Sprintf("%.2f / %.2f ms (%s)", ms(pct(first, 50)), ms(pct(first, 99)), r.setSpread("peruser_first_call_p50_ms", firstP50)), "")
	r.row("per-user: warm call p50 (spread)", fmt.Sprintf("%.2f ms (%s)", ms(pct(warm, 50)), r.setSpread("peruser_warm_call_p50_ms", warmP50)), "")
	r.row("per-user: session creation p50 = first − warm (spread)",
		fmt.Sprintf("%.2f ms (%s)", round3(ms(pct(first, 50))-ms(pct(warm, 50))), r.setSpread("peruser_session_create_p50_ms", createP50)), "≤ 5 ms")
	r.set("peruser_idle_session_heap_kib", heapKiB)
	r.set("peruser_idle_session_stack_kib", stackKiB)
	r.row("per-user: heap + stack per idle session", fmt.Sprintf("%.1f KiB (%.1f + %.1f), %.1f goroutines", kib, heapKiB, stackKiB, gor), "≤ 64 KiB")
	return nil
}

// discoverJWKS reads the issuer's JWKS address from its OpenID discovery.
func discoverJWKS(ctx context.Context, issuer string) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, issuer+"/.well-known/openid-configuration", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	re := regexp.MustCompile(`"jwks_uri"\s*:\s*"([^"]+)"`)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			return m[1], nil
		}
	}
	return "", fmt.Errorf("%s: no jwks_uri in the discovery document", issuer)
}

var (
	heapInuseRE  = regexp.MustCompile(`^# HeapInuse = (\d+)`)
	stackInuseRE = regexp.MustCompile(`^# Stack = (\d+)`)
	goroutinesRE = regexp.MustCompile(`^goroutine profile: total (\d+)`)
)

// runtimeStats reads heap + stack in use (after a collection) and the
// goroutine count of the benchprofile build at pprofAddr.
func runtimeStats(ctx context.Context, pprofAddr string) (heap, stack uint64, goroutines int, err error) {
	scan := func(path string, res ...*regexp.Regexp) ([]uint64, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+pprofAddr+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		out := make([]uint64, len(res))
		found := 0
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			for i, re := range res {
				if m := re.FindStringSubmatch(sc.Text()); m != nil {
					out[i], _ = strconv.ParseUint(m[1], 10, 64)
					found++
				}
			}
		}
		if found != len(res) {
			return nil, fmt.Errorf("%s: %d of %d figures found", path, found, len(res))
		}
		return out, sc.Err()
	}
	// Two collections: the first may leave finalizers' garbage to the next.
	if _, err := scan("/debug/pprof/heap?gc=1&debug=1", heapInuseRE, stackInuseRE); err != nil {
		return 0, 0, 0, err
	}
	m, err := scan("/debug/pprof/heap?gc=1&debug=1", heapInuseRE, stackInuseRE)
	if err != nil {
		return 0, 0, 0, err
	}
	g, err := scan("/debug/pprof/goroutine?debug=1", goroutinesRE)
	if err != nil {
		return 0, 0, 0, err
	}
	return m[0], m[1], int(g[0]), nil
}

// fetchTo saves what url answers in file.
func fetchTo(ctx context.Context, url, file string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
