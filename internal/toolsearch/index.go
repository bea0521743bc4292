// Package toolsearch ranks the tools of a catalog against a free-text
// query: an in-memory inverted index scored with BM25F (BM25 over several
// weighted fields), over the words of a tool's name, title, description,
// parameters and server, with query expansion over a small vocabulary of
// equivalent words (synonyms.go).
//
// Guarantees:
//   - Incremental: Upsert and Remove cost what the tool's own text costs
//     (its terms' posting entries), not what the catalog costs.
//   - Deterministic: the ranking depends only on the set of documents
//     indexed and the query — not on the order they were added in, nor on
//     removed documents — so every replica with the same catalog ranks the
//     same; ties break by key.
//   - Safe for concurrent use: searches share a read lock; Upsert and Remove
//     take the write lock for one document's work.
//
// Why not a search library: a general engine (bleve is the Go one) brings
// an analysis pipeline, segment files and a query language this needs none
// of, holds several times more memory per document, and cannot split an
// identifier like "listPullRequests" without a custom analyzer anyway; the
// index here is a term dictionary and posting lists of a few bytes per
// (term, tool), which is what the memory and per-change goals need
// (docs/search.md).
package toolsearch

import (
	"cmp"
	"container/heap"
	"math"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
)

// Field is one weighted part of a tool's text.
type Field int

// The fields of a document.
const (
	FieldName        Field = iota // the tool's name on its upstream, split into words
	FieldTitle                    // its title (and the annotations' title)
	FieldDescription              // its description
	FieldParams                   // its parameters' names, titles and descriptions
	FieldServer                   // the server's name
	FieldAliases                  // the operator's aliases and example queries for the tool (config: searchAliases)
	// NumFields is the number of fields.
	NumFields
)

// Doc is one tool's text.
type Doc[T any] struct {
	// Key identifies the document (a tool's exposed name): unique, the
	// final tie-break of the ranking.
	Key string
	// Value is returned with the document's hits.
	Value T
	// Text is the document's text by field.
	Text [NumFields]string
	// Server names the document's server; Instructions are that server's
	// instructions (the same for every document of the server), indexed once
	// per server.
	Server       string
	Instructions string
}

// Options tune the ranking. The zero value takes the defaults (Defaults).
type Options struct {
	// Weight and B are BM25F's per-field weight and length normalisation.
	Weight [NumFields]float64
	B      [NumFields]float64
	// K1 is BM25's term-frequency saturation.
	K1 float64
	// ExpansionWeight is the weight of a query term's synonyms relative to
	// the term itself (0: no expansion).
	ExpansionWeight float64
	// InstructionsWeight scales how much a match in a server's instructions
	// adds to the score of that server's tools that match otherwise.
	InstructionsWeight float64
	// Coverage rewards a document that matches more of the query's words:
	// the score is multiplied by (1 + Coverage × matched / words).
	Coverage float64
	// NoExpansion turns query expansion off (the eval's ablation).
	NoExpansion bool
	// Dense is the weight of the dense (embedding) similarity in the
	// hybrid score: score = lexical / best lexical + Dense × cosine
	// (dense.go). 0: lexical only.
	Dense float64
	// DenseFloor is the cosine a document needs to be returned without
	// any lexical match.
	DenseFloor float64
	// WeighFields makes a document's vector the weighted mean of its
	// fields' tokens (docFields in dense.go: the name counts twice, the
	// parameters half) instead of the plain mean of its text. Off by
	// default: measured in docs/search.md ("Field-weighted vectors").
	WeighFields bool
	// NameCover is the weight, in the hybrid score, of how much of a
	// tool's name the query covers: the share of the name's distinct
	// terms that a query word (or its abbreviation's long form) matches.
	// Near-duplicate tools share most words of their descriptions; their
	// names are what tell them apart. 0: not part of the score.
	NameCover float64
	// Exhaustive scores every posting of every query term instead of
	// skipping the documents that cannot enter the results (prune.go):
	// the same results, bit for bit, slower; the reference the pruned
	// evaluation is tested and measured against.
	Exhaustive bool
	// Feedback is the query-side feedback and expansion (feedback.go):
	// measured on the eval's tune splits and off by default
	// (docs/search.md, "Query-side feedback and expansion").
	Feedback Feedback
}

// Defaults are the options tuned on the retrieval eval (docs/search.md).
func Defaults() Options {
	return Options{
		Weight:             [NumFields]float64{FieldName: 3, FieldTitle: 2, FieldDescription: 1, FieldParams: 0.5, FieldServer: 1.5, FieldAliases: 2},
		B:                  [NumFields]float64{FieldName: 0.3, FieldTitle: 0.3, FieldDescription: 1, FieldParams: 0.75, FieldServer: 0, FieldAliases: 0.3},
		K1:                 2,
		ExpansionWeight:    0.15,
		InstructionsWeight: 0.1,
		Coverage:           0.5,
		Dense:              defaultDense,
		DenseFloor:         defaultDenseFloor,
	}
}

