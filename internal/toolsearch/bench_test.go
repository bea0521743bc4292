package toolsearch

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// reportCPU reports the process's CPU time per op since start (user and
// system, every thread): on a shared machine it moves less than the wall
// time, and it shows what working on every core costs in total.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((cpuTime()-start).Milliseconds())/float64(b.N), "cpu-ms/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// withInstructions gives docs' servers instructions of random words
// (every fifth server none), documents spread over that many servers.
func withInstructions(docs []Doc[string], servers int, seed uint64) []Doc[string] {
	rng := rand.New(rand.NewPCG(seed, seed))
	instr := make([]string, servers)
	for i := range instr {
		if i%5 == 0 {
			continue
		}
		var w []string
		for range 5 + rng.IntN(40) {
			w = append(w, vocab[rng.IntN(len(vocab))])
		}
		instr[i] = strings.Join(w, " ")
	}
	out := slices.Clone(docs)
	for i := range out {
		out[i].Server = fmt.Sprintf("isrv%03d", i%servers)
		out[i].Text[FieldServer] = out[i].Server
		out[i].Instructions = instr[i%servers]
	}
	return out
}

func buildIndex(n int) (*Index[string], []Doc[string]) { return buildIndexWith(n, nil) }

func buildIndexWith(n int, opts *Options) (*Index[string], []Doc[string]) {
	docs := synthetic(n, 7)
	ix := New[string](opts)
	for _, d := range docs {
		ix.Upsert(d)
	}
	return ix, docs
}

var benchQueries = []string{
	"create a new issue in the repository",
	"delete old snapshots",
	"list running containers in the cluster",
	"send an email to the customer about the invoice",
	"schedule a meeting",
}

// BenchmarkSearch is a search's latency, hybrid (the default) and lexical
// (the fallback): p50 and p99 are reported besides the mean. The
// "+instructions" cases spread the tools over 750 servers with
// instructions, as a big catalog has (scoring them once cost 45% of a
// search: docs/search.md). The "+long" case asks queries near the
// 1,024-byte bound (about 150 words, more than 100 distinct: the 32 rarest
// in the catalog are chosen, index.go's informative).
func BenchmarkSearch(b *testing.B) {
	lexical := Lexical(Defaults())
	exhaustive := Defaults()
	exhaustive.Exhaustive = true
	rng := rand.New(rand.NewPCG(11, 11))
	var long []string
	for range 5 {
		var w []string
		for l := 0; l < 1000; {
			x := vocab[rng.IntN(len(vocab))]
			if l+len(x)+1 > 1024 {
				break
			}
			w = append(w, x)
			l += len(x) + 1
		}
		long = append(long, strings.Join(w, " "))
	}
	for _, n := range []int{2000, 20000} {
		for _, r := range []struct {
			name  string
			opts  *Options
			instr bool
			qs    []string
		}{{"hybrid", nil, false, benchQueries}, {"lexical", &lexical, false, benchQueries},
			{"hybrid+instructions", nil, true, benchQueries}, {"hybrid+long", nil, false, long},
			{"hybrid+long+exhaustive", &exhaustive, false, long}} {
			docs := synthetic(n, 7)
			if r.instr {
				docs = withInstructions(docs, 750, 5)
			}
			ix := New[string](r.opts)
			for _, d := range docs {
				ix.Upsert(d)
			}
			b.Run(fmt.Sprintf("%s/tools=%d", r.name, n), func(b *testing.B) {
				b.ReportAllocs()
				var lat []time.Duration
				i := 0
				for b.Loop() {
					start := time.Now()
					ix.Search(r.qs[i%len(r.qs)], 10, nil)
					lat = append(lat, time.Since(start))
					i++
				}
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			})
		}
	}
}

