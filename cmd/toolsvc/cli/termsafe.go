package cli

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
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

// invisible reports characters a reader cannot see or that break a line
// without being a control character: format characters (Unicode category
// Cf: zero-width space U+200B, joiners, the soft hyphen, the byte-order
// mark, the bidi marks) and the line and paragraph separators (U+2028,
// U+2029). In a one-line text that came from an upstream they could hide
// a difference ("git\u200bhub") or start a fake line.
func invisible(r rune) bool {
	return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// termLine is termSafe for a message from an upstream printed on a prompt
// next to what toolsvc itself says (a URL request's message): one line,
// with line breaks, control, bidi and invisible characters escaped, so the
// message cannot print a line that looks like toolsvc's own ("  site: …").
func termLine(s string) string {
	s = termSafe(s)
	if !strings.ContainsFunc(s, invisible) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if invisible(r) {
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// shownURL is how the CLI shows a URL an upstream sent (a URL request, a
// login link): as a browser's address bar does, so that what is read is
// where the browser goes.
type shownURL struct {
	// Text is the URL in ASCII only: the host in punycode (IDNA, so a
	// Cyrillic "і" in "gіthub.com" shows as xn--gthub-n2e.com), every other
	// byte outside printable ASCII percent-encoded (control, bidi and
	// invisible characters included). It is the same URL: a browser given
	// it goes where it would have gone given the original.
	Text string
	// Site is scheme://host[:port] of Text, or why there is none.
	Site string
	// Openable is true for an http or https URL with a valid host only:
	// javascript:, data:, file: and the like are shown but never offered.
	Openable bool
	// Why says why the URL is not offered (empty when Openable).
	Why string
}

// showURL makes raw's shownURL (golang.org/x/net/idna's Lookup profile,
// the UTS #46 processing browsers apply before resolving a host).
func showURL(raw string) shownURL {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return shownURL{Text: asciiURL(raw), Site: "(not a valid URL)", Why: "not a valid absolute URL"}
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return shownURL{Text: asciiURL(raw), Site: "(none: scheme " + asciiURL(scheme) + ")",
			Why: fmt.Sprintf("only http and https URLs are opened, not %s:", asciiURL(scheme))}
	}
	host := u.Hostname()
	// A host with an invisible or control character is refused, not
	// mapped: IDNA maps some of them to nothing (U+200B, U+00AD), which
	// would hide exactly what the reader should see.
	if host == "" || strings.ContainsFunc(host, func(r rune) bool {
		return invisible(r) || unicode.IsControl(r) || isBidiControl(r) || r == utf8.RuneError || unicode.IsSpace(r)
	}) {
		return shownURL{Text: asciiURL(raw), Site: "(not a valid host)", Why: "the URL has no valid host"}
	}
	ascii := host
	if ip := net.ParseIP(host); ip != nil {
		ascii = ip.String()
	} else if ascii, err = idna.Lookup.ToASCII(host); err != nil {
		return shownURL{Text: asciiURL(raw), Site: "(not a valid host)", Why: "the host is not a valid domain name (IDNA)"}
	}
	v := *u
	v.Scheme = scheme
	v.Host = ascii
	if strings.Contains(ascii, ":") { // an IPv6 literal
		v.Host = "[" + ascii + "]"
	}
	if p := u.Port(); p != "" {
		v.Host += ":" + p
	}
	return shownURL{Text: asciiURL(v.String()), Site: scheme + "://" + v.Host, Openable: true}
}

// asciiURL percent-encodes every byte of s outside printable ASCII
// (controls, space, DEL and everything above 0x7f, valid UTF-8 or not).
func asciiURL(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
