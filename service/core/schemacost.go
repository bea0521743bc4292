package core

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// What validating one call's arguments costs. checkSchema refuses schemas
// whose recursion consumes no input, but recursion that does consume input
// can still multiply: in {"anyOf": [{"items": {"$ref": "#"}}, {"items":
// {"$ref": "#"}}]} both branches descend into the same element, so an array
// nested d levels deep is evaluated 2^d times (arguments may nest
// MaxArgumentsDepth = 998 levels). jsonschema-go's validator cannot be
// cancelled: one such call pinned a CPU long after its caller's deadline.
//
// So before Validate runs, the arguments are walked together with the
// schema graph checkSchema built, counting the steps the validator would
// take at most (a step per schema application, and one per entry of the
// keywords an application loops over: properties, required, enum,
// dependent*, a patternProperties regexp per key): every value carries the
// multiset of schemas applied to it (a schema reached twice is evaluated twice, so it counts twice),
// expanded through the in-place keywords ($ref, $dynamicRef, allOf, anyOf,
// oneOf, not, if/then/else, dependentSchemas), and each member or element
// gets what the expanded schemas apply to it (properties, patternProperties
// whose regexp matches, additionalProperties when neither does, prefixItems
// or the draft-07 items array, items, additionalItems, contains,
// propertyNames once per key, and unevaluatedProperties and
// unevaluatedItems wherever the same schema's own keywords did not apply,
// as if no in-place schema had evaluated the member: a failing branch
// evaluates none, and it may have descended first). The validator may stop
// sooner (at the first failure, or after one of then/else): the count is
// an upper bound. Past maxValidationSteps the call is refused without
// validating (costError).
//
// The walk touches each value once and, per value, each distinct schema
// reached at most once (counts are summed, saturating), so it costs the
// size of the arguments times the distinct schemas, however large the count
// it finds; it stops as soon as the count passes the budget. A member it
// examines against a schema that applies nothing to it costs a step too
// (the validator may do nothing there: properties are looked up by the
// schema's names), so the walk's own work is bounded by the budget as
// well, at the price of refusing, say, an object of thousands of keys
// under thousands of sibling allOf schemas that name none of them. It recurses
// once per level of the arguments, which the edge bounds (998 levels, a
// small frame each: well within Go's growable stack;
// TestValidationCostCount walks 998 levels).
//
// $dynamicRef: the validator follows it to the outermost schema resource on
// its stack with that $dynamicAnchor. The root is always outermost, so when
// the root resource has the anchor that is the target, exactly; otherwise
// every schema with the anchor is counted (an over-estimate, by the number
// of such anchors at each level).

// maxValidationSteps bounds the validator's work for one call, in steps:
// one per schema application plus one per entry of the keywords each
// application loops over (costNode.weight). Measured on the 2-core
// reference box (shared; the higher figures under load) with
// BenchmarkValidatorPerMillion (go test -run '^$' -bench
// ValidatorPerMillion ./service), jsonschema-go v0.4.3 takes 0.11-0.13 µs
// a step for plain values, 0.12-0.35 µs for the anyOf/items shape above,
// 0.24-0.8 µs for allOf doubling and for objects with a few checked
// properties, and 0.03-0.08 µs per entry of a 1,000-property schema. The
// largest arguments the default 4 MiB request limit admits, 2M integers
// ([0,0,…]), are 2.1M steps (0.23 s). So 4M steps passes every call the
// request limit admits against a schema that spends up to two steps a
// value, and bounds the worst call to about 0.5-1.3 s of one core (3 s
// loaded), where 40 levels of a doubling schema (2^40 steps) would take
// days.
const maxValidationSteps = 4_000_000

// limitValidationSteps names the bound in ErrorInfo metadata ("limit").
const limitValidationSteps = "max_validation_steps"

