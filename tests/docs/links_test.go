// Package docs checks the repository's documentation as a reader follows it:
// every relative link in README.md, docs/*.md and the other READMEs names a
// file or directory that exists, and every #anchor a heading of the page it
// points into.
// Content moves between pages (the README became a first page, docs/ one
// page per topic), and a link left behind is the first thing a newcomer
// meets. It is a package of its own so that it runs in a second, without
// the end-to-end harness of ./tests.
package docs

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"unicode"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestDocLinks checks every relative link of README.md, docs/*.md and the
// READMEs of examples/, clients/ and tests/ in the repository.
func TestDocLinks(t *testing.T) {
	repo := os.DirFS("../..")
	pages, err := fs.Glob(repo, "docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	// The other READMEs link into docs/ too.
	pages = append([]string{"README.md", "examples/README.md", "clients/python/README.md",
		"clients/typescript/README.md", "tests/README.md", "tests/bench/README.md"}, pages...)
	if len(pages) < 10 {
		t.Fatalf("found only %v: is the test run from tests/docs?", pages)
	}
	links := 0
	for _, p := range pages {
		n, problems := checkLinks(repo, p)
		links += n
		for _, pr := range problems {
			t.Error(pr)
		}
	}
	// A checker that finds no links checks nothing: the README alone has
	// dozens.
	if links < 100 {
		t.Errorf("checked only %d links in %d pages", links, len(pages))
	}
	t.Logf("%d relative links in %d pages", links, len(pages))
}

// TestDocIndex checks that docs/README.md, the index, links every page of
// docs/: a page nobody links is a page nobody finds.
func TestDocIndex(t *testing.T) {
	repo := os.DirFS("../..")
	pages, err := fs.Glob(repo, "docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	index, err := fs.ReadFile(repo, "docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, line := range prose(string(index)) {
		for _, m := range linkRE.FindAllStringSubmatch(stripCode(line), -1) {
			file, _, _ := strings.Cut(m[1], "#")
			linked[path.Join("docs", file)] = true
		}
	}
	for _, p := range pages {
		if p != "docs/README.md" && !linked[p] {
			t.Errorf("docs/README.md does not link %s: add a line saying which question it answers", p)
		}
	}
}

// TestDocLinksFindsBrokenOnes runs the checker on pages with a broken link
// of each kind, so that TestDocLinks passing means something.
func TestDocLinksFindsBrokenOnes(t *testing.T) {
	repo := fstest.MapFS{
		"README.md": {Data: []byte("# Title\n\n## Try it\n\n" +
			"[ok](docs/a.md) [ok dir](docs) [ok anchor](docs/a.md#the-keys-of-a-file) [ok self](#try-it)\n" +
			"[gone](docs/gone.md) [bad anchor](docs/a.md#nowhere) [bad self](#nope)\n" +
			"`[in code](docs/gone2.md)` [web](https://example.com/x) [mail](mailto:a@b.c)\n" +
			"```\n[in a block](docs/gone3.md)\n# not a heading\n```\n" +
			"[block heading](docs/a.md#not-a-heading)\n")},
		"docs/a.md": {Data: []byte("# A\n\n## The keys of a `file`\n\n## Twice\n\n## Twice\n\n[up](../README.md#title) [second](#twice-1) [third](#twice-2)\n")},
	}
	var got []string
	for _, p := range []string{"README.md", "docs/a.md"} {
		_, problems := checkLinks(repo, p)
		got = append(got, problems...)
	}
	want := []string{
		`README.md: link "docs/gone.md": docs/gone.md does not exist`,
		`README.md: link "docs/a.md#nowhere": docs/a.md has no heading "#nowhere"`,
		`README.md: link "#nope": README.md has no heading "#nope"`,
		`README.md: link "docs/a.md#not-a-heading": docs/a.md has no heading "#not-a-heading"`,
		`docs/a.md: link "#twice-2": docs/a.md has no heading "#twice-2"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A Markdown inline link: [text](target), the target without spaces.
var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// checkLinks returns how many relative links page (a path in repo) has, and
// a line per link that does not resolve.
func checkLinks(repo fs.FS, page string) (int, []string) {
	data, err := fs.ReadFile(repo, page)
	if err != nil {
		return 0, []string{err.Error()}
	}
	n := 0
	var problems []string
	for _, line := range prose(string(data)) {
		for _, m := range linkRE.FindAllStringSubmatch(stripCode(line), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			file, anchor, _ := strings.Cut(target, "#")
			resolved := page
			if file != "" {
				resolved = path.Join(path.Dir(page), file)
				if _, err := fs.Stat(repo, resolved); err != nil {
					problems = append(problems, fmt.Sprintf("%s: link %q: %s does not exist", page, target, resolved))
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(resolved, ".md") {
				continue
			}
			anchors, err := headingAnchors(repo, resolved)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: link %q: %v", page, target, err))
				continue
			}
			if !anchors[anchor] {
				problems = append(problems, fmt.Sprintf("%s: link %q: %s has no heading %q", page, target, resolved, "#"+anchor))
			}
		}
	}
	return n, problems
}

// prose returns the lines of a Markdown page outside fenced code blocks.
func prose(md string) []string {
	var out []string
	fenced := false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, l)
		}
	}
	return out
}

// stripCode removes inline code spans, where brackets are not links.
func stripCode(line string) string {
	var b strings.Builder
	in := false
	for _, r := range line {
		if r == '`' {
			in = !in
			continue
		}
		if !in {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// headingAnchors returns the anchors GitHub gives the headings of a page:
// the text lower-cased, everything but letters, digits, spaces, hyphens and
// underscores dropped, spaces made hyphens; a repeated anchor gets -1, -2….
func headingAnchors(repo fs.FS, page string) (map[string]bool, error) {
	data, err := fs.ReadFile(repo, page)
	if err != nil {
		return nil, err
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, l := range prose(string(data)) {
		text, ok := strings.CutPrefix(l, "#")
		if !ok {
			continue
		}
		text = strings.TrimLeft(text, "#")
		if !strings.HasPrefix(text, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(text)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if k := seen[a]; k > 0 {
			anchors[fmt.Sprintf("%s-%d", a, k)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors, nil
}
