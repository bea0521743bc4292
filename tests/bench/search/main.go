// Command search is toolsvc's tool-search retrieval eval: it ranks a corpus
// of real MCP servers' tool definitions (tests/bench/testdata/search) for
// hand-written queries with toolsvc's ranker and with a plain BM25 baseline
// over the same text, in the same run, and measures the index: search
// latency at 2,000 and 20,000 tools, memory per tool, and the cost of one
// changed tool. It prints a table and, last, one line of JSON.
// docs/search.md explains the figures.
//
//	go run ./tests/bench/search            # the full run
//	go run ./tests/bench/search -h         # flags
package main

import (
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsvc/toolsvc/internal/toolsearch"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service/core"
)

var (
	dataDir    = flag.String("data", "", "directory of corpus.json.gz and queries.json (default: tests/bench/testdata/search)")
	sizes      = flag.String("sizes", "2000,20000", "catalog sizes for the latency, memory and change figures (\"\": none)")
	rounds     = flag.Int("rounds", 5, "rounds of the latency and change measurements (figures are medians over rounds, with the spread)")
	changes    = flag.Int("changes", 2000, "re-indexed tools per round in the change measurement")
	maxQueries = flag.Int("queries", 0, "use only the first N queries (0: all)")
	publicSets = flag.String("public", "bfcl,nestful", "public corpora to rank too (tests/bench/testdata/search-NAME; \"\": none)")
	denseW     = flag.Float64("dense", -1, "the hybrid's dense weight (-1: the default; 0: the index figures of the lexical ranking)")
	denseFloor = flag.Float64("floor", -1, "the hybrid's dense floor (-1: the default)")
	splitFlag  = flag.String("split", "heldout", "which queries of each corpus to rank: heldout (never tuned on), tune, or all")
	weighFlds  = flag.Bool("weigh-fields", false, "the hybrid's tool vectors weighted by field (toolsearch.Options.WeighFields)")
	nameCover  = flag.Float64("name-cover", -1, "the hybrid's name-cover weight (toolsearch.Options.NameCover; -1: the default)")
	coverage   = flag.Float64("coverage", -1, "the coverage factor (toolsearch.Options.Coverage; -1: the default)")
	fit        = flag.Bool("fit", false, "fit the hybrid's blend (dense, name-cover and coverage weights) on the tune splits of every corpus jointly: rank each point of the grid, print it, and the best last")
	cpuProfile = flag.String("cpuprofile", "", "write a CPU profile of the index measurements (-sizes) to this file")
	misses     = flag.String("misses", "", "print the hybrid's misses (no expected tool in the top 5) of the queries of this kind (\"all\": every kind); only with -split tune")
	hitsOut    = flag.String("hits", "", "write which queries the hybrid has an expected tool for in its top 5 to this file (JSON, corpus/id → bool): a run with another model.bin compares against it with -against")
	fbDocs     = flag.Int("fb-docs", 0, "pseudo-relevance feedback: the first ranking's best hits that feed back (toolsearch.Feedback.Docs; 0: none)")
	fbVector   = flag.Float64("fb-vector", 0, "feedback: weight of their mean vector added to the query's (Feedback.Vector)")
	fbTerms    = flag.Int("fb-terms", 0, "feedback: how many of their terms join the lexical query (Feedback.Terms)")
	fbTermW    = flag.Float64("fb-term-weight", 0.2, "feedback: those terms' weight (Feedback.TermWeight)")
	denseTerms = flag.Int("dense-terms", 0, "dense query expansion: the query vector's nearest vocabulary words added as lexical terms (Feedback.DenseTerms)")
	denseTermW = flag.Float64("dense-term-weight", 0.1, "dense query expansion: those terms' weight (Feedback.DenseTermWeight)")
	sentMode   = flag.Int("sentences", 0, "a query of several sentences: the dense cosine the max (1), soft-max (2) or whole-and-best mean (3) over its sentences (Feedback.Sentences)")
	sentLex    = flag.Bool("sentences-lexical", false, "a query of several sentences: its lexical side too the best of the whole's and each sentence's (Feedback.SentencesLexical)")
	latinW     = flag.Float64("latin", 0, "a query with non-Latin letters: its lexical side weighted by 1 + this (Feedback.Latin)")
	against    = flag.String("against", "", "compare the hybrid's top-5 hits with those a -hits run wrote (the same -split and -public): queries won and lost, the sign test, and the verdict by docs/search.md's rule")
)

