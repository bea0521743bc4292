package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"google.golang.org/grpc/metadata"

	"github.com/toolsvc/toolsvc/config"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/authtest"
)

// dashboardPath is the Grafana dashboard over toolsvc's metrics.
const dashboardPath = "../deploy/grafana/toolsvc-dashboard.json"

// grafanaVars are the dashboard's variables and Grafana's interval macros,
// replaced by values of their kind before a query is parsed (PromQL has no
// variables; Grafana substitutes them before it sends the query).
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h", "$server", ".*")

// dashboardQueries is every PromQL query of the dashboard (panels inside
// rows included) by panel title, and the metrics its variables ask about.
func dashboardQueries(t *testing.T) (map[string][]string, []string) {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	out := map[string][]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				out[p.Title] = append(out[p.Title], tg.Expr)
			}
			var inner []panel
			for _, raw := range p.Panels {
				var ip panel
				if err := json.Unmarshal(raw, &ip); err != nil {
					t.Fatal(err)
				}
				inner = append(inner, ip)
			}
			walk(inner)
		}
	}
	walk(d.Panels)
	var varMetrics []string
	labelValues := regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*),`)
	for _, v := range d.Templating.List {
		if m := labelValues.FindStringSubmatch(v.Definition); m != nil {
			varMetrics = append(varMetrics, m[1])
		}
	}
	return out, varMetrics
}

// TestGrafanaDashboard: every query of deploy/grafana's dashboard parses
// as PromQL (Prometheus's own parser) and names only series a real toolsvc
// exports. The series are scraped from a toolsvc that was made to produce
// every family the dashboard shows (a vector appears on /metrics only
// once it has a value): calls that succeed and fail, a rate-limited call,
// a per-user upstream's token exchange, an upstream that refuses toolsvc's
// credentials, an upstream frozen until its probes fail, the MCP front
// door.
func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	queries, varMetrics := dashboardQueries(t)
	if len(queries) < 20 {
		t.Fatalf("the dashboard has %d panels with queries; want the 20+ of deploy/grafana", len(queries))
	}
	used := map[string][]string{} // metric → panels
	pql := parser.NewParser(parser.Options{})
	for title, exprs := range queries {
		for _, e := range exprs {
			expr, err := pql.ParseExpr(grafanaVars.Replace(e))
			if err != nil {
				t.Errorf("panel %q: %q does not parse: %v", title, e, err)
				continue
			}
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok {
					if vs.Name == "" {
						t.Errorf("panel %q: %q selects series without a metric name", title, e)
					}
					used[vs.Name] = append(used[vs.Name], title)
				}
				return nil
			})
		}
	}
	for _, m := range varMetrics {
		used[m] = append(used[m], "a variable")
	}

	exported := exportedSeries(t)
	var missing []string
	for m, panels := range used {
		if !exported[m] {
			missing = append(missing, m+" (in "+strings.Join(slices.Compact(slices.Sorted(slices.Values(panels))), ", ")+")")
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("the dashboard names series toolsvc does not export:\n%s", strings.Join(missing, "\n"))
	}
	t.Logf("%d panels, %d metrics, all exported", len(queries), len(used))
}

// exportedSeries runs toolsvc with what makes each family the dashboard
// shows appear, and returns the series names of its /metrics.
func exportedSeries(t *testing.T) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	defer http.DefaultClient.CloseIdleConnections()
	asProc := startProcWith(t, exec.Command(helperBinary(t, "authserver")), procOpts{checkExit: true})
	issuer := asProc.log.waitFor(t, urlLineRE, 30*time.Second)
	perUser := startBearerUpstream(t, issuer, "urn:test:upstream")
	refusing := startBearerUpstream(t, issuer, "urn:test:upstream") // toolsvc sends it no token
	frozen := newHTTPUpstream(t)
	const robot = "robot-dashboard-token"
	p := startToolsvc(t, cfg{
		Auth: &authCfg{Tokens: map[string]string{"robot": robot},
			JWT:        &jwtCfg{JWKSURL: jwksURI(t, issuer), Issuer: issuer, Audience: "toolsvc"},
			RateLimits: []config.RateLimit{{Principal: "robot", CallsPerSecond: 0.001, Burst: 1}}},
		Servers: servers{
			"plain": goStdio(upstream{RefreshInterval: "1h"}),
			"user": goHTTP(perUser, upstream{PingInterval: "1h", Credentials: &credsCfg{Mode: "tokenExchange",
				Issuer: issuer, ClientID: authToolsvc.ID, ClientSecret: authToolsvc.Secret, Audience: "urn:test:upstream"}}),
			"refusing": goHTTP(refusing, fastSupervision(upstream{})),
			"frozen":   goHTTP(frozen.url(), fastSupervision(upstream{})),
		}}, "--mcp-listen", "127.0.0.1:0")

	tok, err := authtest.Login(ctx, issuer, authAgent, "alice")
	if err != nil {
		t.Fatal(err)
	}
	alice := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok.AccessToken)
	if _, err := p.client.CallTool(alice, &toolsvcv1.CallToolRequest{Name: "user__whoami"}); err != nil {
		t.Fatalf("a per-user call (token exchange): %v", err)
	}
	if _, err := p.client.CallTool(alice, &toolsvcv1.CallToolRequest{Name: "plain__echo", ArgumentsJson: `{"text": "hi"}`}); err != nil {
		t.Fatal(err)
	}
	_, _ = p.client.CallTool(alice, &toolsvcv1.CallToolRequest{Name: "plain__echo", ArgumentsJson: `{"text": 1}`}) // refused: an error outcome
	asRobot := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+robot)
	for range 2 { // the second is over the rate limit
		_, _ = p.client.CallTool(asRobot, &toolsvcv1.CallToolRequest{Name: "plain__echo", ArgumentsJson: `{"text": "hi"}`})
	}
	frozen.signal(syscall.SIGSTOP)
	defer frozen.signal(syscall.SIGCONT)

	series := map[string]bool{}
	need := []string{"toolsvc_upstream_credentials_total", "toolsvc_upstream_auth_failures_total",
		"toolsvc_upstream_probe_failures_total", "toolsvc_rate_limited_total", "toolsvc_calls_total"}
	eventually(t, 60*time.Second, "the families that need events on /metrics", func() bool {
		clear(series)
		for line := range strings.Lines(scrape(t, p.adminAddr)) {
			if line == "" || line[0] == '#' {
				continue
			}
			name, _, _ := strings.Cut(line, "{")
			name, _, _ = strings.Cut(name, " ")
			series[name] = true
		}
		for _, n := range need {
			if !series[n] {
				return false
			}
		}
		return true
	})
	return series
}
