package toolsearch

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/toolsvc/toolsvc/internal/toolsearch/staticmodel"
)

// Query-side feedback and expansion: classic IR levers that change only
// what a query asks, tried on the eval's tune splits for BFCL's misses
// (near-duplicate tools, non-English queries, long messages whose request
// comes late). Each is off in Defaults; docs/search.md ("Query-side
// feedback and expansion") has what each measured.

// Feedback selects the query-side levers. The zero value: none.
type Feedback struct {
	// Docs is how many of a first hybrid ranking's best hits (only hits
	// the caller's filter accepts) feed back into the query, which is
	// then ranked again (0: no feedback).
	Docs int
	// Vector moves the query's vector toward their vectors' mean
	// (Rocchio in vector space): q + Vector × mean, unit length again.
	Vector float64
	// Terms of their text — the most discriminative: summed weighted
	// frequency × IDF — join the lexical query at TermWeight (RM3-style
	// expansion; the query's own words are unchanged).
	Terms      int
	TermWeight float64
	// DenseTerms: the query vector's nearest vocabulary words that are
	// catalog terms join the lexical query at DenseTermWeight (a
	// query-side doc2query: words the query means but does not say).
	DenseTerms      int
	DenseTermWeight float64
	// Sentences ranks a query of several sentences by its best one for
	// the dense stage: each sentence embedded alone, a tool's cosine the
	// highest of the whole query's and its sentences' (1), their
	// soft-max (2: weights exp(cos/0.05)), or the mean of the whole's and
	// the best sentence's (3).
	Sentences int
	// SentencesLexical ranks such a query lexically by its best sentence
	// too: a tool's lexical side the highest of the whole query's and
	// each sentence's score, each over its own best (every posting
	// scored, once per sentence).
	SentencesLexical bool
	// Latin weighs the lexical side of the hybrid score by 1 + Latin in a
	// query with letters of another script than Latin: what it matches
	// lexically is the ASCII it carries (identifiers, names, numbers),
	// and its vector holds only those words' tokens too.
	Latin float64
}

// feeds reports whether a first ranking feeds back into the query.
func (f *Feedback) feeds() bool { return f.Docs > 0 && (f.Vector > 0 || f.Terms > 0) }

// maxSentences bounds the sentences of a query embedded alone.
const maxSentences = 8

// queryWordsMask is the bits of scratch.matched that are query words
// (coverage counts those): feedback terms use the bits above.
const queryWordsMask = 1<<maxQueryWords - 1

// docID is the id of the document with key. ix.mu is held.
func (ix *Index[T]) docID(key string) (uint32, bool) {
	id, ok := ix.byKey[key]
	return id, ok
}

// rocchio is q moved toward the mean of top's vectors by Feedback.Vector.
func (ix *Index[T]) rocchio(q *qvec, top []Hit[T]) qvec {
	var acc, mean [staticmodel.Dims]float32
	for i, x := range q.v {
		acc[i] = float32(x) * q.scale
	}
	n := 0
	for _, h := range top {
		id, ok := ix.docID(h.Key)
		if !ok || int(id) >= len(ix.dense.scale) || ix.dense.scale[id] == 0 {
			continue
		}
		s := ix.dense.scale[id]
		for i, x := range ix.dense.vecs[int(id)*staticmodel.Dims : int(id+1)*staticmodel.Dims] {
			mean[i] += float32(x) * s
		}
		n++
	}
	if n == 0 {
		return *q
	}
	w := float32(ix.opts.Feedback.Vector) / float32(n)
	for i := range acc {
		acc[i] += w * mean[i]
	}
	if !staticmodel.Normalize(&acc) {
		return *q
	}
	return quantize(&acc)
}

// feedbackTerms adds to terms the Feedback.Terms terms of top's documents
// that are not in the query with the highest weight: each document's
// field-weighted frequency of the term, scaled by the hit's score over
// the best's, summed, times the term's IDF. Equal weights order by term.
func (ix *Index[T]) feedbackTerms(terms []queryTerm, top []Hit[T]) []queryTerm {
	fb := &ix.opts.Feedback
	in := make(map[string]bool, len(terms))
	for _, t := range terms {
		in[t.term] = true
	}
	n := float64(ix.live)
	weight := map[uint32]float64{}
	for _, h := range top {
		id, ok := ix.docID(h.Key)
		if !ok {
			continue
		}
		dw := 1.0
		if top[0].Score > 0 {
			dw = h.Score / top[0].Score
		}
		for _, r := range ix.docs[id].terms {
			if in[ix.termText[r.term]] {
				continue
			}
			p := &ix.postings[r.term][r.pos]
			var tf float64
			for f, c := range p.tf {
				tf += ix.opts.Weight[f] * float64(c)
			}
			weight[r.term] += dw * tf
		}
	}
	type cand struct {
		term string
		w    float64
	}
	var cs []cand
	for id, w := range weight {
		df := float64(len(ix.postings[id]))
		cs = append(cs, cand{ix.termText[id], w * math.Log(1+(n-df+0.5)/(df+0.5))})
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if c := cmp.Compare(b.w, a.w); c != 0 {
			return c
		}
		return strings.Compare(a.term, b.term)
	})
	out := slices.Clone(terms)
	for i, c := range cs[:min(len(cs), fb.Terms)] {
		out = append(out, queryTerm{term: c.term, weight: fb.TermWeight, word: maxQueryWords + i%(64-maxQueryWords)})
	}
	slices.SortFunc(out, func(a, b queryTerm) int { return cmp.Compare(a.term, b.term) })
	return out
}

