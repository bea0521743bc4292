package mcpbridge

import (
	"errors"
	"fmt"
	"log/slog"
	"path"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/tokenstore"
)

// Transport says how an upstream is reached.
type Transport int

const (
	// TransportStdio runs the upstream as a child process speaking MCP over
	// stdin and stdout.
	TransportStdio Transport = iota + 1
	// TransportStreamableHTTP reaches the upstream over MCP streamable HTTP.
	TransportStreamableHTTP
	// TransportSSE reaches the upstream over the deprecated 2024-11-05
	// HTTP+SSE transport (VS Code's `type: sse`).
	TransportSSE
	// TransportGRPC reaches an upstream that serves the MCP gRPC binding
	// (model_context_protocol.Mcp) at URL (grpc:// or grpcs://). The bridge
	// does not speak gRPC itself (it imports no gRPC): the transport is the
	// one Config.Transports registers for it (the composition root).
	TransportGRPC
)

func (t Transport) String() string {
	switch t {
	case TransportStdio:
		return "stdio"
	case TransportStreamableHTTP:
		return "streamable-http"
	case TransportSSE:
		return "sse"
	case TransportGRPC:
		return "grpc"
	}
	return "unknown"
}

// DefaultProtocolVersion is the MCP protocol version an upstream's session
// starts with under ProtocolAuto (the default). go-sdk v1.8.0 itself
// defaults to 2026-07-28; 2025-11-25 is the widely deployed era, and the
// one every SDK's stateful servers speak (docs/interop.md).
const DefaultProtocolVersion = "2025-11-25"

// ProtocolAuto (the default) starts sessions at DefaultProtocolVersion and
// moves a streamable-HTTP upstream to the newest version (ProtocolLatest)
// when it turns out to be stateless (it refuses the standalone GET stream,
// so under 2025-11-25 its list_changed could never reach toolsvc).
const ProtocolAuto = "auto"

// knownProtocolVersions are the MCP versions a server may pin.
var knownProtocolVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}

// Input modes (ServerConfig.Input).
const (
	InputRelay  = "relay"
	InputPolicy = "policy"
)

// Elicitation policies (ServerConfig.Elicitation).
const (
	ElicitDecline  = "decline"
	ElicitDefaults = "defaults"
)

// ProtocolLatest selects the go-sdk's newest protocol version (with its
// discovery and fallback).
const ProtocolLatest = "latest"

// ProtocolStateless is the first MCP version of the stateless era (SEP-2575):
// from it on every request carries the protocol version, client info and
// capabilities in _meta, and list_changed arrives on a subscriptions/listen
// stream.
const ProtocolStateless = "2026-07-28"

// Defaults for the timing fields of Config and ServerConfig.
const (
	DefaultConnectTimeout  = 10 * time.Second
	DefaultStartupTimeout  = 30 * time.Second
	DefaultCallTimeout     = 120 * time.Second
	DefaultRefreshTimeout  = 30 * time.Second
	DefaultRefreshInterval = 5 * time.Minute
	DefaultRefreshDebounce = 50 * time.Millisecond
	DefaultRefreshMaxDelay = 500 * time.Millisecond
	DefaultPushlessRefresh = 1 * time.Second
	DefaultBackoffBase     = 1 * time.Second
	DefaultBackoffMax      = 60 * time.Second
	DefaultTerminateGrace  = 1 * time.Second
	DefaultPingInterval    = 15 * time.Second
	DefaultPingTimeout     = 5 * time.Second
	DefaultPingFailures    = 3
	DefaultBreakerFailures = 3
	DefaultBreakerCooldown = 30 * time.Second
	DefaultBreakerMax      = 5 * time.Minute
	DefaultStableAfter     = 10 * time.Second
	DefaultMaxQueuedCalls  = 1000
)

// BreakerConfig configures an upstream's circuit breaker.
type BreakerConfig struct {
	// Failures in a row that open the breaker (0: default 3; negative: the
	// breaker never opens).
	Failures int
	// Cooldown is the first open period; each further trip doubles it, up to
	// MaxCooldown. A success shortens the next one again.
	Cooldown    time.Duration
	MaxCooldown time.Duration
}

