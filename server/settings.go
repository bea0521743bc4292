package server

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/config"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service"
	"github.com/toolsvc/toolsvc/service/core"
	"github.com/toolsvc/toolsvc/service/mcpfront"
)

// Applies says when a changed setting takes effect.
type Applies int

const (
	// OnRestart: the process reads it once, at start (a listener, a
	// pool's size, a key); a reload that changes it says so and keeps the
	// running value.
	OnRestart Applies = iota
	// OnReload: a reload applies it to the running process.
	OnReload
)

func (a Applies) String() string {
	if a == OnReload {
		return "reload"
	}
	return "restart"
}

// Setting is one setting of the serve section: its key (config.Serve's
// JSON name), the serve flag that overrides it, its help and when a change
// takes effect. Settings is the one list: serve's flags, config check and
// the reload's report are made from it, and docs/configuration.md's table
// shows it.
type Setting struct {
	Key     string
	Flag    string
	Applies Applies
	Help    string
}

// Settings are every key of the serve section, in config.Serve's order
// (TestSettingsCoverServe keeps the two in step).
var Settings = []Setting{
	{"listen", "listen", OnRestart, "gRPC listen address"},
	{"adminListen", "admin-listen", OnRestart, "admin HTTP address serving /metrics (empty: off)"},
	{"logLevel", "log-level", OnReload, "debug, info, warn or error"},
	{"logFormat", "log-format", OnRestart, "text or json"},
	{"shutdownTimeout", "shutdown-timeout", OnRestart, "bound on graceful shutdown: in-flight calls get two thirds of it to finish, the rest closes upstream sessions"},
	{"maxRequestBytes", "max-request-bytes", OnRestart, "largest CallTool request accepted (RESOURCE_EXHAUSTED above)"},
	{"maxResponseBytes", "max-response-bytes", OnRestart, "largest tool result returned (RESOURCE_EXHAUSTED above); clients must accept messages this large"},
	{"maxConnectionAge", "max-connection-age", OnRestart, "connections are closed (GOAWAY) after this long, so load spreads over replicas"},
	{"maxConnectionAgeGrace", "max-connection-age-grace", OnRestart, "time given to RPCs on a connection past its age"},
	{"tlsCert", "tls-cert", OnRestart, "serve TLS with this certificate (PEM; its contents are re-read when they change)"},
	{"tlsKey", "tls-key", OnRestart, "private key of the TLS certificate"},
	{"tlsClientCA", "tls-client-ca", OnRestart, "verify client certificates against this CA (mTLS)"},
	{"mcpListen", "mcp-listen", OnRestart, "serve the MCP front door (streamable HTTP at /mcp, legacy SSE at /sse) on this address (empty: off); TLS and auth as for gRPC"},
	{"mcpAllowedHosts", "mcp-allowed-hosts", OnRestart, "Host header values the MCP front door accepts (\"*\": any; empty: loopback names when the front door listens on loopback, else any); the flag takes them comma-separated"},
	{"mcpAllowedOrigins", "mcp-allowed-origins", OnRestart, "browser Origins the MCP front door accepts (empty: only an Origin naming the request's own Host); the flag takes them comma-separated"},
	{"mcpSessionKeyFile", "mcp-session-key-file", OnRestart, "file whose contents sign MCP session IDs; replicas behind one load balancer share it (empty: a built-in key, IDs still bound to their principal)"},
	{"mcpPageSize", "mcp-page-size", OnRestart, "tools per MCP tools/list page"},
	{"mcpMaxSessions", "mcp-max-sessions", OnRestart, "MCP sessions (/mcp, 2025-11-25 and older) this replica holds; a new one evicts the oldest idle, or is refused with HTTP 503 when all are busy"},
	{"mcpMaxSessionsPerPrincipal", "mcp-max-sessions-per-principal", OnRestart, "MCP sessions one principal holds (without auth every caller is one principal); a new one evicts that principal's oldest idle, or is refused with HTTP 503 when all are busy"},
	{"mcpSessionTimeout", "mcp-session-timeout", OnRestart, "an MCP session idle this long is closed (its client is adopted again if it comes back)"},
	{"mcpBodyTimeout", "mcp-body-timeout", OnRestart, "time an MCP front-door request body may take to arrive (HTTP 408 and the connection closed past it); headers: 10s"},
	{"mcpDiscovery", "mcp-discovery", OnRestart, "MCP tools/list: full (every tool) or progressive (the core tools, search_tools and call_tool, and on a 2025-11-25 session what its searches found; any tool stays callable)"},
	{"mcpCoreTools", "mcp-core-tools", OnRestart, "with progressive discovery: globs of exposed tool names listed besides search_tools and call_tool; the flag takes them comma-separated"},
	{"mcpDiscoveryPrincipals", "mcp-discovery-principals", OnRestart, "with progressive discovery: the principals it applies to (empty: all); the flag takes them comma-separated"},
	{"searchRanker", "search-ranker", OnRestart, "tool search ranking: hybrid (the lexical index fused with the embedded model's similarity) or lexical (the index alone); docs/search.md"},
	{"publicURL", "public-url", OnRestart, "the URL browsers reach the admin listener at, for the userOAuth login callback (its redirect URI is this + " + mcpbridge.LoginCallbackPath + "; default: http:// and the admin listener's address)"},
	{"stateKeyFile", "state-key-file", OnRestart, "file whose contents sign interactive calls' request states and seal task handles; replicas behind one load balancer share it (empty: a random key, so only this process continues its calls and opens its task handles)"},
	{"taskPollInterval", "task-poll-interval", OnRestart, "how often a watched task's upstream is polled (one poll per task and replica, however many watchers; the upstream's suggested pollInterval is reported, not followed)"},
	{"inputTimeout", "input-timeout", OnRestart, "how long a call's input_required waits for the caller's answer before the upstream's request is declined and the call cancelled"},
	{"maxWaitingPerPrincipal", "max-waiting-per-principal", OnRestart, "interactive calls one principal may have waiting for input, counted from a call's first request to its caller (RESOURCE_EXHAUSTED TOO_MANY_WAITING above)"},
	{"maxWaiting", "max-waiting", OnRestart, "interactive calls this replica holds waiting for input, counted like maxWaitingPerPrincipal (a call that only offers input is not counted)"},
	{"maxTaskWatchesPerPrincipal", "max-task-watches-per-principal", OnRestart, "tasks one principal may watch at once on this replica (WatchTask streams and front-door task watches; RESOURCE_EXHAUSTED TOO_MANY_TASK_WATCHES above)"},
	{"maxParkedPerCall", "max-parked-per-call", OnRestart, "upstream requests for input (elicitation, sampling, roots) one call may have waiting at once; one more is declined and the call ends (RESOURCE_EXHAUSTED TOO_MANY_WAITING)"},
	{"maxInputRequestBytes", "max-input-request-bytes", OnRestart, "encoded size of one upstream request for input; a larger one is declined and its call ends (RESOURCE_EXHAUSTED INPUT_REQUEST_TOO_LARGE)"},
	{"maxParkedBytesPerPrincipal", "max-parked-bytes-per-principal", OnRestart, "encoded size of the upstream requests for input waiting in one principal's calls"},
	{"maxParkedBytes", "max-parked-bytes", OnRestart, "encoded size of the upstream requests for input waiting on this replica"},
	{"addrFile", "addr-file", OnRestart, "once listening, write the bound addresses to this file as JSON {\"grpc\", \"admin\", \"mcp\"} (written whole, by rename; for callers that pass port 0)"},
	{"otlpEndpoint", "otlp-endpoint", OnRestart, "export traces over OTLP/gRPC to this host:port (default $OTEL_EXPORTER_OTLP_ENDPOINT; empty: tracing off)"},
	{"kubeconfig", "kubeconfig", OnRestart, "kubeconfig file for the config's kubernetes section, outside a cluster (default: the section's kubeconfig, else in-cluster credentials)"},
	{"memoryLimit", "memory-limit", OnRestart, "the container's memory limit, in bytes or as a quantity such as 512Mi, when its cgroup does not show it (default $" + memoryLimitEnv + "; the lower of this and the cgroup's counts; 90% of it becomes the Go runtime's soft limit unless GOMEMLIMIT is set)"},
}