// costError refuses arguments whose validation would pass the budget; path
// is where the count passed it (".a[0].a…" below field).
func costError(field, path string) *Error {
	e := InvalidArguments(Violation(field, fmt.Sprintf(
		"validating these arguments against the tool's inputSchema would apply more than %d subschemas "+
			"(its alternatives multiply at each level of nesting; the count passed the bound at %s): send arguments that nest less deeply",
		maxValidationSteps, Clip(field+path))))
	e.Meta = map[string]string{"limit": limitValidationSteps, limitValidationSteps: strconv.Itoa(maxValidationSteps)}
	return e
}

// costModel is a schema graph reduced to what the walk needs: node i is
// schemaGraph.nodes[i], the root is node 0. It is built once per compiled
// schema and shared by concurrent calls.
type costModel struct {
	nodes []costNode
	walks sync.Pool // *costWalk
}

// costNode is one subschema: its in-place edges and, by keyword, the
// subschemas it applies to members and elements (-1: none).
type costNode struct {
	inPlace  []int32
	rank     int32  // topological: every in-place edge goes to a higher rank
	weight   uint64 // steps of one application: 1, and one per entry of the keywords the validator loops over
	closure  uint64 // steps of a value evaluated against this one: its weight and its in-place closure's
	descends bool   // it applies subschemas to members or elements

	props       map[string]int32
	patterns    []costPattern
	additional  int32
	names       int32
	unevalProps int32

	prefix      []int32 // prefixItems, or the draft-07 items array
	items       int32   // items past prefix: items, or draft-07 additionalItems after an items array
	contains    int32
	unevalItems int32
}

type costPattern struct {
	re *regexp.Regexp // compiled as jsonschema-go compiles it (regexp.Compile)
	n  int32
}

// newCostModel builds the model of a schema checkSchema accepted (its
// in-place graph is acyclic): each node from its schema (costNode.build),
// then the ranks and closures that need the whole graph (rankAndClose).
func newCostModel(g *schemaGraph) (*costModel, error) {
	idx := make(schemaIndex, len(g.nodes))
	for i, n := range g.nodes {
		idx[n.s] = int32(i)
	}
	m := &costModel{nodes: make([]costNode, len(g.nodes))}
	for i, n := range g.nodes {
		if err := m.nodes[i].build(g, n, idx); err != nil {
			return nil, err
		}
	}
	m.rankAndClose()
	return m, nil
}

// schemaIndex numbers a graph's schemas: the model's node i is
// schemaGraph.nodes[i].
type schemaIndex map[*jsonschema.Schema]int32

// at is s's node, or -1 when the keyword holds no schema.
func (idx schemaIndex) at(s *jsonschema.Schema) int32 {
	if s == nil {
		return -1
	}
	return idx[s]
}

// build fills c from n's schema: its weight, its in-place edges, and the
// subschemas it applies to members and to elements.
func (c *costNode) build(g *schemaGraph, n *schemaNode, idx schemaIndex) error {
	s := n.s
	// Each application loops over these whatever the value holds: a
	// node with 9,000 properties applied to 100,000 empty objects is
	// 9e8 map lookups.
	c.weight = uint64(1 + len(s.Properties) + len(s.Required) + len(s.Enum) + len(s.DependentRequired) +
		len(s.DependencyStrings) + len(s.DependentSchemas) + len(s.DependencySchemas))
	c.additional, c.names, c.unevalProps, c.items, c.contains, c.unevalItems = -1, -1, -1, -1, -1, -1
	if only, err := c.addInPlace(g, n, idx); err != nil || only {
		return err
	}
	if err := c.addMemberSchemas(s, idx); err != nil {
		return err
	}
	c.addElementSchemas(s, g.draft7, idx)
	c.descends = c.props != nil || c.patterns != nil || c.prefix != nil ||
		max(c.additional, c.names, c.unevalProps, c.items, c.contains, c.unevalItems) >= 0
	return nil
}

