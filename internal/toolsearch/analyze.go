package toolsearch

import (
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// Text analysis: the same steps for a tool's text and for a query, so that
// "listPullRequests", "list_pull_requests" and "list pull requests" meet.
//
//  1. words are maximal runs of letters and digits: every other character
//     (space, punctuation, '_', '.', '-', '/') separates;
//  2. a word is split at case changes: "listPullRequests" → list, Pull,
//     Requests; "HTTPServer" → HTTP, Server ("v2", "s3", "k8s" stay whole);
//  3. lowercased, English stop words dropped, and stemmed with the Snowball
//     English (Porter2) stemmer, so "requests", "requested" and "request"
//     are one term.

// maxTermBytes bounds one term: a longer run (a base64 blob, a hash in a
// description) is not a word anyone searches for.
const maxTermBytes = 40

// analyze calls emit with every term of text, in order.
func analyze(text string, emit func(term string)) {
	for len(text) > 0 {
		// Skip separators.
		i := 0
		for i < len(text) {
			r, n := utf8.DecodeRuneInString(text[i:])
			if isWordRune(r) {
				break
			}
			i += n
		}
		text = text[i:]
		// The word.
		j := 0
		for j < len(text) {
			r, n := utf8.DecodeRuneInString(text[j:])
			if !isWordRune(r) {
				break
			}
			j += n
		}
		if j > 0 {
			splitCase(text[:j], func(part string) {
				if t := normalize(part); t != "" {
					emit(t)
				}
			})
		}
		text = text[j:]
	}
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// splitCase splits a word at its case changes: a lower-case letter or digit
// followed by an upper-case letter ("listPull"), and the last capital of a
// run of capitals followed by a lower-case letter ("HTTPServer"). A plural
// acronym is one word without its "s" ("PRs", "APIsList" → API, List).
func splitCase(word string, emit func(string)) {
	start := 0
	part := func(end int) {
		p := word[start:end]
		if n := len(p); n > 2 && p[n-1] == 's' && isUpperASCII(p[n-2]) && isUpperASCII(p[n-3]) {
			p = p[:n-1]
		}
		emit(p)
		start = end
	}
	var prev, prev2 rune // the two runes before i
	for i, r := range word {
		switch {
		case i == start:
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			part(i)
		case unicode.IsLower(r) && unicode.IsUpper(prev) && unicode.IsUpper(prev2) && !pluralS(word, i):
			// "HTTPServer": the word ends before the last capital.
			if p := i - utf8.RuneLen(prev); p > start {
				part(p)
			}
		}
		prev2, prev = prev, r
	}
	part(len(word))
}

// pluralS reports whether word[i] is an "s" ending a run of capitals: the
// end of the word or followed by a capital ("PRs", "APIsList").
func pluralS(word string, i int) bool {
	return word[i] == 's' && (i+1 == len(word) || isUpperASCII(word[i+1]))
}

func isUpperASCII(c byte) bool { return 'A' <= c && c <= 'Z' }

// normalize lowercases and stems one word; "" drops it (a stop word, a
// lone letter, an overlong run).
func normalize(word string) string {
	if len(word) > maxTermBytes {
		return ""
	}
	w := strings.ToLower(word)
	if len(w) == 1 && !unicode.IsDigit(rune(w[0])) {
		return ""
	}
	if _, stop := stopWords[w]; stop {
		return ""
	}
	if s, ok := fixedStems[w]; ok {
		return s
	}
	return stem(w)
}

// The Snowball stemmer costs about a microsecond a word, most of a
// re-index; a catalog's vocabulary is small and repeats, so stems are
// remembered, up to maxStemCache words (beyond that, hostile or generated
// text, they are computed each time).
const maxStemCache = 1 << 17

var (
	stemCache     sync.Map // lowercase word → stem
	stemCacheSize atomic.Int64
)

func stem(w string) string {
	if s, ok := stemCache.Load(w); ok {
		return s.(string)
	}
	s := english.Stem(w, true)
	if stemCacheSize.Load() < maxStemCache {
		if _, loaded := stemCache.LoadOrStore(strings.Clone(w), s); !loaded {
			stemCacheSize.Add(1)
		}
	}
	return s
}

// fixedStems are words the stemmer would get wrong for tool search: Porter2
// keeps the irregular forms apart and merges some product names with
// common words.
var fixedStems = map[string]string{
	"ran":      "run",
	"running":  "run",
	"wrote":    "write",
	"written":  "write",
	"writing":  "write",
	"sent":     "send",
	"got":      "get",
	"gotten":   "get",
	"made":     "make",
	"found":    "find",
	"read":     "read",
	"reading":  "read",
	"children": "child",
	"people":   "person",
	"data":     "data",
	"news":     "news",
	"status":   "status",
	"statuses": "status",
}

// stopWords are English function words that carry no intent. Words that
// do in tool search are kept: "all", "not", "new", "up", "down", "off",
// "over", "before", "after", "between".
var stopWords = set(
	"a", "about", "an", "and", "any", "are", "as", "at", "be", "been", "being", "but", "by", "can", "could",
	"did", "do", "does", "doing", "e", "eg", "etc", "for", "from", "had", "has", "have", "having", "he",
	"her", "here", "hers", "him", "his", "how", "i", "ie", "if", "in", "into", "is", "it", "its", "itself",
	"just", "me", "might", "more", "most", "must", "my", "of", "on", "onto", "or", "our", "ours", "please",
	"shall", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them",
	"then", "there", "these", "they", "this", "those", "to", "too", "us", "via", "was", "we", "were",
	"what", "when", "where", "which", "while", "who", "whom", "whose", "why", "will", "with", "would",
	"you", "your", "yours", "yourself",
	// Words of every tool's request, never of one tool's purpose.
	"tool", "tools", "want", "need", "like", "let", "using", "use", "able", "also",
)

func set(words ...string) map[string]struct{} {
	m := make(map[string]struct{}, len(words))
	for _, w := range words {
		m[w] = struct{}{}
	}
	return m
}
