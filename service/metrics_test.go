package service

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// countingCollector stands for the registry's other collectors (gRPC's
// histograms, the Go runtime's): it counts its collections.
type countingCollector struct {
	desc      *prometheus.Desc
	collected atomic.Int64
}

func (c *countingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *countingCollector) Collect(ch chan<- prometheus.Metric) {
	c.collected.Add(1)
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1)
}

// scrapeText GETs /metrics from h with the families named (none: all)
// and returns the exposition's sample lines of those families, sorted.
func scrapeText(t *testing.T, h http.Handler, names ...string) []string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics?" + url.Values{"name[]": names}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s, %v", resp.Status, err)
	}
	var lines []string
	for l := range strings.Lines(string(body)) {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		for _, n := range names {
			if strings.HasPrefix(l, n+"{") || strings.HasPrefix(l, n+" ") {
				lines = append(lines, l)
			}
		}
		if len(names) == 0 {
			lines = append(lines, l)
		}
	}
	slices.Sort(lines)
	return lines
}

// TestFilteredScrapeCollectsItsFamiliesOnly: a scrape naming scrape-time
// families (promhttp's name[]) collects nothing else of the registry and
// answers the same series and values as the whole exposition filtered; a
// scrape naming any other family, or none, gathers the whole registry as
// before. (Before, every filtered scrape gathered all: the other
// collector was collected once per scrape.)
func TestFilteredScrapeCollectsItsFamiliesOnly(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	f := newWatchFixture(t, &serverOpts{Metrics: m}, map[string][]string{"a": {"x", "y"}, "b": {"x"}})
	t.Cleanup(f.svc.Shutdown)
	m.Attach(f.bridge)
	other := &countingCollector{desc: prometheus.NewDesc("toolsvc_test_other", "Another family.", nil, nil)}
	reg.MustRegister(other)
	h := m.Handler(reg)

	one := []string{"toolsvc_upstream_tools"}
	two := []string{"toolsvc_upstream_tools", "toolsvc_catalog_tools"}
	for _, names := range [][]string{one, two} {
		before := other.collected.Load()
		got := scrapeText(t, h, names...)
		if n := other.collected.Load() - before; n != 0 {
			t.Errorf("scrape of %v collected the registry's other collectors %d times, want 0", names, n)
		}
		want := filterLines(scrapeText(t, h), names)
		if !slices.Equal(got, want) || len(got) == 0 {
			t.Errorf("scrape of %v =\n%s\nwant the whole exposition's\n%s", names, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	if got := scrapeText(t, h, "toolsvc_upstream_tools"); !slices.Equal(got, []string{
		`toolsvc_upstream_tools{server="a"} 2`, `toolsvc_upstream_tools{server="b"} 1`}) {
		t.Errorf("toolsvc_upstream_tools = %q, want a 2 and b 1", got)
	}

	// A family the scrape-time collector does not have: the whole
	// registry, filtered by promhttp.
	before := other.collected.Load()
	if got := scrapeText(t, h, "toolsvc_test_other", "toolsvc_upstream_tools"); len(got) != 3 {
		t.Errorf("mixed scrape = %q, want the other family's line and two upstreams'", got)
	}
	if n := other.collected.Load() - before; n != 1 {
		t.Errorf("mixed scrape collected the other collector %d times, want 1", n)
	}
}

func filterLines(lines, names []string) []string {
	var out []string
	for _, l := range lines {
		for _, n := range names {
			if strings.HasPrefix(l, n+"{") || strings.HasPrefix(l, n+" ") {
				out = append(out, l)
			}
		}
	}
	return out
}

// TestMetricsFamiliesNamed: every scrape-time family's name is read from
// its Desc (descName parses client_golang's Desc.String; a format change
// would leave a family out of the filtered path, and it would be gathered
// in full).
func TestMetricsFamiliesNamed(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	if got, want := len(m.families), len(m.descs()); got != want {
		names := make([]string, 0, len(m.families))
		for n := range m.families {
			names = append(names, n)
		}
		t.Fatalf("%d of %d families named: %v", got, want, names)
	}
	if d := m.families["toolsvc_upstream_tools"]; d != m.upTools {
		t.Fatalf("toolsvc_upstream_tools = %v, want %v", d, m.upTools)
	}
}

// BenchmarkFilteredScrape: one poll of toolsvc_upstream_tools (the
// fleet phase's progress probe) at 500 upstreams, against the whole
// exposition, in-process.
func BenchmarkFilteredScrape(b *testing.B) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	servers := map[string][]string{}
	for i := range 500 {
		servers[fmt.Sprintf("u%03d", i)] = []string{"t"}
	}
	f := newWatchFixture(b, &serverOpts{Metrics: m}, servers)
	b.Cleanup(f.svc.Shutdown)
	m.Attach(f.bridge)
	for name := range servers { // what a refresh and a call leave per upstream
		m.RefreshDone(name, 0, nil)
		m.CallDone(name, "t", "ok", time.Time{}, 0)
	}
	h := m.Handler(reg)
	for _, q := range []string{"", "name[]=toolsvc_upstream_tools"} {
		b.Run("query="+q, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/metrics?"+q, nil)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatal(w.Code)
				}
			}
		})
	}
}