// ServerConfig describes one upstream MCP server. Zero durations mean the
// Config-wide value, and that the package default.
type ServerConfig struct {
	// Name is unique, 1 to MaxServerNameLen characters from [A-Za-z0-9_.-]
	// (the MCP tool-name characters, so "<name>__<tool>" is a valid MCP tool
	// name and no name carries a control character), with no "__" and no
	// leading or trailing '_' (ValidateServerName).
	Name      string
	Transport Transport

	// stdio
	Command string
	Args    []string
	Env     map[string]string // added to toolsvc's environment
	Dir     string

	// streamable HTTP
	URL     string
	Headers map[string]string // sent on every request; never logged

	// ProtocolVersion pins the MCP version ("" = ProtocolAuto,
	// ProtocolLatest = the SDK's newest with fallback, or a version).
	ProtocolVersion string
	// PushlessRefresh is the re-list interval while the session's push
	// channel is down or missing (an upstream that declares list_changed
	// but cannot deliver it). The upstream's ttlMs shortens it.
	PushlessRefresh time.Duration

	ConnectTimeout  time.Duration
	CallTimeout     time.Duration // applied when the caller has no deadline
	RefreshTimeout  time.Duration
	RefreshInterval time.Duration // backstop re-list; negative disables
	RefreshDebounce time.Duration // quiet period before a re-list
	RefreshMaxDelay time.Duration // longest a re-list waits for quiet
	BackoffBase     time.Duration
	BackoffMax      time.Duration

	// PingInterval between liveness probes (negative disables probing);
	// PingTimeout bounds each; PingFailures probe timeouts in a row mark the
	// session dead (one timeout marks it degraded).
	PingInterval time.Duration
	PingTimeout  time.Duration
	PingFailures int
	// StableAfter: a session that dies sooner than this after connecting
	// counts as a failure (backoff keeps growing, the breaker counts it).
	StableAfter time.Duration
	Breaker     BreakerConfig

	// MaxConcurrentCalls limits calls in flight to this upstream (0: no
	// limit); up to MaxQueuedCalls more wait within their own deadline, and
	// calls beyond that fail with ErrOverloaded.
	MaxConcurrentCalls int
	MaxQueuedCalls     int

	// EnvPassthrough names variables of toolsvc's own environment that a
	// stdio child keeps even though they look secret (TOKEN, KEY, SECRET, …).
	EnvPassthrough []string

	// Secrets are resolved secret values (from ${ENV} or ${file:…}
	// references) that must never appear in logs or errors.
	Secrets []string
	// NamePrefix replaces the server name as the exposed-name prefix.
	NamePrefix string
	// BareNames exposes the server's tools and prompts under their own
	// sanitised names, without a prefix (for a front door that fronts one
	// main upstream whose clients use its tool names). Names that collide
	// with another server's get a hash suffix, like any collision.
	BareNames bool
	// ToolsAllow and ToolsDeny are glob patterns (path.Match) over the
	// upstream's tool names: a tool is exposed if it matches an allow
	// pattern (or there are none) and no deny pattern.
	ToolsAllow []string
	ToolsDeny  []string
	// SearchAliases are the operator's words for a tool, by its upstream
	// name: aliases or example queries the tool search indexes with its
	// text (service/core, docs/search.md). Bounded by config/.
	SearchAliases map[string][]string

	// Elicitation is how toolsvc answers an upstream's elicitation/create
	// request when no caller can (the caller did not offer input, or
	// Input is InputPolicy): "" and ElicitDecline decline it;
	// ElicitDefaults accepts form requests with the defaults their schema
	// gives (and declines URL requests). Under InputPolicy, "" declares no
	// elicitation capability, so upstreams do not ask.
	Elicitation string
	// Input is how requests for input during a call (elicitation,
	// sampling, roots) are answered: InputRelay ("", the default) declares
	// those capabilities and hands a request to the call's caller when it
	// can answer (interact.go), the Elicitation policy otherwise;
	// InputPolicy declares none but elicitation (when Elicitation is set)
	// and always answers by the policy.
	Input string

	// OAuth, if set, authenticates to a streamable HTTP upstream with OAuth
	// 2.1 (client credentials or a provisioned refresh token).
	OAuth *OAuthConfig
	// Credentials is whose credentials a call carries (credentials.go);
	// nil is CredentialsShared.
	Credentials *CredentialsConfig
	// AuthRetry is how long the upstream waits after it rejected toolsvc's
	// credentials (401/403 or a failed token request) before the next
	// attempt (0: DefaultAuthRetry).
	AuthRetry time.Duration
	// TLS configures a grpcs:// upstream's TLS (tlsconfig.go); nil is TLS
	// verified against the system's roots.
	TLS *TLSConfig
	// ForwardPrincipal sends the calling principal (CallOptions.Principal)
	// in each tools/call request's _meta under PrincipalMetaKey.
	ForwardPrincipal bool

	// SkipArgumentValidation turns off checking call arguments against the
	// tools' inputSchema (for upstreams whose schemas are broken).
	SkipArgumentValidation bool

	// NewTransport, if set, replaces the transport built from the fields
	// above (used by tests to reach in-memory servers).
	NewTransport func() (mcp.Transport, error)
}

