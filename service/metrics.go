package service

import (
	"net/http"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/toolsvc/toolsvc/service/core"
)

// Metrics are toolsvc's own Prometheus metrics. Label cardinality is
// bounded: server labels by the configuration, tool labels by the catalog
// (only the calls counter carries a tool label; histograms do not).
type Metrics struct {
	ups atomic.Pointer[Upstreams]

	refreshes        *prometheus.CounterVec
	refreshDuration  *prometheus.HistogramVec
	probeFailures    *prometheus.CounterVec
	authFailures     *prometheus.CounterVec
	credentials      *prometheus.CounterVec // per-user credentials (mcpbridge.CredentialObserver)
	calls            *prometheus.CounterVec
	callDuration     *prometheus.HistogramVec
	callsInFlight    prometheus.Gauge
	rateLimited      *prometheus.CounterVec
	resourceOps      *prometheus.CounterVec   // resource reads, prompt gets, subscriptions (service/core/operation.go)
	resourceDuration *prometheus.HistogramVec // their latency
	principalFlight  *prometheus.Desc
	inputWaiting     *prometheus.Desc // interactive calls in flights (service/core/interact.go)
	server           atomic.Pointer[Server]
	watchStreams     *prometheus.Desc
	watchResets      *prometheus.Desc
	malformedResumes *prometheus.Desc
	slowConsumers    *prometheus.Desc
	watchSent        *prometheus.Desc
	configReloads    *prometheus.Desc
	configReloadOK   *prometheus.Desc

	upState        *prometheus.Desc
	upConnects     *prometheus.Desc
	upTools        *prometheus.Desc
	upListAge      *prometheus.Desc
	upBreakerOpen  *prometheus.Desc
	upInFlight     *prometheus.Desc
	upPush         *prometheus.Desc
	upUserSessions *prometheus.Desc
	catalogTools   *prometheus.Desc
	catalogWatcher *prometheus.Desc
	catalogSubs    *prometheus.Desc

	// families are the scrape-time families above by name (Handler).
	families map[string]*prometheus.Desc
}

