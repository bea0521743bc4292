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
// stack (dupScan), so no nesting depth can exhaust the goroutine stack; a
// syntax error ends the walk (Parse reports it), and so does nesting past
// maxJSONDepth: json.Decoder.Token has no depth limit, and a 16 MiB file of
// brackets cost 2.6 GB of frames before json.Unmarshal, which refuses such
// a document itself, ever saw it.
func duplicateKeys(data []byte) []duplicateKey {
	d := &dupScan{data: data, dec: json.NewDecoder(bytes.NewReader(data)), line: 1}
	d.dec.UseNumber()
	for {
		tok, err := d.dec.Token()
		if err != nil || len(d.stack) > maxJSONDepth {
			return d.out
		}
		d.token(tok)
	}
}

// maxJSONDepth is encoding/json's own nesting limit for Unmarshal.
const maxJSONDepth = 10_000

// dupFrame is one open container of a dupScan. A frame knows its parent
// and its name in it: the path of a duplicate is built only when one is
// found (copying paths into every frame would cost the square of the
// nesting depth).
type dupFrame struct {
	obj     bool
	wantKey bool
	seen    map[string]int
	parent  *dupFrame
	name    string // this container's key or "[i]" in its parent
	key     string
	idx     int
}

// path is the keys (or "[i]") from the document's top down to f.
func (f *dupFrame) path() []string {
	var p []string
	for ; f != nil && f.parent != nil; f = f.parent {
		p = append(p, f.name)
	}
	slices.Reverse(p)
	return p
}

// dupScan is duplicateKeys' state: the open containers, innermost last,
// and the line the decoder has reached (counted from at).
type dupScan struct {
	data     []byte
	dec      *json.Decoder
	line, at int
	stack    []*dupFrame
	out      []duplicateKey
}

// token takes the next token: a key when the innermost container is an
// object waiting for one, otherwise a value or a container's end.
func (d *dupScan) token(tok json.Token) {
	if n := len(d.stack); n > 0 && d.stack[n-1].obj && d.stack[n-1].wantKey {
		d.key(d.stack[n-1], tok)
		return
	}
	switch tok {
	case json.Delim('{'):
		d.push(true)
	case json.Delim('['):
		d.push(false)
	case json.Delim(']'):
		d.pop()
	default:
		d.valueDone()
	}
}

// key takes the token where object f expects a key: its closing brace, or
// a key, recorded with its line or reported as a duplicate.
func (d *dupScan) key(f *dupFrame, tok json.Token) {
	if delim, ok := tok.(json.Delim); ok && delim == '}' {
		d.pop()
		return
	}
	k, _ := tok.(string)
	l := d.lineAt()
	if first, dup := f.seen[k]; dup {
		d.out = append(d.out, duplicateKey{path: f.path(), key: k, line: l, first: first})
	} else {
		f.seen[k] = l
	}
	f.key, f.wantKey = k, false
}

// lineAt is the line of the decoder's input offset.
func (d *dupScan) lineAt() int {
	off := int(d.dec.InputOffset())
	d.line += bytes.Count(d.data[d.at:off], []byte("\n"))
	d.at = off
	return d.line
}

// push opens a container inside the innermost one.
func (d *dupScan) push(obj bool) {
	f := &dupFrame{obj: obj, wantKey: obj}
	if obj {
		f.seen = map[string]int{}
	}
	if n := len(d.stack); n > 0 {
		p := d.stack[n-1]
		f.parent, f.name = p, p.key
		if !p.obj {
			f.name = fmt.Sprintf("[%d]", p.idx)
		}
	}
	d.stack = append(d.stack, f)
}

// pop closes the innermost container, a value of the one around it.
func (d *dupScan) pop() {
	d.stack = d.stack[:len(d.stack)-1]
	d.valueDone()
}

// valueDone marks the end of a value inside the innermost container.
func (d *dupScan) valueDone() {
	if n := len(d.stack); n > 0 {
		if f := d.stack[n-1]; f.obj {
			f.wantKey = true
		} else {
			f.idx++
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