// addInPlace adds n's in-place edges: $ref, $dynamicRef, then the in-place
// keywords (allOf, anyOf, …). refOnly reports a draft-07 $ref, whose
// siblings the validator ignores: the node has no other edge.
func (c *costNode) addInPlace(g *schemaGraph, n *schemaNode, idx schemaIndex) (refOnly bool, err error) {
	s := n.s
	if s.Ref != "" {
		t, _, err := g.resolve(n, s.Ref)
		if err != nil {
			return false, err
		}
		c.inPlace = append(c.inPlace, idx[t.s])
		if g.draft7 {
			return true, nil // draft-07: the validator ignores $ref's siblings
		}
	}
	if s.DynamicRef != "" {
		t, dyn, err := g.resolve(n, s.DynamicRef)
		if err != nil {
			return false, err
		}
		switch a := g.nodes[0].anchors[dyn]; {
		case dyn == "": // no dynamic anchor there: a plain reference
			c.inPlace = append(c.inPlace, idx[t.s])
		case a.dynamic: // the root is always outermost on the stack
			c.inPlace = append(c.inPlace, idx[a.n.s])
		default:
			for _, d := range g.dynamic[dyn] {
				c.inPlace = append(c.inPlace, idx[d.s])
			}
		}
	}
	eachChild(s, func(keyword string, _ []string, sub *jsonschema.Schema) bool {
		if !descending[keyword] && !notApplied[keyword] {
			c.inPlace = append(c.inPlace, idx[sub])
		}
		return true
	})
	return false, nil
}

// addMemberSchemas records what s applies to an object's members:
// properties, patternProperties (compiled as jsonschema-go compiles them),
// additionalProperties, propertyNames and unevaluatedProperties.
func (c *costNode) addMemberSchemas(s *jsonschema.Schema, idx schemaIndex) error {
	if len(s.Properties) > 0 {
		c.props = make(map[string]int32, len(s.Properties))
		for k, p := range s.Properties {
			c.props[k] = idx.at(p)
		}
	}
	for expr, p := range s.PatternProperties {
		re, err := regexp.Compile(expr)
		if err != nil {
			return fmt.Errorf("patternProperties %q: %v", Clip(expr), err)
		}
		c.patterns = append(c.patterns, costPattern{re, idx.at(p)})
	}
	c.additional, c.names, c.unevalProps = idx.at(s.AdditionalProperties), idx.at(s.PropertyNames), idx.at(s.UnevaluatedProperties)
	return nil
}

// addElementSchemas records what s applies to an array's elements:
// prefixItems and items, or in draft-07 the items array and
// additionalItems (or a single items schema); contains and
// unevaluatedItems.
func (c *costNode) addElementSchemas(s *jsonschema.Schema, draft7 bool, idx schemaIndex) {
	switch {
	case !draft7:
		for _, p := range s.PrefixItems {
			c.prefix = append(c.prefix, idx.at(p))
		}
		c.items = idx.at(s.Items)
	case s.ItemsArray != nil:
		for _, p := range s.ItemsArray {
			c.prefix = append(c.prefix, idx.at(p))
		}
		c.items = idx.at(s.AdditionalItems)
	default:
		c.items = idx.at(s.Items)
	}
	c.contains, c.unevalItems = idx.at(s.Contains), idx.at(s.UnevaluatedItems)
}

// rankAndClose sets every node's rank and closure, children before
// parents (depth-first post-order over the in-place edges).
func (m *costModel) rankAndClose() {
	done := make([]bool, len(m.nodes))
	post := make([]int32, 0, len(m.nodes))
	var visit func(i int32)
	visit = func(i int32) {
		done[i] = true
		for _, c := range m.nodes[i].inPlace {
			if !done[c] {
				visit(c)
			}
		}
		post = append(post, i)
	}
	for i := range m.nodes {
		if !done[i] {
			visit(int32(i))
		}
	}
	for p, i := range post {
		n := &m.nodes[i]
		n.rank = int32(len(post) - 1 - p)
		n.closure = n.weight
		for _, c := range n.inPlace {
			n.closure = satAdd(n.closure, m.nodes[c].closure)
		}
	}
}