type corpus struct {
	Servers []struct {
		Name         string `json:"name"`
		Instructions string `json:"instructions"`
		Tools        []struct {
			Name        string               `json:"name"`
			Title       string               `json:"title"`
			Description string               `json:"description"`
			InputSchema map[string]any       `json:"inputSchema"`
			Annotations *mcp.ToolAnnotations `json:"annotations"`
		} `json:"tools"`
	} `json:"servers"`
}

type query struct {
	ID       string `json:"id"`
	Query    string `json:"query"`
	Kind     string `json:"kind"`
	Split    string `json:"split"` // "tune" or "heldout"; the project corpus: by id parity
	Expected []struct {
		Server string `json:"server"`
		Tool   string `json:"tool"`
	} `json:"expected"`
}

func key(server, tool string) string { return server + "__" + tool }

func main() {
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("search-eval: ")
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	dir := *dataDir
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		dir = filepath.Join(root, "tests", "bench", "testdata", "search")
	}
	docs, err := loadCorpus(filepath.Join(dir, "corpus.json.gz"))
	if err != nil {
		return err
	}
	qs, err := loadQueries(filepath.Join(dir, "queries.json"), docs)
	if err != nil {
		return err
	}
	if *maxQueries > 0 && len(qs) > *maxQueries {
		qs = qs[:*maxQueries]
	}
	out := map[string]any{"corpus_tools": len(docs), "queries": len(qs)}
	fmt.Printf("corpus: %d tools; %d queries\n\n", len(docs), len(qs))
	if l, ok := loadAverage(); ok {
		out["load_avg_1m_at_start"] = l
		fmt.Printf("load average (1 min) at start: %.2f (< 1 for final figures)\n\n", l)
	}

	// Retrieval quality: every ranker over the same documents, on the
	// split asked for (the project corpus's tune half is its odd-numbered
	// queries, as before).
	for i := range qs {
		qs[i].Split = map[bool]string{true: "tune", false: "heldout"}[i%2 == 0]
	}
	if *fit {
		return fitBlend(dir, docs, qs)
	}
	hits := map[string]bool{}
	if err := rankCorpus("project", "", docs, qs, out, hits); err != nil {
		return err
	}
	for _, name := range strings.Split(*publicSets, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		pdir := filepath.Join(filepath.Dir(dir), "search-"+name)
		pdocs, err := loadCorpus(filepath.Join(pdir, "corpus.json.gz"))
		if err != nil {
			return err
		}
		pqs, err := loadQueries(filepath.Join(pdir, "queries.json"), pdocs)
		if err != nil {
			return err
		}
		if err := rankCorpus(name, name+"_", pdocs, pqs, out, hits); err != nil {
			return err
		}
	}
	if err := compareHits(hits); err != nil {
		return err
	}

	// The index: latency, memory and change cost at each size.
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	for _, f := range strings.Split(*sizes, ",") {
		if strings.TrimSpace(f) == "" {
			continue // -sizes "": the rankings only
		}
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return fmt.Errorf("-sizes: %q is not a size", f)
		}
		measureSize(docs, qs, n, out)
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	return nil
}

// flagOptions are the default options with -dense and -floor applied.
func flagOptions() toolsearch.Options {
	o := toolsearch.Defaults()
	if *denseW >= 0 {
		o.Dense = *denseW
	}
	if *denseFloor >= 0 {
		o.DenseFloor = *denseFloor
	}
	o.WeighFields = *weighFlds
	if *nameCover >= 0 {
		o.NameCover = *nameCover
	}
	if *coverage >= 0 {
		o.Coverage = *coverage
	}
	o.Feedback = toolsearch.Feedback{Docs: *fbDocs, Vector: *fbVector, Terms: *fbTerms, TermWeight: *fbTermW,
		DenseTerms: *denseTerms, DenseTermWeight: *denseTermW, Sentences: *sentMode, SentencesLexical: *sentLex, Latin: *latinW}
	return o
}