// Lexical returns opts without the dense stage: the lexical ranking alone
// (the fallback a deployment can choose, and the eval's ablation).
func Lexical(opts Options) Options {
	opts.Dense = 0
	return opts
}

// posting is one (term, document) pair: the term's frequency in each
// field (saturating at 255: BM25 saturates long before).
type posting struct {
	doc uint32
	tf  [NumFields]uint8
	// fields has bit f set when tf[f] > 0 (fieldMask), and flen is the
	// length of the document's field (at most 255) when the term occurs
	// once and in that field only (0 otherwise): prune bounds the
	// posting's score by a lookup with them, without reading the
	// document. (They fill the struct's padding.)
	fields, flen uint8
}

type docEntry[T any] struct {
	key    string
	value  T
	server uint32            // its server's id (Index.serverByID)
	lens   [NumFields]uint16 // terms per field (saturating)
	// nameTerms is the number of distinct terms of the name (saturating).
	nameTerms uint8
	terms     []termRef
}

// termRef records where a document's entry sits in a term's posting list,
// so that Remove deletes it in O(1) per term, and a search finds a
// document's postings from the document (prune.go).
type termRef struct {
	term uint32
	pos  uint32
}

// serverEntry is a server's instructions, indexed once for all its tools.
type serverEntry struct {
	name         string
	id           uint32 // index into Index.serverByID, reused once the server is gone
	instructions string
	tf           map[string]int // term → frequency in the instructions
	length       int
	docs         int // documents of the server in the index
}

// instrPosting is one (term, server) pair of the servers' instructions.
type instrPosting struct {
	server uint32
	tf     uint32
}

// Index is a tool search index. The zero value is not usable: call New.
type Index[T any] struct {
	opts Options

	mu       sync.RWMutex
	terms    map[string]uint32 // term → id
	termText []string          // id → term ("" : a free id)
	postings [][]posting       // id → posting list (unordered)
	bounds   []termBound       // id → its postings' bound statistics (prune.go)
	freeTerm []uint32
	docs     []docEntry[T]
	freeDoc  []uint32
	byKey    map[string]uint32
	live     int
	lenSum   [NumFields]uint64 // over live documents
	servers  map[string]*serverEntry
	// serverByID is the servers by id (nil: a free id); instrPostings
	// the servers' instructions inverted, term → the servers using it, so
	// a query term costs the servers that use it, not every server; and
	// instrLen the instructions' total length (terms).
	serverByID    []*serverEntry
	freeServer    []uint32
	instrPostings map[string][]instrPosting
	instrLen      int
	dense         denseStore // the documents' vectors, by document id (dense.go)
	// pending are the documents indexed by UpsertBatch whose vectors
	// EmbedPending has not computed yet (stage.go): while any is, a search
	// ranks lexically.
	pending map[uint32]pendingDoc[T]
	embedMu sync.Mutex // one EmbedPending at a time

	scratch sync.Pool // *scratch
	// prunePerDoc is prune.go's threshold of postings (a test sets 0, to
	// prune every query); pruned counts the searches prune evaluated.
	prunePerDoc int
	pruned      atomic.Int64
}

// New returns an empty index (opts nil: Defaults).
func New[T any](opts *Options) *Index[T] {
	o := Defaults()
	if opts != nil {
		o = *opts
	}
	return &Index[T]{opts: o, prunePerDoc: prunePerDoc, terms: map[string]uint32{}, byKey: map[string]uint32{}, servers: map[string]*serverEntry{}, instrPostings: map[string][]instrPosting{}}
}

// Len is the number of documents indexed.
func (ix *Index[T]) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.live
}

// Upsert indexes d, replacing the document with the same key.
func (ix *Index[T]) Upsert(d Doc[T]) {
	// Analyse outside the lock: it is the expensive part.
	a := ix.analyzeDoc(&d, true)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.insertLocked(&d, &a, pendingDoc[T]{})
}

// analyzed is a document's text analysed, ready to be inserted.
type analyzed struct {
	counts map[string]*[NumFields]uint8
	lens   [NumFields]uint16
	// nameTerms: distinct terms of the name (saturating).
	nameTerms uint8
	order     []string // first-seen order: the postings' layout, not the ranking
	vec       qvec
	hasVec    bool
	// deferred: the vector is left for EmbedPending.
	deferred bool
	instr    *serverEntry
}

