package main

import (
	"context"
	"fmt"
	"log"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// benchCatalog is item 4: ListTools of every page through toolsvc against
// the upstreams' own tools/list of the same tools (all upstreams listed
// concurrently, every page), interleaved.
func benchCatalog(ctx context.Context, e *env, r *results) error {
	defer stopAll()
	urls := make([]string, *catUps)
	var servers []string
	for i := range urls {
		var err error
		if _, urls[i], err = startUpstream(ctx, e, "http", "-tools", fmt.Sprint(*catTools)); err != nil {
			return err
		}
		servers = append(servers, fmt.Sprintf(`"u%02d": {"url": %q}`, i, urls[i]))
	}
	want := *catUps * (*catTools + 1)
	log.Printf("catalog: %d upstreams with %d tools in all", *catUps, want)
	t0 := time.Now()
	ts, err := startToolsvc(ctx, e, "catalog", fmt.Sprintf(`{"refreshInterval": "1h", "mcpServers": {%s}}`, strings.Join(servers, ", ")))
	if err != nil {
		return err
	}
	defer ts.close()
	r.set("catalog_ready_ms", ms(time.Since(t0)))
	sessions := make([]*mcp.ClientSession, len(urls))
	for i, u := range urls {
		if sessions[i], err = connectMCP(ctx, httpTransport(u)); err != nil {
			return err
		}
		defer sessions[i].Close()
	}

	viaToolsvc := func() (int, error) {
		n, tok := 0, ""
		for {
			// JSON schemas: the upstreams send JSON text, and so does
			// toolsvc in this format (the goal is stated for it).
			resp, err := ts.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: 1000, PageToken: tok,
				SchemaFormat: toolsvcv1.SchemaFormat_SCHEMA_FORMAT_JSON})
			if err != nil {
				return 0, err
			}
			n += len(resp.GetTools())
			if tok = resp.GetNextPageToken(); tok == "" {
				return n, nil
			}
		}
	}
	direct := func() (int, error) {
		counts := make([]int, len(sessions))
		errs := make([]error, len(sessions))
		var wg sync.WaitGroup
		for i, s := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cursor := ""
				for {
					res, err := s.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
					if err != nil {
						errs[i] = err
						return
					}
					counts[i] += len(res.Tools)
					if cursor = res.NextCursor; cursor == "" {
						return
					}
				}
			}()
		}
		wg.Wait()
		n := 0
		for i := range counts {
			if errs[i] != nil {
				return 0, errs[i]
			}
			n += counts[i]
		}
		return n, nil
	}
	// Warm both sides once and check they see the same tools.
	for name, f := range map[string]func() (int, error){"toolsvc": viaToolsvc, "direct": direct} {
		n, err := f()
		if err != nil {
			return fmt.Errorf("%s listing: %w", name, err)
		}
		if n != want {
			return fmt.Errorf("%s listing: %d tools, want %d", name, n, want)
		}
	}
	// CPU of both ends of the toolsvc listing: toolsvc's process (encoding)
	// and this one (the gRPC client decoding).
	var tDur, dDur, perRep []float64
	var serverCPU, clientCPU time.Duration
	for range max(*listReps, 5) {
		t0, s0, c0 := time.Now(), ts.cpu(), selfCPU()
		if _, err := viaToolsvc(); err != nil {
			return err
		}
		tDur = append(tDur, float64(time.Since(t0)))
		serverCPU += ts.cpu() - s0
		clientCPU += selfCPU() - c0
		t0 = time.Now()
		if _, err := direct(); err != nil {
			return err
		}
		dDur = append(dDur, float64(time.Since(t0)))
		perRep = append(perRep, tDur[len(tDur)-1]/dDur[len(dDur)-1])
	}
	tm, dm := median(tDur), median(dDur)
	ratio := round3(tm / dm)
	r.set("catalog_tools", want)
	r.set("list_toolsvc_ms", ms(time.Duration(tm)))
	r.set("list_direct_ms", ms(time.Duration(dm)))
	r.set("list_ratio", ratio)
	spread := r.setSpread("list_ratio", perRep)
	reps := time.Duration(len(tDur))
	r.set("list_toolsvc_server_cpu_ms", ms(serverCPU/reps))
	r.set("list_toolsvc_client_cpu_ms", ms(clientCPU/reps))
	r.row("catalog: CPU per full listing, toolsvc / gRPC client", fmt.Sprintf("%.0f / %.0f ms", ms(serverCPU/reps), ms(clientCPU/reps)), "")
	r.set("toolsvc_rss_kib_catalog", ts.rssKiB())
	r.row(fmt.Sprintf("catalog: %d tools on %d upstreams, ListTools all pages", want, *catUps), fmt.Sprintf("%.1f ms", ms(time.Duration(tm))), "")
	r.row("catalog: upstreams' own tools/list, all pages", fmt.Sprintf("%.1f ms", ms(time.Duration(dm))), "")
	r.row("list_ratio (SCHEMA_FORMAT_JSON; spread over reps)", fmt.Sprintf("%v (%s)", ratio, spread), "≤ 0.05")
	return nil
}