// rankCorpus prints and records the rankers' figures on one corpus's
// queries of the -split asked for; JSON keys are prefix + ranker + metric.
// hits gets "name/query id" → whether the hybrid's top 5 has an expected
// tool.
func rankCorpus(name, prefix string, docs []core.SearchDoc, all []query, out map[string]any, hits map[string]bool) error {
	var qs []query
	for _, q := range all {
		if *splitFlag == "all" || q.Split == *splitFlag {
			qs = append(qs, q)
		}
	}
	if len(qs) == 0 {
		return fmt.Errorf("%s: no queries in split %q", name, *splitFlag)
	}
	defaults := flagOptions()
	lexical := toolsearch.Lexical(defaults)
	denseOnly := defaults
	denseOnly.Dense, denseOnly.DenseFloor = 1e6, -1
	rankers := []struct {
		name, key string
		rank      func(q string, k int) []string
	}{
		{"toolsvc (hybrid)", "toolsvc", indexRanker(docs, &defaults)},
		{"toolsvc lexical only", "toolsvc_lexical", indexRanker(docs, &lexical)},
		{"dense only (ablation)", "dense", indexRanker(docs, &denseOnly)},
		{"plain BM25 baseline", "bm25", newBM25(docs).rank},
	}
	if !toolsearch.DenseAvailable(toolsearch.Defaults()) {
		return fmt.Errorf("the dense stage is not available (internal/toolsearch/staticmodel)")
	}
	fmt.Printf("corpus %s: %d tools; %d %s queries\n", name, len(docs), len(qs), *splitFlag)
	fmt.Printf("%-24s %9s %9s %9s %7s %8s   (queries by kind: recall@5)\n", "ranker", "recall@1", "recall@5", "recall@10", "MRR", "nDCG@10")
	if *misses != "" {
		if *splitFlag != "tune" {
			return fmt.Errorf("-misses: only with -split tune (the held-out queries are not looked at)")
		}
		printMisses(qs, rankers[0].rank)
	}
	for i, r := range rankers {
		m := evaluate(qs, r.rank)
		if i == 0 {
			for j, q := range qs {
				hits[name+"/"+q.ID] = m.hit5[j]
			}
		}
		fmt.Printf("%-24s %9.3f %9.3f %9.3f %7.3f %8.3f   %s\n", r.name, m.at[1], m.at[5], m.at[10], m.mrr, m.ndcg, m.byKind())
		k := prefix + r.key
		out[k+"_recall_at_1"], out[k+"_recall_at_5"], out[k+"_recall_at_10"] = round3(m.at[1]), round3(m.at[5]), round3(m.at[10])
		out[k+"_mrr"], out[k+"_ndcg_at_10"] = round3(m.mrr), round3(m.ndcg)
	}
	out[prefix+"recall_at_5_gain_over_bm25"] = round3(out[prefix+"toolsvc_recall_at_5"].(float64) - out[prefix+"bm25_recall_at_5"].(float64))
	fmt.Println()
	return nil
}