// NewMetrics creates the metrics and registers them. Pass it as the
// bridge's Observer, then Attach the bridge.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	latency := []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	m := &Metrics{
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolsvc_upstream_refreshes_total",
			Help: "tools/list passes per upstream, by outcome (ok, error)."}, []string{"server", "outcome"}),
		refreshDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "toolsvc_upstream_refresh_duration_seconds",
			Help: "Duration of a full tools/list pass (all pages).", Buckets: latency}, []string{"server", "outcome"}),
		probeFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolsvc_upstream_probe_failures_total",
			Help: "Liveness probes that failed or timed out."}, []string{"server"}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolsvc_upstream_auth_failures_total",
			Help: "Connection attempts or sessions that ended because the upstream refused toolsvc's credentials (HTTP 401/403) or a token request failed."}, []string{"server"}),
		credentials: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolsvc_upstream_credentials_total",
			Help: "Per-user credential events by upstream: op exchange (RFC 8693 at the authorization server; cached tokens are not counted), login, refresh, logout (userOAuth), store (token store failures); outcome ok, refused, invalid (a login link that is not toolsvc's or expired), error, corrupt (a stored entry that no longer opens)."},
			[]string{"server", "op", "outcome"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolsvc_calls_total",
			Help: "Tool calls by server, tool and outcome (ok, tool_error, or a gRPC code name)."}, []string{"server", "tool", "outcome"}),
		callDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "toolsvc_call_duration_seconds",
			Help: "Tool call latency at the gRPC edge, by server and outcome.", Buckets: latency}, []string{"server", "outcome"}),
		callsInFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "toolsvc_calls_in_flight", Help: "Tool calls in flight."}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolsvc_rate_limited_total",
			Help: "Tool calls refused by auth.rateLimits, by principal and limit (calls_per_second, max_concurrent)."}, []string{"principal", "limit"}),
		resourceOps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolsvc_resource_requests_total",
			Help: "Resource reads, prompt gets, resource subscriptions and completions by server, method (resources/read, prompts/get, resources/subscribe, completion/complete) and outcome (ok or a gRPC code name)."},
			[]string{"server", "method", "outcome"}),
		resourceDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "toolsvc_resource_request_duration_seconds",
			Help: "Latency of resource reads, prompt gets and completions at the gRPC edge (subscriptions: their whole life), by method and outcome.", Buckets: latency},
			[]string{"method", "outcome"}),
		inputWaiting: prometheus.NewDesc("toolsvc_interactive_calls_waiting",
			"Interactive calls on this replica that have asked their caller for input (parked for its answer, or running on after it), as --max-waiting counts them; one ends with its upstream call, its --input-timeout expiry or its caller going away.", nil, nil),
		principalFlight: prometheus.NewDesc("toolsvc_principal_calls_in_flight",
			"Tool calls in flight per principal with an auth.rateLimits maxConcurrent cap.", []string{"principal"}, nil),
		watchStreams: prometheus.NewDesc("toolsvc_watch_streams", "Open WatchCatalog streams.", nil, nil),
		watchResets: prometheus.NewDesc("toolsvc_watch_resets_total",
			"Watches that started with a reset snapshot (unknown, old or malformed resume token).", nil, nil),
		malformedResumes: prometheus.NewDesc("toolsvc_watch_malformed_resume_tokens_total",
			"Watches whose resume token was malformed (a subset of resets).", nil, nil),
		configReloads: prometheus.NewDesc("toolsvc_config_reloads_total", "Configuration reload attempts (file change, SIGHUP, ReloadConfig).", nil, nil),
		configReloadOK: prometheus.NewDesc("toolsvc_config_last_reload_success",
			"1 if the last configuration reload was applied, 0 if it failed (the previous configuration keeps running).", nil, nil),
		slowConsumers: prometheus.NewDesc("toolsvc_watch_slow_consumers_total",
			"Watch streams ended because the client did not read within the send timeout.", nil, nil),
		watchSent: prometheus.NewDesc("toolsvc_watch_messages_sent_total",
			"Messages sent on WatchCatalog streams (grpc_server_msg_sent_total does not count them).", nil, nil),
		upState: prometheus.NewDesc("toolsvc_upstream_state", "1 for the upstream's current state.", []string{"server", "state"}, nil),
		upConnects: prometheus.NewDesc("toolsvc_upstream_connects_total", "Sessions established to the upstream since start.",
			[]string{"server"}, nil),
		upTools: prometheus.NewDesc("toolsvc_upstream_tools", "Tools the upstream contributes.", []string{"server"}, nil),
		upListAge: prometheus.NewDesc("toolsvc_upstream_last_list_age_seconds", "Seconds since the upstream's last successful tools/list.",
			[]string{"server"}, nil),
		upBreakerOpen: prometheus.NewDesc("toolsvc_upstream_breaker_open", "1 while the upstream's circuit breaker is open.",
			[]string{"server"}, nil),
		upInFlight: prometheus.NewDesc("toolsvc_upstream_calls_in_flight", "Calls in flight to the upstream.", []string{"server"}, nil),
		upPush: prometheus.NewDesc("toolsvc_upstream_push_channel_up",
			"1 while the upstream's list_changed push channel is open, 0 while it is down or missing (the upstream is then re-listed every pushlessRefresh).",
			[]string{"server", "state"}, nil),
		upUserSessions: prometheus.NewDesc("toolsvc_upstream_user_sessions",
			"Per-principal sessions open now to an upstream with per-user credentials (bounded by its credentials.maxSessions).", []string{"server"}, nil),
		catalogTools:   prometheus.NewDesc("toolsvc_catalog_tools", "Tools in the merged catalog.", nil, nil),
		catalogWatcher: prometheus.NewDesc("toolsvc_watchers", "Open WatchCatalog streams (the same as toolsvc_watch_streams, kept for dashboards that use this name).", nil, nil),
		catalogSubs:    prometheus.NewDesc("toolsvc_catalog_subscribers", "Subscribers to catalog changes inside the process: the watch engine's and the MCP front door's.", nil, nil),
	}
	m.families = map[string]*prometheus.Desc{}
	for _, d := range m.descs() {
		if name := descName(d); name != "" {
			m.families[name] = d
		}
	}
	reg.MustRegister(m, m.refreshes, m.refreshDuration, m.probeFailures, m.authFailures, m.credentials, m.calls, m.callDuration, m.callsInFlight, m.rateLimited,
		m.resourceOps, m.resourceDuration)
	return m
}