// FileSettings are the config file's other top-level keys (the serve
// section's are Settings): none has a flag.
var FileSettings = []Setting{
	{"mcpServers", "", OnReload, "the upstream servers: a reload starts the added, stops the removed and restarts the changed ones, and leaves the others' sessions alone"},
	{"servers", "", OnReload, "the same as mcpServers (a file has one of the two)"},
	{"auth", "", OnReload, "authentication, authorization rules, admins, rate limits and audit; a reload that would add or remove the whole section is refused (that needs a restart)"},
	{"startupTimeout", "", OnRestart, "how long serve waits for every upstream's first attempt before it reports ready"},
	{"connectTimeout", "", OnReload, "every server's default connectTimeout (a change restarts the servers that take the default)"},
	{"callTimeout", "", OnReload, "every server's default callTimeout (likewise)"},
	{"refreshTimeout", "", OnReload, "every server's default refreshTimeout (likewise)"},
	{"refreshInterval", "", OnReload, "every server's default refreshInterval (likewise)"},
	{"pingInterval", "", OnReload, "every server's default pingInterval (likewise)"},
	{"pingTimeout", "", OnReload, "every server's default pingTimeout (likewise)"},
	{"kubernetes", "", OnRestart, "Kubernetes discovery of upstreams (docs/kubernetes.md); discovered servers themselves come and go without a reload"},
	{"tokenStore", "", OnRestart, "the store of per-user upstream tokens (docs/credentials.md): opened once, its file lock, Redis client and key stay"},
}

// setting is the Setting of key (ok false: none).
func setting(key string) (Setting, bool) {
	i := slices.IndexFunc(Settings, func(s Setting) bool { return s.Key == key })
	if i < 0 {
		return Setting{}, false
	}
	return Settings[i], true
}

// DefaultServe is every setting's default: what applies when neither the
// file nor a flag sets it. Two come from the environment:
// $OTEL_EXPORTER_OTLP_ENDPOINT and $TOOLSVC_MEMORY_LIMIT.
func DefaultServe() config.Serve {
	return config.Serve{
		Listen: ":50051", AdminListen: ":9090", LogLevel: "info", LogFormat: "text",
		ShutdownTimeout:  15 * time.Second,
		MaxRequestBytes:  service.DefaultMaxRequestBytes,
		MaxResponseBytes: service.DefaultMaxResponseBytes,
		MaxConnectionAge: 5 * time.Minute, MaxConnectionAgeGrace: 30 * time.Second,
		MCPPageSize: mcpfront.DefaultPageSize, MCPMaxSessions: mcpfront.DefaultMaxSessions,
		MCPMaxSessionsPerPrincipal: mcpfront.DefaultMaxSessionsPerPrincipal,
		MCPSessionTimeout:          mcpfront.DefaultSessionTimeout, MCPBodyTimeout: mcpfront.DefaultBodyTimeout,
		MCPDiscovery:     "full",
		SearchRanker:     core.SearchHybrid,
		TaskPollInterval: core.DefaultTaskPollInterval, InputTimeout: core.DefaultInputTimeout,
		MaxWaitingPerPrincipal: core.DefaultMaxWaitingPerPrincipal, MaxWaiting: core.DefaultMaxWaiting,
		MaxTaskWatchesPerPrincipal: core.DefaultMaxTaskWatchesPerPrincipal,
		MaxParkedPerCall:           core.DefaultMaxParkedPerCall, MaxInputRequestBytes: core.DefaultMaxInputRequestBytes,
		MaxParkedBytesPerPrincipal: core.DefaultMaxParkedBytesPerPrincipal, MaxParkedBytes: core.DefaultMaxParkedBytes,
		OTLPEndpoint: os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"),
		MemoryLimit:  os.Getenv(memoryLimitEnv),
	}
}

// parseFlags parses serve's command line: the config file and the
// settings its flags override (each only overrides its serve.<key>).
func parseFlags(args []string) (Config, error) {
	c := Config{Serve: DefaultServe()}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&c.File, "config", "", "config file (JSON or YAML); empty runs the built-in demo upstream")
	byFlag := map[string]string{"drain-timeout": "shutdownTimeout"}
	for _, s := range Settings {
		byFlag[s.Flag] = s.Key
		help := s.Help + " (overrides serve." + s.Key + ")"
		switch p := config.ServeField(&c.Serve, s.Key).(type) {
		case *string:
			fs.StringVar(p, s.Flag, *p, help)
		case *int:
			fs.IntVar(p, s.Flag, *p, help)
		case *int64:
			fs.Int64Var(p, s.Flag, *p, help)
		case *time.Duration:
			fs.DurationVar(p, s.Flag, *p, help)
		case *[]string:
			fs.Var((*listFlag)(p), s.Flag, help)
		default:
			panic(fmt.Sprintf("serve.%s: no flag for %T", s.Key, p))
		}
	}
	fs.DurationVar(&c.Serve.ShutdownTimeout, "drain-timeout", c.Serve.ShutdownTimeout, "alias of --shutdown-timeout (overrides serve.shutdownTimeout)")
	if err := fs.Parse(args); err != nil {
		return c, usageError(err)
	}
	if fs.NArg() > 0 {
		return c, usageError(fmt.Errorf("serve takes no arguments, got %q", fs.Args()))
	}
	c.Overrides = map[string]string{}
	fs.Visit(func(f *flag.Flag) {
		if key, ok := byFlag[f.Name]; ok {
			c.Overrides[key] = "--" + f.Name
		}
	})
	return c, nil
}

// listFlag is a list setting's flag: comma-separated values.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	*l = splitList(s)
	return nil
}

// name is how a problem names a setting: its key, and the flag that
// overrides it.
func name(key string) string {
	s, _ := setting(key)
	return "serve." + key + " (--" + s.Flag + ")"
}

// validate checks the settings in force, naming each one at fault; a bad
// setting is a usage error (exit code 2).
func validate(s *config.Serve) error {
	var probs []string
	positive := func(key string) {
		switch p := config.ServeField(s, key).(type) {
		case *int:
			if *p <= 0 {
				probs = append(probs, name(key)+" must be positive")
			}
		case *int64:
			if *p <= 0 {
				probs = append(probs, name(key)+" must be positive")
			}
		case *time.Duration:
			if *p <= 0 {
				probs = append(probs, name(key)+" must be positive")
			}
		}
	}
	for _, k := range []string{"maxRequestBytes", "maxResponseBytes", "mcpMaxSessions", "mcpMaxSessionsPerPrincipal",
		"mcpSessionTimeout", "mcpBodyTimeout", "maxWaitingPerPrincipal", "maxWaiting", "maxParkedPerCall",
		"maxInputRequestBytes", "maxParkedBytesPerPrincipal", "maxParkedBytes"} {
		positive(k)
	}
	if s.SearchRanker != core.SearchHybrid && s.SearchRanker != core.SearchLexical {
		probs = append(probs, fmt.Sprintf("%s: %q is neither %s nor %s", name("searchRanker"), s.SearchRanker, core.SearchHybrid, core.SearchLexical))
	}
	if s.MCPDiscovery != "full" && s.MCPDiscovery != "progressive" {
		probs = append(probs, fmt.Sprintf("%s: %q is neither full nor progressive", name("mcpDiscovery"), s.MCPDiscovery))
	}
	if g := badGlob(s.MCPCoreTools); g != "" {
		probs = append(probs, fmt.Sprintf("%s: %q is not a glob", name("mcpCoreTools"), g))
	}
	// A principal's share of a replica's pool is below the pool, so no
	// principal takes it alone.
	if s.MaxWaitingPerPrincipal > s.MaxWaiting {
		probs = append(probs, name("maxWaitingPerPrincipal")+" must not exceed "+name("maxWaiting"))
	}
	if s.MaxParkedBytesPerPrincipal > s.MaxParkedBytes {
		probs = append(probs, name("maxParkedBytesPerPrincipal")+" must not exceed "+name("maxParkedBytes"))
	}
	if (s.TLSCert == "") != (s.TLSKey == "") || (s.TLSClientCA != "" && s.TLSCert == "") {
		probs = append(probs, name("tlsCert")+" and "+name("tlsKey")+" go together, and "+name("tlsClientCA")+" needs them")
	}
	if _, err := parseMemoryLimit(s.MemoryLimit); err != nil {
		probs = append(probs, err.Error())
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(s.LogLevel)); err != nil {
		probs = append(probs, fmt.Sprintf("%s: %q is not one of debug, info, warn, error", name("logLevel"), s.LogLevel))
	}
	if f := strings.ToLower(s.LogFormat); f != "text" && f != "json" {
		probs = append(probs, fmt.Sprintf("%s: %q is not text or json", name("logFormat"), s.LogFormat))
	}
	if len(probs) > 0 {
		return usageError(errors.New(strings.Join(probs, "\n")))
	}
	return nil
}

// badGlob is the first of globs that is not a path.Match pattern ("": none).
func badGlob(globs []string) string {
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			return g
		}
	}
	return ""
}

// Check validates the settings the file c gives (over the defaults), as
// serve would, and sorts the keys it sets by when a change to them takes
// effect, for config check: each top-level key, and each serve key as
// "serve.<key>".
func Check(c *config.Config) (onReload, onRestart []string, err error) {
	s := effective(Config{Serve: DefaultServe()}, c)
	if err := validate(&s); err != nil {
		return nil, nil, errors.New(err.Error()) // a problem of the file, not of a command line
	}
	add := func(key string, a Applies) {
		if a == OnReload {
			onReload = append(onReload, key)
		} else {
			onRestart = append(onRestart, key)
		}
	}
	for _, fs := range FileSettings {
		if _, ok := c.Top[fs.Key]; ok {
			add(fs.Key, fs.Applies)
		}
	}
	for _, key := range c.ServeSet {
		s, _ := setting(key)
		add("serve."+key, s.Applies)
	}
	return onReload, onRestart, nil
}