// analyzeDoc analyses d (and embeds it when withVector and the dense
// stage is on). It reads nothing of the index but its options.
func (ix *Index[T]) analyzeDoc(d *Doc[T], withVector bool) analyzed {
	var a analyzed
	for f := range NumFields {
		analyze(d.Text[f], func(t string) {
			if a.lens[f] < math.MaxUint16 {
				a.lens[f]++
			}
			if a.counts == nil {
				a.counts = make(map[string]*[NumFields]uint8, 64)
			}
			c, ok := a.counts[t]
			if !ok {
				c = new([NumFields]uint8)
				a.counts[t] = c
				a.order = append(a.order, t)
			}
			if c[f] == 0 && f == FieldName && a.nameTerms < math.MaxUint8 {
				a.nameTerms++
			}
			if c[f] < math.MaxUint8 {
				c[f]++
			}
		})
	}
	if withVector {
		a.vec, a.hasVec = ix.embedDoc(d)
	} else {
		a.deferred = ix.model() != nil
	}
	if d.Instructions != "" {
		a.instr = &serverEntry{instructions: d.Instructions, tf: map[string]int{}}
		analyze(d.Instructions, func(t string) { a.instr.tf[t]++; a.instr.length++ })
	}
	return a
}

// insertLocked puts the analysed d in the index (src: where EmbedPending
// gets it again when its vector is deferred). ix.mu is held.
func (ix *Index[T]) insertLocked(d *Doc[T], a *analyzed, src pendingDoc[T]) {
	// The server counts the new document before the old one goes, so
	// replacing a server's only tool does not drop and re-invert its
	// instructions.
	s := ix.servers[d.Server]
	if s == nil {
		s = ix.addServer(d.Server)
	}
	s.docs++
	if id, ok := ix.byKey[d.Key]; ok {
		ix.removeLocked(id)
	}
	id := ix.allocDoc()
	e := &ix.docs[id]
	*e = docEntry[T]{key: d.Key, value: d.Value, lens: a.lens, nameTerms: a.nameTerms, terms: make([]termRef, 0, len(a.order))}
	for _, t := range a.order {
		tid := ix.termID(t)
		e.terms = append(e.terms, termRef{term: tid, pos: uint32(len(ix.postings[tid]))})
		ix.insertPosting(tid, posting{doc: id, tf: *a.counts[t]}, &a.lens)
	}
	ix.dense.set(id, a.vec, a.hasVec)
	if a.deferred {
		if ix.pending == nil {
			ix.pending = map[uint32]pendingDoc[T]{}
		}
		ix.pending[id] = src
	}
	ix.byKey[d.Key] = id
	ix.live++
	for f := range NumFields {
		ix.lenSum[f] += uint64(a.lens[f])
	}
	e.server = s.id
	if s.instructions != d.Instructions {
		// The server's instructions changed (or are first seen): the
		// server's newest document says what they are.
		instr := a.instr
		if instr == nil {
			instr = &serverEntry{}
		}
		ix.unindexInstructions(s)
		s.instructions, s.tf, s.length = instr.instructions, instr.tf, instr.length
		ix.indexInstructions(s)
	}
}

func (ix *Index[T]) addServer(name string) *serverEntry {
	s := &serverEntry{name: name}
	if n := len(ix.freeServer); n > 0 {
		s.id = ix.freeServer[n-1]
		ix.freeServer = ix.freeServer[:n-1]
		ix.serverByID[s.id] = s
	} else {
		s.id = uint32(len(ix.serverByID))
		ix.serverByID = append(ix.serverByID, s)
	}
	ix.servers[name] = s
	return s
}

func (ix *Index[T]) removeServer(s *serverEntry) {
	ix.unindexInstructions(s)
	delete(ix.servers, s.name)
	ix.serverByID[s.id] = nil
	ix.freeServer = append(ix.freeServer, s.id)
}

// indexInstructions adds s's instructions to the inverted instructions.
func (ix *Index[T]) indexInstructions(s *serverEntry) {
	for t, c := range s.tf {
		ix.instrPostings[t] = append(ix.instrPostings[t], instrPosting{server: s.id, tf: uint32(c)})
	}
	ix.instrLen += s.length
}

// unindexInstructions takes s's instructions out of the inverted
// instructions: a scan of each of its terms' lists (at most one entry per
// server), paid only when a server's instructions change or it goes.
func (ix *Index[T]) unindexInstructions(s *serverEntry) {
	for t := range s.tf {
		list := ix.instrPostings[t]
		for i := range list {
			if list[i].server == s.id {
				list[i] = list[len(list)-1]
				list = list[:len(list)-1]
				break
			}
		}
		if len(list) == 0 {
			delete(ix.instrPostings, t)
		} else {
			ix.instrPostings[t] = list
		}
	}
	ix.instrLen -= s.length
}

// Remove drops the document with key, if indexed.
func (ix *Index[T]) Remove(key string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if id, ok := ix.byKey[key]; ok {
		ix.removeLocked(id)
	}
}