// fitBlend fits the hybrid's linear blend — score = lexical / best +
// NameCover × name cover + Dense × cosine, the lexical score with its
// Coverage factor — on the tune splits of the project corpus and every
// -public corpus jointly: each point of a fixed grid ranks every tune
// query, and the best point is the one with the highest mean over corpora
// of recall@5 (then of MRR; then the earlier point, the grid listing the
// simpler first). The held-out splits are not read.
func fitBlend(dir string, docs []core.SearchDoc, qs []query) error {
	type set struct {
		name string
		docs []core.SearchDoc
		qs   []query
	}
	tune := func(all []query) []query {
		var out []query
		for _, q := range all {
			if q.Split == "tune" {
				out = append(out, q)
			}
		}
		return out
	}
	sets := []set{{"project", docs, tune(qs)}}
	for _, name := range strings.Split(*publicSets, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		pdir := filepath.Join(filepath.Dir(dir), "search-"+name)
		pdocs, err := loadCorpus(filepath.Join(pdir, "corpus.json.gz"))
		if err != nil {
			return err
		}
		pqs, err := loadQueries(filepath.Join(pdir, "queries.json"), pdocs)
		if err != nil {
			return err
		}
		sets = append(sets, set{name, pdocs, tune(pqs)})
	}
	type point struct{ dense, name, cov float64 }
	var grid []point
	for _, nc := range []float64{0, 0.1, 0.2, 0.3, 0.5, 0.75, 1} {
		for _, d := range []float64{2, 1.5, 2.5, 3} {
			for _, c := range []float64{0.5, 0.25, 1} {
				grid = append(grid, point{d, nc, c})
			}
		}
	}
	var best point
	var bestHits, defHits []bool
	bestR, bestM := -1.0, -1.0
	def := toolsearch.Defaults()
	for _, p := range grid {
		o := toolsearch.Defaults()
		o.Dense, o.NameCover, o.Coverage, o.WeighFields = p.dense, p.name, p.cov, *weighFlds
		var r5, mrr float64
		var per []string
		var hits []bool
		for _, s := range sets {
			m := evaluate(s.qs, indexRanker(s.docs, &o))
			r5 += m.at[5] / float64(len(sets))
			mrr += m.mrr / float64(len(sets))
			per = append(per, fmt.Sprintf("%s %.3f/%.3f", s.name, m.at[5], m.mrr))
			hits = append(hits, m.hit5...)
		}
		fmt.Printf("dense %.2f name-cover %.2f coverage %.2f: mean recall@5 %.4f MRR %.4f (%s)\n", p.dense, p.name, p.cov, r5, mrr, strings.Join(per, ", "))
		if r5 > bestR || r5 == bestR && mrr > bestM {
			best, bestR, bestM, bestHits = p, r5, mrr, hits
		}
		if p.dense == def.Dense && p.name == def.NameCover && p.cov == def.Coverage && !*weighFlds {
			defHits = hits
		}
	}
	fmt.Printf("best: -dense %g -name-cover %g -coverage %g (mean tune recall@5 %.4f, MRR %.4f)\n", best.dense, best.name, best.cov, bestR, bestM)
	if defHits != nil {
		// The rule a fitted point must pass to replace the defaults: more
		// tune queries won than lost in the top 5, and a two-sided sign
		// test over those that differ below 0.05.
		won, lost := 0, 0
		for i := range defHits {
			switch {
			case bestHits[i] && !defHits[i]:
				won++
			case !bestHits[i] && defHits[i]:
				lost++
			}
		}
		p := signTest(won, lost)
		verdict := "within noise: the defaults stand"
		if won > lost && p < 0.05 {
			verdict = "better than the defaults beyond noise"
		}
		fmt.Printf("best against the defaults, pooled tune queries: %d won, %d lost in the top 5; sign test p = %.3f: %s\n", won, lost, p, verdict)
	}
	return nil
}

// compareHits writes the hybrid's top-5 hits to -hits and compares them
// with -against's by the rule a change must pass to be kept
// (docs/search.md): over the pooled queries, more won than lost, and the
// exact two-sided sign test over those that differ below 0.05. Both runs
// must have ranked the same queries: a model file is compared with
// another by two runs, one with each model.bin.
func compareHits(hits map[string]bool) error {
	if *hitsOut != "" {
		b, err := json.Marshal(hits)
		if err != nil {
			return err
		}
		if err := os.WriteFile(*hitsOut, b, 0o644); err != nil {
			return err
		}
	}
	if *against == "" {
		return nil
	}
	b, err := os.ReadFile(*against)
	if err != nil {
		return err
	}
	var base map[string]bool
	if err := json.Unmarshal(b, &base); err != nil {
		return fmt.Errorf("-against %s: %w", *against, err)
	}
	if len(base) != len(hits) {
		return fmt.Errorf("-against %s: %d queries, this run %d (the same -split and -public?)", *against, len(base), len(hits))
	}
	won, lost := map[string]int{}, map[string]int{}
	var ids []string
	for id, h := range hits {
		was, ok := base[id]
		if !ok {
			return fmt.Errorf("-against %s: no query %s (the same -split and -public?)", *against, id)
		}
		c, _, _ := strings.Cut(id, "/")
		switch {
		case h && !was:
			won[c]++
			won[""]++
			ids = append(ids, "+"+id)
		case !h && was:
			lost[c]++
			lost[""]++
			ids = append(ids, "-"+id)
		}
	}
	slices.Sort(ids)
	for _, c := range slices.Sorted(maps.Keys(won)) {
		if c != "" {
			fmt.Printf("against %s: %s %d won, %d lost\n", *against, c, won[c], lost[c])
		}
	}
	for _, c := range slices.Sorted(maps.Keys(lost)) {
		if c != "" && won[c] == 0 {
			fmt.Printf("against %s: %s 0 won, %d lost\n", *against, c, lost[c])
		}
	}
	p := signTest(won[""], lost[""])
	verdict := "within noise: not better"
	if won[""] > lost[""] && p < 0.05 {
		verdict = "better beyond noise"
	}
	fmt.Printf("against %s, pooled queries: %d won, %d lost in the top 5 (%s); sign test p = %.3f: %s\n", *against, won[""], lost[""], strings.Join(ids, " "), p, verdict)
	return nil
}

