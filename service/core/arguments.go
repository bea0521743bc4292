package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"
)

// Arguments are checked at the edge against the tool's inputSchema with
// github.com/google/jsonschema-go, the library go-sdk itself uses, before
// anything is sent upstream.
//
// Numbers: arguments_json is decoded with json.Decoder.UseNumber and every
// number is handed to the validator as an int64 or uint64 when it is an
// integer that fits, so type, minimum/maximum, enum and const checks on
// integers beyond 2^53 are exact; only numbers that fit neither become
// float64. The validator's own bounds (minimum, maximum, multipleOf) are
// float64 in jsonschema-go, so a bound beyond 2^53 is rounded. The text the
// caller sent is what the upstream receives, byte for byte: validation
// never re-encodes arguments_json.

// maxCompiledSchemas bounds the compiled-schema cache. Past it the cache is
// emptied and refilled: schemas are keyed by content hash, so a catalog with
// more distinct schemas than this only costs recompiles.
const maxCompiledSchemas = 4096

// compiledSchema is a tool's resolved inputSchema; resolved is nil when the
// schema cannot be used for validation (absent, broken, an unsupported
// draft, or unsafe to evaluate: see checkSchema), in which case calls go
// through unchecked and the upstream decides, as with validateArguments
// false. The operator is told once per schema (a warning naming the server
// and tool).
type compiledSchema struct {
	resolved   *jsonschema.Resolved
	cost       *costModel  // set with resolved: what validating arguments costs (schemacost.go)
	problem    string      // why resolved is nil
	warned     atomic.Bool // the problem was logged
	costWarned atomic.Bool // a call over maxValidationSteps was logged
	// items holds the resolved item schemas failingItem used, by JSON
	// pointer (a *jsonschema.Resolved, or nil when the pointer's schema
	// cannot be used alone): resolved once, not on every failed call. At
	// most one per subschema of the inputSchema (maxSchemaNodes).
	items sync.Map
	// declared holds every property name any subschema declares, and
	// folded maps the case fold of each to the name (caseVariants); both
	// nil when none is declared.
	declared map[string]bool
	folded   map[string]string
	// freeForm: some subschema takes an object's keys as data (a map:
	// additionalProperties or patternProperties that admit keys, or an
	// object without properties), so below the top level a key may be a
	// caller's name, not a parameter: only the top level is checked.
	freeForm bool
	// quick, when the schema has only the keywords it checks, accepts
	// arguments jsonschema-go would accept without running it
	// (fastvalidate.go); nil otherwise.
	quick *quickShape
}

// schemaCache compiles each distinct inputSchema once, keyed by the
// catalog's schema hash.
type schemaCache struct {
	mu sync.Mutex
	m  map[string]*compiledSchema
}

// get returns the compiled schema for hash, compiling schema on a miss.
// Compilation runs outside the lock; two concurrent misses compile twice
// and keep one.
func (c *schemaCache) get(hash string, schema map[string]any) *compiledSchema {
	if hash == "" { // no content hash to key on: never share
		return compileSchema(schema)
	}
	c.mu.Lock()
	cs := c.m[hash]
	c.mu.Unlock()
	if cs != nil {
		return cs
	}
	cs = compileSchema(schema)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCompiledSchemas {
		c.m = map[string]*compiledSchema{}
	}
	if old := c.m[hash]; old != nil {
		cs = old
	} else {
		c.m[hash] = cs
	}
	c.mu.Unlock()
	return cs
}

var supportedDrafts = map[string]bool{
	"": true,
	"http://json-schema.org/draft-07/schema#":      true,
	"https://json-schema.org/draft-07/schema#":     true,
	"https://json-schema.org/draft/2020-12/schema": true,
}

