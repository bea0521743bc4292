package toolsearch

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// searchBoth runs query on ix pruned and exhaustively (Options.Exhaustive,
// flipped between the two: nothing else changes).
func searchBoth(ix *Index[string], q string, k int, keep func(string) bool) (pruned, exhaustive []Hit[string]) {
	ix.opts.Exhaustive = false
	pruned = ix.Search(q, k, keep)
	ix.opts.Exhaustive = true
	exhaustive = ix.Search(q, k, keep)
	ix.opts.Exhaustive = false
	return pruned, exhaustive
}

// randomQuery is one of the shapes a caller sends: a few catalog words,
// a long message near the 1,024-byte bound, repeated words, words no tool
// uses, stop words, abbreviations and synonyms, identifiers.
func randomQuery(rng *rand.Rand) string {
	word := func() string { return vocab[rng.IntN(len(vocab))] }
	special := []string{"the", "of", "please", "zzqx", "frobnicate", "repo", "pr", "k8s", "remove", "folder",
		"listPullRequests", "HTTPServer", "s3", "erase", "delete", "make", "12", "v2", "a", "I"}
	var w []string
	switch rng.IntN(7) {
	case 0, 1: // short
		for range 1 + rng.IntN(4) {
			w = append(w, word())
		}
	case 2: // long, near the bound
		for l := 0; ; {
			x := word()
			if rng.IntN(6) == 0 {
				x = special[rng.IntN(len(special))]
			}
			if l+len(x)+1 > 1024 {
				break
			}
			w = append(w, x)
			l += len(x) + 1
		}
	case 3: // medium, repeated words
		x := word()
		for range 5 + rng.IntN(30) {
			if rng.IntN(3) == 0 {
				w = append(w, x)
			} else {
				w = append(w, word())
			}
		}
	case 4: // unknown and stop words mixed in
		for range 1 + rng.IntN(6) {
			w = append(w, special[rng.IntN(4)])
		}
		if rng.IntN(2) == 0 {
			w = append(w, word())
		}
	default: // abbreviations, synonyms, identifiers
		for range 1 + rng.IntN(5) {
			if rng.IntN(2) == 0 {
				w = append(w, special[rng.IntN(len(special))])
			} else {
				w = append(w, word())
			}
		}
	}
	return strings.Join(w, " ")
}

// TestPrunedMatchesExhaustive: the pruned evaluation returns exactly the
// exhaustive one's hits — keys, bit-equal scores, order — for thousands
// of random queries of every shape, limits around both cut-offs (k and
// the hybrid's denseCandidates), principal filters from none to nearly
// everything refused, on catalogs with duplicate tools (ties at every
// cut-off) and servers' instructions, through churn (tools added,
// removed and replaced, so some bounds are stale), with the dense stage
// and without.
func TestPrunedMatchesExhaustive(t *testing.T) {
	if !prunable(new(Defaults())) {
		t.Fatal("the default options are not prunable")
	}
	lexical := Lexical(Defaults())
	for _, tc := range []struct {
		name string
		opts *Options
	}{{"hybrid", nil}, {"lexical", &lexical}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(44, 7))
			docs := withInstructions(synthetic(1200, 3), 60, 9)
			// Duplicates: the same text under other keys, so scores tie.
			for i := range 150 {
				d := docs[rng.IntN(len(docs))]
				d.Key = fmt.Sprintf("%s__dup%d", d.Key, i)
				d.Value = d.Key
				docs = append(docs, d)
			}
			ix := New[string](tc.opts)
			ix.prunePerDoc = 0 // prune whatever the query's size
			for _, d := range docs {
				ix.Upsert(d)
			}
			extra := withInstructions(synthetic(600, 5), 20, 4)
			live := slices.Clone(docs)
			filters := []struct {
				name string
				keep func(string) bool
			}{
				{"all", nil},
				{"half", func(v string) bool { return hashKey(v)%2 == 0 }},
				{"5%", func(v string) bool { return hashKey(v)%20 == 0 }},
				{"one server", func(v string) bool { return strings.HasPrefix(v, "srv07__") }},
				{"none", func(string) bool { return false }},
			}
			limits := []int{1, 2, 5, 10, 37, denseCandidates - 1, denseCandidates, denseCandidates + 40, 2000}
			compared, nonEmpty := 0, 0
			for round := range 6 {
				if round > 0 { // churn: add, remove, replace
					for range 120 {
						switch op := rng.IntN(3); {
						case op == 0 && len(extra) > 0:
							d := extra[len(extra)-1]
							extra = extra[:len(extra)-1]
							d.Key = fmt.Sprintf("new%d__%s", round, d.Key)
							d.Value = d.Key
							ix.Upsert(d)
							live = append(live, d)
						case op == 1 && len(live) > 0:
							i := rng.IntN(len(live))
							ix.Remove(live[i].Key)
							live = slices.Delete(live, i, i+1)
						case len(live) > 0:
							i := rng.IntN(len(live))
							d := live[i]
							d.Text[FieldDescription] = randomQuery(rng)
							d.Text[FieldName] = vocab[rng.IntN(len(vocab))] + "_" + d.Text[FieldName]
							ix.Upsert(d)
							live[i] = d
						}
					}
				}
				for range 350 {
					q := randomQuery(rng)
					for range 2 {
						k := limits[rng.IntN(len(limits))]
						f := filters[rng.IntN(len(filters))]
						got, want := searchBoth(ix, q, k, f.keep)
						compared++
						if len(want) > 0 {
							nonEmpty++
						}
						if !slices.Equal(got, want) {
							t.Fatalf("round %d, limit %d, filter %s, query %q:\n pruned     %s\n exhaustive %s", round, k, f.name, q, fmtHits(got), fmtHits(want))
						}
					}
				}
			}
			// Not vacuous: most comparisons had results to compare, and
			// many were pruned (not declined for exhaustive: a limit above
			// what the filter leaves, or too few postings).
			pruned := int(ix.pruned.Load())
			if nonEmpty < compared/2 || pruned < nonEmpty/4 {
				t.Fatalf("%d searches compared, %d with hits, %d pruned", compared, nonEmpty, pruned)
			}
			t.Logf("%d searches compared, %d with hits, %d pruned", compared, nonEmpty, pruned)
		})
	}
}

