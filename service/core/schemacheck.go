package core

import (
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// An upstream's inputSchema is checked before toolsvc ever evaluates it.
// jsonschema-go's validator recurses once per subschema it applies, and
// nothing in it bounds that recursion: a schema that reaches itself through
// $ref, $dynamicRef or the in-place applicators (allOf, anyOf, oneOf, not,
// if/then/else, dependentSchemas) without descending into the value, such
// as {"$ref": "#"} or two $defs that refer to each other, recurses until
// the goroutine's stack is exhausted, a fatal error that ends the process
// (no recover catches it). JSON Schema 2020-12 §9.4.1 calls such a schema
// invalid ("infinite recursion") and lets implementations refuse it:
// https://json-schema.org/draft/2020-12/json-schema-core#section-9.4.1
//
// checkSchema builds the graph of "applied to the same value" edges, with
// every reference resolved the way jsonschema-go resolves it, and refuses:
//   - a cycle in that graph (a recursion that consumes no input);
//   - more than maxSchemaSteps schemas applied to one value (a DAG of
//     in-place references that doubles at each level, e.g. allOf [a, a]
//     where a is allOf [b, b] …, is finite but exponential);
//   - subschemas nested deeper than maxSchemaDepth, or more than
//     maxSchemaNodes of them.
//
// A recursive schema that descends into the value on every cycle (a tree:
// properties.children.items.$ref "#") is legitimate and passes: its
// recursion is bounded by the depth of the arguments, which the edge bounds
// (MaxArgumentsDepth). Whether its alternatives multiply with that depth
// depends on the arguments: each call's cost is counted before it is
// validated (schemacost.go), over the graph built here.
const (
	maxSchemaDepth = 128    // subschema nesting
	maxSchemaNodes = 10_000 // subschemas in one inputSchema
	maxSchemaSteps = 10_000 // schemas applied to one value of the arguments
)

// descending are the keywords whose subschemas apply to a part of the value
// (a property, an item, a property name), and notApplied those only reached
// by reference (contentSchema is an annotation jsonschema-go does not
// apply). Every other subschema keyword (allOf, anyOf, oneOf, not, if,
// then, else, dependentSchemas, dependencies, and any keyword a later
// jsonschema-go adds) is taken to apply to the same value: the safe side.
var (
	descending = map[string]bool{
		"properties": true, "patternProperties": true, "additionalProperties": true,
		"propertyNames": true, "unevaluatedProperties": true,
		"items": true, "prefixItems": true, "additionalItems": true, "contains": true, "unevaluatedItems": true,
	}
	notApplied = map[string]bool{"$defs": true, "definitions": true, "contentSchema": true}
)

// schemaNode is one subschema of the inputSchema being checked.
type schemaNode struct {
	s       *jsonschema.Schema
	path    []string    // JSON Pointer segments from the root
	base    *schemaNode // the resource it belongs to: the root or the nearest $id
	uri     *url.URL    // set on resources (base == self)
	anchors map[string]anchor
	inPlace []*schemaNode // subschemas applied to the same value
	steps   int           // 0: not computed; schemas applied per value, capped
	state   int8          // DFS: 0 new, 1 on the stack, 2 done
}

type anchor struct {
	n       *schemaNode
	dynamic bool
}

type schemaGraph struct {
	draft7  bool
	nodes   []*schemaNode
	byPath  map[string]*schemaNode // joined path → node
	byURI   map[string]*schemaNode // resource URIs
	dynamic map[string][]*schemaNode
}

// checkSchema says why root must not be evaluated, or returns its graph
// (which costModel reuses). root has been resolved by jsonschema-go (its
// references all resolve locally).
func checkSchema(root *jsonschema.Schema) (*schemaGraph, error) {
	g := &schemaGraph{
		draft7:  root.Schema == "http://json-schema.org/draft-07/schema#" || root.Schema == "https://json-schema.org/draft-07/schema#",
		byPath:  map[string]*schemaNode{},
		byURI:   map[string]*schemaNode{},
		dynamic: map[string][]*schemaNode{},
	}
	if err := g.add(root, nil, 0, nil, &url.URL{}); err != nil {
		return nil, err
	}
	for _, n := range g.nodes {
		if err := g.link(n); err != nil {
			return nil, err
		}
	}
	for _, n := range g.nodes {
		if cycle := g.findCycle(n, nil); cycle != nil {
			parts := make([]string, len(cycle))
			for i, c := range cycle {
				parts[i] = pointerString(c.path)
			}
			return nil, fmt.Errorf("its subschemas refer to each other without descending into the arguments (%s), which would recurse forever", strings.Join(parts, " → "))
		}
	}
	for _, n := range g.nodes {
		if g.countSteps(n) > maxSchemaSteps {
			return nil, fmt.Errorf("more than %d subschemas apply to one value at %s (references multiply)", maxSchemaSteps, pointerString(n.path))
		}
	}
	return g, nil
}

// add records s and its subschemas, with their base URIs and anchors, the
// way jsonschema-go's resolveURIs does.
func (g *schemaGraph) add(s *jsonschema.Schema, path []string, depth int, base *schemaNode, baseURI *url.URL) error {
	if depth > maxSchemaDepth {
		return fmt.Errorf("subschemas nest deeper than %d levels (at %s)", maxSchemaDepth, pointerString(path))
	}
	if len(g.nodes) >= maxSchemaNodes {
		return fmt.Errorf("it has more than %d subschemas", maxSchemaNodes)
	}
	n := &schemaNode{s: s, path: path, base: base}
	if base == nil { // the root
		n.base, n.uri = n, baseURI
		g.byURI[baseURI.String()] = n
	}
	g.nodes = append(g.nodes, n)
	g.byPath[strings.Join(path, "\x00")] = n
	setAnchor := func(name string, dynamic bool) {
		if name == "" {
			return
		}
		if n.base.anchors == nil {
			n.base.anchors = map[string]anchor{}
		}
		n.base.anchors[name] = anchor{n, dynamic}
		if dynamic {
			g.dynamic[name] = append(g.dynamic[name], n)
		}
	}
	if s.ID != "" && !(g.draft7 && s.Ref != "") {
		id, err := url.Parse(s.ID)
		if err != nil {
			return fmt.Errorf("$id %q at %s: %v", s.ID, pointerString(path), err)
		}
		if g.draft7 && id.Fragment != "" {
			setAnchor(strings.TrimPrefix(s.ID, "#"), false)
		} else if base != nil {
			n.base, n.uri = n, base.uri.ResolveReference(id)
			g.byURI[n.uri.String()] = n
		} else {
			n.uri = baseURI.ResolveReference(id)
			g.byURI[n.uri.String()] = n
		}
	}
	if !g.draft7 {
		setAnchor(s.Anchor, false)
		setAnchor(s.DynamicAnchor, true)
	}
	var err error
	eachChild(s, func(keyword string, sub []string, c *jsonschema.Schema) bool {
		cpath := append(append(append([]string(nil), path...), keyword), sub...)
		err = g.add(c, cpath, depth+1, n.base, nil)
		return err == nil
	})
	return err
}

// link adds n's in-place edges: its in-place subschemas and the targets of
// its $ref and $dynamicRef.
func (g *schemaGraph) link(n *schemaNode) error {
	eachChild(n.s, func(keyword string, sub []string, _ *jsonschema.Schema) bool {
		if !descending[keyword] && !notApplied[keyword] {
			key := strings.Join(append(append(append([]string(nil), n.path...), keyword), sub...), "\x00")
			n.inPlace = append(n.inPlace, g.byPath[key])
		}
		return true
	})
	if n.s.Ref != "" {
		t, _, err := g.resolve(n, n.s.Ref)
		if err != nil {
			return err
		}
		n.inPlace = append(n.inPlace, t)
	}
	if n.s.DynamicRef != "" {
		t, dyn, err := g.resolve(n, n.s.DynamicRef)
		if err != nil {
			return err
		}
		n.inPlace = append(n.inPlace, t)
		if dyn != "" {
			// Which schema a dynamic reference reaches depends on the
			// schemas being evaluated; any with that $dynamicAnchor may be.
			n.inPlace = append(n.inPlace, g.dynamic[dyn]...)
		}
	}
	return nil
}

// resolve finds the subschema ref (a $ref or $dynamicRef of n) refers to,
// as jsonschema-go's resolveRef does; dyn is the dynamic anchor it names,
// if any. A reference it cannot find makes the schema uncheckable.
func (g *schemaGraph) resolve(n *schemaNode, ref string) (t *schemaNode, dyn string, err error) {
	u, err := url.Parse(ref)
	if err != nil {
		return nil, "", fmt.Errorf("$ref %q at %s: %v", ref, pointerString(n.path), err)
	}
	full := n.base.uri.ResolveReference(u)
	frag := full.Fragment
	doc := *full
	doc.Fragment, doc.RawFragment = "", ""
	res := g.byURI[doc.String()]
	if res != nil {
		if frag == "" || strings.HasPrefix(frag, "/") {
			segs := strings.Split(frag, "/")[1:]
			for i, s := range segs {
				segs[i] = unescapePointer(s)
			}
			t = g.byPath[strings.Join(append(append([]string(nil), res.path...), segs...), "\x00")]
		} else if a, ok := res.anchors[frag]; ok {
			t = a.n
			if a.dynamic {
				dyn = frag
			}
		}
	}
	if t == nil {
		return nil, "", fmt.Errorf("cannot follow the reference %q at %s", Clip(ref), pointerString(n.path))
	}
	return t, dyn, nil
}

// findCycle returns a cycle of in-place edges through n, or nil.
func (g *schemaGraph) findCycle(n *schemaNode, stack []*schemaNode) []*schemaNode {
	switch n.state {
	case 1:
		for i, s := range stack {
			if s == n {
				return append(append([]*schemaNode(nil), stack[i:]...), n)
			}
		}
	case 2:
		return nil
	}
	n.state = 1
	stack = append(stack, n)
	for _, c := range n.inPlace {
		if cycle := g.findCycle(c, stack); cycle != nil {
			return cycle
		}
	}
	n.state = 2
	return nil
}

// countSteps is how many schemas the validator applies to a value it
// evaluates against n (n included), capped just past maxSchemaSteps. The
// graph is acyclic here.
func (g *schemaGraph) countSteps(n *schemaNode) int {
	if n.steps == 0 {
		steps := 1
		for _, c := range n.inPlace {
			steps += g.countSteps(c)
			if steps > maxSchemaSteps {
				steps = maxSchemaSteps + 1
				break
			}
		}
		n.steps = steps
	}
	return n.steps
}

// schemaField is a field of jsonschema.Schema that holds subschemas.
type schemaField struct {
	index   []int
	keyword string
}

// schemaFields lists the subschema fields of jsonschema.Schema by their
// JSON names, as jsonschema-go's own tree walk (Schema.every) does, so that
// a keyword the library adds is walked too (and treated as in place unless
// listed otherwise: the safe side).
var schemaFields = func() []schemaField {
	var out []schemaField
	for _, sf := range reflect.VisibleFields(reflect.TypeFor[jsonschema.Schema]()) {
		switch sf.Type {
		case reflect.TypeFor[*jsonschema.Schema](), reflect.TypeFor[[]*jsonschema.Schema](), reflect.TypeFor[map[string]*jsonschema.Schema]():
		default:
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		switch sf.Name {
		case "Items", "ItemsArray":
			name = "items"
		case "DependencySchemas":
			name = "dependencies"
		}
		if name == "" || name == "-" {
			name = sf.Name
		}
		out = append(out, schemaField{sf.Index, name})
	}
	return out
}()

// eachChild calls f with every immediate subschema of s: its keyword and the
// pointer segments under the keyword (a property name, an index).
func eachChild(s *jsonschema.Schema, f func(keyword string, sub []string, c *jsonschema.Schema) bool) {
	v := reflect.ValueOf(s).Elem()
	for _, sf := range schemaFields {
		switch fv := v.FieldByIndex(sf.index).Interface().(type) {
		case *jsonschema.Schema:
			if fv != nil && !f(sf.keyword, nil, fv) {
				return
			}
		case []*jsonschema.Schema:
			for i, c := range fv {
				if c != nil && !f(sf.keyword, []string{strconv.Itoa(i)}, c) {
					return
				}
			}
		case map[string]*jsonschema.Schema:
			for _, k := range slices.Sorted(maps.Keys(fv)) {
				if c := fv[k]; c != nil && !f(sf.keyword, []string{k}, c) {
					return
				}
			}
		}
	}
}

// pointerString renders path segments as a JSON Pointer fragment: "#/a/b".
func pointerString(path []string) string {
	var b strings.Builder
	b.WriteString("#")
	for _, s := range path {
		b.WriteString("/")
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1"))
	}
	return Clip(b.String())
}
