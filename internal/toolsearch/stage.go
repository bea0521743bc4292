package toolsearch

import (
	"runtime"
	"sync"
)

// Building in stages. The first build of a large catalog's index is
// about half lexical analysis (splitting, stemming, postings) and half
// the documents' vectors (BenchmarkBuild: 0.69 s and 0.71 s of 1.8 s at
// 20,000 synthetic tools on one core). UpsertBatch does the lexical half
// on every core and leaves the vectors pending; the index then answers at
// once with the lexical ranking (SearchRanked says so), and EmbedPending
// computes the vectors, on every core, outside the index's lock, after
// which the index ranks exactly as one built by Upsert (the same vectors
// of the same text; the ranking does not depend on the order documents
// were added in).

// batchChunk is how many documents UpsertBatch analyses before inserting
// them: it bounds the analysed text held at once, and the lock is taken
// once per chunk, not per document.
const batchChunk = 128

// UpsertBatch indexes n documents as Upsert does, analysing them on
// every core, with their vectors left pending (EmbedPending) when the
// dense stage is on. doc(i) is called from several goroutines at once,
// and again for a pending document by EmbedPending: it must give the same
// document each time (the index keeps doc and i, not the document's text,
// which can be kilobytes of schema a tool). Documents are inserted in the
// order 0..n-1.
func (ix *Index[T]) UpsertBatch(n int, doc func(i int) Doc[T]) {
	src := &batchSource[T]{doc: doc}
	docs := make([]Doc[T], min(n, batchChunk))
	as := make([]analyzed, len(docs))
	for base := 0; base < n; base += batchChunk {
		m := min(batchChunk, n-base)
		parallel(m, func(i int) {
			docs[i] = doc(base + i)
			as[i] = ix.analyzeDoc(&docs[i], false)
		})
		ix.mu.Lock()
		for i := range m {
			ix.insertLocked(&docs[i], &as[i], pendingDoc[T]{src: src, i: base + i})
			docs[i], as[i] = Doc[T]{}, analyzed{}
		}
		ix.mu.Unlock()
	}
}

// batchSource is one UpsertBatch's documents, for EmbedPending.
type batchSource[T any] struct{ doc func(i int) Doc[T] }

// pendingDoc is a document whose vector is pending: the i-th of its
// batch. Its identity is the entry's: a document replaced since has
// another (or none).
type pendingDoc[T any] struct {
	src *batchSource[T]
	i   int
}

// Pending is the number of documents whose vectors are still to be
// computed (EmbedPending).
func (ix *Index[T]) Pending() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.pending)
}

// EmbedPending computes the pending documents' vectors on every core,
// outside the index's lock (searches go on, lexically), and stores each
// unless its document was replaced or removed meanwhile. One runs at a
// time: a second call waits for the first and then finds what is left.
func (ix *Index[T]) EmbedPending() {
	if ix.Pending() == 0 {
		return // every search not Staged comes here: no lock of its own
	}
	ix.embedMu.Lock()
	defer ix.embedMu.Unlock()
	for {
		type job struct {
			id  uint32
			doc pendingDoc[T]
			vec qvec
			ok  bool
		}
		ix.mu.RLock()
		jobs := make([]job, 0, min(len(ix.pending), batchChunk))
		for id, d := range ix.pending {
			jobs = append(jobs, job{id: id, doc: d})
			if len(jobs) == batchChunk {
				break
			}
		}
		ix.mu.RUnlock()
		if len(jobs) == 0 {
			return
		}
		parallel(len(jobs), func(i int) {
			d := jobs[i].doc.src.doc(jobs[i].doc.i)
			jobs[i].vec, jobs[i].ok = ix.embedDoc(&d)
		})
		ix.mu.Lock()
		for _, j := range jobs {
			if ix.pending[j.id] == j.doc {
				ix.dense.set(j.id, j.vec, j.ok)
				delete(ix.pending, j.id)
			}
		}
		if len(ix.pending) == 0 {
			ix.pending = nil // a map that held 20,000 entries keeps their buckets
		}
		ix.mu.Unlock()
	}
}

// parallel calls f(0..n-1) on GOMAXPROCS goroutines and returns when
// all have returned.
func parallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				f(i)
			}
		})
	}
	wg.Wait()
}
