package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sync"
	"time"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// The task-watch phase (the goal: "WatchTask delivers the terminal
// state within 100 ms of the upstream reporting it, p99"). toolsvc fronts
// the two task servers of the tests, tests/node/tasks_server.mjs (TypeScript
// SDK, 2025-11-25, streamable HTTP) and tests/python/tasks_server.py
// (fastmcp-tasks, 2026-07-28), with the default --task-poll-interval. Each
// round starts -task-watches tasks per upstream, 16 at a time, each watched
// from its creation; a task's delivery latency is the time the watcher got
// its terminal state minus the upstream's own lastUpdatedAt of that state
// (Task.update_time: the upstream's clock, the same machine's). The figure
// is the p99 of each round; the spread is over rounds.

var taskWatches = flag.Int("task-watches", 100, "tasks per upstream per round in the task-watch phase")

func benchTasks(ctx context.Context, e *env, r *results) error {
	defer stopAll()
	node := filepath.Join(e.root, "tests", "node")
	py := filepath.Join(e.root, ".venv", "tasks", "bin", "python")
	for _, p := range []string{filepath.Join(node, "node_modules", "@modelcontextprotocol", "sdk"), py} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s missing (scripts/interop-deps.sh installs it): %w", p, err)
		}
	}
	tsp, err := start("tasks ts", nil, node, "node", "tasks_server.mjs", "http", "0")
	if err != nil {
		return err
	}
	tsURL, err := tsp.waitFor(ctx, urlRE, 30*time.Second)
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	pyp, err := start("tasks py", nil, e.root, py, filepath.Join("tests", "python", "tasks_server.py"), fmt.Sprint(port))
	if err != nil {
		return err
	}
	if err := waitPort(ctx, pyp, fmt.Sprintf("127.0.0.1:%d", port), 60*time.Second); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`{"mcpServers": {"ts": {"url": %q}, "py": {"url": "http://127.0.0.1:%d/mcp", "protocolVersion": "2026-07-28"}}}`, tsURL, port)
	ts, err := startToolsvc(ctx, e, "tasks", cfg)
	if err != nil {
		return err
	}
	defer ts.close()
	log.Printf("tasks: %d rounds of %d watched tasks per upstream", *rounds, *taskWatches)
	all := map[string][]time.Duration{}
	perRound := map[string][]float64{}
	for range *rounds {
		for _, server := range []string{"ts", "py"} {
			lat, err := watchRound(ctx, ts.client, server, *taskWatches)
			if err != nil {
				return fmt.Errorf("%s: %w", server, err)
			}
			all[server] = append(all[server], lat...)
			perRound[server] = append(perRound[server], ms(pct(lat, 99)))
		}
	}
	for _, server := range []string{"ts", "py"} {
		era := map[string]string{"ts": "2025", "py": "2026"}[server]
		key := "task_watch_terminal_p99_ms_" + era
		p50, p99 := ms(pct(all[server], 50)), ms(pct(all[server], 99))
		r.set(key, p99)
		r.set("task_watch_terminal_p50_ms_"+era, p50)
		r.row(fmt.Sprintf("task watch %s: terminal state p50 / p99 (spread of p99)", era),
			fmt.Sprintf("%.1f / %.1f ms (%s)", p50, p99, r.setSpread(key, perRound[server])), "p99 ≤ 100 ms")
	}
	return nil
}

// watchRound runs n tasks of 200–400 ms on server, 16 at a time, each
// watched from its creation, and returns their delivery latencies.
func watchRound(ctx context.Context, c toolsvcv1.ToolServiceClient, server string, n int) ([]time.Duration, error) {
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			d, err := watchOne(ctx, c, server, 200+(i*37)%200)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			lat = append(lat, d)
		}()
	}
	wg.Wait()
	return lat, firstErr
}

func watchOne(ctx context.Context, c toolsvcv1.ToolServiceClient, server string, msec int) (time.Duration, error) {
	res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__slow", ArgumentsJson: fmt.Sprintf(`{"ms": %d}`, msec),
		Task: &toolsvcv1.TaskOptions{}})
	if err != nil {
		return 0, err
	}
	if res.GetTask() == nil {
		return 0, fmt.Errorf("no task: %v", res)
	}
	st, err := c.WatchTask(ctx, &toolsvcv1.WatchTaskRequest{Handle: res.GetTask().GetHandle()})
	if err != nil {
		return 0, err
	}
	for {
		m, err := st.Recv()
		got := time.Now()
		if errors.Is(err, io.EOF) {
			return 0, errors.New("the watch ended without a terminal state")
		}
		if err != nil {
			return 0, err
		}
		if m.GetResult() != nil || m.GetError() != nil {
			up := m.GetTask().GetUpdateTime()
			if up == nil {
				return 0, errors.New("the terminal state has no update_time")
			}
			return got.Sub(up.AsTime()), nil
		}
	}
}