func (ix *Index[T]) removeLocked(id uint32) {
	e := &ix.docs[id]
	for _, r := range e.terms {
		ix.removePosting(r, &e.lens)
	}
	for f := range NumFields {
		ix.lenSum[f] -= uint64(e.lens[f])
	}
	if s := ix.serverByID[e.server]; s != nil {
		if s.docs--; s.docs == 0 {
			ix.removeServer(s)
		}
	}
	delete(ix.byKey, e.key)
	ix.dense.clear(id)
	delete(ix.pending, id)
	*e = docEntry[T]{}
	ix.freeDoc = append(ix.freeDoc, id)
	ix.live--
}

func (ix *Index[T]) allocDoc() uint32 {
	if n := len(ix.freeDoc); n > 0 {
		id := ix.freeDoc[n-1]
		ix.freeDoc = ix.freeDoc[:n-1]
		return id
	}
	ix.docs = append(ix.docs, docEntry[T]{})
	return uint32(len(ix.docs) - 1)
}

func (ix *Index[T]) termID(t string) uint32 {
	if id, ok := ix.terms[t]; ok {
		return id
	}
	var id uint32
	if n := len(ix.freeTerm); n > 0 {
		id = ix.freeTerm[n-1]
		ix.freeTerm = ix.freeTerm[:n-1]
		ix.termText[id] = t
	} else {
		id = uint32(len(ix.termText))
		ix.termText = append(ix.termText, t)
		ix.postings = append(ix.postings, nil)
		ix.bounds = append(ix.bounds, termBound{})
	}
	ix.terms[t] = id
	return id
}

func (ix *Index[T]) freeTermID(id uint32) {
	delete(ix.terms, ix.termText[id])
	ix.termText[id] = ""
	ix.postings[id] = nil
	ix.bounds[id] = termBound{}
	ix.freeTerm = append(ix.freeTerm, id)
}

// Hit is one ranked document.
type Hit[T any] struct {
	Key   string
	Value T
	Score float64
}

// queryTerm is one term of an analysed query.
type queryTerm struct {
	term   string
	weight float64
	word   int // which query word it stands for (coverage)
}

// maxQueryWords bounds the words of a query that count: a longer query (a
// user's whole message, a pasted document) is ranked on its maxQueryWords
// most informative words (informative). maxQueryRead bounds the distinct
// words read to choose them (a query is at most 1,024 bytes anyway).
const (
	maxQueryWords = 32
	maxQueryRead  = 256
)

// parseQuery analyses q into its terms (each once, at its highest weight)
// and the number of distinct words. ix.mu is held (read): a long query's
// words are chosen by the catalog's statistics.
func (ix *Index[T]) parseQuery(q string) ([]queryTerm, int) {
	var words []string
	var seen map[string]struct{} // beyond maxQueryWords words: a set, not a scan
	analyze(q, func(t string) {
		switch {
		case len(words) >= maxQueryRead:
		case seen != nil:
			if _, ok := seen[t]; !ok {
				seen[t] = struct{}{}
				words = append(words, t)
			}
		case !slices.Contains(words, t):
			words = append(words, t)
			if len(words) == maxQueryWords {
				seen = make(map[string]struct{}, 2*maxQueryWords)
				for _, w := range words {
					seen[w] = struct{}{}
				}
			}
		}
	})
	if len(words) > maxQueryWords {
		words = ix.informative(words)
	}
	var out []queryTerm
	add := func(t string, w float64, word int) {
		for i := range out {
			if out[i].term == t {
				if w > out[i].weight {
					out[i].weight, out[i].word = w, word
				}
				return
			}
		}
		out = append(out, queryTerm{term: t, weight: w, word: word})
	}
	for i, t := range words {
		add(t, 1, i)
		for _, u := range sameTerms[t] {
			add(u, 1, i)
		}
	}
	if ix.opts.ExpansionWeight > 0 && !ix.opts.NoExpansion {
		for i, t := range words {
			for _, u := range expansions[t] {
				add(u, ix.opts.ExpansionWeight, i)
			}
		}
	}
	// The order scores are summed in: fixed, so that equal inputs give
	// bit-equal scores.
	slices.SortFunc(out, func(a, b queryTerm) int { return cmp.Compare(a.term, b.term) })
	return out, len(words)
}

