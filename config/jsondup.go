package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// duplicateKey is a key that appears twice in one JSON object.
type duplicateKey struct {
	path        []string // the keys (or "[i]") of the enclosing object
	key         string
	line, first int
}

// duplicateKeys finds every key repeated within one JSON object, at any
// depth. encoding/json keeps the last value of a repeated key without a word
// (a second "github" server would replace the first); the YAML decoder
// refuses them ("mapping key already defined"), and so does Parse now for
// JSON, naming the key and both lines. It walks the tokens with an explicit
// stack, so no nesting depth can exhaust the goroutine stack; a syntax error
// ends the walk (Parse reports it).
func duplicateKeys(data []byte) []duplicateKey {
	// A frame knows its parent and its name in it: the path of a
	// duplicate is built only when one is found (copying paths into every
	// frame would cost the square of the nesting depth).
	type frame struct {
		obj     bool
		wantKey bool
		seen    map[string]int
		parent  *frame
		name    string // this container's key or "[i]" in its parent
		key     string
		idx     int
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	line, at := 1, 0
	lineAt := func() int {
		off := int(dec.InputOffset())
		line += bytes.Count(data[at:off], []byte("\n"))
		at = off
		return line
	}
	var stack []*frame
	var out []duplicateKey
	// valueDone marks the end of a value inside the innermost container.
	valueDone := func() {
		if n := len(stack); n > 0 {
			if f := stack[n-1]; f.obj {
				f.wantKey = true
			} else {
				f.idx++
			}
		}
	}
	// push opens a container inside the innermost one.
	push := func(obj bool) {
		f := &frame{obj: obj, wantKey: obj}
		if obj {
			f.seen = map[string]int{}
		}
		if n := len(stack); n > 0 {
			p := stack[n-1]
			f.parent, f.name = p, p.key
			if !p.obj {
				f.name = fmt.Sprintf("[%d]", p.idx)
			}
		}
		stack = append(stack, f)
	}
	pathOf := func(f *frame) []string {
		var p []string
		for ; f != nil && f.parent != nil; f = f.parent {
			p = append(p, f.name)
		}
		slices.Reverse(p)
		return p
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
			f := stack[n-1]
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:n-1]
				valueDone()
				continue
			}
			k, _ := tok.(string)
			l := lineAt()
			if first, dup := f.seen[k]; dup {
				out = append(out, duplicateKey{path: pathOf(f), key: k, line: l, first: first})
			} else {
				f.seen[k] = l
			}
			f.key, f.wantKey = k, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			push(true)
		case json.Delim('['):
			push(false)
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}

// problem reports d as Parse does: under its server when it is inside one.
func (d duplicateKey) problem(file string) Problem {
	p := Problem{File: file, Line: d.line, Msg: fmt.Sprintf("duplicate key %q (first at line %d): a JSON object must not repeat a key", d.key, d.first)}
	path := append(append([]string(nil), d.path...), d.key)
	if len(path) >= 2 && (path[0] == "mcpServers" || path[0] == "servers") {
		p.Server, path = path[1], path[2:]
	}
	p.Field = strings.ReplaceAll(strings.Join(path, "."), ".[", "[")
	return p
}
