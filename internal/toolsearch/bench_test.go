package toolsearch

import (
	"fmt"
	"runtime"
	"testing"
)

func buildIndex(n int) (*Index[string], []Doc[string]) {
	docs := synthetic(n, 7)
	ix := New[string](nil)
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

func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{2000, 20000} {
		ix, _ := buildIndex(n)
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				ix.Search(benchQueries[i%len(benchQueries)], 10, nil)
				i++
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