func compileSchema(schema map[string]any) *compiledSchema {
	if schema == nil {
		return &compiledSchema{problem: "the tool has no inputSchema"}
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return &compiledSchema{problem: "inputSchema is not JSON"}
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return &compiledSchema{problem: fmt.Sprintf("inputSchema does not parse: %v", err)}
	}
	if !supportedDrafts[s.Schema] {
		return &compiledSchema{problem: fmt.Sprintf("inputSchema draft %q is not supported (draft-07 and 2020-12 are)", s.Schema)}
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return &compiledSchema{problem: fmt.Sprintf("inputSchema does not resolve: %v", err)}
	}
	// Resolve succeeds on schemas the validator cannot finish (a $ref
	// cycle overflows the stack: a fatal error, not a panic); they are
	// never evaluated.
	g, err := checkSchema(r.Schema())
	if err != nil {
		return &compiledSchema{problem: fmt.Sprintf("inputSchema cannot be evaluated safely: %v", err)}
	}
	cost, err := newCostModel(g)
	if err != nil {
		return &compiledSchema{problem: fmt.Sprintf("inputSchema cannot be evaluated safely: %v", err)}
	}
	cs := &compiledSchema{resolved: r, cost: cost, quick: newQuickShape(r.Schema(), 0)}
	for _, n := range g.nodes { // every subschema: nested, $ref'd, under allOf/anyOf/…
		if takesKeysAsData(n.s) {
			cs.freeForm = true
		}
		for name := range n.s.Properties {
			if cs.declared == nil {
				cs.declared, cs.folded = map[string]bool{}, map[string]string{}
			}
			cs.declared[name] = true
			cs.folded[foldName(name)] = name
		}
	}
	return cs
}

// takesKeysAsData reports whether s admits object keys it does not
// declare as data: a map (additionalProperties other than false,
// patternProperties) or an object schema without properties.
func takesKeysAsData(s *jsonschema.Schema) bool {
	if len(s.PatternProperties) > 0 {
		return true
	}
	if ap := s.AdditionalProperties; ap != nil {
		return !(ap.Not != nil && reflect.ValueOf(*ap.Not).IsZero()) // not the false schema
	}
	return len(s.Properties) == 0 && (s.Type == "object" || slices.Contains(s.Types, "object"))
}

// foldName is name case-folded: each letter as the lower case of its
// upper case, so that "TEXT", "Text", "text" and the Kelvin sign's "K" and
// "k" fold alike, as strings.EqualFold and Go's encoding/json compare
// names. A lower-case ASCII name is returned as it is, unallocated.
func foldName(name string) string {
	return strings.Map(func(r rune) rune { return unicode.ToLower(unicode.ToUpper(r)) }, name)
}

// caseVariants names the keys, in any object of the arguments, that no
// subschema declares as a property but that differ from a declared one
// only in letter case ("TEXT" where "text" is declared). JSON Schema
// matches names exactly, so such a key passes validation as an undeclared
// property (or as nothing, beside the real one), while an upstream that
// matches names case-insensitively (Go's encoding/json, used by many MCP
// servers, takes the last of them) reads it as the declared property: a
// value never validated would reach the tool. The names are the whole
// schema's, not the subschema that applies at that object (which $ref,
// allOf and the like make a validator's question): a key is refused when
// it is a case variant of a property declared anywhere and is declared
// nowhere itself. Where the schema also has a map (an object whose keys
// are data: labels, headers, environment), a nested key may be the
// caller's own name, so only the top level's keys — the tool's
// parameters — are checked then. Refused, naming the key and the
// property.
func (cs *compiledSchema) caseVariants(field string, args map[string]any) []FieldViolation {
	if cs.folded == nil {
		return nil
	}
	var out []FieldViolation
	var path []pathSeg // the keys and indexes down to the current value
	var walk func(v any)
	walk = func(v any) {
		if len(out) >= MaxViolations {
			return
		}
		switch v := v.(type) {
		case map[string]any:
			if cs.freeForm && len(path) > 0 {
				return // a map's keys are the caller's data (cs.freeForm)
			}
			var bad []string
			for k, x := range v {
				if !cs.declared[k] {
					if _, ok := cs.folded[foldName(k)]; ok {
						bad = append(bad, k)
					}
				}
				path = append(path, pathSeg{key: k})
				walk(x)
				path = path[:len(path)-1]
			}
			slices.Sort(bad) // the same answer every time
			for _, k := range bad {
				if len(out) < MaxViolations {
					out = append(out, Violation(pathString(field, append(path, pathSeg{key: k})), fmt.Sprintf(
						"differs from the declared property %q only in letter case: an upstream that matches names case-insensitively would read it as that property unvalidated", cs.folded[foldName(k)])))
				}
			}
		case []any:
			for i, x := range v {
				path = append(path, pathSeg{index: i, isIndex: true})
				walk(x)
				path = path[:len(path)-1]
			}
		}
	}
	walk(args)
	slices.SortFunc(out, func(a, b FieldViolation) int { return strings.Compare(a.Field, b.Field) })
	return out
}

