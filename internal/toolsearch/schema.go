package toolsearch

import (
	"slices"
	"strings"
)

// Bounds of SchemaText: a hostile or generated schema (thousands of
// properties, deep nesting) adds at most this much text.
const (
	maxSchemaDepth = 4
	maxSchemaProps = 200
	maxSchemaText  = 8 << 10
)

// SchemaText is the searchable text of a JSON Schema (a tool's
// inputSchema): each property's name, title and description, nested
// objects and array items included, in a stable order (properties
// sorted by name).
func SchemaText(schema map[string]any) string {
	var b strings.Builder
	props := 0
	var walk func(s map[string]any, depth int)
	walk = func(s map[string]any, depth int) {
		if depth > maxSchemaDepth || b.Len() >= maxSchemaText {
			return
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(items, depth+1)
		}
		p, _ := s["properties"].(map[string]any)
		names := make([]string, 0, len(p))
		for n := range p {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			if props >= maxSchemaProps || b.Len() >= maxSchemaText {
				return
			}
			props++
			b.WriteString(n)
			b.WriteByte('\n')
			sub, _ := p[n].(map[string]any)
			for _, k := range []string{"title", "description"} {
				if v, ok := sub[k].(string); ok && v != "" {
					b.WriteString(v)
					b.WriteByte('\n')
				}
			}
			if sub != nil {
				walk(sub, depth+1)
			}
		}
	}
	walk(schema, 0)
	s := b.String()
	if len(s) > maxSchemaText {
		s = s[:maxSchemaText]
	}
	return s
}