// Config configures a Bridge.
type Config struct {
	Servers []ServerConfig
	// StartupTimeout bounds how long Ready waits for every upstream's first
	// connection attempt.
	StartupTimeout time.Duration
	// Defaults for every server's timing fields.
	ConnectTimeout  time.Duration
	CallTimeout     time.Duration
	RefreshTimeout  time.Duration
	RefreshInterval time.Duration
	PingInterval    time.Duration
	PingTimeout     time.Duration
	Logger          *slog.Logger
	// Observer, if set, hears about refreshes and probe failures (metrics).
	Observer Observer
	// MaxMessageBytes bounds one message from an upstream (a stdio line, an
	// HTTP JSON body or SSE event); a larger one is discarded unread and a
	// call it answered fails with *ResponseTooLargeError (msglimit.go).
	// 0: DefaultMaxMessageBytes. Reconfigure keeps the value New was given.
	MaxMessageBytes int
	// MaxToolBytes bounds one tool's definition as listed (name, title,
	// description, schemas and _meta, as JSON text); a larger tool is
	// skipped with a warning, so one upstream cannot make a watch event or a
	// ListTools page that no client accepts (refresh.go). 0:
	// DefaultMaxToolBytes. Reconfigure keeps the value New was given.
	MaxToolBytes int
	// Refused are servers the configuration names but toolsvc does not run
	// (a discovered Kubernetes object whose name a file server holds, one
	// whose settings are invalid, a discovery source that cannot list): each
	// is reported by Servers as down, with its reason as the last error, so
	// ListServers says why it is missing. They have no upstream and no tools.
	Refused []RefusedServer
	// Logins serves the userOAuth upstreams (required when one is
	// configured): where principals' tokens are stored and where the
	// authorization server sends their browsers back. Reconfigure keeps
	// the value New was given.
	Logins *LoginConfig
	// Transports builds the transports the bridge does not implement
	// itself (TransportGRPC), registered by the composition root so that
	// the bridge imports none of them. A server's config stays comparable
	// (no func in it), so a reload leaves an unchanged one connected.
	// Reconfigure keeps the value New was given.
	Transports map[Transport]TransportFactory
}

// TransportFactory builds the transport of one session to sc's upstream:
// sc is the server's config with defaults filled in (URL is its target,
// Headers are sent as request metadata and never logged), and maxMessage
// is the bridge's bound on one message from the upstream
// (Config.MaxMessageBytes), which the transport applies to everything it
// receives.
type TransportFactory func(sc ServerConfig, maxMessage int) (mcp.Transport, error)