func hashKey(s string) uint32 {
	h := uint32(2166136261)
	for i := range len(s) {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

func fmtHits(hs []Hit[string]) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d hits:", len(hs))
	for i, h := range hs {
		if i == 12 {
			b.WriteString(" …")
			break
		}
		fmt.Fprintf(&b, " %s=%v", h.Key, h.Score)
	}
	return b.String()
}

// TestTermBoundsHold: after churn (stale bounds included), every term's
// bound, and its bound by the fields a posting has, is at least the
// contribution of each of its postings, and the
// bounds are not vacuous: a term's bound is the highest contribution when
// its list was just scanned. And contributionOf, which scores a posting
// from a table when it can, is contribution bit for bit.
func TestTermBoundsHold(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	docs := synthetic(800, 2)
	ix := New[string](new(Lexical(Defaults())))
	for _, d := range docs {
		ix.Upsert(d)
	}
	for i := range 1500 {
		d := docs[rng.IntN(len(docs))]
		if i%3 == 0 {
			ix.Remove(d.Key)
			continue
		}
		d.Text[FieldDescription] = randomQuery(rng)
		ix.Upsert(d)
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var avg [NumFields]float64
	for f := range NumFields {
		avg[f] = math.Max(float64(ix.lenSum[f])/float64(ix.live), 1)
	}
	sc := &scratch{}
	ix.saturated(sc, &avg)
	checked, tight, tabled := 0, 0, 0
	for id, list := range ix.postings {
		if len(list) == 0 {
			continue
		}
		b := &ix.bounds[id]
		fu := ix.fieldUpper(b, &avg)
		upper := ix.upper(&fu, allFields, 1)
		best := 0.0
		for i := range list {
			v := ix.contribution(&list[i], &ix.docs[list[i].doc].lens, &avg, 1)
			// The table's shortcut is the same number, bit for bit, at
			// the weights × IDFs a query has.
			for _, w := range []float64{1, 0.15, 3.7} {
				want := ix.contribution(&list[i], &ix.docs[list[i].doc].lens, &avg, w)
				if got := ix.contributionOf(&list[i], &sc.tfTab, &avg, w); math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("term %q, document %d (flen %d, lengths %v): contributionOf %v, contribution %v", ix.termText[id], list[i].doc, list[i].flen, ix.docs[list[i].doc].lens, got, want)
				}
			}
			if list[i].flen != 0 && list[i].flen != math.MaxUint8 {
				tabled++
			}
			best = max(best, v)
			if u := ix.upper(&fu, fieldMask(&list[i].tf), 1); v > upper*(1+boundSlack) || v > u*(1+boundSlack) {
				t.Fatalf("term %q: a posting contributes %v, its bound is %v (%v by its fields)", ix.termText[id], v, upper, u)
			}
		}
		checked++
		if b.stale == 0 && upper <= best*1.5 {
			tight++
		}
	}
	if checked == 0 || tight < checked/2 || tabled == 0 {
		t.Fatalf("%d terms checked, %d with a bound within 1.5× of the best contribution, %d postings scored from the table", checked, tight, tabled)
	}
}

// TestSelectBatch: selectBatch moves at least k of the highest bounds to
// the front (all of them when there are at most k), at most 2k, with no
// bound left behind above one taken, and loses no candidate — on spread,
// tied, crowded (most bounds near the highest), equal and nearly equal
// bounds.
func TestSelectBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	var counts [selectBuckets]int32
	shapes := []func(i int) float64{
		func(int) float64 { return rng.Float64() * 40 },
		func(int) float64 { return float64(rng.IntN(5)) },
		func(int) float64 { return 30 - rng.ExpFloat64()*0.01 },
		func(i int) float64 { return 30 - math.Pow(float64(i%50), 3)*1e-3 },
		func(int) float64 { return 7 },
		func(int) float64 { return math.Nextafter(1, 2) + float64(rng.IntN(2))*1e-16 },
		func(int) float64 { return 1e-300 * rng.Float64() },
	}
	for trial := range 3000 {
		shape := shapes[trial%len(shapes)]
		a := make([]seedCand, rng.IntN(3000))
		for i := range a {
			a[i] = seedCand{ub: shape(i), doc: uint32(i)}
		}
		k := 1 + rng.IntN(400)
		before := slices.Clone(a)
		n := selectBatch(a, k, &counts)
		if len(a) <= k && n != len(a) || len(a) > k && (n < k || n > 2*k) {
			t.Fatalf("trial %d: %d candidates, k %d: took %d", trial, len(a), k, n)
		}
		if n < len(a) {
			low := slices.MinFunc(a[:n], func(x, y seedCand) int { return cmp.Compare(x.ub, y.ub) }).ub
			high := slices.MaxFunc(a[n:], func(x, y seedCand) int { return cmp.Compare(x.ub, y.ub) }).ub
			if high > low {
				t.Fatalf("trial %d: a bound %v left behind above %v taken", trial, high, low)
			}
		}
		byDoc := func(x, y seedCand) int { return cmp.Compare(x.doc, y.doc) }
		slices.SortFunc(a, byDoc)
		if !slices.Equal(a, before) {
			t.Fatalf("trial %d: the candidates changed", trial)
		}
	}
}