// Upstreams is what the scrape-time gauges read: the servers' status and
// the shared catalog (a *core.Core; the composition root may pass the
// bridge it builds the core over, which has both).
type Upstreams interface {
	Servers() []core.ServerStatus
	Catalog() *core.Catalog
}

// Attach makes the scrape-time gauges read u.
func (m *Metrics) Attach(u Upstreams) { m.ups.Store(&u) }

// RefreshDone implements mcpbridge.Observer.
func (m *Metrics) RefreshDone(server string, took time.Duration, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.refreshes.WithLabelValues(server, outcome).Inc()
	m.refreshDuration.WithLabelValues(server, outcome).Observe(took.Seconds())
}

// CredentialEvent implements mcpbridge.CredentialObserver.
func (m *Metrics) CredentialEvent(server, op, outcome string) {
	m.credentials.WithLabelValues(server, op, outcome).Inc()
}

// ProbeFailed implements mcpbridge.Observer.
func (m *Metrics) ProbeFailed(server string) { m.probeFailures.WithLabelValues(server).Inc() }

// CallStarted implements core.Observer.
func (m *Metrics) CallStarted() { m.callsInFlight.Inc() }

// CallDone implements core.Observer.
func (m *Metrics) CallDone(server, tool, outcome string, _ time.Time, took time.Duration) {
	m.callsInFlight.Dec()
	m.calls.WithLabelValues(server, tool, outcome).Inc()
	m.callDuration.WithLabelValues(server, outcome).Observe(took.Seconds())
}

// OperationDone implements core.Observer.
func (m *Metrics) OperationDone(server, method, outcome string, took time.Duration) {
	m.resourceOps.WithLabelValues(server, method, outcome).Inc()
	m.resourceDuration.WithLabelValues(method, outcome).Observe(took.Seconds())
}

// RateLimited implements core.Observer.
func (m *Metrics) RateLimited(principal, limit string) {
	m.rateLimited.WithLabelValues(principal, limit).Inc()
}

// UpstreamAuthFailed implements mcpbridge.AuthObserver.
func (m *Metrics) UpstreamAuthFailed(server string) { m.authFailures.WithLabelValues(server).Inc() }

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range m.descs() {
		ch <- d
	}
}

// descs are the scrape-time families' Descs.
func (m *Metrics) descs() []*prometheus.Desc {
	return []*prometheus.Desc{m.upState, m.upConnects, m.upTools, m.upListAge, m.upBreakerOpen, m.upInFlight, m.upPush, m.upUserSessions,
		m.catalogTools, m.catalogWatcher, m.catalogSubs, m.watchStreams, m.watchResets, m.malformedResumes, m.slowConsumers, m.watchSent,
		m.configReloads, m.configReloadOK, m.principalFlight, m.inputWaiting}
}

// descFQName reads a Desc's name from its String form, the only place
// client_golang exposes it (TestMetricsFamiliesNamed pins that every
// family is found; one that is not is only ever gathered in full).
var descFQName = regexp.MustCompile(`^Desc\{fqName: "([^"]+)"`)

func descName(d *prometheus.Desc) string {
	if m := descFQName.FindStringSubmatch(d.String()); m != nil {
		return m[1]
	}
	return ""
}

// Handler serves reg's exposition on /metrics. A scrape that names its
// families (promhttp's name[] filter) and names only scrape-time families
// of m collects those families alone: promhttp filters after gathering
// the whole registry, so a poll of one family cost a full gather — at 500
// upstreams, 4,500 series built and every histogram of every upstream
// read, 20–40 ms of CPU in 5–10 ms slices that calls queued behind
// (docs/benchmarks.md, "Calls during a refresh storm: what ran while a call
// waited"). The answer is the same families, series and values either way.
func (m *Metrics) Handler(reg *prometheus.Registry) http.Handler {
	full := promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want := m.named(r.URL.Query()["name[]"])
		if want == nil {
			full.ServeHTTP(w, r)
			return
		}
		some := prometheus.NewRegistry()
		some.MustRegister(familyCollector{m, want}) // m's own Descs: consistent
		promhttp.HandlerFor(some, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	})
}