// LoginConfig is what userOAuth upstreams share (Config.Logins).
type LoginConfig struct {
	// Store holds each principal's token per server; the caller owns it
	// (the bridge does not close it). Replicas share one (Redis).
	Store tokenstore.Store
	// Key is the store's key (tokenstore.ReadKeyFile): it also seals the
	// login links' state, so any replica sharing it completes a login.
	Key []byte
	// StoreError, with Store nil, is why the token store could not be
	// opened (a refused file, a key that is not one): the userOAuth
	// upstreams still run but fail every call and login with it
	// (ReasonTokenStore) and report it in Servers; the others serve. It
	// names paths and what is wrong with them, never a secret.
	StoreError string
	// RedirectURL is toolsvc's login callback as the authorization server
	// redirects browsers to it (serve's --public-url + LoginCallbackPath);
	// it must be registered with each upstream's authorization server.
	RedirectURL string
}

// RefusedServer is a server the configuration names but toolsvc does not
// run (Config.Refused).
type RefusedServer struct {
	// Name is what Servers reports it as: the object it came from (e.g.
	// "kubernetes:mcpservers/tools/search"), not a server name, so it never
	// shadows a running upstream.
	Name string
	// Reason says why it does not run, without secrets.
	Reason string
}

// Observer receives events for metrics. Its methods must be fast and must
// not block: they run on the bridge's goroutines.
type Observer interface {
	// RefreshDone reports one tools/list pass (all pages) and its outcome.
	RefreshDone(server string, took time.Duration, err error)
	// ProbeFailed reports a liveness probe that failed or timed out.
	ProbeFailed(server string)
}

// CredentialObserver, implemented by a Config's Observer too, hears what
// happens to per-user credentials: token exchanges made at the
// authorization server, userOAuth logins, refreshes and logouts, and
// token store failures (ops and outcomes: oauth.ExchangeConfig.Observe,
// oauth.UserOAuthConfig.Observe). Same rules as Observer.
type CredentialObserver interface {
	CredentialEvent(server, op, outcome string)
}

func orDefault(v, cfgWide, def time.Duration) time.Duration {
	if v != 0 {
		return v
	}
	if cfgWide != 0 {
		return cfgWide
	}
	return def
}

// withDefaults returns a copy of sc with every zero field filled in.
func (sc ServerConfig) withDefaults(c *Config) ServerConfig {
	sc.ConnectTimeout = orDefault(sc.ConnectTimeout, c.ConnectTimeout, DefaultConnectTimeout)
	sc.CallTimeout = orDefault(sc.CallTimeout, c.CallTimeout, DefaultCallTimeout)
	sc.RefreshTimeout = orDefault(sc.RefreshTimeout, c.RefreshTimeout, DefaultRefreshTimeout)
	sc.RefreshInterval = orDefault(sc.RefreshInterval, c.RefreshInterval, DefaultRefreshInterval)
	sc.RefreshDebounce = orDefault(sc.RefreshDebounce, 0, DefaultRefreshDebounce)
	sc.RefreshMaxDelay = orDefault(sc.RefreshMaxDelay, 0, DefaultRefreshMaxDelay)
	sc.PushlessRefresh = orDefault(sc.PushlessRefresh, 0, DefaultPushlessRefresh)
	sc.BackoffBase = orDefault(sc.BackoffBase, 0, DefaultBackoffBase)
	sc.BackoffMax = orDefault(sc.BackoffMax, 0, DefaultBackoffMax)
	sc.PingInterval = orDefault(sc.PingInterval, c.PingInterval, DefaultPingInterval)
	sc.PingTimeout = orDefault(sc.PingTimeout, c.PingTimeout, DefaultPingTimeout)
	sc.StableAfter = orDefault(sc.StableAfter, 0, DefaultStableAfter)
	sc.AuthRetry = orDefault(sc.AuthRetry, 0, DefaultAuthRetry)
	if sc.PingFailures <= 0 {
		sc.PingFailures = DefaultPingFailures
	}
	if sc.Breaker.Failures == 0 {
		sc.Breaker.Failures = DefaultBreakerFailures
	}
	sc.Breaker.Cooldown = orDefault(sc.Breaker.Cooldown, 0, DefaultBreakerCooldown)
	sc.Breaker.MaxCooldown = orDefault(sc.Breaker.MaxCooldown, 0, DefaultBreakerMax)
	if sc.MaxConcurrentCalls > 0 && sc.MaxQueuedCalls == 0 {
		sc.MaxQueuedCalls = DefaultMaxQueuedCalls
	}
	if sc.ProtocolVersion == "" {
		sc.ProtocolVersion = ProtocolAuto
	}
	return sc
}