// BenchmarkSearchPruned compares the pruned evaluation with the
// exhaustive one (Options.Exhaustive) on the same index, alternating
// them query by query so that a shared machine's load falls on both
// alike: p50 and p99 of each, and how many times faster the pruned
// one's p50 is.
func BenchmarkSearchPruned(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 11))
	var long []string
	for range 5 {
		var w []string
		for l := 0; l < 1000; {
			x := vocab[rng.IntN(len(vocab))]
			if l+len(x)+1 > 1024 {
				break
			}
			w = append(w, x)
			l += len(x) + 1
		}
		long = append(long, strings.Join(w, " "))
	}
	lexical := Lexical(Defaults())
	for _, r := range []struct {
		name string
		opts *Options
		qs   []string
	}{{"hybrid", nil, benchQueries}, {"hybrid+long", nil, long}, {"lexical", &lexical, benchQueries}, {"lexical+long", &lexical, long}} {
		ix, _ := buildIndexWith(20000, r.opts)
		b.Run(r.name+"/tools=20000", func(b *testing.B) {
			var lat [2][]time.Duration
			i := 0
			for b.Loop() {
				for m := range 2 {
					ix.opts.Exhaustive = m == 1
					start := time.Now()
					ix.Search(r.qs[i%len(r.qs)], 10, nil)
					lat[m] = append(lat[m], time.Since(start))
				}
				i++
			}
			ix.opts.Exhaustive = false
			for m, name := range []string{"pruned", "exhaustive"} {
				slices.Sort(lat[m])
				b.ReportMetric(float64(lat[m][len(lat[m])/2].Microseconds()), name+"-p50-µs")
				b.ReportMetric(float64(lat[m][len(lat[m])*99/100].Microseconds()), name+"-p99-µs")
			}
			b.ReportMetric(float64(lat[1][len(lat[1])/2])/float64(lat[0][len(lat[0])/2]), "speedup-p50")
		})
	}
}

// BenchmarkChange1000 is a catalog change of 1,000 tools applied to an
// index of 20,000 (each re-indexed, as the core applies a change), with
// the default options and with the tool vectors weighted by field.
func BenchmarkChange1000(b *testing.B) {
	weighed := Defaults()
	weighed.WeighFields = true
	for _, tc := range []struct {
		name string
		opts *Options
	}{{"default", nil}, {"weigh-fields", &weighed}} {
		b.Run(tc.name, func(b *testing.B) {
			ix, docs := buildIndexWith(20000, tc.opts)
			r := 0
			for b.Loop() {
				for i := range 1000 {
					d := docs[(i*7919+r)%len(docs)]
					d.Text[FieldDescription] += fmt.Sprintf(" changed %d", r)
					ix.Upsert(d)
				}
				r++
			}
		})
	}
}

// BenchmarkUpsert is the cost of one changed tool: re-indexing it in a
// catalog of 20,000.
func BenchmarkUpsert(b *testing.B) {
	ix, docs := buildIndex(20000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		d := docs[i%len(docs)]
		d.Text[FieldDescription] += " changed"
		ix.Upsert(d)
		i++
	}
}

// BenchmarkIndexMemory reports the index's heap per tool.
func BenchmarkIndexMemory(b *testing.B) {
	for _, n := range []int{2000, 20000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			docs := synthetic(n, 7)
			var perTool float64
			for b.Loop() {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				ix := New[string](nil)
				for _, d := range docs {
					ix.Upsert(d)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				// Keys and values are the catalog's strings, shared.
				perTool = float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
				runtime.KeepAlive(ix)
			}
			b.ReportMetric(perTool, "B/tool")
		})
	}
}

// BenchmarkBuild is the index's first build at 20,000 tools (what a
// search or the console's PrepareSearch pays after a start), split into
// its stages: the lexical analysis and postings alone (Lexical options),
// the documents' vectors alone (embedDoc), and the whole hybrid build.
func BenchmarkBuild(b *testing.B) {
	docs := synthetic(20000, 7)
	lexical := Lexical(Defaults())
	b.Run("lexical", func(b *testing.B) {
		defer reportCPU(b, cpuTime())
		for b.Loop() {
			ix := New[string](&lexical)
			for _, d := range docs {
				ix.Upsert(d)
			}
		}
	})
	b.Run("vectors", func(b *testing.B) {
		ix := New[string](nil)
		defer reportCPU(b, cpuTime())
		for b.Loop() {
			for i := range docs {
				ix.embedDoc(&docs[i])
			}
		}
	})
	b.Run("hybrid", func(b *testing.B) {
		defer reportCPU(b, cpuTime())
		for b.Loop() {
			ix := New[string](nil)
			for _, d := range docs {
				ix.Upsert(d)
			}
		}
	})
}

// BenchmarkBuildStaged is the same first build in stages (UpsertBatch on
// every core, then EmbedPending): "lexical-stage" is the time until the
// index answers (lexically), "complete" until it ranks as Upsert's.
func BenchmarkBuildStaged(b *testing.B) {
	docs := synthetic(20000, 7)
	b.Run("lexical-stage", func(b *testing.B) {
		defer reportCPU(b, cpuTime())
		for b.Loop() {
			ix := New[string](nil)
			ix.UpsertBatch(len(docs), func(i int) Doc[string] { return docs[i] })
		}
	})
	b.Run("complete", func(b *testing.B) {
		defer reportCPU(b, cpuTime())
		for b.Loop() {
			ix := New[string](nil)
			ix.UpsertBatch(len(docs), func(i int) Doc[string] { return docs[i] })
			ix.EmbedPending()
		}
	})
}
