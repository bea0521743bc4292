package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// figures are the keys the issue names; every run's JSON line carries all
// of them, as a number or as null with a reason under "not_measured".
var figures = []string{
	"call_p50_ratio", "call_p99_ratio", "throughput_ratio",
	"peer_added_latency_ratio",
	"watch_p99_ms_10k", "watch_rss_kib_per_watcher",
	"watch_p99_ms_100k_3r", "watch_100k_3r_server_cpu_ms", "watch_100k_3r_client_cpu_ms",
	"list_ratio",
	"storm_lists", "storm_call_p99_ratio",
	"py_call_p50_ratio", "py_call_p99_ratio", "py_throughput_ratio",
	"node_call_p50_ratio", "node_call_p99_ratio", "node_throughput_ratio",
	"load_avg_1m_at_start",
	"front_peer_added_ratio", "floor_proxy_peer_added_ratio", "floor_proxy_json_peer_added_ratio", "floor_proxy_2026_peer_added_ratio",
	"continuation_ratio_parked", "continuation_ratio_relayed",
	"peruser_session_create_p50_ms", "peruser_idle_session_kib",
	"fleet_listed_ms", "fleet_heap_kib_per_upstream", "fleet_goroutines_per_upstream", "fleet_relisted_ms", "fleet_quiet_p99_ratio",
	"grpc_upstream_call_p50_ratio",
	"floor_call_p50_ratio_stdio", "floor_call_p50_ratio_http", "grpc_upstream_floor_call_p50_ratio",
}

// TestSmoke runs the benchmark command in a tiny configuration (no peers:
// their npm install alone takes longer than the whole smoke run) and checks
// its last line. No thresholds: CI machines are too noisy for them.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs toolsvc, upstreams and a node server")
	}
	exe := filepath.Join(t.TempDir(), "bench")
	build := exec.Command("go", "build", "-o", exe, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(exe, "-calls", "50", "-rounds", "1", "-warmup", "10", "-callers", "4", "-conc-calls", "100",
		"-peers=false", "-catalog-upstreams", "2", "-catalog-tools", "20", "-list-reps", "1",
		"-storm", "50", "-storm-baseline-calls", "50", "-fleet-upstreams", "5", "-fleet-tools", "3", "-fleet-calls", "20",
		"-py-calls", "20", "-py-conc-calls", "40", "-py-warmup", "5", "-interactive-calls", "20", "-peruser-principals", "10",
		"-watch-args", "-watchers 20 -conns 2 -tools 5 -storm-watchers 5 -storm-for 500ms -rounds 2",
		"-watch-replicas-args", "-watchers 30 -conns 3 -replicas 3 -client h2 -tools 5 -storm-for 0 -rounds 2")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench: %v\nstdout:\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	var res map[string]any
	if err := json.Unmarshal([]byte(last), &res); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, out)
	}
	reasons, _ := res["not_measured"].(map[string]any)
	// Every peer's headline figures, not measured here.
	var peerFigs []string
	for _, p := range peerKeys {
		for _, f := range peerFigures {
			peerFigs = append(peerFigs, p+f)
		}
	}
	for _, k := range append(append([]string{}, figures...), peerFigs...) {
		v, ok := res[k]
		switch {
		case !ok:
			t.Errorf("no %q in %s", k, last)
		case v == nil:
			if r, _ := reasons[k].(string); r == "" {
				t.Errorf("%q is null without a reason under not_measured: %s", k, last)
			}
		default:
			if _, num := v.(float64); !num {
				t.Errorf("%q = %v (%T), want a number", k, v, v)
			}
		}
	}
	// What this configuration measures must be measured.
	for _, k := range []string{"call_p50_ratio", "call_p99_ratio", "throughput_ratio", "list_ratio", "storm_lists", "storm_call_p99_ratio",
		"py_call_p50_ratio", "py_call_p99_ratio", "py_throughput_ratio",
		"node_call_p50_ratio", "node_call_p99_ratio", "node_throughput_ratio",
		"continuation_ratio_parked", "continuation_ratio_relayed", "floor_proxy_added_p50_us", "floor_proxy_json_added_p50_us",
		"floor_proxy_2026_07_28_added_p50_us"} {
		if _, num := res[k].(float64); !num {
			t.Errorf("%q = %v, want a number", k, res[k])
		}
	}
	for _, k := range []string{"call_p50_ratio_spread", "call_p99_ratio_spread", "throughput_ratio_spread",
		"call_p50_ratio_stdio_spread", "list_ratio_spread", "watch_p99_ms_10k_spread", "watch_p99_ms_100k_3r_spread"} {
		if sp, _ := res[k].([]any); len(sp) != 2 {
			t.Errorf("%q = %v, want [min, max] over rounds", k, res[k])
		}
	}
	for _, k := range append([]string{"peer_added_latency_ratio"}, peerFigs...) {
		if r, _ := reasons[k].(string); r == "" {
			t.Errorf("%s not marked as not measured with -peers=false: %s", k, last)
		}
	}
	t.Logf("%s", last)
}
