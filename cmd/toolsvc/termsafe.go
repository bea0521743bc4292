package main

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// termSafe makes text that came from the server or an upstream (tool names,
// descriptions, server errors, resource names, results) safe to print on a
// terminal: C0 and C1 control characters, DEL, Unicode bidirectional
// controls and invalid UTF-8 are printed as Go escapes (\x1b, \u202e),
// so no upstream can move the cursor, clear the screen, retitle the window
// or reorder what the reader sees (ECMA-48 control functions;
// https://trojansource.codes for the bidi controls). Used for one-line
// cells, it escapes newlines and tabs too.
func termSafe(s string) string { return termEscape(s, false) }

// termText is termSafe for multi-line text: newlines and tabs are kept.
func termText(s string) string { return termEscape(s, true) }

func termEscape(s string, keepLayout bool) string {
	unsafe := func(r rune) bool {
		return (unicode.IsControl(r) && !(keepLayout && (r == '\n' || r == '\t'))) || isBidiControl(r) || r == utf8.RuneError
	}
	if !strings.ContainsFunc(s, unsafe) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&0xf, 16))
		case unsafe(r) && r != utf8.RuneError:
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isBidiControl reports the Unicode bidirectional formatting characters
// (UAX #9): embeddings, overrides, isolates and marks.
func isBidiControl(r rune) bool {
	return unicode.Is(unicode.Bidi_Control, r)
}