// signTest is the two-sided exact sign test's p-value for won against
// lost (the queries two rankers disagree on, each side equally likely
// under the null).
func signTest(won, lost int) float64 {
	n := won + lost
	if n == 0 {
		return 1
	}
	k := min(won, lost)
	p := 0.0
	for i := 0; i <= k; i++ {
		lc, _ := math.Lgamma(float64(n + 1))
		l1, _ := math.Lgamma(float64(i + 1))
		l2, _ := math.Lgamma(float64(n - i + 1))
		p += math.Exp(lc - l1 - l2 - float64(n)*math.Ln2)
	}
	return min(1, 2*p)
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// loadCorpus returns the corpus as catalog tools, sorted by name.
func loadCorpus(path string) ([]core.SearchDoc, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	var c corpus
	if err := json.NewDecoder(zr).Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var docs []core.SearchDoc
	for _, s := range c.Servers {
		for _, t := range s.Tools {
			tool := &mcpbridge.Tool{Name: key(s.Name, t.Name), Server: s.Name, OriginalName: t.Name, Title: t.Title,
				Description: t.Description, InputSchema: t.InputSchema, Annotations: t.Annotations, Available: true}
			docs = append(docs, core.SearchDoc{Tool: tool, Instructions: s.Instructions})
		}
	}
	slices.SortFunc(docs, func(a, b core.SearchDoc) int { return strings.Compare(a.Tool.Name, b.Tool.Name) })
	return docs, nil
}

func loadQueries(path string, docs []core.SearchDoc) ([]query, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var qs []query
	if err := json.Unmarshal(b, &qs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	have := map[string]bool{}
	for _, d := range docs {
		have[d.Tool.Name] = true
	}
	for _, q := range qs {
		for _, e := range q.Expected {
			if !have[key(e.Server, e.Tool)] {
				return nil, fmt.Errorf("query %s expects %s, which the corpus does not have", q.ID, key(e.Server, e.Tool))
			}
		}
	}
	return qs, nil
}

// indexRanker builds toolsvc's index (the documents core builds for the
// catalog) with opts.
func indexRanker(docs []core.SearchDoc, opts *toolsearch.Options) func(string, int) []string {
	ix := toolsearch.New[*mcpbridge.Tool](opts)
	for _, d := range docs {
		ix.Upsert(core.ToolDoc(d.Tool, d.Instructions))
	}
	return func(q string, k int) []string {
		hits := ix.Search(q, k, nil)
		out := make([]string, len(hits))
		for i, h := range hits {
			out[i] = h.Key
		}
		return out
	}
}

// printMisses prints each query of kind -misses with no expected tool in
// rank's top 5: the query, what was expected, and the top 5.
func printMisses(qs []query, rank func(string, int) []string) {
	for _, q := range qs {
		if *misses != "all" && q.Kind != *misses {
			continue
		}
		top := rank(q.Query, 5)
		hit := false
		for _, e := range q.Expected {
			hit = hit || slices.Contains(top, key(e.Server, e.Tool))
		}
		if hit {
			continue
		}
		var want []string
		for _, e := range q.Expected {
			want = append(want, key(e.Server, e.Tool))
		}
		fmt.Printf("miss %s [%s] %q\n  want %v\n  got  %v\n", q.ID, q.Kind, q.Query, want, top)
	}
}

type metrics struct {
	at    map[int]float64
	mrr   float64
	ndcg  float64
	kinds map[string][2]int // kind → hits@5, queries
	hit5  []bool            // by query: an expected tool in the top 5
}

func (m metrics) byKind() string {
	var ks []string
	for k := range m.kinds {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	var parts []string
	for _, k := range ks {
		c := m.kinds[k]
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(c[0])/float64(c[1])))
	}
	return strings.Join(parts, ", ")
}

// evaluate ranks every query: recall@k is the share of queries with an
// expected tool (any of them: each serves the query) in the top k; MRR
// the mean of 1/rank of the first expected tool within the top 10 (0 when
// none); nDCG@10 with every expected tool relevant (gain 1) and the
// ideal ranking putting them all first.
func evaluate(qs []query, rank func(string, int) []string) metrics {
	m := metrics{at: map[int]float64{}, kinds: map[string][2]int{}}
	for _, q := range qs {
		want := map[string]bool{}
		for _, e := range q.Expected {
			want[key(e.Server, e.Tool)] = true
		}
		first := 0
		dcg, idcg := 0.0, 0.0
		for i, name := range rank(q.Query, 10) {
			if want[name] {
				if first == 0 {
					first = i + 1
				}
				dcg += 1 / math.Log2(float64(i+2))
			}
		}
		for i := 0; i < len(want) && i < 10; i++ {
			idcg += 1 / math.Log2(float64(i+2))
		}
		m.ndcg += dcg / idcg
		for _, k := range []int{1, 5, 10} {
			if first > 0 && first <= k {
				m.at[k]++
			}
		}
		if first > 0 {
			m.mrr += 1 / float64(first)
		}
		m.hit5 = append(m.hit5, first > 0 && first <= 5)
		c := m.kinds[q.Kind]
		c[1]++
		if first > 0 && first <= 5 {
			c[0]++
		}
		m.kinds[q.Kind] = c
	}
	n := float64(len(qs))
	for k := range m.at {
		m.at[k] /= n
	}
	m.mrr /= n
	m.ndcg /= n
	return m
}

// bm25 is the baseline: Okapi BM25 (k1 1.2, b 0.75) over one field holding
// the same text toolsvc indexes (name, title, description, parameters,
// server and its instructions), lowercased and split at every character
// that is not a letter or digit — no identifier splitting at case changes,
// no stemming, no stop words, no field weights, no expansion.
type bm25 struct {
	docs     []string
	tf       []map[string]int
	lens     []int
	df       map[string]int
	avg      float64
	k1, bNrm float64
}

func plainTerms(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func newBM25(docs []core.SearchDoc) *bm25 {
	b := &bm25{df: map[string]int{}, k1: 1.2, bNrm: 0.75}
	total := 0
	for _, d := range docs {
		td := core.ToolDoc(d.Tool, d.Instructions)
		text := strings.Join(append(td.Text[:], d.Instructions), "\n")
		tf := map[string]int{}
		ts := plainTerms(text)
		for _, t := range ts {
			tf[t]++
		}
		for t := range tf {
			b.df[t]++
		}
		b.docs = append(b.docs, d.Tool.Name)
		b.tf = append(b.tf, tf)
		b.lens = append(b.lens, len(ts))
		total += len(ts)
	}
	b.avg = float64(total) / float64(len(docs))
	return b
}

func (b *bm25) rank(q string, k int) []string {
	n := float64(len(b.docs))
	type hit struct {
		i int
		s float64
	}
	var hits []hit
	terms := plainTerms(q)
	for i, tf := range b.tf {
		s := 0.0
		for _, t := range terms {
			c := float64(tf[t])
			if c == 0 {
				continue
			}
			df := float64(b.df[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			s += idf * c * (b.k1 + 1) / (c + b.k1*(1-b.bNrm+b.bNrm*float64(b.lens[i])/b.avg))
		}
		if s > 0 {
			hits = append(hits, hit{i, s})
		}
	}
	slices.SortFunc(hits, func(x, y hit) int {
		if x.s != y.s {
			if x.s > y.s {
				return -1
			}
			return 1
		}
		return strings.Compare(b.docs[x.i], b.docs[y.i])
	})
	var out []string
	for i := 0; i < len(hits) && i < k; i++ {
		out = append(out, b.docs[hits[i].i])
	}
	return out
}

// catalogOf returns n documents: the corpus, repeated under renamed
// servers ("github~2") until there are n, or its first n.
func catalogOf(docs []core.SearchDoc, n int) []core.SearchDoc {
	out := make([]core.SearchDoc, 0, n)
	for rep := 1; len(out) < n; rep++ {
		for _, d := range docs {
			if len(out) == n {
				break
			}
			if rep > 1 {
				t := *d.Tool
				t.Server = d.Tool.Server + "~" + strconv.Itoa(rep)
				t.Name = key(t.Server, t.OriginalName)
				d = core.SearchDoc{Tool: &t, Instructions: d.Instructions}
			}
			out = append(out, d)
		}
	}
	return out
}

// measureSize measures the index over n tools: the heap it holds per
// tool, search latency over every query (p50, p99 per round), and the
// latency of re-indexing one changed tool.
func measureSize(corpusDocs []core.SearchDoc, qs []query, n int, out map[string]any) {
	docs := catalogOf(corpusDocs, n)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	opts := flagOptions()
	ix := toolsearch.New[*mcpbridge.Tool](&opts)
	for _, d := range docs {
		ix.Upsert(core.ToolDoc(d.Tool, d.Instructions))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perTool := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
	runtime.KeepAlive(ix)

	var p50s, p99s, c50s, c99s, batch []float64
	for r := 0; r < *rounds; r++ {
		// A catalog change of 1,000 tools (or the catalog, if smaller):
		// each re-indexed, as the core applies a change.
		nb := min(1000, len(docs))
		changed := make([]toolsearch.Doc[*mcpbridge.Tool], nb)
		for i := range changed {
			d := docs[(i*7919+r)%len(docs)]
			t := *d.Tool
			t.Description += " (changed in round " + strconv.Itoa(r) + ")"
			changed[i] = core.ToolDoc(&t, d.Instructions)
		}
		start := time.Now()
		for _, d := range changed {
			ix.Upsert(d)
		}
		batch = append(batch, float64(time.Since(start).Microseconds())/1000)

		lat := make([]float64, 0, len(qs))
		for _, q := range qs {
			start := time.Now()
			ix.Search(q.Query, 10, nil)
			lat = append(lat, float64(time.Since(start).Microseconds()))
		}
		slices.Sort(lat)
		p50s, p99s = append(p50s, pct(lat, 50)), append(p99s, pct(lat, 99))
		ch := make([]float64, 0, *changes)
		for i := 0; i < *changes; i++ {
			d := docs[(i*7919+r)%len(docs)]
			t := *d.Tool
			t.Description += " (changed)"
			doc := core.ToolDoc(&t, d.Instructions)
			start := time.Now()
			ix.Upsert(doc)
			ch = append(ch, float64(time.Since(start).Microseconds()))
		}
		slices.Sort(ch)
		c50s, c99s = append(c50s, pct(ch, 50)), append(c99s, pct(ch, 99))
	}
	fmt.Printf("%6d tools: search p50 %s µs, p99 %s µs; index %.0f B/tool; one changed tool re-indexed p50 %s µs, p99 %s µs; %d changed tools applied in %s ms\n",
		n, spread(p50s), spread(p99s), perTool, spread(c50s), spread(c99s), min(1000, len(docs)), spread(batch))
	s := strconv.Itoa(n)
	out["search_p50_us_"+s], out["search_p99_us_"+s] = median(p50s), median(p99s)
	out["index_bytes_per_tool_"+s] = math.Round(perTool)
	out["change_p50_us_"+s], out["change_p99_us_"+s] = median(c50s), median(c99s)
	out["change_1000_ms_"+s] = median(batch)
}

func pct(sorted []float64, p int) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// spread is "median (min–max)" over rounds.
func spread(xs []float64) string {
	return fmt.Sprintf("%.0f (%.0f–%.0f)", median(xs), slices.Min(xs), slices.Max(xs))
}

func loadAverage() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	l, err := strconv.ParseFloat(f[0], 64)
	return l, err == nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