// TestPrunedConcurrent: pruned searches running at once, each with its
// own scratch from the pool (accumulators, marks, selection counts, the
// tables), return what the exhaustive evaluation returned for the same
// query searched alone; under -race.
func TestPrunedConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	ix := New[string](nil)
	ix.prunePerDoc = 0
	for _, d := range synthetic(1500, 6) {
		ix.Upsert(d)
	}
	type query struct {
		q    string
		k    int
		want []Hit[string]
	}
	var qs []query
	ix.opts.Exhaustive = true
	for i := range 40 {
		q := query{q: randomQuery(rng), k: []int{1, 10, denseCandidates + 3}[i%3]}
		q.want = ix.Search(q.q, q.k, nil)
		qs = append(qs, q)
	}
	ix.opts.Exhaustive = false
	before := ix.pruned.Load()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for r := range 3 {
				for i := range qs {
					q := &qs[(i+g*7+r)%len(qs)]
					if got := ix.Search(q.q, q.k, nil); !slices.Equal(got, q.want) {
						t.Errorf("goroutine %d, query %q (limit %d):\n pruned     %s\n exhaustive %s", g, q.q, q.k, fmtHits(got), fmtHits(q.want))
						return
					}
				}
			}
		})
	}
	wg.Wait()
	n := ix.pruned.Load() - before
	if n < int64(len(qs)) {
		t.Fatalf("%d of %d searches pruned", n, 4*3*len(qs))
	}
	t.Logf("%d of %d searches pruned", n, 4*3*len(qs))
}