// pathSeg is one step of a JSON path: an object's key or an array's index.
type pathSeg struct {
	key     string
	index   int
	isIndex bool
}

// pathString is the JSON path of path's steps under field.
func pathString(field string, path []pathSeg) string {
	p := field
	for _, seg := range path {
		if seg.isIndex {
			p += "[" + strconv.Itoa(seg.index) + "]"
		} else {
			p = joinKey(p, seg.key)
		}
	}
	return p
}

// MaxArgumentsDepth bounds how deeply tool-call arguments nest (objects
// and arrays; the arguments object itself is level 1), at every edge the
// same way: CallTool and CallToolStream (arguments_json and arguments) and
// the MCP front door. It is what go-sdk leaves for arguments: go-sdk
// refuses any JSON-RPC message nested deeper than 1000 levels
// (internal/json defaultMaxDepth in go-sdk v1.8.0; the front door's own
// decoder applies it), and tools/call arguments sit two levels inside the
// message ({"params": {"arguments": …}}). Deeper arguments, forwarded,
// made a go-sdk upstream fail to decode the message and exit.
const MaxArgumentsDepth = 1000 - 2

// depthError is the refusal of arguments nested deeper than
// MaxArgumentsDepth; it does not echo them.
func depthError(field string) *Error {
	e := InvalidArguments(Violation(field, fmt.Sprintf("nests deeper than %d levels of objects and arrays, the limit for tool-call arguments", MaxArgumentsDepth)))
	e.Meta = map[string]string{"limit": "max_arguments_depth", "max_depth": strconv.Itoa(MaxArgumentsDepth)}
	return e
}

