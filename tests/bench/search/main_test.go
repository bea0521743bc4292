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

// runCaptured runs the eval with flags set and returns what it printed.
func runCaptured(t *testing.T, flags map[string]string) (string, error) {
	t.Helper()
	for k, v := range flags {
		old := flag.Lookup(k).Value.String()
		if err := flag.Set(k, v); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { flag.Set(k, old) })
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
	return string(<-done), err
}

// TestHitsAgainst: a run's -hits file read back by -against counts the
// queries whose top-5 hit differs, each way, and refuses a file of other
// queries (docs/search.md, "Trained static vectors").
func TestHitsAgainst(t *testing.T) {
	dir := t.TempDir()
	hits := dir + "/hits.json"
	base := map[string]string{"sizes": "", "queries": "40", "public": "", "split": "all"}
	out, err := runCaptured(t, map[string]string{"sizes": "", "queries": "40", "public": "", "split": "all", "hits": hits})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	b, err := os.ReadFile(hits)
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]bool
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	if len(h) != 40 {
		t.Fatalf("%d queries in %s, want 40", len(h), hits)
	}
	// Against itself: nothing differs.
	self := map[string]string{"against": hits}
	for k, v := range base {
		self[k] = v
	}
	out, err = runCaptured(t, self)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "pooled queries: 0 won, 0 lost") {
		t.Errorf("against itself:\n%s", out)
	}
	// The file says one hit was a miss, and one miss a hit: this run wins
	// the first and loses the second.
	var hit, miss string
	for id, v := range h {
		if v && (hit == "" || id < hit) {
			hit = id
		}
		if !v && (miss == "" || id < miss) {
			miss = id
		}
	}
	if hit == "" || miss == "" {
		t.Fatalf("want a hit and a miss among the 40 queries: %v", h)
	}
	h[hit], h[miss] = false, true
	edited := dir + "/edited.json"
	b, _ = json.Marshal(h)
	if err := os.WriteFile(edited, b, 0o644); err != nil {
		t.Fatal(err)
	}
	self["against"] = edited
	out, err = runCaptured(t, self)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if want := "pooled queries: 1 won, 1 lost in the top 5 (+" + hit + " -" + miss + "); sign test p = 1.000: within noise"; !strings.Contains(out, want) {
		t.Errorf("want %q in:\n%s", want, out)
	}
	// Other queries: refused, naming the query.
	delete(h, hit)
	h["project/no-such-query"] = true
	b, _ = json.Marshal(h)
	if err := os.WriteFile(edited, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err = runCaptured(t, self); err == nil || !strings.Contains(err.Error(), "no query "+hit) {
		t.Errorf("against other queries: err %v, want one naming %s\n%s", err, hit, out)
	}
}