// exceeds reports whether validating args would apply more than limit
// schemas, and if so where the count passed it (a path below the
// arguments: ".a[0]").
func (m *costModel) exceeds(args map[string]any, limit uint64) (path string, over bool) {
	w, _ := m.walks.Get().(*costWalk)
	if w == nil {
		w = &costWalk{m: m, counts: make([]uint64, len(m.nodes)), mark: make([]uint32, len(m.nodes))}
	}
	w.limit, w.total = limit, 0
	w.root[0] = weighted{0, 1}
	e := w.walk(args, w.root[:], 0)
	m.walks.Put(w)
	if e == nil {
		return "", false
	}
	return e.path, true
}

// costExceeded is the walk stopping at the budget; path is built as it
// returns through the enclosing values.
type costExceeded struct{ path string }

// weighted is a schema applied count times to one value.
type weighted struct {
	n int32
	c uint64
}

// costWalk is one walk's state (reused through costModel.walks). counts is
// all zero between expansions; mark holds stamps.
type costWalk struct {
	m            *costModel
	limit, total uint64
	counts       []uint64
	mark         []uint32
	stamp        uint32
	stack, order []int32
	root         [1]weighted
	expanded     [][]weighted // per level: the schemas applied to the value there
	members      [][]weighted // per level: those to apply to the member being walked
}

// walk adds to the total what validating v against set (the schemas
// applied to it, at nesting level) costs, and returns where the total
// passed the limit (nil if it did not). It is the walk's only recursion,
// one call per level of v; the stages it calls (addScalar, memberSchemas,
// elementSchemas, expand) return before it descends, and reuse the
// per-level buffers, so a warm walk allocates nothing.
func (w *costWalk) walk(v any, set []weighted, level int) *costExceeded {
	switch v.(type) {
	case map[string]any, []any:
	default: // a scalar: nothing to descend into
		return w.addScalar(set)
	}
	if level == len(w.expanded) {
		w.expanded = append(w.expanded, nil)
		w.members = append(w.members, nil)
	}
	applied := w.expand(set, level)
	if w.total > w.limit {
		return &costExceeded{}
	}
	if len(applied) == 0 {
		return nil
	}
	switch v := v.(type) {
	case map[string]any:
		for k, mv := range v {
			next := w.memberSchemas(applied, k, w.members[level][:0])
			w.members[level] = next
			if w.total > w.limit {
				return &costExceeded{path: joinKey("", k)}
			}
			if len(next) > 0 {
				if e := w.walk(mv, next, level+1); e != nil {
					e.path = joinKey("", k) + e.path
					return e
				}
			}
		}
	case []any:
		for i, ev := range v {
			next := w.elementSchemas(applied, i, w.members[level][:0])
			w.members[level] = next
			if w.total > w.limit {
				return &costExceeded{path: "[" + strconv.Itoa(i) + "]"}
			}
			if len(next) > 0 {
				if e := w.walk(ev, next, level+1); e != nil {
					e.path = "[" + strconv.Itoa(i) + "]" + e.path
					return e
				}
			}
		}
	}
	return nil
}

// addScalar adds the cost of a scalar evaluated against set: each schema
// costs its closure, having nothing to descend into.
func (w *costWalk) addScalar(set []weighted) *costExceeded {
	nodes := w.m.nodes
	for _, e := range set {
		w.total = satAdd(w.total, satMul(e.c, nodes[e.n].closure))
	}
	if w.total > w.limit {
		return &costExceeded{}
	}
	return nil
}

