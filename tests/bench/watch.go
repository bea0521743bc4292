package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// benchWatch is item 3, the WatchCatalog fan-out. It is measured by the
// watch benchmark (./tests/bench/watch, from the watch branch): with
// -watch=auto (the default) this runs it when it is in the tree, with the
// same toolsvc binary, and takes two figures from its JSON line:
//
//	latency_p99_ms           -> watch_p99_ms_10k          (one change, p99 over every watcher)
//	rss_per_idle_watcher_kib -> watch_rss_kib_per_watcher
//
// Then (unless -watch-replicas=false) it runs it again with
// -watch-replicas-args: 100,000 watchers over 3 replicas, read by the lean
// HTTP/2 client, and takes
//
//	latency_p99_ms           -> watch_p99_ms_100k_3r (and _spread)
//	one_change_server_cpu_ms -> watch_100k_3r_server_cpu_ms (every replica's, per change)
//	one_change_client_cpu_ms -> watch_100k_3r_client_cpu_ms (the watchers' process, per change)
//	rss_per_idle_watcher_kib -> watch_100k_3r_rss_kib_per_watcher
//
// Without it the keys are null and listed under "not_measured".
func benchWatch(ctx context.Context, e *env, r *results) error {
	keys := []string{"watch_p99_ms_10k", "watch_rss_kib_per_watcher"}
	rkeys := []string{"watch_p99_ms_100k_3r", "watch_100k_3r_server_cpu_ms", "watch_100k_3r_client_cpu_ms", "watch_100k_3r_rss_kib_per_watcher"}
	skip := func(why string, keys ...string) error {
		for _, k := range keys {
			r.skip(k, why)
		}
		return nil
	}
	if *watchMode == "off" {
		return skip("-watch=off", append(keys, rkeys...)...)
	}
	if _, err := os.Stat(filepath.Join(e.root, "tests", "bench", "watch", "main.go")); err != nil {
		if *watchMode == "on" {
			return fmt.Errorf("-watch=on but ./tests/bench/watch is not in this tree")
		}
		return skip("./tests/bench/watch is not in this tree", append(keys, rkeys...)...)
	}
	w, err := runWatchBench(ctx, e, *watchArgs)
	if err != nil {
		return err
	}
	for src, dst := range map[string]string{"latency_p99_ms": keys[0], "rss_per_idle_watcher_kib": keys[1]} {
		if err := setNumber(r, w, src, dst); err != nil {
			return err
		}
	}
	r.set("watch_watchers", w["watchers"])
	if sp, ok := w["latency_p99_ms_spread"]; ok {
		r.set("watch_p99_ms_10k_spread", sp)
	}
	r.row(fmt.Sprintf("watch: one change to %v watchers, p99 (median of %v rounds; spread)", w["watchers"], w["rounds"]),
		fmt.Sprintf("%v ms (%v)", w["latency_p99_ms"], w["latency_p99_ms_spread"]), "≤ 150 ms")
	r.row("watch_rss_kib_per_watcher", fmt.Sprint(w["rss_per_idle_watcher_kib"]), "≤ 16")

	if !*watchReplicas {
		return skip("-watch-replicas=false", rkeys...)
	}
	w, err = runWatchBench(ctx, e, *watchReplicasArgs)
	if err != nil {
		return err
	}
	for src, dst := range map[string]string{"latency_p99_ms": rkeys[0], "one_change_server_cpu_ms": rkeys[1],
		"one_change_client_cpu_ms": rkeys[2], "rss_per_idle_watcher_kib": rkeys[3]} {
		if err := setNumber(r, w, src, dst); err != nil {
			return err
		}
	}
	r.set("watch_100k_3r_watchers", w["watchers"])
	r.set("watch_100k_3r_replicas", w["replicas"])
	if sp, ok := w["latency_p99_ms_spread"]; ok {
		r.set("watch_p99_ms_100k_3r_spread", sp)
	}
	r.row(fmt.Sprintf("watch: one change to %v watchers over %v replicas, p99 (median of %v rounds; spread)", w["watchers"], w["replicas"], w["rounds"]),
		fmt.Sprintf("%v ms (%v)", w["latency_p99_ms"], w["latency_p99_ms_spread"]), "≤ 1000 ms")
	r.row("watch_100k_3r_server_cpu_ms / _client_cpu_ms (per change)",
		fmt.Sprintf("%v / %v", w["one_change_server_cpu_ms"], w["one_change_client_cpu_ms"]), "")
	return nil
}

// runWatchBench runs ./tests/bench/watch with the bench's toolsvc and args
// and returns its JSON line.
func runWatchBench(ctx context.Context, e *env, args string) (map[string]any, error) {
	argv := append([]string{"run", "./tests/bench/watch", "-toolsvc", e.toolsvc}, strings.Fields(args)...)
	log.Printf("watch: go %s", strings.Join(argv, " "))
	cmd := exec.CommandContext(ctx, "go", argv...)
	cmd.Dir = e.root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go run ./tests/bench/watch: %w; output:\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var w map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &w); err != nil {
		return nil, fmt.Errorf("watch benchmark: last line is not JSON: %w", err)
	}
	return w, nil
}

// setNumber copies the watch benchmark's number src to the key dst.
func setNumber(r *results, w map[string]any, src, dst string) error {
	v, ok := w[src].(float64)
	if !ok {
		return fmt.Errorf("watch benchmark: no number %q in %v", src, w)
	}
	r.set(dst, v)
	return nil
}
