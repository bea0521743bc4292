package mcpfront

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
)

// Pass-through: a tools/call or resources/read result that
// needs no change is sent to the client as the upstream sent it, instead
// of encoding go-sdk's decoded value twice (once to measure it for the
// response limit, once in go-sdk's server). The bridge keeps the bytes
// next to the decoded value (core.RawResults, for upstreams on
// connections it wraps: stdio, legacy SSE); the front door uses them only
// for that very value, and only when they are what the slow path would
// send, but for JSON spelling (spaces, key order, escapes, number forms:
// the upstream's are kept) and keys whose absence means the same (an
// isError false, an empty _meta: go-sdk's encoding leaves them out, the
// pass-through sends them as the upstream wrote them):
//
//   - the result's own keys are the ones go-sdk's type has (a call:
//     content, structuredContent, isError, _meta, resultType "complete";
//     a read: contents, _meta, resultType "complete", ttlMs, cacheScope),
//     each at most once and none null: go-sdk drops unknown keys, and
//     turns null into a zero value or an absent key;
//   - so are every content block's (by its type: text, image, audio,
//     resource_link, resource), its annotations', and every resource
//     contents' (a read's, an embedded resource's), with the value kinds
//     go-sdk's decoding accepts, and no empty string where go-sdk's
//     encoding leaves the key out;
//   - no resultType but "complete": input_required and tasks are the
//     core's (they never pass through: the core makes its own value);
//   - valid UTF-8 (encoding/json replaces invalid bytes when it encodes).
//
// What the front door changes is changed in the bytes instead, as
// eraResult (eras.go) changes the value: for a 2026-07-28 request,
// resultType "complete", a read's ttlMs 0 and cacheScope "private" when
// the upstream sent none, its cacheScope replaced by "private" and a
// negative ttlMs by 0, and go-sdk's _meta serverInfo (annotateServerInfo:
// unless the upstream's _meta has one, which is kept); for an earlier one,
// the upstream's resultType, ttlMs and cacheScope cut out (a 2026-07-28
// upstream's). The response limit applies to the bytes sent. Anything
// else takes the slow path: the value is encoded as before.

// resultPaths counts the results of tools/call and resources/read the
// front door sent, by path: passed through, or encoded from go-sdk's value.
type resultPaths struct {
	vec                                              *prometheus.CounterVec
	callPassed, callEncoded, readPassed, readEncoded prometheus.Counter
}

func newResultPaths(reg prometheus.Registerer) *resultPaths {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolsvc_front_results_total",
		Help: "Results of tools/call and resources/read the MCP front door sent, by path: passed (as the upstream sent them) or encoded (from the decoded value)."},
		[]string{"method", "path"})
	if reg != nil {
		reg.MustRegister(vec)
	}
	return &resultPaths{vec: vec,
		callPassed: vec.WithLabelValues("tools/call", "passed"), callEncoded: vec.WithLabelValues("tools/call", "encoded"),
		readPassed: vec.WithLabelValues("resources/read", "passed"), readEncoded: vec.WithLabelValues("resources/read", "encoded")}
}

// sent counts one result.
func (p *resultPaths) sent(kind int, passed bool) {
	switch {
	case kind == kindCall && passed:
		p.callPassed.Inc()
	case kind == kindCall:
		p.callEncoded.Inc()
	case passed:
		p.readPassed.Inc()
	default:
		p.readEncoded.Inc()
	}
}

// rawResult is a result as bytes: go-sdk's server sends what MarshalJSON
// returns (it checks it is JSON; TestGoSDKSendsRawResult). go-sdk's
// annotateServerInfo writes into ResultBase.Meta, which is not sent: for
// a 2026-07-28 request passThrough has named the server in the bytes.
type rawResult struct {
	mcp.ResultBase
	b []byte
}

func (r *rawResult) MarshalJSON() ([]byte, error) { return r.b, nil }

// newRawResult is b as a result. Its Meta, which is not sent, holds the
// serverInfo key, so that go-sdk's annotateServerInfo finds it there and
// does not build a map for nothing.
func newRawResult(b []byte) *rawResult {
	return &rawResult{ResultBase: mcp.ResultBase{Meta: mcp.Meta{mcp.MetaKeyServerInfo: frontImpl}}, b: b}
}

