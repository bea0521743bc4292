package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"math"
	"os"
	"strings"
	"testing"
)

// TestEvalSmoke runs the eval at a small size, as CI does: every figure
// present and a number. No thresholds (docs/search.md has the full run).
func TestEvalSmoke(t *testing.T) {
	for k, v := range map[string]string{"sizes": "300", "rounds": "1", "changes": "50", "queries": "60", "public": "", "split": "all"} {
		if err := flag.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	err = run()
	w.Close()
	os.Stdout = stdout
	out := <-done
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, out)
	}
	for _, k := range []string{"toolsvc_recall_at_1", "toolsvc_recall_at_5", "toolsvc_recall_at_10", "toolsvc_mrr",
		"bm25_recall_at_5", "bm25_mrr", "recall_at_5_gain_over_bm25",
		"search_p50_us_300", "search_p99_us_300", "index_bytes_per_tool_300", "change_p50_us_300", "change_p99_us_300"} {
		if _, ok := res[k].(float64); !ok {
			t.Errorf("%s = %v, want a number", k, res[k])
		}
	}
	if !bytes.Contains(out, []byte("plain BM25 baseline")) {
		t.Errorf("no baseline row:\n%s", out)
	}
}

// TestSignTest: the fit's rule (docs/search.md, "Long queries and a
// fitted blend") against the exact two-sided sign test's known values.
func TestSignTest(t *testing.T) {
	for _, tc := range []struct {
		won, lost int
		want      float64
	}{
		{0, 0, 1},
		{6, 0, 2.0 / 64},   // 2 × 0.5⁶
		{0, 6, 2.0 / 64},   // symmetric
		{5, 0, 2.0 / 32},   // 0.0625: not below 0.05
		{3, 3, 1},          // capped at 1
		{17, 13, 0.584665}, // 2 × P(X ≤ 13), X ~ Binomial(30, ½)
	} {
		if got := signTest(tc.won, tc.lost); math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("signTest(%d, %d) = %.6f, want %.6f", tc.won, tc.lost, got, tc.want)
		}
	}
}