// JSONNestsDeeper reports whether the JSON text nests objects and arrays
// deeper than max. It scans bytes only (strings are skipped), so it bounds
// the work before anything is decoded; malformed text is left to the
// decoder. The front door runs it before its own decoding of a request's
// head: a recursive decoder without a depth limit overflows the stack on
// text nested a few million levels deep, a fatal error no recover stops.
func JSONNestsDeeper[T string | []byte](text T, max int) bool {
	depth, inString, escaped := 0, false, false
	for i := 0; i < len(text); i++ {
		b := text[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > max {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// valueNestsDeeper is JSONNestsDeeper for a decoded value (the arguments
// Struct as a map).
func valueNestsDeeper(v any, max int) bool {
	switch v := v.(type) {
	case map[string]any:
		if max == 0 {
			return true
		}
		for _, e := range v {
			if valueNestsDeeper(e, max-1) {
				return true
			}
		}
	case []any:
		if max == 0 {
			return true
		}
		for _, e := range v {
			if valueNestsDeeper(e, max-1) {
				return true
			}
		}
	}
	return false
}

// duplicateKeyError is arguments_json naming one key twice in an object.
// Decoders disagree on which one counts (encoding/json and go-sdk keep the
// last, others the first or refuse), so such text would be validated as one
// object and acted on upstream as another; RFC 8259 §4 leaves the outcome
// unpredictable and I-JSON (RFC 7493 §2.3) forbids it.
type duplicateKeyError struct{ path string }

func (e *duplicateKeyError) Error() string { return "duplicate key at " + e.path }

// decodeArgumentsJSON decodes arguments_json: it must be exactly one JSON
// object with no key twice in any object (a *duplicateKeyError has the
// key's path below the object: ".a.b[2].c"). Numbers become int64, uint64
// or float64 (see above). The caller has bounded its depth
// (JSONNestsDeeper).
//
// It reads tokens with go-json-experiment's jsontext, not encoding/json's
// Decoder.Token: the same strict RFC 8259 grammar (and invalid UTF-8
// refused, which encoding/json would have replaced while the text went
// upstream unchanged), at a fraction of the allocations per token. The
// decoder's own duplicate-name check is off because the refusal names
// the key's path in this package's form, which the loop below builds.
func decodeArgumentsJSON(text string) (map[string]any, error) {
	dec := jsontext.NewDecoder(strings.NewReader(text), jsontext.AllowDuplicateNames(true))
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("trailing data after the object")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not an object")
	}
	return m, nil
}

// decodeValue decodes the next JSON value of dec, token by token, refusing
// duplicate keys. A *duplicateKeyError's path is built as the error
// returns through the enclosing values, so a valid document builds none.
func decodeValue(dec *jsontext.Decoder) (any, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '{':
		m := map[string]any{}
		for dec.PeekKind() != '}' {
			kt, err := dec.ReadToken() // a name, or the error PeekKind saw
			if err != nil {
				return nil, err
			}
			k := kt.String()
			if _, dup := m[k]; dup {
				return nil, &duplicateKeyError{path: joinKey("", k)}
			}
			v, err := decodeValue(dec)
			if dup, ok := err.(*duplicateKeyError); ok {
				dup.path = joinKey("", k) + dup.path
			}
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		_, err := dec.ReadToken() // '}'
		return m, err
	case '[':
		a := []any{}
		for i := 0; dec.PeekKind() != ']'; i++ {
			e, err := decodeValue(dec)
			if dup, ok := err.(*duplicateKeyError); ok {
				dup.path = fmt.Sprintf("[%d]%s", i, dup.path)
			}
			if err != nil {
				return nil, err
			}
			a = append(a, e)
		}
		_, err := dec.ReadToken() // ']'
		return a, err
	case '"':
		return tok.String(), nil
	case '0':
		return convertNumber(json.Number(tok.String())), nil // String: the number's text as sent
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case 'n':
		return nil, nil
	}
	return nil, fmt.Errorf("unexpected %v", tok)
}

func convertNumber(v json.Number) any {
	if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return i
	}
	if u, err := strconv.ParseUint(string(v), 10, 64); err == nil {
		return u
	}
	f, _ := strconv.ParseFloat(string(v), 64) // ±Inf on overflow: still a number
	return f
}

// validate checks args (a decoded JSON object) against the schema and
// returns ARGUMENTS_INVALID with field violations naming the JSON path
// under field ("arguments" or "arguments_json"), e.g.
// "arguments.items[2].count", or nil when the arguments are valid (or the
// schema is not used). Arguments whose validation would cost more than
// maxValidationSteps are refused unvalidated (costError): the validator
// cannot be stopped once it runs.
func (cs *compiledSchema) validate(field string, args map[string]any) *Error {
	if cs.resolved == nil {
		return nil
	}
	if path, over := cs.cost.exceeds(args, maxValidationSteps); over {
		return costError(field, path)
	}
	if vs := cs.caseVariants(field, args); len(vs) > 0 {
		return InvalidArguments(vs...)
	}
	if cs.quick != nil && cs.quick.accepts(args) {
		return nil // jsonschema-go's verdict too (fastvalidate.go)
	}
	err := cs.resolved.Validate(args)
	if err == nil {
		return nil
	}
	vs := cs.locate(field, args, err.Error())
	// jsonschema-go stops at its first failure, and it visits an object's
	// properties in Go map order, which is random: arguments with two bad
	// properties were refused naming one or the other, request after
	// request. When the failure is in a top-level property, every
	// top-level property is validated on its own, in key order, and all
	// that fail are named: the same answer every time, on every wire.
	if cs.underProperty(vs[0].Field, field, args) {
		if props := cs.propertyViolations(field, args); len(props) > 0 {
			vs = props
		}
	}
	return InvalidArguments(vs...)
}

// propertyViolations validates each top-level property of args that the
// root schema's properties describe on its own (in key order) and returns
// the violations of those that fail; nil when none does, or when one
// cannot be validated on its own.
func (cs *compiledSchema) propertyViolations(field string, args map[string]any) []FieldViolation {
	root := cs.resolved.Schema()
	if len(root.Properties) == 0 {
		return nil
	}
	var out []FieldViolation
	// The schema's properties, not the arguments' keys: bounded by the
	// schema, whatever the caller sends.
	for _, k := range slices.Sorted(maps.Keys(root.Properties)) {
		if _, present := args[k]; !present {
			continue
		}
		r := cs.propertySchema(k)
		if r == nil {
			return nil
		}
		one := map[string]any{k: args[k]}
		if err := r.Validate(one); err != nil {
			alone := &compiledSchema{resolved: r}
			out = append(out, alone.locate(field, one, err.Error())...)
		}
		if len(out) >= MaxViolations {
			break
		}
	}
	return out
}

// propertySchema is the root schema reduced to its property key (its
// $id, dialect and definitions kept, so that references resolve as in the
// whole schema), resolved once; nil when it cannot be.
func (cs *compiledSchema) propertySchema(key string) *jsonschema.Resolved {
	cacheKey := "property:" + key // not a JSON pointer: no clash with itemSchema's keys
	if v, ok := cs.items.Load(cacheKey); ok {
		r, _ := v.(*jsonschema.Resolved)
		return r
	}
	root := cs.resolved.Schema()
	one := &jsonschema.Schema{ID: root.ID, Schema: root.Schema, Defs: root.Defs, Definitions: root.Definitions,
		Properties: map[string]*jsonschema.Schema{key: root.Properties[key]}}
	r, err := one.Resolve(nil)
	if err != nil {
		r = nil
	}
	cs.items.Store(cacheKey, r)
	return r
}

// underProperty reports whether path (a violation's field) is at or
// below a top-level property of args that the root schema describes
// (their count is the schema's, not the caller's).
func (cs *compiledSchema) underProperty(path, field string, args map[string]any) bool {
	for k := range cs.resolved.Schema().Properties {
		if _, present := args[k]; !present {
			continue
		}
		p := joinKey(field, k)
		if path == p || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[") {
			return true
		}
	}
	return false
}

// locate turns jsonschema-go's error into field violations. The library
// reports the first failure as a chain "validating <schema pointer>: …:
// <keyword>: <detail>", one link per schema it descended into; the instance
// path is rebuilt by walking those pointers alongside the arguments.
func (cs *compiledSchema) locate(field string, args map[string]any, msg string) []FieldViolation {
	ptrs, detail := splitChain(msg)
	path := field
	var cur any = args
	prev := ""
	for n, p := range ptrs {
		if n == 0 || !strings.HasPrefix(p, "/") {
			// The root ("root", or its $id), or a subschema named by its
			// $id: the pointers that follow still start from the root.
			continue
		}
		if strings.HasPrefix(p, prev+"/") { // else a $ref jump: same instance
			path, cur = cs.descend(p, strings.Split(strings.TrimPrefix(p, prev+"/"), "/"), path, cur)
		}
		prev = p
	}
	return violationsAt(path, detail)
}

// splitChain splits jsonschema-go's error text into the schema pointers of
// its "validating <pointer>: " links and the detail that follows them.
func splitChain(msg string) (ptrs []string, detail string) {
	for strings.HasPrefix(msg, "validating ") {
		rest := msg[len("validating "):]
		i := strings.Index(rest, ": ")
		if i < 0 {
			break
		}
		ptrs = append(ptrs, rest[:i])
		msg = rest[i+2:]
	}
	return ptrs, msg
}

// descend follows the segments segs of schema pointer p (those after the
// previous link's pointer) from the instance cur at path, and returns the
// instance and path they lead to.
func (cs *compiledSchema) descend(p string, segs []string, path string, cur any) (string, any) {
	for i := 0; i < len(segs); i++ {
		switch seg := unescapePointer(segs[i]); seg {
		case "properties":
			if i+1 < len(segs) {
				key := unescapePointer(segs[i+1])
				i++
				path, cur = joinKey(path, key), member(cur, key)
			}
		case "prefixItems":
			if i+1 < len(segs) {
				n, _ := strconv.Atoi(segs[i+1])
				i++
				path, cur = fmt.Sprintf("%s[%d]", path, n), element(cur, n)
			}
		case "items":
			if i+1 < len(segs) { // draft-07 items array
				if n, err := strconv.Atoi(segs[i+1]); err == nil {
					i++
					path, cur = fmt.Sprintf("%s[%d]", path, n), element(cur, n)
					continue
				}
			}
			if n, ok := cs.failingItem(p, cur); ok {
				path, cur = fmt.Sprintf("%s[%d]", path, n), element(cur, n)
			} else {
				path, cur = path+"[]", nil
			}
		case "additionalProperties", "unevaluatedProperties", "patternProperties":
			// The failing key is not in the pointer; the detail names the
			// value, so the object's path is the most precise.
			return path, cur
		}
		// allOf/N, anyOf/N, oneOf/N, not, if/then/else,
		// dependentSchemas/K, $defs/K: the same instance.
	}
	return path, cur
}

// violationsAt is the violations of detail at path: one per missing
// required property, one per property additionalProperties does not
// allow (sorted), else detail itself.
func violationsAt(path, detail string) []FieldViolation {
	if m := requiredRE.FindStringSubmatch(detail); m != nil {
		var out []FieldViolation
		for _, k := range quotedList(m[1]) {
			out = append(out, Violation(joinKey(path, k), "required property is missing"))
		}
		if len(out) > 0 {
			return out
		}
	}
	if m := additionalRE.FindStringSubmatch(detail); m != nil {
		keys := quotedList(m[1])
		sort.Strings(keys)
		var out []FieldViolation
		for _, k := range keys {
			out = append(out, Violation(joinKey(path, k), "property is not allowed by the schema (additionalProperties: false)"))
		}
		if len(out) > 0 {
			return out
		}
	}
	return []FieldViolation{Violation(path, detail)}
}

var (
	requiredRE   = regexp.MustCompile(`^required: missing properties: (\[.*\])$`)
	additionalRE = regexp.MustCompile(`^unexpected additional properties (\[.*\])$`)
)

// quotedList parses Go's %q rendering of a []string: ["a" "b"].
func quotedList(s string) []string {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return out
		}
		k, _ := strconv.Unquote(q)
		out = append(out, k)
		s = s[len(q):]
	}
	return out
}