// frontImpl is the front door's MCP implementation (its serverInfo).
var frontImpl = &mcp.Implementation{Name: "toolsvc", Title: "toolsvc MCP front door", Version: "1"}

// serverInfoJSON is frontImpl as go-sdk encodes it.
var serverInfoJSON, _ = json.Marshal(frontImpl)

// Result kinds passThrough knows.
const (
	kindCall = iota
	kindRead
)

// passThrough returns the bytes to send for raw, the upstream's result
// of kind, and what the client's era adds to it: resultType "complete" on
// a call (withEraResultType's rule) and the front door's serverInfo in
// _meta (go-sdk's rule: annotateServerInfo runs when the request's own
// _meta names 2026-07-28 or later, see metaEra). ok is false when raw
// needs a change the slow path makes.
func passThrough(raw []byte, kind int, modern, serverInfo bool) (out []byte, ok bool) {
	if !utf8.Valid(raw) {
		return nil, false
	}
	s := scanner{b: raw}
	var sh resultShape
	if !s.result(kind, &sh) {
		return nil, false
	}
	// What goes after the result's brace (ins) and after its _meta's
	// (mid), and the upstream's members cut out or values replaced (cuts),
	// in one copy of raw (which aliases the upstream's message).
	var ins, mid []byte
	var cuts []edit
	if !modern { // 2026-07-28 keys, which eraResult leaves out
		cuts = memberCuts(raw, sh.resultType, sh.ttl, sh.scope)
	} else {
		if sh.resultType.end == 0 {
			ins = append(ins, `"resultType":"complete",`...)
		}
		if kind == kindRead {
			// eraResult's ttlMs (>= 0) and cacheScope.
			switch {
			case sh.ttl.end == 0:
				ins = append(ins, `"ttlMs":0,`...)
			case sh.ttlNegative:
				cuts = append(cuts, edit{sh.ttl.value, sh.ttl.end, "0"})
			}
			switch {
			case sh.scope.end == 0:
				ins = append(ins, `"cacheScope":"`+frontCacheScope+`",`...)
			case !sh.scopeFront:
				cuts = append(cuts, edit{sh.scope.value, sh.scope.end, `"` + frontCacheScope + `"`})
			}
		}
	}
	switch {
	case !serverInfo || sh.hasServerInfo:
	case sh.metaOpen < 0:
		ins = append(ins, `"_meta":{"`+mcp.MetaKeyServerInfo+`":`...)
		ins = append(ins, serverInfoJSON...)
		ins = append(ins, "},"...)
	default:
		mid = append(append([]byte(`"`+mcp.MetaKeyServerInfo+`":`), serverInfoJSON...), ',')
		if sh.metaEmpty {
			mid = mid[:len(mid)-1]
		}
	}
	if len(ins) == 0 && len(mid) == 0 && len(cuts) == 0 {
		return raw, true
	}
	edits := append(cuts, edit{sh.open + 1, sh.open + 1, string(ins)})
	if len(mid) > 0 {
		edits = append(edits, edit{sh.metaOpen + 1, sh.metaOpen + 1, string(mid)})
	}
	// By offset; an insertion before a cut that starts where it does.
	slices.SortFunc(edits, func(a, b edit) int {
		if a.from != b.from {
			return a.from - b.from
		}
		return a.to - b.to
	})
	out = make([]byte, 0, len(raw)+len(ins)+len(mid)+16)
	at := 0
	for _, e := range edits {
		out = append(append(out, raw[at:e.from]...), e.with...)
		at = e.to
	}
	return append(out, raw[at:]...), true
}

// span is where one member of the result is in its bytes: its key's
// opening quote, its value's first byte, and the end of its value (0: the
// result has no such member).
type span struct{ key, value, end int }

// edit replaces raw[from:to] with with.
type edit struct {
	from, to int
	with     string
}