// denseExpand adds to terms the catalog terms of the Feedback.DenseTerms
// vocabulary words nearest to the query's vector that the query does not
// have.
func (ix *Index[T]) denseExpand(terms []queryTerm, q *qvec) []queryTerm {
	m := ix.model()
	if m == nil {
		return terms
	}
	fb := &ix.opts.Feedback
	var v [staticmodel.Dims]float32
	for i, x := range q.v {
		v[i] = float32(x) * q.scale
	}
	if !staticmodel.Normalize(&v) {
		return terms
	}
	toks, _ := m.Nearest(&v, fb.DenseTerms)
	out := slices.Clone(terms)
	for i, tok := range toks {
		t := normalize(tok)
		if t == "" {
			continue
		}
		if _, ok := ix.terms[t]; !ok {
			continue
		}
		if slices.ContainsFunc(out, func(q queryTerm) bool { return q.term == t }) {
			continue
		}
		out = append(out, queryTerm{term: t, weight: fb.DenseTermWeight, word: maxQueryWords + i%(64-maxQueryWords)})
	}
	slices.SortFunc(out, func(a, b queryTerm) int { return cmp.Compare(a.term, b.term) })
	return out
}

// embedSentences embeds each sentence of a query of several (at most
// maxSentences; nil when fewer than two have a vector).
func (ix *Index[T]) embedSentences(query string) []qvec {
	m := ix.model()
	if m == nil {
		return nil
	}
	var out []qvec
	for _, s := range sentences(query) {
		if len(out) == maxSentences {
			break
		}
		if v, ok := m.Embed(s, maxQueryWords*4); ok {
			out = append(out, quantize(&v))
		}
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// sentences splits text after '.', '?', '!' or ';' followed by a space
// (not "5.0" nor "example.com"), and at line breaks.
func sentences(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		end := c == '\n' || (c == '.' || c == '?' || c == '!' || c == ';') && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n')
		if end {
			if s := strings.TrimSpace(text[start : i+1]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// sentenceCosine is document id's cosine with a query of several
// sentences: whole is its cosine with the whole query's vector.
func (f *Feedback) sentenceCosine(d *denseStore, id uint32, whole float64, sents []qvec) float64 {
	switch f.Sentences {
	case 2:
		const tau = 0.05
		cs := make([]float64, 0, len(sents)+1)
		cs = append(cs, whole)
		hi := whole
		for i := range sents {
			c := d.cosine(id, &sents[i])
			cs = append(cs, c)
			hi = max(hi, c)
		}
		var num, den float64
		for _, c := range cs {
			e := math.Exp((c - hi) / tau)
			num += c * e
			den += e
		}
		return num / den
	case 3:
		best := -1.0
		for i := range sents {
			best = max(best, d.cosine(id, &sents[i]))
		}
		return (whole + best) / 2
	default:
		best := whole
		for i := range sents {
			best = max(best, d.cosine(id, &sents[i]))
		}
		return best
	}
}

// nonLatin reports whether text has a letter of another script than
// Latin.
func nonLatin(text string) bool {
	return strings.IndexFunc(text, func(r rune) bool {
		return unicode.IsLetter(r) && !unicode.Is(unicode.Latin, r)
	}) >= 0
}

// scoreSentences leaves in sc, as finishAll does for fuse, each document
// matching the whole query or one of its sentences (sc.parts) with the
// highest of its scores there over that part's best, and sc.best 1.
func (ix *Index[T]) scoreSentences(sc *scratch, avg *[NumFields]float64, keep func(T) bool) {
	if sc.partLex == nil {
		sc.partLex, sc.partState = map[uint32]float64{}, map[uint32]uint8{}
	}
	clear(sc.partLex)
	clear(sc.partState)
	for i, terms := range sc.parts {
		boost := ix.instructionBoost(terms, sc.boost)
		if boost != nil {
			sc.boost = boost
		}
		ix.scoreAll(sc, terms, avg)
		ix.finishAll(sc, boost, sc.partWords[i], keep)
		for _, id := range sc.touched {
			sc.partState[id] = sc.state[id]
			if sc.state[id] == stateKept && sc.best > 0 {
				sc.partLex[id] = max(sc.partLex[id], sc.score[id]/sc.best)
			}
		}
		sc.reset()
	}
	for id, st := range sc.partState {
		sc.touched = append(sc.touched, id)
		sc.state[id] = st
		sc.score[id] = sc.partLex[id]
	}
	sc.best = 1
}