// prefix is the exposed-name prefix of the server's tools.
func (sc *ServerConfig) prefix() string {
	if sc.NamePrefix != "" {
		return sc.NamePrefix
	}
	return ServerPrefix(sc.Name)
}

// namesPrefix is the prefix of the server's exposed tool and prompt names:
// "" when BareNames is set, prefix() otherwise.
func (sc *ServerConfig) namesPrefix() string {
	if sc.BareNames {
		return ""
	}
	return sc.prefix()
}

// exposes reports whether the allow/deny patterns expose a tool.
func (sc *ServerConfig) exposes(tool string) bool {
	if len(sc.ToolsAllow) > 0 && !slices.ContainsFunc(sc.ToolsAllow, func(g string) bool { ok, _ := path.Match(g, tool); return ok }) {
		return false
	}
	return !slices.ContainsFunc(sc.ToolsDeny, func(g string) bool { ok, _ := path.Match(g, tool); return ok })
}

// equal reports whether two configs describe the same upstream (a server
// whose config is equal is left alone by Reconfigure). A config with a
// NewTransport func is never equal to another.
func (sc ServerConfig) equal(o ServerConfig) bool {
	if sc.NewTransport != nil || o.NewTransport != nil {
		return false
	}
	return reflect.DeepEqual(sc, o)
}

// Validate reports the first problem of a server config, naming the field.
func (sc *ServerConfig) Validate() error {
	if probs := sc.Problems(); len(probs) > 0 {
		return probs[0]
	}
	return nil
}

// Problems reports every problem of one server's config, each naming its
// field (the keys of the config file: "backoff.max", "tools.deny[1]"). It is
// the one place the rules for a server live: the config loader maps these
// to file and line, and New refuses a config that has any.
func (sc *ServerConfig) Problems() []*FieldError {
	p := &fieldProblems{server: sc.Name}
	if err := ValidateServerName(sc.Name); err != nil {
		p.add("name", "%v", err)
	}
	sc.transportProblems(p)
	sc.numberProblems(p)
	if pv := sc.ProtocolVersion; pv != "" && pv != ProtocolAuto && pv != ProtocolLatest && !slices.Contains(knownProtocolVersions, pv) {
		p.add("protocolVersion", "want %q, %q or one of %s, got %q", ProtocolAuto, ProtocolLatest, strings.Join(knownProtocolVersions, ", "), pv)
	}
	switch sc.Input {
	case "", InputRelay, InputPolicy:
	default:
		p.add("input", "want %q or %q, got %q", InputRelay, InputPolicy, sc.Input)
	}
	switch sc.Elicitation {
	case "", ElicitDecline, ElicitDefaults:
	default:
		p.add("elicitation", "want %q or %q, got %q", ElicitDecline, ElicitDefaults, sc.Elicitation)
	}
	if sc.NamePrefix != "" {
		if err := ValidatePrefix(sc.NamePrefix); err != nil {
			p.add("namePrefix", "%v", err)
		}
		if sc.BareNames {
			p.add("bareNames", "cannot be combined with namePrefix %q: bare names have no prefix", sc.NamePrefix)
		}
	}
	if sc.OAuth != nil {
		p.probs = append(p.probs, sc.oauthProblems()...)
	}
	sc.credentialsProblems(p)
	sc.tlsProblems(p)
	for i, g := range sc.ToolsAllow {
		if _, err := path.Match(g, ""); err != nil {
			p.add(fmt.Sprintf("tools.allow[%d]", i), "%q is not a valid glob pattern", g)
		}
	}
	for i, g := range sc.ToolsDeny {
		if _, err := path.Match(g, ""); err != nil {
			p.add(fmt.Sprintf("tools.deny[%d]", i), "%q is not a valid glob pattern", g)
		}
	}
	return p.probs
}

