package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// ensureNodeTests installs tests/node (the TypeScript-SDK storm server) if
// scripts/test.sh has not.
func ensureNodeTests(ctx context.Context, e *env) error {
	if _, err := os.Stat(filepath.Join(e.nodeDir, "node_modules", "@modelcontextprotocol", "sdk")); err == nil {
		return nil
	}
	log.Printf("npm ci in %s", e.nodeDir)
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = e.nodeDir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm ci in %s: %w", e.nodeDir, err)
	}
	return nil
}

// benchStorm is item 5: a TypeScript-SDK upstream (its low-level Server
// sends one notification per change, no merging) sends *storm
// tools/list_changed in a burst while a caller keeps calling echo on a
// second (go-sdk, stdio) upstream through the same toolsvc.
func benchStorm(ctx context.Context, e *env, r *results) error {
	defer stopAll()
	if err := ensureNodeTests(ctx, e); err != nil {
		return err
	}
	ts, err := startToolsvc(ctx, e, "storm", fmt.Sprintf(`{"refreshInterval": "1h", "mcpServers": {"e": {"command": %q, "args": ["-mode", "stdio"]}, "storm": {"command": "node", "args": [%q]}}}`,
		e.upstream, filepath.Join(e.nodeDir, "storm_server.mjs")))
	if err != nil {
		return err
	}
	defer ts.close()
	echo := path{name: "toolsvc stdio", call: toolsvcEcho(ts.client, "e")}
	listCalls := func() (int, error) {
		res, err := ts.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "storm__stats"})
		if err != nil {
			return 0, err
		}
		v, ok := res.GetStructuredContent().GetFields()["list_calls"]
		if !ok {
			return 0, fmt.Errorf("storm__stats: no list_calls in %v", res)
		}
		return int(v.GetNumberValue()), nil
	}
	if _, err := sequential(ctx, echo, *warmup); err != nil {
		return err
	}
	before, err := sequential(ctx, echo, *stormCalls)
	if err != nil {
		return err
	}
	lists0, err := listCalls()
	if err != nil {
		return err
	}

	// The caller runs from the storm's start until the catalog is complete
	// and half a second more (a debounced second list may follow).
	stopCalls := make(chan struct{})
	type callsResult struct {
		lat []time.Duration
		err error
	}
	callsDone := make(chan callsResult, 1)
	go func() {
		var res callsResult
		defer func() { callsDone <- res }()
		for {
			select {
			case <-stopCalls:
				return
			default:
			}
			t0 := time.Now()
			if res.err = echo.call(ctx); res.err != nil {
				return
			}
			res.lat = append(res.lat, time.Since(t0))
		}
	}()
	stopCaller := func() callsResult {
		close(stopCalls)
		return <-callsDone
	}
	log.Printf("storm: %d list_changed in a burst while calling e__echo", *storm)
	t0 := time.Now()
	args, _ := structpb.NewStruct(map[string]any{"count": *storm})
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := ts.client.CallTool(sctx, &toolsvcv1.CallToolRequest{Name: "storm__storm", Arguments: args}); err != nil {
		stopCaller()
		return fmt.Errorf("storm__storm: %w", err)
	}
	sent := time.Since(t0)
	// The last stormed tool is callable once the catalog has caught up.
	last := &toolsvcv1.CallToolRequest{Name: fmt.Sprintf("storm__storm_%d", *storm-1)}
	for {
		_, err := ts.client.CallTool(sctx, last)
		if err == nil {
			break
		}
		if status.Code(err) != codes.NotFound {
			stopCaller()
			return fmt.Errorf("%s: %w", last.Name, err)
		}
		select {
		case <-sctx.Done():
			stopCaller()
			return errors.New("the catalog did not reach the last stormed tool within 2 minutes")
		case <-time.After(20 * time.Millisecond):
		}
	}
	complete := time.Since(t0)
	time.Sleep(500 * time.Millisecond)
	during := stopCaller()
	if during.err != nil {
		return fmt.Errorf("calls during the storm: %w", during.err)
	}
	time.Sleep(time.Second) // quiet: a trailing list would have started by now
	lists1, err := listCalls()
	if err != nil {
		return err
	}
	bp99, dp99 := pct(before, 99), pct(during.lat, 99)
	ratio := round3(float64(dp99) / float64(bp99))
	r.set("storm_notifications", *storm)
	r.set("storm_sent_ms", ms(sent))
	r.set("storm_catalog_complete_ms", ms(complete))
	r.set("storm_lists", lists1-lists0)
	r.set("storm_calls_during", len(during.lat))
	r.set("storm_call_p50_before_us", us(pct(before, 50)))
	r.set("storm_call_p99_before_us", us(bp99))
	r.set("storm_call_p50_during_us", us(pct(during.lat, 50)))
	r.set("storm_call_p99_during_us", us(dp99))
	r.set("storm_call_p99_ratio", ratio)
	r.row(fmt.Sprintf("storm: %d list_changed sent in", *storm), fmt.Sprintf("%.0f ms", ms(sent)), "")
	r.row("storm: catalog complete after", fmt.Sprintf("%.0f ms", ms(complete)), "")
	r.row("storm_lists (upstream tools/list calls)", fmt.Sprint(lists1-lists0), "≤ 3")
	r.row("storm: call p50 / p99 before", fmt.Sprintf("%.0f / %.0f µs", us(pct(before, 50)), us(bp99)), "")
	r.row(fmt.Sprintf("storm: call p50 / p99 during (%d calls)", len(during.lat)), fmt.Sprintf("%.0f / %.0f µs", us(pct(during.lat, 50)), us(dp99)), "")
	r.row("storm_call_p99_ratio", fmt.Sprint(ratio), "≤ 1.2")
	return nil
}
