package toolsearch

import (
	"math"
	"math/bits"
	"strings"

	"github.com/toolsvc/toolsvc/internal/toolsearch/staticmodel"
)

// The dense stage: each document also has a vector, the mean of its text's
// static token embeddings (staticmodel: distilled from a sentence encoder,
// embedded in the binary), and a query is scored against every document by
// cosine. It reaches what the lexical index cannot: a paraphrase sharing
// no stem with the tool's text ("grab an image of the page" →
// take_screenshot). The two are fused linearly:
//
//	score = lexical / best lexical score among the results' candidates
//	        + Dense × cosine
//
// so a strong lexical match still leads and the dense similarity orders
// and extends the rest. A document with no lexical match is a candidate
// only when its cosine reaches DenseFloor: a query of unknown words
// returns nothing rather than the least unrelated tools.
//
// Vectors are quantised to int8 (Dims bytes and a float32 scale per
// document), the query too, so the similarity is an integer dot product:
// exact, hence the same on every replica. Scanning every document's int8
// vector costs milliseconds at 20,000 tools, so a first pass compares
// signs only (Dims bits per document, four popcounts): the denseCandidates
// documents nearest by Hamming distance, with every lexical match, get the
// exact cosine (docs/search.md has the costs and the recall this keeps).
const (
	defaultDense      = 2.0
	defaultDenseFloor = 0.55
	// maxDocTokens bounds the tokens of a document's text that make its
	// vector: the name, title and description come first, so a long
	// parameter list does not drown what the tool is.
	maxDocTokens = 256
	// denseCandidates is how many documents the sign pass keeps for the
	// exact cosine (ties at the cut-off distance are all kept).
	denseCandidates = 256
	signWords       = staticmodel.Dims / 64
)

// signs is a vector's sign bits.
type signs [signWords]uint64

func signsOf(v *[staticmodel.Dims]int8) signs {
	var s signs
	for i, x := range v {
		if x > 0 {
			s[i/64] |= 1 << (i % 64)
		}
	}
	return s
}

func hamming(a, b *signs) int {
	n := 0
	for i := range a {
		n += bits.OnesCount64(a[i] ^ b[i])
	}
	return n
}

// denseStore holds the documents' vectors by document id.
type denseStore struct {
	vecs  []int8    // id*Dims …
	scale []float32 // id → scale of its vector; 0: none
	sign  []signs   // id → its vector's signs
}

type qvec struct {
	v     [staticmodel.Dims]int8
	scale float32
}

func quantize(f *[staticmodel.Dims]float32) qvec {
	var maxAbs float32
	for _, x := range f {
		maxAbs = max(maxAbs, float32(math.Abs(float64(x))))
	}
	var q qvec
	if maxAbs == 0 {
		return q
	}
	q.scale = maxAbs / 127
	for i, x := range f {
		q.v[i] = int8(math.Round(float64(x / q.scale)))
	}
	return q
}

func (d *denseStore) set(id uint32, v qvec, ok bool) {
	need := int(id) + 1
	if len(d.scale) < need {
		d.scale = append(d.scale, make([]float32, need-len(d.scale))...)
		d.vecs = append(d.vecs, make([]int8, need*staticmodel.Dims-len(d.vecs))...)
		d.sign = append(d.sign, make([]signs, need-len(d.sign))...)
	}
	if !ok {
		d.scale[id] = 0
		return
	}
	copy(d.vecs[int(id)*staticmodel.Dims:], v.v[:])
	d.scale[id] = v.scale
	d.sign[id] = signsOf(&v.v)
}

func (d *denseStore) clear(id uint32) {
	if int(id) < len(d.scale) {
		d.scale[id] = 0
	}
}

// cosine of document id with q (both unit length before quantisation).
func (d *denseStore) cosine(id uint32, q *qvec) float64 {
	s := d.scale[id]
	if s == 0 {
		return 0
	}
	return float64(dotInt8(d.vecs[int(id)*staticmodel.Dims:int(id+1)*staticmodel.Dims], q.v[:])) * float64(s) * float64(q.scale)
}