// fieldProblems collects one server's problems.
type fieldProblems struct {
	server string
	probs  []*FieldError
}

func (p *fieldProblems) add(field, format string, args ...any) {
	p.probs = append(p.probs, &FieldError{Server: p.server, Field: field, Err: fmt.Errorf(format, args...)})
}

// transportProblems checks how the server is reached.
func (sc *ServerConfig) transportProblems(p *fieldProblems) {
	if sc.NewTransport != nil {
		return
	}
	switch sc.Transport {
	case TransportStdio:
		if sc.Command == "" {
			p.add("command", "required for a stdio server")
		}
	case TransportStreamableHTTP, TransportSSE:
		switch {
		case sc.URL == "":
			p.add("url", "required for an HTTP server")
		case !strings.HasPrefix(sc.URL, "http://") && !strings.HasPrefix(sc.URL, "https://"):
			p.add("url", "want an http:// or https:// URL")
		}
	case TransportGRPC:
		switch {
		case sc.URL == "":
			p.add("url", "required for a gRPC server")
		case !strings.HasPrefix(sc.URL, "grpc://") && !strings.HasPrefix(sc.URL, "grpcs://"):
			p.add("url", "want a grpc:// (plaintext) or grpcs:// (TLS) target, got %q", sc.URL)
		}
	default:
		p.add("transport", "unknown transport %d", sc.Transport)
	}
}

// numberProblems checks the durations and counts.
func (sc *ServerConfig) numberProblems(p *fieldProblems) {
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"connectTimeout", sc.ConnectTimeout}, {"callTimeout", sc.CallTimeout}, {"refreshTimeout", sc.RefreshTimeout},
		{"refreshDebounce", sc.RefreshDebounce}, {"refreshMaxDelay", sc.RefreshMaxDelay}, {"pushlessRefresh", sc.PushlessRefresh},
		{"backoff.base", sc.BackoffBase}, {"backoff.max", sc.BackoffMax},
		{"pingTimeout", sc.PingTimeout}, {"stableAfter", sc.StableAfter},
		{"breaker.cooldown", sc.Breaker.Cooldown}, {"breaker.maxCooldown", sc.Breaker.MaxCooldown},
		{"authRetry", sc.AuthRetry},
	} {
		if d.v < 0 {
			p.add(d.field, "must not be negative, got %s", d.v)
		}
	}
	if sc.BackoffBase > 0 && sc.BackoffMax > 0 && sc.BackoffMax < sc.BackoffBase {
		p.add("backoff.max", "must be at least backoff.base (%s), got %s", sc.BackoffBase, sc.BackoffMax)
	}
	for _, n := range []struct {
		field string
		v     int
	}{{"pingFailures", sc.PingFailures}, {"maxConcurrentCalls", sc.MaxConcurrentCalls}, {"maxQueuedCalls", sc.MaxQueuedCalls}} {
		if n.v < 0 {
			p.add(n.field, "must not be negative, got %d", n.v)
		}
	}
}

// CheckServers reports every problem of a server list: each server's
// Problems, then what concerns servers together (duplicate names, shared
// exposed-name prefixes).
func CheckServers(servers []ServerConfig) []*FieldError {
	var probs []*FieldError
	seen := map[string]bool{}
	prefixes := map[string]string{}
	for i := range servers {
		sc := &servers[i]
		own := sc.Problems()
		probs = append(probs, own...)
		if seen[sc.Name] {
			probs = append(probs, &FieldError{Server: sc.Name, Field: "name", Err: errors.New("duplicate server name")})
			continue
		}
		seen[sc.Name] = true
		if len(own) > 0 {
			continue
		}
		p := sc.prefix()
		if other, dup := prefixes[p]; dup {
			probs = append(probs, &FieldError{Server: sc.Name, Field: "name",
				Err: fmt.Errorf("its tools would share the exposed-name prefix %q with server %q", p, other)})
			continue
		}
		prefixes[p] = sc.Name
	}
	return probs
}

// FieldError is a configuration problem in one field of one server.
type FieldError struct {
	Server string
	Field  string
	Err    error
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("server %q: field %q: %v", e.Server, e.Field, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }
