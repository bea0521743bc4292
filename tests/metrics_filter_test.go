package tests

import (
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestFilteredScrapeMatchesWholeExposition: a scrape that names families
// (promhttp's name[]) answers, from a real toolsvc over two real go-sdk
// upstreams (stdio and HTTP), exactly those families' lines of the whole
// exposition: the scrape-time families alone (served without gathering
// the registry, service.Metrics.Handler), and a mix with another family
// (gathered in full and filtered, as before).
func TestFilteredScrapeMatchesWholeExposition(t *testing.T) {
	t.Parallel()
	p := startToolsvc(t, cfg{Servers: servers{
		"a": goStdio(upstream{RefreshInterval: "1h"}),
		"b": goHTTP(startHTTPUpstream(t), upstream{RefreshInterval: "1h"}),
	}})
	for _, names := range [][]string{
		{"toolsvc_upstream_tools"},
		{"toolsvc_upstream_tools", "toolsvc_upstream_state", "toolsvc_catalog_tools"},
		{"toolsvc_upstream_tools", "go_goroutines"},
	} {
		got := familyLines(scrapeNamed(t, p.adminAddr, names), names)
		want := familyLines(scrape(t, p.adminAddr), names)
		if len(got) == 0 || !slices.Equal(got, want) {
			t.Errorf("scrape of %v =\n%s\nwant the whole exposition's lines of those families:\n%s",
				names, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if other := otherLines(scrapeNamed(t, p.adminAddr, names), names); len(other) > 0 {
			t.Errorf("scrape of %v has other families' lines: %q", names, other)
		}
	}
	// The two upstreams' tool counts are there (both listed: the go-sdk
	// test server's tools).
	lines := familyLines(scrapeNamed(t, p.adminAddr, []string{"toolsvc_upstream_tools"}), []string{"toolsvc_upstream_tools"})
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `toolsvc_upstream_tools{server="a"} `) ||
		!strings.HasPrefix(lines[1], `toolsvc_upstream_tools{server="b"} `) || strings.HasSuffix(lines[0], " 0") {
		t.Errorf("toolsvc_upstream_tools = %q, want a count for a and b", lines)
	}
}

// scrapeNamed returns the text of /metrics?name[]=… on the admin address.
func scrapeNamed(t *testing.T, adminAddr string, names []string) string {
	t.Helper()
	resp, err := http.Get("http://" + adminAddr + "/metrics?" + url.Values{"name[]": names}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics?name[]=%v: %s", names, resp.Status)
	}
	return string(body)
}

// sampleOf says whether line is a sample of one of the families named.
func sampleOf(line string, names []string) bool {
	for _, n := range names {
		if rest, ok := strings.CutPrefix(line, n); ok && (strings.HasPrefix(rest, "{") || strings.HasPrefix(rest, " ")) {
			return true
		}
	}
	return false
}

// familyLines are the sample lines of the families named, sorted; the
// age of a listing, which moves between two scrapes, without its value.
func familyLines(text string, names []string) []string {
	var out []string
	for l := range strings.Lines(text) {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") || !sampleOf(l, names) {
			continue
		}
		if strings.HasPrefix(l, "go_goroutines ") || strings.HasPrefix(l, "toolsvc_upstream_last_list_age_seconds") {
			l, _, _ = strings.Cut(l, " ")
		}
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// otherLines are the sample lines of families not named.
func otherLines(text string, names []string) []string {
	var out []string
	for l := range strings.Lines(text) {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") && !sampleOf(l, names) {
			out = append(out, l)
		}
	}
	return out
}
