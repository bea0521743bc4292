package main

import "testing"

func TestTermSafe(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, cell, text string }{
		{"plain tool", "plain tool", "plain tool"},
		{"naïve ✓ 工具", "naïve ✓ 工具", "naïve ✓ 工具"},
		{"red\x1b[31m!\x1b]0;pwned\x07", `red\x1b[31m!\x1b]0;pwned\a`, `red\x1b[31m!\x1b]0;pwned\a`},
		{"a\nb\tc\rd", `a\nb\tc\rd`, "a\nb\tc\\rd"},
		{"c1\u009b2J del\x7f", `c1\u009b2J del\x7f`, `c1\u009b2J del\x7f`},
		{"bidi\u202eevil\u2066", `bidi\u202eevil\u2066`, `bidi\u202eevil\u2066`},
		{"bad\xffutf8", `bad\xffutf8`, `bad\xffutf8`},
		{"literal \ufffd kept", "literal \ufffd kept", "literal \ufffd kept"},
	} {
		if got := termSafe(tt.in); got != tt.cell {
			t.Errorf("termSafe(%q) = %q, want %q", tt.in, got, tt.cell)
		}
		if got := termText(tt.in); got != tt.text {
			t.Errorf("termText(%q) = %q, want %q", tt.in, got, tt.text)
		}
	}
}