// memberCuts are the edits that remove the members ms (those present)
// from the result in raw: members next to each other (nothing but space
// and one comma between them) go as one run, and each run with one comma
// next to it: the one before it, or, for a run at the start, the one after
// it. A run always has a kept member on one side (content or contents is
// required), and two runs have one between them, so no comma goes twice.
func memberCuts(raw []byte, ms ...span) []edit {
	ms = slices.DeleteFunc(ms, func(m span) bool { return m.end == 0 })
	slices.SortFunc(ms, func(a, b span) int { return a.key - b.key })
	var runs []span
	for _, m := range ms {
		if n := len(runs); n > 0 && onlyComma(raw[runs[n-1].end:m.key]) {
			runs[n-1].end = m.end
			continue
		}
		runs = append(runs, m)
	}
	var cuts []edit
	for _, r := range runs {
		j := r.key - 1
		for j >= 0 && isSpace(raw[j]) {
			j--
		}
		if j >= 0 && raw[j] == ',' {
			cuts = append(cuts, edit{j, r.end, ""})
			continue
		}
		i := r.end
		for i < len(raw) && isSpace(raw[i]) {
			i++
		}
		cuts = append(cuts, edit{r.key, i + 1, ""}) // raw[i] is the comma after it
	}
	return cuts
}