// memberSchemas appends to next the schemas the applied set applies to
// the member named k (properties, matching patternProperties, else
// additionalProperties, else unevaluatedProperties), and adds to the total
// the regexp matches, propertyNames on the key, and a step for each schema
// that applies nothing to it.
func (w *costWalk) memberSchemas(applied []weighted, k string, next []weighted) []weighted {
	nodes := w.m.nodes
	for _, a := range applied {
		n := &nodes[a.n]
		before := len(next)
		matched := false
		if len(n.patterns) > 0 { // one regexp match each
			w.total = satAdd(w.total, satMul(a.c, uint64(len(n.patterns))))
		}
		if p, ok := n.props[k]; ok {
			next, matched = append(next, weighted{p, a.c}), true
		}
		for _, pp := range n.patterns {
			if pp.re.MatchString(k) {
				next, matched = append(next, weighted{pp.n, a.c}), true
			}
		}
		if !matched && n.additional >= 0 {
			next, matched = append(next, weighted{n.additional, a.c}), true
		}
		if !matched && n.unevalProps >= 0 {
			next = append(next, weighted{n.unevalProps, a.c})
		}
		if n.names >= 0 { // applied to the key, a string: no members
			w.total = satAdd(w.total, satMul(a.c, nodes[n.names].closure))
		}
		if len(next) == before {
			w.total = satAdd(w.total, 1) // the walk's own visit
		}
	}
	return next
}

// elementSchemas appends to next the schemas the applied set applies to
// element i (prefixItems or items, contains, else unevaluatedItems), and
// adds to the total a step for each schema that applies nothing to it.
func (w *costWalk) elementSchemas(applied []weighted, i int, next []weighted) []weighted {
	nodes := w.m.nodes
	for _, a := range applied {
		n := &nodes[a.n]
		before := len(next)
		covered := true
		if i < len(n.prefix) {
			next = append(next, weighted{n.prefix[i], a.c})
		} else if n.items >= 0 {
			next = append(next, weighted{n.items, a.c})
		} else {
			covered = false
		}
		if n.contains >= 0 {
			next = append(next, weighted{n.contains, a.c})
		}
		if !covered && n.unevalItems >= 0 {
			next = append(next, weighted{n.unevalItems, a.c})
		}
		if len(next) == before {
			w.total = satAdd(w.total, 1) // the walk's own visit
		}
	}
	return next
}

// expand adds to the total every schema the validator applies to a value
// evaluated against set, with its in-place closure, and returns those that
// descend into the value's members, with how often each is applied.
func (w *costWalk) expand(set []weighted, level int) []weighted {
	nodes := w.m.nodes
	if w.stamp++; w.stamp == 0 { // wrapped: forget old stamps
		clear(w.mark)
		w.stamp = 1
	}
	stack, order := w.stack[:0], w.order[:0]
	for _, e := range set {
		if w.mark[e.n] != w.stamp {
			w.mark[e.n] = w.stamp
			stack = append(stack, e.n)
		}
		w.counts[e.n] = satAdd(w.counts[e.n], e.c)
	}
	edges := false
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		order = append(order, n)
		for _, c := range nodes[n].inPlace {
			edges = true
			if w.mark[c] != w.stamp {
				w.mark[c] = w.stamp
				stack = append(stack, c)
			}
		}
	}
	if edges { // a schema's count is final once every schema reaching it is done
		slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(nodes[a].rank, nodes[b].rank) })
	}
	out := w.expanded[level][:0]
	for _, n := range order {
		c := w.counts[n]
		w.counts[n] = 0
		w.total = satAdd(w.total, satMul(c, nodes[n].weight))
		for _, ch := range nodes[n].inPlace {
			w.counts[ch] = satAdd(w.counts[ch], c)
		}
		if nodes[n].descends {
			out = append(out, weighted{n, c})
		}
	}
	w.stack, w.order, w.expanded[level] = stack, order, out
	return out
}

// costCap is where counts saturate: far past any budget, and the sum of two
// capped counts still fits.
const costCap = 1 << 62

func satAdd(a, b uint64) uint64 { return min(a+b, costCap) } // a, b ≤ costCap: no overflow

func satMul(a, b uint64) uint64 {
	if a != 0 && b > costCap/a {
		return costCap
	}
	return min(a*b, costCap)
}
