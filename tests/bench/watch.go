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
// Without it both keys are null and listed under "not_measured".
func benchWatch(ctx context.Context, e *env, r *results) error {
	keys := []string{"watch_p99_ms_10k", "watch_rss_kib_per_watcher"}
	skip := func(why string) error {
		for _, k := range keys {
			r.skip(k, why)
		}
		return nil
	}
	if *watchMode == "off" {
		return skip("-watch=off")
	}
	if _, err := os.Stat(filepath.Join(e.root, "tests", "bench", "watch", "main.go")); err != nil {
		if *watchMode == "on" {
			return fmt.Errorf("-watch=on but ./tests/bench/watch is not in this tree")
		}
		return skip("./tests/bench/watch is not in this tree")
	}
	args := append([]string{"run", "./tests/bench/watch", "-toolsvc", e.toolsvc}, strings.Fields(*watchArgs)...)
	log.Printf("watch: go %s", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = e.root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go run ./tests/bench/watch: %w; output:\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var w map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &w); err != nil {
		return fmt.Errorf("watch benchmark: last line is not JSON: %w", err)
	}
	for src, dst := range map[string]string{"latency_p99_ms": keys[0], "rss_per_idle_watcher_kib": keys[1]} {
		v, ok := w[src].(float64)
		if !ok {
			return fmt.Errorf("watch benchmark: no number %q in %s", src, lines[len(lines)-1])
		}
		r.set(dst, v)
	}
	r.set("watch_watchers", w["watchers"])
	if sp, ok := w["latency_p99_ms_spread"]; ok {
		r.set("watch_p99_ms_10k_spread", sp)
	}
	r.row(fmt.Sprintf("watch: one change to %v watchers, p99 (median of %v rounds; spread)", w["watchers"], w["rounds"]),
		fmt.Sprintf("%v ms (%v)", w["latency_p99_ms"], w["latency_p99_ms_spread"]), "≤ 200 ms")
	r.row("watch_rss_kib_per_watcher", fmt.Sprint(w["rss_per_idle_watcher_kib"]), "≤ 16")
	return nil
}