// informative returns the maxQueryWords of words (more than that) with
// the highest inverse document frequency in the catalog being searched —
// a word's own term's or, if higher, its abbreviation's long form's; a
// word no tool uses has none and comes last — in their order in the
// query; equal IDFs keep the earlier word. A long query is mostly not
// the request ("I'm planning a trip to New York in December and will be
// staying for five days; could you tell me the current weather…"): its
// first words are often the preamble, and the words that tell the
// catalog's tools apart are the rare ones there. The catalog's own
// statistics rank them, so the rule holds on any deployment, with no
// corpus of queries behind it. ix.mu is held (read).
func (ix *Index[T]) informative(words []string) []string {
	n := float64(ix.live)
	idf := func(t string) float64 {
		id, ok := ix.terms[t]
		if !ok {
			return 0
		}
		df := float64(len(ix.postings[id]))
		return math.Log(1 + (n-df+0.5)/(df+0.5))
	}
	type ranked struct {
		i   int
		idf float64
	}
	r := make([]ranked, len(words))
	for i, w := range words {
		v := idf(w)
		for _, u := range sameTerms[w] {
			v = max(v, idf(u))
		}
		r[i] = ranked{i, v}
	}
	slices.SortStableFunc(r, func(a, b ranked) int { return cmp.Compare(b.idf, a.idf) })
	r = r[:maxQueryWords]
	slices.SortFunc(r, func(a, b ranked) int { return cmp.Compare(a.i, b.i) })
	out := make([]string, len(r))
	for i, x := range r {
		out[i] = words[x.i]
	}
	return out
}

// scratch is one search's per-document accumulators.
type scratch struct {
	score    []float64
	matched  []uint64 // bit i: query word i matched (maxQueryWords ≤ 64)
	inName   []uint64 // bit i: query word i matched in the name at full weight
	touched  []uint32
	state    []uint8  // fuse's per-document state
	dist     []uint16 // fuse: Hamming distance of each document's signs
	near     []uint32 // fuse: the sign pass's candidates
	cut      []float64
	boost    []float64 // instructionBoost's, by server id
	qterms   []qterm   // prune's
	byMask   [][1 << NumFields]float64
	mark     []uint8    // prune: each document's pass (markSeed…)
	acc      []boundAcc // prune: each document's bound and words, pass 1
	buckets  [selectBuckets]int32
	seedCand []seedCand
	recorded []uint32
	batch    []uint32
	order    []int32
	qmark    []int32 // prune: term id → query term (-1: none)
	contrib  []termScore
	sat      [NumFields][256]float64 // prune: saturated's table, for satAvg
	tfTab    [NumFields][256]float64 // contributionOf's table, for satAvg
	satAvg   [NumFields]float64
	satOK    bool
	// best is the highest final lexical score keep accepted (finishAll's
	// or prune's), fuse's norm.
	best float64
	// lexBoost: fuse weighs the lexical side by 1 + lexBoost
	// (Feedback.Latin).
	lexBoost float64
	// parts are the terms of the whole query and of each of its
	// sentences, partWords their words (Feedback.SentencesLexical).
	parts     [][]queryTerm
	partWords []int
	partLex   map[uint32]float64
	partState map[uint32]uint8
}

// Search returns the k best documents for query among those keep accepts
// (keep nil: all), best first. Documents that match no query term are not
// returned.
func (ix *Index[T]) Search(query string, k int, keep func(T) bool) []Hit[T] {
	hits, _ := ix.SearchStaged(query, k, keep)
	return hits
}