// onlyComma reports whether b is one comma with spaces around it.
func onlyComma(b []byte) bool {
	b = bytes.TrimFunc(b, func(r rune) bool { return r < 0x80 && isSpace(byte(r)) })
	return len(b) == 1 && b[0] == ','
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// metaEra reports whether a request's own _meta names protocol 2026-07-28
// or later: the requests whose results go-sdk's server annotates with its
// serverInfo. A session's negotiated version does not count there
// (req.ProtocolVersion falls back to it).
func metaEra(meta map[string]any) bool {
	v, _ := meta[mcp.MetaKeyProtocolVersion].(string)
	return v >= statelessEra
}

// resultShape is what the scan found out about a result.
type resultShape struct {
	open          int  // offset of the result's '{'
	metaOpen      int  // offset of its _meta's '{' (-1: no _meta)
	metaEmpty     bool // _meta is {}
	hasServerInfo bool // _meta has the serverInfo key
	resultType    span // resultType "complete"
	ttl           span // a read's ttlMs
	ttlNegative   bool // … below 0
	scope         span // a read's cacheScope
	scopeFront    bool // … is frontCacheScope
}

// scanner walks a JSON text (the upstream's result, which go-sdk decoded
// already, so it is valid JSON; a malformed one only fails the check).
type scanner struct {
	b   []byte
	i   int
	key int // where the member being scanned starts (its key's quote)
}

// at is the offset of the next non-space byte.
func (s *scanner) at() int {
	s.ws()
	return s.i
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek is the next non-space byte (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// str consumes a string and returns its text between the quotes, escapes
// as written (a key spelled with escapes matches no known key).
func (s *scanner) str() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	start := s.i + 1
	for i := start; i < len(s.b); i++ {
		switch s.b[i] {
		case '\\':
			if i+1 < len(s.b) && s.b[i+1] == 'u' {
				// encoding/json turns an escaped lone surrogate into U+FFFD;
				// sent as written it is JSON strict parsers refuse: such a
				// string takes the encoded path.
				r, ok := hex4(s.b, i+2)
				if !ok {
					return nil, false
				}
				switch {
				case r >= 0xDC00 && r <= 0xDFFF:
					return nil, false
				case r >= 0xD800 && r <= 0xDBFF:
					lo, ok := hex4(s.b, i+8)
					if !ok || s.b[i+6] != '\\' || s.b[i+7] != 'u' || lo < 0xDC00 || lo > 0xDFFF {
						return nil, false
					}
					i += 6
				}
				i += 5
				continue
			}
			i++
		case '"':
			s.i = i + 1
			return s.b[start:i], true
		}
	}
	return nil, false
}

// hex4 is the value of the four hex digits at b[i:], or false.
func hex4(b []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// skip consumes one value of any kind. An object in it that has a key
// twice fails the scan: go-sdk's decoding keeps the last value, a client's
// parser may keep the first, so the bytes would not say what toolsvc saw
// (the encoded path sends the key once). So does a key written with
// escapes, which could spell another key a second time.
func (s *scanner) skip() bool {
	switch c := s.peek(); c {
	case '"':
		_, ok := s.str()
		return ok
	case '{':
		var keys keySet
		return s.members(func(k []byte) bool { return keys.add(k) && s.skip() })
	case '[':
		return s.array(s.skip)
	case 0:
		return false
	default: // a number, true, false or null
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.i > start
			}
			s.i++
		}
		return s.i > start
	}
}

// keySet is the keys of one object seen so far, as written.
type keySet struct {
	small [8][]byte
	n     int
	big   map[string]struct{} // past len(small)
}

// add records k, failing on a key seen before or written with escapes.
func (ks *keySet) add(k []byte) bool {
	if bytes.IndexByte(k, '\\') >= 0 {
		return false
	}
	if ks.big != nil {
		if _, dup := ks.big[string(k)]; dup {
			return false
		}
		ks.big[string(k)] = struct{}{}
		return true
	}
	for _, o := range ks.small[:ks.n] {
		if bytes.Equal(o, k) {
			return false
		}
	}
	if ks.n < len(ks.small) {
		ks.small[ks.n] = k
		ks.n++
		return true
	}
	ks.big = make(map[string]struct{}, 2*len(ks.small))
	for _, o := range ks.small {
		ks.big[string(o)] = struct{}{}
	}
	ks.big[string(k)] = struct{}{}
	return true
}

// object calls key for each key of the object at the scanner (its value
// next); key consumes the value and returns false to fail the scan. A null
// value fails it: go-sdk makes it a zero value or drops the key.
func (s *scanner) object(key func(k []byte) bool) bool {
	return s.members(func(k []byte) bool { return s.peek() != 'n' && key(k) })
}

// members calls key for each key of the object at the scanner, with its
// value next, any value.
func (s *scanner) members(key func(k []byte) bool) bool {
	if s.peek() != '{' {
		return false
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		s.key = s.at()
		k, ok := s.str()
		if !ok || s.peek() != ':' {
			return false
		}
		s.i++
		if !key(k) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// array calls elem for each element of the array at the scanner.
func (s *scanner) array(elem func() bool) bool {
	if s.peek() != '[' {
		return false
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// Value kinds, by first byte.
func (s *scanner) isString() bool { return s.peek() == '"' }
func (s *scanner) isObject() bool { return s.peek() == '{' }
func (s *scanner) isBool() bool   { c := s.peek(); return c == 't' || c == 'f' }
func (s *scanner) isNumber() bool { c := s.peek(); return c == '-' || (c >= '0' && c <= '9') }

// nonEmptyString consumes a string that is not "" (go-sdk leaves an
// omitempty key out when it is).
func (s *scanner) nonEmptyString() bool {
	v, ok := s.str()
	return ok && len(v) > 0
}

// once marks bit in *seen, failing on a key seen before.
func once(seen *uint32, bit uint32) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

// result scans a result of kind.
func (s *scanner) result(kind int, sh *resultShape) bool {
	sh.metaOpen = -1
	if s.peek() != '{' {
		return false
	}
	sh.open = s.i
	var seen uint32
	const (
		bContent = 1 << iota
		bStructured
		bIsError
		bMeta
		bResultType
		bTTL
		bScope
	)
	ok := s.object(func(k []byte) bool {
		switch {
		case kind == kindCall && string(k) == "content":
			return once(&seen, bContent) && s.array(s.content)
		case kind == kindRead && string(k) == "contents":
			return once(&seen, bContent) && s.array(s.resourceContents)
		case kind == kindCall && string(k) == "structuredContent":
			return once(&seen, bStructured) && s.skip()
		case kind == kindCall && string(k) == "isError":
			return once(&seen, bIsError) && s.isBool() && s.skip()
		case string(k) == "_meta":
			if !once(&seen, bMeta) || !s.isObject() {
				return false
			}
			sh.metaOpen = s.i
			n := 0
			var keys keySet
			ok := s.members(func(mk []byte) bool {
				n++
				if !keys.add(mk) {
					return false
				}
				if string(mk) == mcp.MetaKeyServerInfo {
					sh.hasServerInfo = true
				}
				return s.skip()
			})
			sh.metaEmpty = n == 0
			return ok
		case string(k) == "resultType":
			sh.resultType = span{key: s.key, value: s.at()}
			v, ok := s.str()
			sh.resultType.end = s.i
			return ok && once(&seen, bResultType) && string(v) == "complete"
		case kind == kindRead && string(k) == "ttlMs":
			sh.ttl = span{key: s.key, value: s.at()}
			sh.ttlNegative = s.peek() == '-'
			ok := once(&seen, bTTL) && s.isNumber() && s.skip()
			sh.ttl.end = s.i
			return ok
		case kind == kindRead && string(k) == "cacheScope":
			sh.scope = span{key: s.key, value: s.at()}
			v, ok := s.str()
			sh.scope.end, sh.scopeFront = s.i, string(v) == frontCacheScope
			return ok && once(&seen, bScope)
		}
		return false
	})
	if !ok || seen&bContent == 0 {
		return false // content / contents are required (go-sdk sends null without them)
	}
	return s.peek() == 0
}

// Content block keys.
const (
	cType = 1 << iota
	cText
	cData
	cMIME
	cAnn
	cMeta
	cURI
	cName
	cTitle
	cDesc
	cSize
	cIcons
	cResource
)

// contentKeys are the keys go-sdk's type of each content block has.
var contentKeys = map[string]uint32{
	"text":          cType | cText | cAnn | cMeta,
	"image":         cType | cData | cMIME | cAnn | cMeta,
	"audio":         cType | cData | cMIME | cAnn | cMeta,
	"resource_link": cType | cURI | cName | cTitle | cDesc | cMIME | cSize | cAnn | cMeta | cIcons,
	"resource":      cType | cResource | cAnn | cMeta,
}

// content scans one content block of a call result.
func (s *scanner) content() bool {
	var seen uint32
	var typ []byte
	ok := s.object(func(k []byte) bool {
		switch string(k) {
		case "type":
			v, ok := s.str()
			typ = v
			return ok && once(&seen, cType)
		case "text":
			return once(&seen, cText) && s.isString() && s.skip()
		case "data":
			return once(&seen, cData) && s.nonEmptyString()
		case "mimeType":
			return once(&seen, cMIME) && s.nonEmptyString()
		case "annotations":
			return once(&seen, cAnn) && s.annotations()
		case "_meta":
			return once(&seen, cMeta) && s.isObject() && s.skip()
		case "uri":
			return once(&seen, cURI) && s.nonEmptyString()
		case "name":
			return once(&seen, cName) && s.nonEmptyString()
		case "title":
			return once(&seen, cTitle) && s.nonEmptyString()
		case "description":
			return once(&seen, cDesc) && s.nonEmptyString()
		case "size":
			return once(&seen, cSize) && s.isNumber() && s.skip()
		case "icons":
			// go-sdk's Icon keeps four keys and rewrites null elements: an
			// upstream's icons are not checked here, so they take the
			// encoded path.
			return false
		case "resource":
			return once(&seen, cResource) && s.resourceContents()
		}
		return false
	})
	allowed, known := contentKeys[string(typ)]
	if !ok || !known || seen&^allowed != 0 {
		return false
	}
	var required uint32 // the keys go-sdk always sends
	switch string(typ) {
	case "text":
		required = cText
	case "image", "audio":
		required = cData | cMIME
	case "resource_link":
		required = cURI | cName
	case "resource":
		required = cResource
	}
	return seen&required == required
}

// annotations scans a content block's annotations.
func (s *scanner) annotations() bool {
	var seen uint32
	return s.object(func(k []byte) bool {
		switch string(k) {
		case "audience":
			return once(&seen, 1) && s.array(func() bool { return s.isString() && s.skip() })
		case "priority":
			return once(&seen, 2) && s.isNumber() && s.skip()
		case "lastModified":
			return once(&seen, 4) && s.nonEmptyString()
		}
		return false
	})
}

// resourceContents scans one resource contents (a read's, or an embedded
// resource's).
func (s *scanner) resourceContents() bool {
	var seen uint32
	ok := s.object(func(k []byte) bool {
		switch string(k) {
		case "uri":
			return once(&seen, 1) && s.isString() && s.skip()
		case "mimeType":
			return once(&seen, 2) && s.nonEmptyString()
		case "text":
			return once(&seen, 4) && s.nonEmptyString()
		case "blob":
			return once(&seen, 8) && s.nonEmptyString()
		case "_meta":
			return once(&seen, 16) && s.isObject() && s.skip()
		}
		return false
	})
	return ok && seen&1 != 0 // uri: go-sdk always sends it
}
