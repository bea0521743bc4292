package cli

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

// TestShowURL: hostile URLs as an upstream may send them are shown as a
// browser's address bar shows them: the host in punycode, nothing
// invisible or controlling, and only http(s) offered.
func TestShowURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in, text, site string
		openable       bool
	}{
		{"https://login.example/authorize?x=1", "https://login.example/authorize?x=1", "https://login.example", true},
		{"HTTPS://GitHub.COM:8443/a", "https://github.com:8443/a", "https://github.com:8443", true},
		// IDN homograph: a Cyrillic і (U+0456) in place of the Latin i.
		{"https://g\u0456thub.com/login", "https://xn--gthub-n2e.com/login", "https://xn--gthub-n2e.com", true},
		{"https://b\u00fccher.example/", "https://xn--bcher-kva.example/", "https://xn--bcher-kva.example", true},
		// Percent-encoded Unicode in the host is the same host.
		{"https://g%D1%96thub.com/", "https://xn--gthub-n2e.com/", "https://xn--gthub-n2e.com", true},
		// Zero-width and soft hyphen: IDNA would map them away; refused.
		{"https://git\u200bhub.com/", "https://git%E2%80%8Bhub.com/", "(not a valid host)", false},
		{"https://git\u00adhub.com/", "https://git%C2%ADhub.com/", "(not a valid host)", false},
		// Bidi override in the path and the query: percent-encoded.
		{"https://example.com/\u202etxt.exe?q=\u2066x", "https://example.com/%E2%80%AEtxt.exe?q=%E2%81%A6x", "https://example.com", true},
		{"https://example.com/a#\u200bfrag", "https://example.com/a#%E2%80%8Bfrag", "https://example.com", true},
		// Control characters: url.Parse refuses them; shown encoded.
		{"https://example.com/\r\n  site: https://github.com", "https://example.com/%0D%0A%20%20site:%20https://github.com", "(not a valid URL)", false},
		{"https://example.com/\x1b[2J", "https://example.com/%1B[2J", "(not a valid URL)", false},
		{"javascript:alert(document.cookie)", "javascript:alert(document.cookie)", "(none: scheme javascript)", false},
		{"JavaScript:alert(1)", "JavaScript:alert(1)", "(none: scheme javascript)", false},
		{"data:text/html,<script>x</script>", "data:text/html,<script>x</script>", "(none: scheme data)", false},
		{"file:///etc/passwd", "file:///etc/passwd", "(none: scheme file)", false},
		{"//example.com/x", "//example.com/x", "(not a valid URL)", false},
		{"https:///nohost", "https:///nohost", "(not a valid host)", false},
		{"https://[::1]:8080/cb", "https://[::1]:8080/cb", "https://[::1]:8080", true},
		{"https://evil.example\xff/", "https://evil.example%FF/", "(not a valid host)", false},
	} {
		got := showURL(tt.in)
		if got.Text != tt.text || got.Site != tt.site || got.Openable != tt.openable {
			t.Errorf("showURL(%q) = %+v; want text %q, site %q, openable %v", tt.in, got, tt.text, tt.site, tt.openable)
		}
		if got.Openable != (got.Why == "") {
			t.Errorf("showURL(%q): openable %v with why %q", tt.in, got.Openable, got.Why)
		}
		for _, r := range got.Text + got.Site {
			if r < ' ' || r > '~' {
				t.Errorf("showURL(%q) shows %q outside printable ASCII: %+v", tt.in, r, got)
			}
		}
	}
}

// TestTermLine: an upstream's message printed on a prompt stays on one
// line and shows what is invisible.
func TestTermLine(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"Log in, please", "Log in, please"},
		{"Log in\n  site: https://github.com", `Log in\n  site: https://github.com`},
		{"a\r\nb", `a\r\nb`},
		{"a\u2028b\u2029c\u0085d", `a\u2028b\u2029c\u0085d`},
		{"git\u200bhub \ufeff\u00ad", `git\u200bhub \ufeff\u00ad`},
		{"\x1b]8;;https://evil\x07click\x1b]8;;\x07", `\x1b]8;;https://evil\aclick\x1b]8;;\a`},
		{"\u202etxt.exe", `\u202etxt.exe`},
		{"naïve ✓ 工具", "naïve ✓ 工具"},
	} {
		if got := termLine(tt.in); got != tt.want {
			t.Errorf("termLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