// SearchStaged is Search, and whether only the lexical stage ranked the
// hits because some document's vector is still pending (UpsertBatch
// before EmbedPending): the hits are then exactly those of the lexical
// ranking (Lexical), whatever the options. False: ranked as the options
// say.
func (ix *Index[T]) SearchStaged(query string, k int, keep func(T) bool) (hits []Hit[T], lexicalStage bool) {
	// The query's vector needs nothing of the index: embedded before the
	// lock. Its terms do (informative).
	var qv qvec
	dense := false
	if k > 0 {
		qv, dense = ix.embedQuery(query)
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var terms []queryTerm
	var words int
	if k > 0 {
		terms, words = ix.parseQuery(query)
	}
	// Said of every answer, an empty one too: which stage the index is in.
	lexicalStage = len(ix.pending) > 0
	if len(terms) == 0 || ix.live == 0 {
		// Nothing asked, or stop words only: nothing says what the tool
		// does.
		return nil, lexicalStage
	}
	if lexicalStage {
		dense = false
	}
	sc, _ := ix.scratch.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	defer ix.scratch.Put(sc)
	fb := &ix.opts.Feedback
	var sents []qvec
	if dense && fb.Sentences > 0 {
		sents = ix.embedSentences(query)
	}
	if dense && fb.DenseTerms > 0 {
		terms = ix.denseExpand(terms, &qv)
	}
	clear(sc.parts[:cap(sc.parts)]) // the last search's terms, not kept alive by the pool
	sc.lexBoost, sc.parts, sc.partWords = 0, sc.parts[:0], sc.partWords[:0]
	if dense && fb.SentencesLexical {
		if ss := sentences(query); len(ss) > 1 {
			sc.parts = append(sc.parts, terms)
			sc.partWords = append(sc.partWords, words)
			for _, s := range ss[:min(len(ss), maxSentences)] {
				if t, w := ix.parseQuery(s); len(t) > 0 {
					sc.parts = append(sc.parts, t)
					sc.partWords = append(sc.partWords, w)
				}
			}
		}
	}
	if fb.Latin > 0 && nonLatin(query) {
		sc.lexBoost = fb.Latin
	}
	if !dense || !fb.feeds() {
		return ix.rank(sc, terms, words, &qv, sents, dense, k, keep), lexicalStage
	}
	// Pseudo-relevance feedback: a first ranking's best (only tools keep
	// accepts: nothing the principal cannot see shapes its results) move
	// the query, which is ranked again.
	first := ix.rank(sc, terms, words, &qv, sents, dense, max(k, fb.Docs), keep)
	if len(first) == 0 {
		return nil, false
	}
	top := first[:min(len(first), fb.Docs)]
	if fb.Vector > 0 {
		qv = ix.rocchio(&qv, top)
	}
	if fb.Terms > 0 {
		terms = ix.feedbackTerms(terms, top)
	}
	hits = ix.rank(sc, terms, words, &qv, sents, dense, k, keep)
	return hits, false
}

// rank is one evaluation of the query's terms (and, dense, of its vector
// qv) into the k best hits keep accepts. ix.mu is held (read).
func (ix *Index[T]) rank(sc *scratch, terms []queryTerm, words int, qv *qvec, sents []qvec, dense bool, k int, keep func(T) bool) []Hit[T] {
	if len(sc.score) < len(ix.docs) {
		sc.score = make([]float64, len(ix.docs))
		sc.matched = make([]uint64, len(ix.docs))
		sc.inName = make([]uint64, len(ix.docs))
	}
	sc.touched = sc.touched[:0]

	n := float64(ix.live)
	var avg [NumFields]float64
	for f := range NumFields {
		avg[f] = math.Max(float64(ix.lenSum[f])/n, 1)
	}
	boost := ix.instructionBoost(terms, sc.boost)
	if boost != nil {
		sc.boost = boost
	}
	var cut uint16
	if dense {
		nd := len(ix.dense.scale)
		if len(sc.dist) < nd {
			sc.dist = make([]uint16, nd)
		}
		cut, sc.near = ix.dense.nearBySigns(qv, sc.dist[:nd], sc.near[:0])
	}
	if len(sc.state) < len(ix.docs) {
		sc.state = make([]uint8, len(ix.docs))
	}
	defer sc.reset()
	if dense && len(sc.parts) > 1 {
		ix.scoreSentences(sc, &avg, keep)
		return ix.fuse(sc, qv, sents, cut, k, keep)
	}
	if ix.opts.Exhaustive || !prunable(&ix.opts) {
		ix.scoreAll(sc, terms, &avg)
		if dense {
			ix.finishAll(sc, boost, words, keep)
			return ix.fuse(sc, qv, sents, cut, k, keep)
		}
		return ix.selectAll(sc, boost, words, k, keep)
	}
	if dense {
		if _, ok := ix.prune(sc, terms, words, boost, &avg, denseCandidates, keep, true, sc.near); !ok {
			ix.scoreAll(sc, terms, &avg)
			ix.finishAll(sc, boost, words, keep)
		}
		return ix.fuse(sc, qv, sents, cut, k, keep)
	}
	if hits, ok := ix.prune(sc, terms, words, boost, &avg, k, keep, false, nil); ok {
		return hits
	}
	ix.scoreAll(sc, terms, &avg)
	return ix.selectAll(sc, boost, words, k, keep)
}

// contribution is a term's BM25F score in one document: wIdf (the query
// term's weight × its IDF) × its saturated, length-normalised frequency.
// The exhaustive and the pruned evaluation both score with it, so their
// scores are bit-equal.
func (ix *Index[T]) contribution(p *posting, lens *[NumFields]uint16, avg *[NumFields]float64, wIdf float64) float64 {
	o := &ix.opts
	var tf float64
	for f := range NumFields {
		if c := p.tf[f]; c > 0 {
			norm := 1 - o.B[f] + o.B[f]*float64(lens[f])/avg[f]
			tf += o.Weight[f] * float64(c) / norm
		}
	}
	return wIdf * tf * (o.K1 + 1) / (o.K1 + tf)
}

// scoreAll is the exhaustive evaluation (Options.Exhaustive, the
// reference the pruned one is tested against): every posting of every
// query term scored, term at a time, in the query's term order, into
// sc's accumulators.
func (ix *Index[T]) scoreAll(sc *scratch, terms []queryTerm, avg *[NumFields]float64) {
	n := float64(ix.live)
	ix.saturated(sc, avg)
	tfTab := &sc.tfTab
	for _, qt := range terms {
		id, ok := ix.terms[qt.term]
		if !ok {
			continue
		}
		list := ix.postings[id]
		df := float64(len(list))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		wIdf := qt.weight * idf
		for _, p := range list {
			if sc.matched[p.doc] == 0 && sc.score[p.doc] == 0 {
				sc.touched = append(sc.touched, p.doc)
			}
			sc.score[p.doc] += ix.contributionOf(&p, tfTab, avg, wIdf)
			sc.matched[p.doc] |= 1 << qt.word
			if p.tf[FieldName] > 0 && qt.weight == 1 {
				sc.inName[p.doc] |= 1 << qt.word
			}
		}
	}
}

// finish is a document's final lexical score from the sum of its terms'
// contributions: plus its server's instructions boost, times the
// coverage factor.
func (ix *Index[T]) finish(raw float64, server uint32, matched uint64, boost []float64, words int) float64 {
	s := raw + boostOf(boost, server)
	if o := &ix.opts; o.Coverage > 0 && words > 0 {
		s *= 1 + o.Coverage*float64(bits.OnesCount64(matched&queryWordsMask))/float64(words)
	}
	return s
}

// selectAll is the exhaustive lexical ranking's selection: the k best of
// the touched documents keep accepts.
func (ix *Index[T]) selectAll(sc *scratch, boost []float64, words, k int, keep func(T) bool) []Hit[T] {
	h := &hitHeap[T]{}
	for _, id := range sc.touched {
		e := &ix.docs[id]
		if keep != nil && !keep(e.value) {
			continue
		}
		hit := Hit[T]{Key: e.key, Value: e.value, Score: ix.finish(sc.score[id], e.server, sc.matched[id], boost, words)}
		if h.Len() < k {
			heap.Push(h, hit)
		} else if better(hit, (*h)[0]) {
			(*h)[0] = hit
			heap.Fix(h, 0)
		}
	}
	return h.sorted()
}

// finishAll finishes the exhaustive evaluation's scores for fuse: each
// touched document's final lexical score, whether keep accepts it, and
// the best of those it accepts (sc.best: fuse's norm, found in the same
// pass rather than in one more over every touched document).
func (ix *Index[T]) finishAll(sc *scratch, boost []float64, words int, keep func(T) bool) {
	best := 0.0
	for _, id := range sc.touched {
		e := &ix.docs[id]
		if keep != nil && !keep(e.value) {
			sc.state[id] = stateRejected
			continue
		}
		sc.state[id] = stateKept
		s := ix.finish(sc.score[id], e.server, sc.matched[id], boost, words)
		sc.score[id] = s
		best = max(best, s)
	}
	sc.best = best
}

// reset clears the accumulators of the documents a search touched.
func (sc *scratch) reset() {
	for _, id := range sc.touched {
		sc.score[id], sc.matched[id], sc.inName[id], sc.state[id] = 0, 0, 0, stateUnknown
	}
	sc.touched = sc.touched[:0]
	sc.best = 0
}

// sorted empties h into a slice, best first.
func (h *hitHeap[T]) sorted() []Hit[T] {
	out := make([]Hit[T], h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(h).(Hit[T])
	}
	return out
}

// fuse ranks with the dense stage (dense.go). The lexical evaluation has
// left, in sc.touched, every document whose final lexical score is among
// the denseCandidates best that keep accepts (ties at the cut-off too)
// and every lexical match among the sign pass's nearest (sc.near, within
// Hamming distance cut), each with its state (kept or rejected by keep)
// and, if kept, its final score: the best of those is normalised by,
// then each candidate (the lexical side's best and the sign pass's
// nearest) is scored lexical + Dense × cosine. keep is asked only of a
// document that would enter the results.
//
// Only the candidates are visited, not every document: a document in
// neither side's candidates cannot enter the results, and the hits are
// ordered by (score, key), a total order, so the visiting order does not
// change them.
func (ix *Index[T]) fuse(sc *scratch, qv *qvec, sents []qvec, cut uint16, k int, keep func(T) bool) []Hit[T] {
	o := &ix.opts
	nd := len(ix.dense.scale)
	best := sc.best
	// The lexical side's candidates: the denseCandidates best (all those
	// tied at the cut-off score too, so the set does not depend on ids).
	lexCut := lexicalCutoff(sc, denseCandidates)
	h := &hitHeap[T]{}
	consider := func(id uint32, s float64) {
		e := &ix.docs[id]
		hit := Hit[T]{Key: e.key, Value: e.value, Score: s}
		if h.Len() == k && !better(hit, (*h)[0]) {
			return
		}
		if sc.state[id] == stateUnknown && keep != nil && !keep(e.value) {
			return
		}
		if h.Len() < k {
			heap.Push(h, hit)
		} else {
			(*h)[0] = hit
			heap.Fix(h, 0)
		}
	}
	cosine := func(id uint32) float64 {
		if int(id) < nd {
			c := ix.dense.cosine(id, qv)
			if len(sents) > 0 {
				c = ix.opts.Feedback.sentenceCosine(&ix.dense, id, c, sents)
			}
			return c
		}
		return 0
	}
	// The lexical matches keep accepted, among the best lexical scores
	// or the sign pass's nearest.
	for _, id := range sc.touched {
		if sc.state[id] != stateKept {
			continue
		}
		if sc.score[id] < lexCut && (int(id) >= nd || sc.dist[id] > cut) {
			continue // in neither side's candidates
		}
		lex := 0.0
		if best > 0 {
			lex = sc.score[id] / best
		}
		if sc.lexBoost > 0 {
			lex *= 1 + sc.lexBoost
		}
		if o.NameCover > 0 {
			lex += o.NameCover * ix.nameCover(id, sc.inName[id])
		}
		consider(id, lex+o.Dense*cosine(id))
	}
	// The sign pass's nearest with no lexical match: in when their cosine
	// reaches the floor.
	for _, id := range sc.near {
		if sc.state[id] != stateUnknown || ix.docs[id].key == "" {
			continue // visited above, rejected, or a free slot
		}
		cos := cosine(id)
		if cos < o.DenseFloor {
			continue
		}
		consider(id, o.Dense*cos)
	}
	if h.Len() == 0 {
		return nil
	}
	return h.sorted()
}

// nameCover is the share of document id's distinct name terms that the
// query words in inName (bits) matched, at most 1.
func (ix *Index[T]) nameCover(id uint32, inName uint64) float64 {
	n := ix.docs[id].nameTerms
	if n == 0 || inName == 0 {
		return 0
	}
	return min(1, float64(bits.OnesCount64(inName))/float64(n))
}

// lexicalCutoff is the m-th best finished lexical score among the kept
// documents (0 when fewer): a min-heap of the m best so far, sifted by
// hand (container/heap's interface calls cost more than the comparisons).
func lexicalCutoff(sc *scratch, m int) float64 {
	h := sc.cut[:0]
	for _, id := range sc.touched {
		if sc.state[id] != stateKept {
			continue
		}
		h = pushBest(h, m, sc.score[id])
	}
	sc.cut = h
	if len(h) < m {
		return 0
	}
	return h[0]
}

// pushBest offers s to h, the m best scores so far: appended while fewer
// than m (made a min-heap when the m-th arrives), then in place of the
// smallest when better. It returns h.
func pushBest(h []float64, m int, s float64) []float64 {
	switch {
	case len(h) < m:
		h = append(h, s)
		if len(h) == m {
			for i := m/2 - 1; i >= 0; i-- {
				siftDown(h, i)
			}
		}
	case s > h[0]:
		h[0] = s
		siftDown(h, 0)
	}
	return h
}

// siftDown restores the min-heap order of h below i.
func siftDown(h []float64, i int) {
	n := len(h)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if r := c + 1; r < n && h[r] < h[c] {
			c = r
		}
		if h[i] <= h[c] {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// Per-search states of a document in fuse.
const (
	stateUnknown  uint8 = iota // not touched by the lexical stage; keep not asked yet
	stateKept                  // lexical match, keep accepted
	stateRejected              // lexical match, keep refused
)

// instructionBoost scores each server's instructions against the query
// (BM25 over the servers), scaled by InstructionsWeight, into out by
// server id (nil: no server's instructions match).
func (ix *Index[T]) instructionBoost(terms []queryTerm, out []float64) []float64 {
	if ix.opts.InstructionsWeight == 0 || len(ix.servers) == 0 || ix.instrLen == 0 {
		return nil
	}
	n := float64(len(ix.servers))
	avg := float64(ix.instrLen) / n
	k1, b := ix.opts.K1, 0.75
	matched := false
	for _, qt := range terms {
		list := ix.instrPostings[qt.term]
		df := len(list)
		if df == 0 {
			continue
		}
		if !matched {
			matched = true
			if ns := len(ix.serverByID); cap(out) >= ns {
				out = out[:ns]
				clear(out)
			} else {
				out = make([]float64, ns)
			}
		}
		idf := math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
		for _, p := range list {
			c := float64(p.tf)
			tf := c / (1 - b + b*float64(ix.serverByID[p.server].length)/avg)
			out[p.server] += ix.opts.InstructionsWeight * qt.weight * idf * tf * (k1 + 1) / (k1 + tf)
		}
	}
	if !matched {
		return nil
	}
	return out
}

// boostOf is server's boost in boost (instructionBoost's result).
func boostOf(boost []float64, server uint32) float64 {
	if boost == nil {
		return 0
	}
	return boost[server]
}

// better orders hits: higher score first, then key.
func better[T any](a, b Hit[T]) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Key < b.Key
}

// hitHeap is a min-heap of the best hits so far (the worst at the root).
type hitHeap[T any] []Hit[T]

func (h hitHeap[T]) Len() int           { return len(h) }
func (h hitHeap[T]) Less(i, j int) bool { return better(h[j], h[i]) }
func (h hitHeap[T]) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hitHeap[T]) Push(x any)        { *h = append(*h, x.(Hit[T])) }
func (h *hitHeap[T]) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
