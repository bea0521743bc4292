package toolsearch

import (
	"cmp"
	"container/heap"
	"math"
	"math/bits"
	"slices"
)

// Pruned evaluation. A long query (up to maxQueryWords words, each with
// its synonyms: a hundred terms is common) matches most of a large
// catalog, and scoring every posting of every term cost 8–13 ms at 20,000
// tools. The ranking needs far less: the lexical ranking its k best, the
// hybrid its denseCandidates best lexical matches (ties at the cut-off
// included) and the lexical scores of the sign pass's nearest. So the
// lexical stage scores exactly only the documents whose upper bound
// reaches a threshold, in the manner of MaxScore (Turtle & Flood, 1995):
//
//   - each query term has an upper bound of its contribution to a
//     document, per posting: by the fields the posting has (termBound:
//     per (term, field), the highest frequency and the lowest length per
//     occurrence among its postings, widened as tools are added, stale
//     only upwards as they go), and exactly, from the field's length
//     kept in the posting, for a term that occurs once in one field —
//     most postings;
//   - the terms with the lowest bounds, together at most a twentieth of
//     the highest term's (nonEssentialShare: the most frequent words and
//     low-weight synonyms, with the longest lists), are non-essential:
//     their lists are not read, what they could add is added to every
//     bound, and a document that only they match must fall below the
//     threshold (checked once it is known; if not, the evaluation is
//     exhaustive);
//   - one pass over the essential lists sums each document's bound, a
//     table lookup a posting: no division, nothing read of the document;
//   - the documents are then taken by bound, highest first, in batches
//     (k, then small shares of those left: restShare): those whose bound
//     reaches the threshold are scored exactly, from their own term
//     references, which raises the threshold (the k-th best score so far
//     among the documents keep accepts), until the highest bound left is
//     below it. The first batch puts the threshold near where it ends;
//     the small batches after it stop close to where it excludes the
//     rest.
//
// A document is skipped only when its bound is below the threshold,
// strictly, and the threshold is a score that k documents keep accepts
// have: so it would not have been among the results, nor tied at their
// cut-off. keep is asked of a document before it counts towards the
// threshold, so documents a principal cannot see never raise it. A
// document's score is the same sum as the exhaustive evaluation's — its
// terms' contributions added in the query's term order, from the same
// expression (contribution) — so the scores are bit-equal
// (TestPrunedMatchesExhaustive, against Options.Exhaustive).

// boundSlack widens every bound: a bound is computed in floating point
// along another path than the score, and must not fall below it by a
// rounding.
const boundSlack = 1e-9

// termBound bounds the contribution of a term to any document of its
// posting list: per field, the highest frequency (cmax) and the lowest
// field length per occurrence (ratio, len/frequency, rounded down) among
// its postings. BM25F's field frequency c / (1 − b + b × len / avg) is
// 1 / ((1 − b)/c + (b/avg) × len/c), at most that with cmax and ratio,
// whatever the average length is at search time. Adding a posting
// widens the bound exactly; removing one that held an extreme leaves it
// stale (too high: still exact, only less pruning) until a quarter of the
// list has gone that way, then the list is scanned again (amortised O(1)
// per removal).
type termBound struct {
	cmax  [NumFields]uint8
	stale uint32 // extreme postings removed since the last scan
	ratio [NumFields]float32
}

// widen makes b hold a posting with frequencies tf in a document with
// field lengths lens.
func (b *termBound) widen(tf *[NumFields]uint8, lens *[NumFields]uint16) {
	for f, c := range tf {
		if c == 0 {
			continue
		}
		r := ratioDown(lens[f], c)
		if b.cmax[f] == 0 || r < b.ratio[f] {
			b.ratio[f] = r
		}
		b.cmax[f] = max(b.cmax[f], c)
	}
}

// holds reports whether a posting with tf and lens is at one of b's
// extremes.
func (b *termBound) holds(tf *[NumFields]uint8, lens *[NumFields]uint16) bool {
	for f, c := range tf {
		if c > 0 && (c == b.cmax[f] || ratioDown(lens[f], c) == b.ratio[f]) {
			return true
		}
	}
	return false
}

// ratioDown is len/c as a float32 no higher than the exact quotient.
func ratioDown(l uint16, c uint8) float32 {
	r := float64(l) / float64(c)
	r32 := float32(r)
	if float64(r32) > r {
		r32 = math.Nextafter32(r32, 0)
	}
	return r32
}