// dotInt8 is the integer dot product of two Dims-long vectors, unrolled
// by eight (Go does not vectorise it; the unrolling halves the time).
func dotInt8(a, b []int8) int32 {
	a, b = a[:staticmodel.Dims], b[:staticmodel.Dims]
	var s0, s1, s2, s3 int32
	for i := 0; i < staticmodel.Dims; i += 8 {
		s0 += int32(a[i])*int32(b[i]) + int32(a[i+4])*int32(b[i+4])
		s1 += int32(a[i+1])*int32(b[i+1]) + int32(a[i+5])*int32(b[i+5])
		s2 += int32(a[i+2])*int32(b[i+2]) + int32(a[i+6])*int32(b[i+6])
		s3 += int32(a[i+3])*int32(b[i+3]) + int32(a[i+7])*int32(b[i+7])
	}
	return s0 + s1 + s2 + s3
}

// model is the embedded static model, or nil when the dense stage is off
// or the model does not load (then the index is lexical only).
func (ix *Index[T]) model() *staticmodel.Model {
	if ix.opts.Dense == 0 {
		return nil
	}
	m, err := staticmodel.Load()
	if err != nil {
		return nil
	}
	return m
}

// DenseAvailable reports whether the dense stage runs with opts: it is on
// and the embedded model loads.
func DenseAvailable(opts Options) bool {
	if opts.Dense == 0 {
		return false
	}
	_, err := staticmodel.Load()
	return err == nil
}

// docFields are the fields of a document its vector is made of, in the
// order they are read (the name, title and description first, so a long
// parameter list does not crowd out what the tool is), with the weight of
// each field's tokens in the mean when Options.WeighFields is on: a
// tool's name says most about what it does, its parameters least. Name 2
// and parameters 0.5 against 1 for the rest were chosen on the eval's
// tune splits (docs/search.md, "Field-weighted vectors").
var docFields = [...]struct {
	f Field
	w float32
}{
	{FieldName, 2}, {FieldTitle, 1}, {FieldDescription, 1}, {FieldAliases, 1}, {FieldParams, 0.5}, {FieldServer, 1},
}

// DocText is the text of d a model sees: its name, title and description
// first, then the operator's aliases, its parameters and server.
func DocText[T any](d *Doc[T]) string {
	var b strings.Builder
	for _, df := range docFields {
		if t := d.Text[df.f]; t != "" {
			b.WriteString(t)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// embedDoc is the mean of d's token vectors (weighted by field with
// Options.WeighFields: docFields), the first maxDocTokens words and
// tokens of DocText read.
func (ix *Index[T]) embedDoc(d *Doc[T]) (qvec, bool) {
	m := ix.model()
	if m == nil {
		return qvec{}, false
	}
	var acc [staticmodel.Dims]float32
	b := staticmodel.Budget{Tokens: maxDocTokens, Words: maxDocTokens}
	for _, df := range docFields {
		if t := d.Text[df.f]; t != "" {
			w := float32(1)
			if ix.opts.WeighFields {
				w = df.w
			}
			m.Add(&acc, t, w, &b)
		}
	}
	if !staticmodel.Normalize(&acc) {
		return qvec{}, false
	}
	return quantize(&acc), true
}

func (ix *Index[T]) embedQuery(q string) (qvec, bool) {
	m := ix.model()
	if m == nil {
		return qvec{}, false
	}
	v, ok := m.Embed(q, maxQueryWords*4)
	if !ok {
		return qvec{}, false
	}
	return quantize(&v), true
}

// nearBySigns returns the cut-off Hamming distance of the sign pass and
// appends to near the documents within it: the denseCandidates nearest to
// q's signs, every document at the cut-off distance included (so the set
// does not depend on document ids).
func (d *denseStore) nearBySigns(q *qvec, dist []uint16, near []uint32) (uint16, []uint32) {
	qs := signsOf(&q.v)
	var hist [staticmodel.Dims + 1]int
	sign := d.sign[:len(d.scale)]
	for id, s := range d.scale {
		if s == 0 {
			dist[id] = math.MaxUint16
			continue
		}
		h := hamming(&sign[id], &qs)
		dist[id] = uint16(h)
		hist[h]++
	}
	cut, total := 0, 0
	for cut = range hist {
		if total += hist[cut]; total >= denseCandidates {
			break
		}
	}
	for id, h := range dist {
		if h <= uint16(cut) {
			near = append(near, uint32(id))
		}
	}
	return uint16(cut), near
}