// failingItem finds the first element of the array cur that fails the
// items schema at pointer ptr, by compiling that subschema on its own. It
// gives up (ok false) when the subschema cannot stand alone (it has
// references into the enclosing schema).
func (cs *compiledSchema) failingItem(ptr string, cur any) (int, bool) {
	arr, ok := cur.([]any)
	if !ok {
		return 0, false
	}
	r := cs.itemSchema(ptr)
	if r == nil {
		return 0, false
	}
	for i, e := range arr {
		if r.Validate(e) != nil {
			return i, true
		}
	}
	return 0, false
}

// itemSchema is the subschema at ptr resolved on its own, or nil when it
// cannot be (absent, or with references that need the whole schema).
func (cs *compiledSchema) itemSchema(ptr string) *jsonschema.Resolved {
	if v, ok := cs.items.Load(ptr); ok {
		r, _ := v.(*jsonschema.Resolved)
		return r
	}
	var r *jsonschema.Resolved
	if sub := schemaAt(cs.resolved.Schema(), ptr); sub != nil && !hasRefs(sub) {
		r, _ = sub.Resolve(nil)
	}
	cs.items.Store(ptr, r)
	return r
}

// schemaAt follows a JSON pointer through a schema's subschema keywords.
func schemaAt(s *jsonschema.Schema, ptr string) *jsonschema.Schema {
	segs := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i := 0; i < len(segs) && s != nil; i++ {
		next := func() string {
			i++
			if i < len(segs) {
				return unescapePointer(segs[i])
			}
			return ""
		}
		index := func(list []*jsonschema.Schema) *jsonschema.Schema {
			n, err := strconv.Atoi(next())
			if err != nil || n < 0 || n >= len(list) {
				return nil
			}
			return list[n]
		}
		switch unescapePointer(segs[i]) {
		case "properties":
			s = s.Properties[next()]
		case "$defs":
			s = s.Defs[next()]
		case "definitions":
			s = s.Definitions[next()]
		case "items":
			s = s.Items
		case "additionalProperties":
			s = s.AdditionalProperties
		case "allOf":
			s = index(s.AllOf)
		case "anyOf":
			s = index(s.AnyOf)
		case "oneOf":
			s = index(s.OneOf)
		case "prefixItems":
			s = index(s.PrefixItems)
		case "not":
			s = s.Not
		case "then":
			s = s.Then
		case "else":
			s = s.Else
		default:
			return nil
		}
	}
	return s
}

func hasRefs(s *jsonschema.Schema) bool {
	raw, err := json.Marshal(s)
	return err != nil || bytes.Contains(raw, []byte(`"$ref"`)) || bytes.Contains(raw, []byte(`"$dynamicRef"`))
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// joinKey appends an object key to a path: a.b, or a["b c"] when the key
// is not an identifier.
func joinKey(path, key string) string {
	if identRE.MatchString(key) {
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

func member(v any, key string) any {
	if m, ok := v.(map[string]any); ok {
		return m[key]
	}
	return nil
}

func element(v any, i int) any {
	if a, ok := v.([]any); ok && i >= 0 && i < len(a) {
		return a[i]
	}
	return nil
}