// fieldUpper is, per field, the highest length-normalised frequency
// (weighted) of a term with bound b in any of its documents.
func (ix *Index[T]) fieldUpper(b *termBound, avg *[NumFields]float64) (u [NumFields]float64) {
	o := &ix.opts
	for f := range NumFields {
		if c := b.cmax[f]; c > 0 {
			u[f] = o.Weight[f] / ((1-o.B[f])/float64(c) + o.B[f]/avg[f]*float64(b.ratio[f]))
		}
	}
	return u
}

// upper is the highest contribution (contribution's) of a term with
// field bounds u (fieldUpper) and weight × IDF wIdf to a document in
// whose fields mask (bit f: field f) it occurs.
func (ix *Index[T]) upper(u *[NumFields]float64, mask uint8, wIdf float64) float64 {
	o := &ix.opts
	var x float64
	for f := range NumFields {
		if mask&(1<<f) != 0 {
			x += u[f]
		}
	}
	return wIdf * x * (o.K1 + 1) / (o.K1 + x)
}

// fieldMask is the fields a posting's term occurs in (bit f: field f).
func fieldMask(tf *[NumFields]uint8) uint8 {
	var m uint8
	for f, c := range tf {
		if c > 0 {
			m |= 1 << f
		}
	}
	return m
}

// allFields is the mask of every field.
const allFields = 1<<NumFields - 1

// prunable reports whether the bounds hold for o: the score must grow
// with every term matched, a field's frequency and the saturation with
// the frequency, and fall with the field's length. Any other options are
// evaluated exhaustively.
func prunable(o *Options) bool {
	if !(o.K1 >= 0 && o.ExpansionWeight >= 0 && o.Coverage >= 0 && o.InstructionsWeight >= 0) {
		return false
	}
	for f := range NumFields {
		if !(o.Weight[f] >= 0 && o.B[f] >= 0 && o.B[f] <= 1) {
			return false
		}
	}
	return true
}

// insertPosting appends p to term tid's list (its document's field
// lengths are lens).
func (ix *Index[T]) insertPosting(tid uint32, p posting, lens *[NumFields]uint16) {
	p.fields = fieldMask(&p.tf)
	if f := bits.TrailingZeros8(p.fields); bits.OnesCount8(p.fields) == 1 && p.tf[f] == 1 {
		p.flen = uint8(min(max(lens[f], 1), math.MaxUint8))
	}
	ix.postings[tid] = append(ix.postings[tid], p)
	ix.bounds[tid].widen(&p.tf, lens)
}

// removePosting deletes the posting r refers to (its document's field
// lengths are lens) by moving the list's last one into its place,
// freeing the term with its last posting.
func (ix *Index[T]) removePosting(r termRef, lens *[NumFields]uint16) {
	list := ix.postings[r.term]
	tf := list[r.pos].tf
	last := len(list) - 1
	if int(r.pos) != last {
		moved := list[last]
		list[r.pos] = moved
		// The moved document's reference to this term now points here.
		mt := ix.docs[moved.doc].terms
		for i := range mt {
			if mt[i].term == r.term {
				mt[i].pos = r.pos
				break
			}
		}
	}
	list = list[:last]
	if len(list) == 0 {
		ix.freeTermID(r.term)
		return
	}
	ix.postings[r.term] = list
	b := &ix.bounds[r.term]
	if !b.holds(&tf, lens) {
		return
	}
	if b.stale++; int(b.stale)*4 > len(list) {
		nb := termBound{}
		for j := range list {
			nb.widen(&list[j].tf, &ix.docs[list[j].doc].lens)
		}
		*b = nb
	}
}

// qterm is one query term with postings, as prune reads it.
type qterm struct {
	list  []posting
	tid   uint32 // its term's id
	qi    int    // its index in the query's terms: the order its contribution is added in
	word  uint64 // the query word it stands for (coverage)
	full  bool   // weight 1: a match in the name counts for NameCover
	wIdf  float64
	upper float64 // its bound in any document
	// byMask is its bound in a document by the fields the term occurs
	// in there (posting.fields).
	byMask *[1 << NumFields]float64
	// essential: its list is read whole (else only looked up, from the
	// documents that could enter the results).
	essential bool
}