// named is the set of m's scrape-time families among names, or nil when
// names is empty or names a family m does not collect (the whole registry
// is then gathered and filtered, as promhttp does).
func (m *Metrics) named(names []string) map[*prometheus.Desc]bool {
	if len(names) == 0 {
		return nil
	}
	want := make(map[*prometheus.Desc]bool, len(names))
	for _, n := range names {
		d, ok := m.families[n]
		if !ok {
			return nil
		}
		want[d] = true
	}
	return want
}

// familyCollector collects some of m's scrape-time families.
type familyCollector struct {
	m    *Metrics
	want map[*prometheus.Desc]bool
}

func (c familyCollector) Describe(ch chan<- *prometheus.Desc) {
	for d := range c.want {
		ch <- d
	}
}

func (c familyCollector) Collect(ch chan<- prometheus.Metric) { c.m.collect(ch, c.want) }

// Collect implements prometheus.Collector: upstream gauges are read from
// the bridge at scrape time.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) { m.collect(ch, nil) }

// collect sends the families in want (nil: all of them).
func (m *Metrics) collect(out chan<- prometheus.Metric, want map[*prometheus.Desc]bool) {
	ch := metricSink{out, want}
	if s := m.server.Load(); s != nil {
		for name, n := range s.core.CallsInFlight() {
			ch.send(m.principalFlight, prometheus.GaugeValue, float64(n), name)
		}
		ch.send(m.inputWaiting, prometheus.GaugeValue, float64(s.core.Waiting()))
	}
	u := m.ups.Load()
	if u == nil {
		return
	}
	b := *u
	now := time.Now()
	for _, st := range b.Servers() {
		for _, s := range []core.State{core.StateConnecting, core.StateReady, core.StateDegraded, core.StateDown} {
			v := 0.0
			if st.State == s {
				v = 1
			}
			ch.send(m.upState, prometheus.GaugeValue, v, st.Name, s.String())
		}
		ch.send(m.upConnects, prometheus.CounterValue, float64(st.ConnectCount), st.Name)
		ch.send(m.upTools, prometheus.GaugeValue, float64(st.ToolCount), st.Name)
		if !st.LastListOK.IsZero() {
			ch.send(m.upListAge, prometheus.GaugeValue, now.Sub(st.LastListOK).Seconds(), st.Name)
		}
		open := 0.0
		if st.Breaker == core.BreakerOpen {
			open = 1
		}
		ch.send(m.upBreakerOpen, prometheus.GaugeValue, open, st.Name)
		ch.send(m.upInFlight, prometheus.GaugeValue, float64(st.InFlightCalls), st.Name)
		if st.PerUser {
			ch.send(m.upUserSessions, prometheus.GaugeValue, float64(st.UserSessions), st.Name)
		}
		if st.PushChannel != "" {
			up := 0.0
			if st.PushChannel == "up" {
				up = 1
			}
			ch.send(m.upPush, prometheus.GaugeValue, up, st.Name, st.PushChannel)
		}
	}
	ch.send(m.catalogTools, prometheus.GaugeValue, float64(b.Catalog().Len()))
	ch.send(m.catalogSubs, prometheus.GaugeValue, float64(b.Catalog().Subscribers()))
	if s := m.server.Load(); s != nil {
		st := s.Stats()
		ch.send(m.catalogWatcher, prometheus.GaugeValue, float64(st.WatchStreams))
		ch.send(m.watchStreams, prometheus.GaugeValue, float64(st.WatchStreams))
		ch.send(m.watchResets, prometheus.CounterValue, float64(st.WatchResets))
		ch.send(m.malformedResumes, prometheus.CounterValue, float64(st.WatchMalformedTokens))
		ch.send(m.slowConsumers, prometheus.CounterValue, float64(st.WatchSlowConsumers))
		ch.send(m.watchSent, prometheus.CounterValue, float64(st.WatchMessagesSent))
		if cfg := s.opts.Config; cfg != nil {
			cs := cfg.Status()
			ok := 0.0
			if cs.LastReloadOK {
				ok = 1
			}
			ch.send(m.configReloads, prometheus.CounterValue, float64(cs.Reloads))
			ch.send(m.configReloadOK, prometheus.GaugeValue, ok)
		}
	}
}

// metricSink sends the metrics of the families wanted (nil: all), built
// only when sent.
type metricSink struct {
	ch   chan<- prometheus.Metric
	want map[*prometheus.Desc]bool
}

func (s metricSink) send(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	if s.want != nil && !s.want[d] {
		return
	}
	s.ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
}