// boundAcc is a document's bound as pass 1 sums it, and the query words
// its postings match: side by side, one cache line a posting.
type boundAcc struct {
	ub      float64
	matched uint64
}

// seedCand is a document and the bound of its final score.
type seedCand struct {
	ub  float64
	doc uint32
}

// Marks of prune's passes, by document (scratch.mark).
const (
	markNone   uint8 = 0
	markScored uint8 = 1      // scored exactly
	markForced uint8 = 1 << 7 // among the sign pass's nearest
)

// restShare and minBatch size the batches after the first: a batch is
// at most 1/restShare of the candidates left, and at least minBatch. A
// selection costs a few operations per candidate left, scoring a
// document hundreds (its term references): for the long query at 20,000
// tools, batches of k then 2k scored 770 documents by bound, these 350
// ("Second pass" in docs/search.md).
const (
	restShare = 32
	minBatch  = 16
)

// nonEssentialShare: the terms whose lists are not read are the ones with
// the lowest bounds, as many as together bound at most this share of the
// highest term's bound — the most frequent words and low-weight synonyms,
// whose long lists change a score least (a long query's three lowest hold
// a third of its postings). The threshold must exceed what they can add
// (checked once it is known; else the evaluation is exhaustive after
// all, the work so far lost): a share of a quarter declined often enough
// on the eval's queries to cost its p99 a millisecond, a twentieth not.
const nonEssentialShare = 0.05

// prunePerDoc: a query whose lists hold fewer postings than this many
// per document the pruned evaluation would score anyway (about 2k, and
// the sign pass's nearest) is evaluated exhaustively: scoring a document
// from its term references costs tens of postings' scoring, so pruning
// would not pay (the hybrid's short queries at 2,000 tools were slower
// pruned at 32).
const prunePerDoc = 96

// prune is the pruned lexical evaluation (above); ok false: it declined
// (too few postings to pay, or a threshold too low for the terms left
// out), having changed nothing, and the caller evaluates exhaustively.
// With hybrid false it returns the k best hits keep accepts, as selectAll
// does. With hybrid true it leaves in sc, as finishAll would for fuse,
// every document whose final score is among the k best keep accepts (ties
// at the cut-off included), and every document of forced (the sign
// pass's nearest) that matches a term, with its state and, if kept, its
// score.
func (ix *Index[T]) prune(sc *scratch, terms []queryTerm, words int, boost []float64, avg *[NumFields]float64, k int, keep func(T) bool, hybrid bool, forced []uint32) (hits []Hit[T], ok bool) {
	o := &ix.opts
	n := float64(ix.live)
	qs := sc.qterms[:0]
	for i, qt := range terms {
		id, ok := ix.terms[qt.term]
		if !ok {
			continue
		}
		list := ix.postings[id]
		df := float64(len(list))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		qs = append(qs, qterm{list: list, tid: id, qi: i, word: 1 << qt.word, full: qt.weight == 1, wIdf: qt.weight * idf, essential: true})
	}
	defer func() { clear(qs); sc.qterms = qs[:0] }()
	postings := 0
	for i := range qs {
		postings += len(qs[i].list)
	}
	if postings < ix.prunePerDoc*(2*k+len(forced)) {
		return nil, false // as cheap to score every posting
	}
	if cap(sc.byMask) < len(qs) {
		sc.byMask = make([][1 << NumFields]float64, len(qs))
	}
	top := 0.0
	for i := range qs {
		q := &qs[i]
		fu := ix.fieldUpper(&ix.bounds[q.tid], avg)
		q.byMask = &sc.byMask[i]
		for mask := range q.byMask {
			q.byMask[mask] = ix.upper(&fu, uint8(mask), q.wIdf)
		}
		q.upper = q.byMask[allFields]
		top = max(top, q.upper)
	}
	// The non-essential terms: the lowest bounds, up to the share.
	order := sc.order[:0]
	for i := range qs {
		order = append(order, int32(i))
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := cmp.Compare(qs[a].upper, qs[b].upper); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	sc.order = order
	var nMass float64
	var nWords uint64
	lookups := 0
	for _, i := range order {
		if nMass+qs[i].upper > nonEssentialShare*top {
			break
		}
		nMass += qs[i].upper
		nWords |= qs[i].word
		qs[i].essential = false
		lookups++
	}
	covered := o.Coverage > 0 && words > 0
	// bound is the highest final score of a document whose contributions
	// sum to at most sum (its boost included) and whose words are matched.
	bound := func(sum float64, matched uint64) float64 {
		if covered {
			sum *= 1 + o.Coverage*float64(bits.OnesCount64(matched&queryWordsMask))/float64(words)
		}
		return sum * (1 + boundSlack)
	}
	maxBoost := 0.0
	for _, b := range boost {
		maxBoost = max(maxBoost, b)
	}
	if len(sc.mark) < len(ix.docs) {
		sc.mark = make([]uint8, len(ix.docs))
		sc.acc = make([]boundAcc, len(ix.docs))
	}
	sat := ix.saturated(sc, avg)
	tfTab := &sc.tfTab

	// Pass 1, the essential terms' lists, in the query's term order: each
	// document's bound — the sum of its postings' bounds, a table lookup
	// each (no division, nothing read of the document), plus all the
	// non-essential terms could add — and where its postings are.
	//
	// When the lists hold more postings than a quarter of the documents
	// (a long query's touch nearly all), the documents they touch are
	// found afterwards by a scan of the accumulators, in order, rather
	// than listed as they are first seen: a branch and a store less per
	// posting, and the scan reads memory in order.
	touched := sc.touched[:0]
	acc := sc.acc[:len(ix.docs)]
	read := 0
	for i := range qs {
		if qs[i].essential {
			read += len(qs[i].list)
		}
	}
	scan := read >= len(ix.docs)/4
	for i := range qs {
		q := &qs[i]
		if !q.essential {
			continue
		}
		for j := range q.list {
			p := &q.list[j]
			a := &acc[p.doc]
			if !scan && a.matched == 0 {
				touched = append(touched, p.doc)
			}
			if p.flen != 0 {
				a.ub += q.wIdf * sat[bits.TrailingZeros8(p.fields)][p.flen]
			} else {
				a.ub += q.byMask[p.fields]
			}
			a.matched |= q.word
		}
	}
	cands := sc.seedCand[:0]
	candidate := func(d uint32) {
		a := &acc[d]
		ub := a.ub + nMass
		if boost != nil { // else the document's server is not read
			ub += boost[ix.docs[d].server]
		}
		cands = append(cands, seedCand{ub: bound(ub, a.matched|nWords), doc: d})
		*a = boundAcc{}
	}
	if scan {
		for d := range acc {
			if acc[d].matched != 0 {
				candidate(uint32(d))
			}
		}
	} else {
		for _, d := range touched {
			candidate(d)
		}
	}
	sc.seedCand = cands
	for _, d := range forced {
		sc.mark[d] = markForced
	}

	h := &hitHeap[T]{}
	cut := sc.cut[:0] // hybrid: a min-heap of the k best scores kept
	theta := math.Inf(-1)
	recorded := sc.recorded[:0] // hybrid: the documents left for fuse
	contrib := sc.contrib[:0]
	// Which of qs each term id is (-1: none), to find a document's
	// postings from its own term references.
	if len(sc.qmark) < len(ix.termText) {
		sc.qmark = make([]int32, len(ix.termText))
		for i := range sc.qmark {
			sc.qmark[i] = -1
		}
	}
	for i := range qs {
		sc.qmark[qs[i].tid] = int32(i)
	}
	// score scores docs exactly, from each one's term references (a
	// document has tens of terms; a long query's lists have thousands of
	// postings), and offers each to the results.
	score := func(docs []uint32) {
		for _, d := range docs {
			isForced := sc.mark[d]&markForced != 0
			e := &ix.docs[d]
			contrib = contrib[:0]
			var matched, inName uint64
			add := func(q *qterm, p *posting) {
				contrib = append(contrib, termScore{qi: int32(q.qi), v: ix.contributionOf(p, tfTab, avg, q.wIdf)})
				matched |= q.word
				if q.full && p.tf[FieldName] > 0 {
					inName |= q.word
				}
			}
			for _, r := range e.terms {
				if i := sc.qmark[r.term]; i >= 0 {
					q := &qs[i]
					add(q, &q.list[r.pos])
				}
			}
			if len(contrib) == 0 {
				continue // a forced document matching nothing
			}
			// The exhaustive evaluation's sum: in the query's term order.
			for i := 1; i < len(contrib); i++ {
				for j := i; j > 0 && contrib[j].qi < contrib[j-1].qi; j-- {
					contrib[j], contrib[j-1] = contrib[j-1], contrib[j]
				}
			}
			raw := 0.0
			for _, c := range contrib {
				raw += c.v
			}
			s := ix.finish(raw, e.server, matched, boost, words)
			if !hybrid {
				hit := Hit[T]{Key: e.key, Value: e.value, Score: s}
				if h.Len() == k && !better(hit, (*h)[0]) {
					continue
				}
				if keep != nil && !keep(e.value) {
					continue
				}
				if h.Len() < k {
					heap.Push(h, hit)
				} else {
					(*h)[0] = hit
					heap.Fix(h, 0)
				}
				if h.Len() == k {
					theta = (*h)[0].Score
				}
				continue
			}
			if !isForced && s < theta {
				continue
			}
			if keep != nil && !keep(e.value) {
				if isForced {
					sc.state[d] = stateRejected
					recorded = append(recorded, d)
				}
				continue
			}
			sc.state[d] = stateKept
			sc.score[d], sc.inName[d] = s, inName
			sc.best = max(sc.best, s)
			recorded = append(recorded, d)
			cut = pushBest(cut, k, s)
			if len(cut) == k {
				theta = cut[0]
			}
		}
	}
	cleanup := func() {
		// Marked: the documents scored (candidates, which the
		// batches reorder and overwrite) and forced. One byte a
		// document: cleared whole.
		clear(sc.mark[:len(ix.docs)])
		for i := range qs {
			sc.qmark[qs[i].tid] = -1
		}
		sc.cut, sc.contrib = cut, contrib
		sc.touched = append(touched[:0], recorded...) // fuse reads them; reset clears them
		sc.recorded = recorded[:0]
	}

	// The documents by bound, highest first, in batches: each batch's
	// documents whose bound reaches the threshold are scored exactly,
	// which raises the threshold, until the highest bound left is below
	// it. The first batch (k) starts the threshold near where it ends;
	// after it a batch is a small share of what is left (restShare), so
	// that few documents are scored past the point where the threshold
	// would have excluded them, but at most twice the last one, so that a
	// threshold still low (a small k) does not cost a selection over most
	// of the candidates per few documents scored.
	batchDocs := sc.batch[:0]
	rest := cands
	first := true
	for batch := max(k, 1); len(rest) > 0; batch = min(2*batch, max(len(rest)/restShare, minBatch)) {
		next := rest[:selectBatch(rest, batch, &sc.buckets)]
		rest = rest[len(next):]
		batchDocs = batchDocs[:0]
		for _, c := range next {
			if c.ub >= theta {
				batchDocs = append(batchDocs, c.doc)
				sc.mark[c.doc] |= markScored
			}
		}
		if len(batchDocs) == 0 {
			break // the rest's bounds are lower still
		}
		score(batchDocs)
		// Only the documents whose bounds reach the threshold are left
		// to choose from: after the first batch, few.
		m := 0
		for _, c := range rest {
			if c.ub >= theta {
				rest[m] = c
				m++
			}
		}
		rest = rest[:m]
		if first {
			first = false
			// A document only non-essential terms match must not
			// reach the threshold: else the evaluation is exhaustive
			// after all.
			if lookups > 0 && bound(nMass+maxBoost, nWords) >= theta {
				for _, d := range recorded {
					sc.state[d], sc.score[d], sc.inName[d] = stateUnknown, 0, 0
				}
				recorded = recorded[:0]
				sc.batch = batchDocs[:0]
				cleanup()
				return nil, false
			}
		}
	}
	if first && lookups > 0 && bound(nMass+maxBoost, nWords) >= theta {
		sc.batch = batchDocs[:0]
		cleanup()
		return nil, false
	}
	// The sign pass's nearest not scored yet, whatever their bounds.
	batchDocs = batchDocs[:0]
	for _, d := range forced {
		if sc.mark[d]&markScored == 0 {
			batchDocs = append(batchDocs, d)
		}
	}
	score(batchDocs)
	sc.batch = batchDocs[:0]
	ix.pruned.Add(1)
	cleanup()
	if hybrid {
		return nil, true
	}
	return h.sorted(), true
}

// termScore is one term's contribution to the document being scored.
type termScore struct {
	qi int32
	v  float64
}

// selectBuckets is how many ranges of bounds selectBatch counts.
const selectBuckets = 1024

// selectBatch moves at least k of a's candidates with the highest bounds
// (all of them when a has at most k) to its front and returns how many
// it moved, n: no bound in a[n:] is above one in a[:n], and n is at
// most 2k. The bounds are counted in selectBuckets equal ranges
// between the lowest and the highest, and the ranges from the top taken
// until they hold k: three passes of a few operations each, where a
// quickselect (selectTop) swapped 16-byte candidates about ten times
// over the 20,000 of a long query (15% of its search). Bucket numbers
// fall as bounds rise (floating-point subtraction, multiplication and
// truncation are monotone), so the split is exact; when the top ranges
// hold more than 2k (bounds crowded near the highest), the quickselect
// takes k of those.
func selectBatch(a []seedCand, k int, counts *[selectBuckets]int32) int {
	if len(a) <= k {
		return len(a)
	}
	lo, hi := a[0].ub, a[0].ub
	for _, c := range a[1:] {
		lo, hi = min(lo, c.ub), max(hi, c.ub)
	}
	scale := selectBuckets / (hi - lo)
	if !(hi > lo) || math.IsInf(scale, 0) || math.IsNaN(scale) {
		selectTop(a, k)
		return k
	}
	bucket := func(ub float64) int {
		if x := (hi - ub) * scale; x < selectBuckets-1 {
			return int(x)
		}
		return selectBuckets - 1
	}
	clear(counts[:])
	for _, c := range a {
		counts[bucket(c.ub)]++
	}
	last, n := 0, 0
	for last = range counts {
		if n += int(counts[last]); n >= k {
			break
		}
	}
	m := 0
	for i, c := range a {
		if bucket(c.ub) <= last {
			a[i], a[m] = a[m], c
			m++
		}
	}
	if m > 2*k {
		selectTop(a[:m], k)
		return k
	}
	return m
}

// selectTop moves the k candidates with the highest bounds to a[:k]
// (in no order): a quickselect, O(len(a)) on average.
func selectTop(a []seedCand, k int) {
	lo, hi := 0, len(a)-1
	for lo < hi {
		pivot := a[int(uint(lo+hi)>>1)].ub
		i, j := lo, hi
		for i <= j {
			for a[i].ub > pivot {
				i++
			}
			for a[j].ub < pivot {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case k-1 <= j:
			hi = j
		case k-1 >= i:
			lo = i
		default:
			return
		}
	}
}

// saturated is, per field f and length l (1…255), the saturated
// frequency (contribution's, before its weight × IDF) of a term that
// occurs once in a document, in field f only, whose field f has l terms:
// an upper bound of such a posting's contribution (posting.flen; the
// contribution itself when the length was below 255). Kept in sc for the
// averages it was computed with: they change only with the catalog. It
// also fills sc.tfTab (lengthNorm's table), from the same expressions.
func (ix *Index[T]) saturated(sc *scratch, avg *[NumFields]float64) *[NumFields][256]float64 {
	if sc.satAvg == *avg && sc.satOK {
		return &sc.sat
	}
	o := &ix.opts
	for f := range NumFields {
		for l := 1; l < 256; l++ {
			norm := 1 - o.B[f] + o.B[f]*float64(l)/avg[f]
			tf := o.Weight[f] * float64(1) / norm
			sc.tfTab[f][l] = tf
			sc.sat[f][l] = tf * (o.K1 + 1) / (o.K1 + tf)
		}
	}
	sc.satAvg, sc.satOK = *avg, true
	return &sc.sat
}

// contributionOf is contribution(p, its document's lengths, avg, wIdf),
// bit for bit, without reading the document when it can: a term that
// occurs once, in one field shorter than 255 terms (posting.flen), has
// the weighted, length-normalised frequency tfTab[field][length]
// (saturated's, for avg), computed by the same expression as
// contribution's, and contribution's sum over the fields is that one
// term. Reading the document (tens of bytes a posting, anywhere in
// memory) was most of what scoring a posting cost.
func (ix *Index[T]) contributionOf(p *posting, tfTab *[NumFields][256]float64, avg *[NumFields]float64, wIdf float64) float64 {
	if p.flen != 0 && p.flen != math.MaxUint8 {
		o := &ix.opts
		tf := tfTab[bits.TrailingZeros8(p.fields)][p.flen]
		return wIdf * tf * (o.K1 + 1) / (o.K1 + tf)
	}
	return ix.contribution(p, &ix.docs[p.doc].lens, avg, wIdf)
}
