// Package config loads toolsvc configuration files: the "mcpServers" JSON
// that Claude Desktop and Cursor users already have, plus toolsvc's own
// camelCase keys, among them the serve section (settings.go: the serving
// process's settings, one key each; package server holds their flags,
// defaults and reload rules). Every problem is reported at once, each
// naming the file, the server and the field.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// Config is a loaded configuration file.
type Config struct {
	// Bridge is ready for mcpbridge.New (without a Logger).
	Bridge mcpbridge.Config
	// Auth is the "auth" section (nil when absent: no authentication).
	Auth *Auth
	// Kubernetes is the "kubernetes" section (nil when absent: no
	// discovery; kubernetes.go).
	Kubernetes *Kubernetes
	// TokenStore is the "tokenStore" section (nil when absent; required
	// by userOAuth servers; tokenstore.go).
	TokenStore *TokenStore
	// Serve is the "serve" section (settings.go): the values the file
	// sets, ServeSet naming them (a key the file leaves out is zero here,
	// and its default applies).
	Serve    Serve
	ServeSet []string
	// Top is the file's top-level keys' values as JSON (a YAML file's
	// converted), for a reload to tell which settings changed.
	Top map[string]json.RawMessage
	// Unknown are the keys the file has that toolsvc does not know, as
	// paths ("mcpServers.a.bogus"): each is a warning, and config check
	// refuses them.
	Unknown []string
	// Warnings are non-fatal findings (unknown keys, disabled servers).
	Warnings []string
}

// Problem is one error in a configuration file.
type Problem struct {
	File   string
	Line   int    // 0 when unknown
	Server string // "" for top-level problems
	Field  string // JSON path within the server, or top-level key
	Msg    string
}

func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Server != "" {
		fmt.Fprintf(&b, "server %q: ", p.Server)
	}
	if p.Field != "" {
		fmt.Fprintf(&b, "field %q: ", p.Field)
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Problems is every error found in one file.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Duration is a Go duration string in JSON ("15s", "2m").
type Duration struct {
	D   time.Duration
	Set bool
}

// UnmarshalJSON accepts a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string like \"15s\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration (want e.g. \"15s\", \"2m\")", s)
	}
	if v < 0 {
		return fmt.Errorf("%q is negative", s)
	}
	d.D, d.Set = v, true
	return nil
}

// Auth configures authentication, per-tool authorization and auditing.
type Auth struct {
	// Tokens maps principal names to bearer tokens (values may use
	// ${ENV} / ${file:…}); TokensFile holds "principal:token" lines.
	Tokens     map[string]string `json:"tokens"`
	TokensFile string            `json:"tokensFile"`
	// MTLS accepts client certificates verified by --tls-client-ca; the
	// principal is the subject's common name.
	MTLS bool `json:"mtls"`
	JWT  *struct {
		JWKSFile string `json:"jwksFile"`
		JWKSURL  string `json:"jwksURL"`
		Issuer   string `json:"issuer"`
		Audience string `json:"audience"`
	} `json:"jwt"`
	// Admins are globs over the principals that may use AdminService
	// (refresh, reconnect, reload).
	Admins []string `json:"admins"`
	Rules  []struct {
		Principal string   `json:"principal"`
		Allow     []string `json:"allow"`
		Deny      []string `json:"deny"`
	} `json:"rules"`
	Audit *struct {
		Enabled   *bool `json:"enabled"`
		Arguments bool  `json:"arguments"`
	} `json:"audit"`
	// RateLimits limit each principal's tool calls; the first rule whose
	// principal glob matches applies, and each matching principal gets its
	// own budget.
	RateLimits []RateLimit `json:"rateLimits"`
	// Secrets are the resolved token values, for redaction.
	Secrets []string `json:"-"`
}

// RateLimit is one auth.rateLimits rule.
type RateLimit struct {
	// Principal is a glob over principal names (required).
	Principal string `json:"principal"`
	// CallsPerSecond refills the principal's token bucket (0 or absent: no
	// rate limit, only MaxConcurrent).
	CallsPerSecond float64 `json:"callsPerSecond"`
	// Burst is the bucket size (absent: max(1, ceil(callsPerSecond))).
	Burst int `json:"burst"`
	// MaxConcurrent caps the principal's calls in flight (0 or absent: no
	// cap).
	MaxConcurrent int `json:"maxConcurrent"`
}

type fileJSON struct {
	Auth            json.RawMessage            `json:"auth"`
	Kubernetes      json.RawMessage            `json:"kubernetes"`
	TokenStore      json.RawMessage            `json:"tokenStore"`
	Serve           json.RawMessage            `json:"serve"`
	MCPServers      map[string]json.RawMessage `json:"mcpServers"`
	Servers         map[string]json.RawMessage `json:"servers"`
	StartupTimeout  Duration                   `json:"startupTimeout"`
	ConnectTimeout  Duration                   `json:"connectTimeout"`
	CallTimeout     Duration                   `json:"callTimeout"`
	RefreshTimeout  Duration                   `json:"refreshTimeout"`
	RefreshInterval Duration                   `json:"refreshInterval"`
	PingInterval    Duration                   `json:"pingInterval"`
	PingTimeout     Duration                   `json:"pingTimeout"`
}

var topKeys = keysOf(fileJSON{})

// TopKeys are the top-level keys of a configuration file, sorted.
func TopKeys() []string { return sortedKeys(topKeys) }

type serverJSON struct {
	Type            string            `json:"type"`
	Command         string            `json:"command"`
	Args            []string          `json:"args"`
	Env             map[string]string `json:"env"`
	Cwd             string            `json:"cwd"`
	URL             string            `json:"url"`
	Headers         map[string]string `json:"headers"`
	Disabled        bool              `json:"disabled"`
	ProtocolVersion string            `json:"protocolVersion"`
	ConnectTimeout  Duration          `json:"connectTimeout"`
	CallTimeout     Duration          `json:"callTimeout"`
	RefreshTimeout  Duration          `json:"refreshTimeout"`
	RefreshInterval Duration          `json:"refreshInterval"`
	RefreshDebounce Duration          `json:"refreshDebounce"`
	PushlessRefresh Duration          `json:"pushlessRefresh"`
	// ValidateArguments (default true) checks call arguments against the
	// tool's inputSchema at the edge.
	ValidateArguments *bool `json:"validateArguments"`
	Backoff           *struct {
		Base Duration `json:"base"`
		Max  Duration `json:"max"`
	} `json:"backoff"`
	PingInterval Duration `json:"pingInterval"`
	PingTimeout  Duration `json:"pingTimeout"`
	PingFailures int      `json:"pingFailures"`
	StableAfter  Duration `json:"stableAfter"`
	Breaker      *struct {
		Failures    int      `json:"failures"`
		Cooldown    Duration `json:"cooldown"`
		MaxCooldown Duration `json:"maxCooldown"`
	} `json:"breaker"`
	MaxConcurrentCalls int      `json:"maxConcurrentCalls"`
	MaxQueuedCalls     int      `json:"maxQueuedCalls"`
	EnvPassthrough     []string `json:"envPassthrough"`
	NamePrefix         string   `json:"namePrefix"`
	BareNames          bool     `json:"bareNames"`
	Elicitation        string   `json:"elicitation"`
	Input              string   `json:"input"`
	Tools              *struct {
		Allow []string `json:"allow"`
		Deny  []string `json:"deny"`
	} `json:"tools"`
	// SearchAliases are aliases or example queries per tool (its upstream
	// name) that tool search indexes with the tool's own text.
	SearchAliases map[string][]string `json:"searchAliases"`
	// OAuth authenticates to a streamable HTTP upstream (oauth.go).
	OAuth json.RawMessage `json:"oauth"`
	// Credentials is whose credentials calls carry (credentials.go).
	Credentials json.RawMessage `json:"credentials"`
	// TLS is a grpcs:// upstream's private CA and client certificate
	// (servertls.go).
	TLS json.RawMessage `json:"tls"`
	// AuthRetry is the wait after the upstream rejected the credentials.
	AuthRetry Duration `json:"authRetry"`
	// ForwardPrincipal sends the caller's principal in each call's _meta.
	ForwardPrincipal bool `json:"forwardPrincipal"`
	// Fields other clients write, accepted without a warning.
	Description string   `json:"description"`
	AlwaysAllow []string `json:"alwaysAllow"`
	AutoApprove []string `json:"autoApprove"`
}

var serverKeys = keysOf(serverJSON{})

// Load reads and validates a configuration file.
func Load(path string) (*Config, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data)
}

// Parse validates configuration bytes; file names them in messages.
//
// It runs in stages, each reporting every problem it finds before the next
// runs: decodeDocument (YAML, duplicate keys, JSON syntax), decodeTopLevel
// (top-level keys and values), serverSet (which server map), parseAuth (the
// "auth" section), bridgeDefaults (top-level timeouts), parseServer (each
// server, in name order), checkAcrossServers, and result.
func Parse(file string, data []byte) (*Config, error) {
	p := &parser{file: file, cfg: &Config{}}
	top, probs := p.decodeDocument(data)
	if len(probs) > 0 {
		return nil, probs
	}
	p.cfg.Top = top
	f := p.decodeTopLevel(top)
	if len(f.Kubernetes) > 0 && string(f.Kubernetes) != "null" {
		p.cfg.Kubernetes = parseKubernetes(f.Kubernetes, func(field, format string, args ...any) { p.add("", "kubernetes"+field, format, args...) })
	}
	if len(f.Serve) > 0 && string(f.Serve) != "null" {
		p.cfg.ServeSet = parseServe(f.Serve, &p.cfg.Serve, func(field, format string, args ...any) { p.add("", "serve"+field, format, args...) })
	}
	servers := p.serverSet(&f)
	// Every reference of the file draws on one budget (MaxResolvedBytes),
	// and no problem text shows what a reference resolved to.
	p.refs = newResolved()
	if len(f.Auth) > 0 && string(f.Auth) != "null" {
		p.cfg.Auth = parseAuth(f.Auth, p.refs, func(field, format string, args ...any) { p.add("", "auth."+field, format, args...) })
	}
	if len(f.TokenStore) > 0 && string(f.TokenStore) != "null" {
		p.cfg.TokenStore = parseTokenStore(f.TokenStore, p.refs, func(field, format string, args ...any) { p.add("", "tokenStore"+field, format, args...) })
	}
	p.cfg.Bridge = bridgeDefaults(&f)
	for _, name := range sortedKeys(servers) {
		if sc, ok := p.parseServer(name, servers[name]); ok {
			p.cfg.Bridge.Servers = append(p.cfg.Bridge.Servers, sc)
		}
	}
	p.checkAcrossServers()
	p.checkUserOAuthStore()
	return p.result()
}

// parser is the state of one Parse: the file's name, its document as JSON,
// the problems found so far and the configuration being assembled.
type parser struct {
	file  string
	data  []byte         // the document as JSON (converted from YAML)
	lines map[string]int // key lines, computed on the first problem
	probs Problems
	refs  *resolved // every reference's resolved value, for one budget and redaction
	// serverMap is the key holding the servers: mcpServers or servers.
	serverMap string
	cfg       *Config
}

// add records a problem with a server's (or, for server "", a top-level)
// field, at the line of that field.
func (p *parser) add(server, field, format string, args ...any) {
	if p.lines == nil {
		p.lines = keyLines(p.data)
	}
	p.probs = append(p.probs, Problem{File: p.file, Line: lineOf(p.lines, server, field), Server: server, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// decodeDocument converts a YAML file to JSON (keeping its key lines),
// refuses duplicate keys in a JSON file, and decodes the top-level object.
// It returns the top-level keys' raw values, or the problems that end
// Parse: YAML that does not parse, every duplicate key, or a document that
// is not a JSON object (with the line of a syntax error).
func (p *parser) decodeDocument(data []byte) (map[string]json.RawMessage, Problems) {
	if isYAML(p.file) {
		j, l, err := yamlToJSON(data)
		if err != nil {
			return nil, Problems{{File: p.file, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}}
		}
		data, p.lines = j, l
	} else if dups := duplicateKeys(data); len(dups) > 0 { // the YAML decoder refuses duplicate keys itself
		probs := make(Problems, 0, len(dups))
		for _, d := range dups {
			probs = append(probs, d.problem(p.file))
		}
		return nil, probs
	}
	p.data = data
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		prob := Problem{File: p.file, Msg: "not a JSON object: " + err.Error()}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			prob.Line = 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		}
		return nil, Problems{prob}
	}
	return top, nil
}

// decodeTopLevel decodes the known top-level keys into a fileJSON, warning
// of each unknown key and reporting each value of the wrong type.
func (p *parser) decodeTopLevel(top map[string]json.RawMessage) fileJSON {
	var f fileJSON
	decodeKeys(top, topKeys, &f,
		func(k string) {
			p.cfg.Warnings = append(p.cfg.Warnings, fmt.Sprintf("%s: unknown key %q ignored", p.file, k))
			p.cfg.Unknown = append(p.cfg.Unknown, k)
		},
		func(k string, err error) { p.add("", k, "%s", cleanJSONError(err)) })
	return f
}

// decodeKeys decodes each key of obj that known holds into v, one key at a
// time so that one bad value hides no other. It calls unknown with every
// key known lacks, in key order, then bad with every key whose value does
// not decode, in key order.
func decodeKeys(obj map[string]json.RawMessage, known map[string]bool, v any, unknown func(key string), bad func(key string, err error)) {
	keys := sortedKeys(obj)
	for _, k := range keys {
		if !known[k] {
			unknown(k)
		}
	}
	for _, k := range keys {
		if !known[k] {
			continue
		}
		one, _ := json.Marshal(map[string]json.RawMessage{k: obj[k]})
		if err := json.Unmarshal(one, v); err != nil {
			bad(k, err)
		}
	}
}

// serverSet returns the servers' map, "mcpServers" or else "servers",
// reporting a file that sets both or neither.
func (p *parser) serverSet(f *fileJSON) map[string]json.RawMessage {
	if f.MCPServers != nil && f.Servers != nil {
		p.add("", "servers", "use either \"mcpServers\" or \"servers\", not both")
	}
	var servers map[string]json.RawMessage
	servers, p.serverMap = f.MCPServers, "mcpServers"
	if servers == nil {
		servers, p.serverMap = f.Servers, "servers"
	}
	if servers == nil && p.cfg.Kubernetes == nil {
		p.add("", "mcpServers", "required: an object mapping server names to their settings (or a \"kubernetes\" section that discovers them)")
	}
	return servers
}

// bridgeDefaults returns the bridge configuration's file-wide settings:
// the top-level timeouts and intervals every server defaults to.
func bridgeDefaults(f *fileJSON) mcpbridge.Config {
	return mcpbridge.Config{
		StartupTimeout: f.StartupTimeout.D, ConnectTimeout: f.ConnectTimeout.D, CallTimeout: f.CallTimeout.D,
		RefreshTimeout: f.RefreshTimeout.D, RefreshInterval: f.RefreshInterval.D,
		PingInterval: f.PingInterval.D, PingTimeout: f.PingTimeout.D,
	}
}

// parseServer checks one server's settings: its references, its keys and
// values, its oauth object, its transport, and mcpbridge's rules for a
// server. It returns the server's configuration and whether it is to run:
// false when any of those has a problem (reported) or the server is
// disabled (a warning; mcpbridge's rules are then not checked).
func (p *parser) parseServer(name string, raw json.RawMessage) (mcpbridge.ServerConfig, bool) {
	keys, secrets, ok := p.expandServer(name, raw)
	if keys == nil {
		return mcpbridge.ServerConfig{}, false
	}
	sj, decoded := p.decodeServer(name, keys)
	sc := serverConfig(name, &sj, secrets)
	ok = decoded && ok
	ok = p.serverOAuth(name, sj.OAuth, &sc) && ok
	ok = p.serverCredentials(name, sj.Credentials, &sc) && ok
	ok = p.serverTLS(name, sj.TLS, &sc) && ok
	ok = p.serverTransport(name, &sj, &sc) && ok
	ok = p.searchAliases(name, sj.SearchAliases, &sc) && ok
	if sj.Disabled {
		p.cfg.Warnings = append(p.cfg.Warnings, fmt.Sprintf("%s: server %q is disabled", p.file, name))
		return sc, false
	}
	return sc, p.serverRules(name, &sc) && ok
}

// Bounds of a server's searchAliases: what an operator writes is indexed
// and embedded with the tool's text, so it is bounded like the text.
const (
	MaxAliasedTools   = 1000
	MaxAliasesPerTool = 16
	MaxAliasBytes     = 256
)

// searchAliases checks a server's "searchAliases" (tool name → aliases)
// and sets them on sc.
func (p *parser) searchAliases(name string, in map[string][]string, sc *mcpbridge.ServerConfig) bool {
	if len(in) == 0 {
		return true
	}
	ok := true
	if len(in) > MaxAliasedTools {
		p.add(name, "searchAliases", "aliases for %d tools, at most %d", len(in), MaxAliasedTools)
		return false
	}
	for _, tool := range sortedKeys(in) {
		field := "searchAliases." + tool
		aliases := in[tool]
		switch {
		case tool == "":
			p.add(name, "searchAliases", "a tool name is empty")
			ok = false
		case len(aliases) == 0:
			p.add(name, field, "want at least one alias")
			ok = false
		case len(aliases) > MaxAliasesPerTool:
			p.add(name, field, "%d aliases, at most %d", len(aliases), MaxAliasesPerTool)
			ok = false
		}
		for i, a := range aliases {
			switch {
			case strings.TrimSpace(a) == "":
				p.add(name, fmt.Sprintf("%s[%d]", field, i), "empty")
				ok = false
			case len(a) > MaxAliasBytes:
				p.add(name, fmt.Sprintf("%s[%d]", field, i), "longer than %d bytes", MaxAliasBytes)
				ok = false
			}
		}
	}
	if ok {
		sc.SearchAliases = in
	}
	return ok
}

// expandServer resolves ${ENV} and ${file:…} in every string value of a
// server's settings, reporting each reference that does not resolve. It
// returns the server's keys with their resolved values (nil, reported, when
// the settings are not an object), the resolved values (secrets to redact)
// and whether every reference resolved.
func (p *parser) expandServer(name string, raw json.RawMessage) (map[string]json.RawMessage, []string, bool) {
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		p.add(name, "", "want an object of server settings")
		return nil, nil, false
	}
	if _, ok := tree.(map[string]any); !ok {
		p.add(name, "", "want an object of server settings")
		return nil, nil, false
	}
	exp := newExpander(p.refs)
	resolved := true
	tree = exp.expand(tree, "", func(path string, err error) {
		p.add(name, path, "%v", err)
		resolved = false
	})
	raw, _ = json.Marshal(tree)
	keys := map[string]json.RawMessage{}
	_ = json.Unmarshal(raw, &keys)
	return keys, exp.values(), resolved
}

// decodeServer decodes a server's known keys into a serverJSON, warning of
// each unknown key and reporting each value of the wrong type; it returns
// whether every value decoded.
func (p *parser) decodeServer(name string, keys map[string]json.RawMessage) (serverJSON, bool) {
	var sj serverJSON
	ok := true
	decodeKeys(keys, serverKeys, &sj,
		func(k string) {
			p.cfg.Warnings = append(p.cfg.Warnings, fmt.Sprintf("%s: server %q: unknown key %q ignored", p.file, name, k))
			p.cfg.Unknown = append(p.cfg.Unknown, p.serverMap+"."+name+"."+k)
		},
		func(k string, err error) {
			p.add(name, k, "%s", cleanJSONError(err))
			ok = false
		})
	return sj, ok
}

// serverConfig returns the bridge's configuration of the server name as
// sj sets it, before its oauth object and transport are worked out;
// secrets are the server's resolved references.
func serverConfig(name string, sj *serverJSON, secrets []string) mcpbridge.ServerConfig {
	sc := mcpbridge.ServerConfig{
		Name: name, Command: sj.Command, Args: sj.Args, Env: sj.Env, Dir: sj.Cwd, URL: sj.URL, Headers: sj.Headers,
		ProtocolVersion: sj.ProtocolVersion,
		ConnectTimeout:  sj.ConnectTimeout.D, CallTimeout: sj.CallTimeout.D, RefreshTimeout: sj.RefreshTimeout.D,
		RefreshInterval: sj.RefreshInterval.D, RefreshDebounce: sj.RefreshDebounce.D, PushlessRefresh: sj.PushlessRefresh.D,
		SkipArgumentValidation: sj.ValidateArguments != nil && !*sj.ValidateArguments,
		PingInterval:           sj.PingInterval.D, PingTimeout: sj.PingTimeout.D, PingFailures: sj.PingFailures,
		StableAfter:        sj.StableAfter.D,
		MaxConcurrentCalls: sj.MaxConcurrentCalls, MaxQueuedCalls: sj.MaxQueuedCalls,
		EnvPassthrough: sj.EnvPassthrough,
		Secrets:        secrets,
		NamePrefix:     sj.NamePrefix,
		BareNames:      sj.BareNames,
		Elicitation:    sj.Elicitation, Input: sj.Input,
		AuthRetry: sj.AuthRetry.D, ForwardPrincipal: sj.ForwardPrincipal,
	}
	if sj.Tools != nil {
		sc.ToolsAllow, sc.ToolsDeny = sj.Tools.Allow, sj.Tools.Deny
	}
	if sj.Breaker != nil {
		sc.Breaker = mcpbridge.BreakerConfig{Failures: sj.Breaker.Failures, Cooldown: sj.Breaker.Cooldown.D, MaxCooldown: sj.Breaker.MaxCooldown.D}
	}
	if sj.Backoff != nil {
		sc.BackoffBase, sc.BackoffMax = sj.Backoff.Base.D, sj.Backoff.Max.D
	}
	return sc
}

// serverOAuth decodes a server's "oauth" object (absent or null: none) into
// sc, adding its secrets to sc's; it returns false, reported, when the
// object does not decode.
func (p *parser) serverOAuth(name string, raw json.RawMessage, sc *mcpbridge.ServerConfig) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return true
	}
	oc, err := ParseOAuth(raw)
	if err != nil {
		p.add(name, "oauth", "%v", err)
		return false
	}
	sc.OAuth = oc
	sc.Secrets = append(sc.Secrets, oauthSecrets(oc)...)
	return true
}

// typedTransports are the "type" values a server may set: the transport
// each means, the field it requires and what the problem text calls it.
var typedTransports = map[string]struct {
	transport mcpbridge.Transport
	field     string
	what      string
}{
	"stdio":           {mcpbridge.TransportStdio, "command", "a stdio server"},
	"http":            {mcpbridge.TransportStreamableHTTP, "url", "an HTTP server"},
	"streamable-http": {mcpbridge.TransportStreamableHTTP, "url", "an HTTP server"},
	"streamablehttp":  {mcpbridge.TransportStreamableHTTP, "url", "an HTTP server"},
	"sse":             {mcpbridge.TransportSSE, "url", "an SSE server"},
	"grpc":            {mcpbridge.TransportGRPC, "url", "a gRPC server (the MCP gRPC binding)"},
}

// serverTransport sets sc's transport from sj's "type" (any case), or when
// absent from which of "command" and "url" it sets. It returns false,
// reported, when the type is unknown, when neither or (untyped) both are
// set, or when the type's own field is missing; sc's transport stays unset
// only when the type is unknown or untyped with neither or both set.
func (p *parser) serverTransport(name string, sj *serverJSON, sc *mcpbridge.ServerConfig) bool {
	if sj.Type == "" {
		switch {
		case sj.Command != "" && sj.URL != "":
			p.add(name, "url", "set either \"command\" (stdio) or \"url\" (HTTP), not both")
			return false
		case sj.Command != "":
			sc.Transport = mcpbridge.TransportStdio
		case sj.URL != "":
			sc.Transport = mcpbridge.TransportStreamableHTTP
		default:
			p.add(name, "command", "required: \"command\" for a stdio server or \"url\" for an HTTP server")
			return false
		}
		return true
	}
	t, ok := typedTransports[strings.ToLower(sj.Type)]
	if !ok {
		p.add(name, "type", "%q is not supported: want \"stdio\", \"http\" (streamable HTTP), \"sse\" (the deprecated HTTP+SSE transport) or \"grpc\" (the MCP gRPC binding)", sj.Type)
		return false
	}
	sc.Transport = t.transport
	value := sj.URL
	if t.field == "command" {
		value = sj.Command
	}
	if value == "" {
		p.add(name, t.field, "required for %s", t.what)
		return false
	}
	return true
}

// serverRules reports every problem mcpbridge finds in sc, each mapped to
// its line here, but for a transport problem when serverTransport has
// already reported it; it returns whether there were none.
func (p *parser) serverRules(name string, sc *mcpbridge.ServerConfig) bool {
	ok := true
	for _, fe := range sc.Problems() {
		if fe.Field == "transport" && sc.Transport == 0 {
			continue // the file's type/command/url problem is reported above
		}
		p.add(name, fe.Field, "%v", fe.Err)
		ok = false
	}
	return ok
}

// checkAcrossServers reports mcpbridge's rules across servers (the servers
// kept so far have no problems of their own).
func (p *parser) checkAcrossServers() {
	for _, fe := range mcpbridge.CheckServers(p.cfg.Bridge.Servers) {
		p.add(fe.Server, fe.Field, "%v", fe.Err)
	}
}

// result returns the configuration, or every problem found with the
// resolved references' values redacted from their text.
func (p *parser) result() (*Config, error) {
	if len(p.probs) > 0 {
		for i := range p.probs {
			p.probs[i].Msg = p.refs.redact(p.probs[i].Msg)
		}
		return nil, p.probs
	}
	return p.cfg, nil
}

// keyLines maps top-level keys ("/key"), auth keys ("/auth.key") and their
// list elements ("/auth.key[i]"), server names ("name") and server fields
// ("name/field") to their line in data, by walking the JSON tokens.
func keyLines(data []byte) map[string]int {
	w := &lineWalker{data: data, dec: json.NewDecoder(bytes.NewReader(data)), lines: map[string]int{}}
	if w.isObject() {
		w.object(w.topKey)
	}
	return w.lines
}

// lineWalker is keyLines' walk over a JSON document's tokens. Each of its
// methods returns false when the tokens end or break off.
type lineWalker struct {
	data  []byte
	dec   *json.Decoder
	lines map[string]int
}

// lineAt is the line of the decoder's offset.
func (w *lineWalker) lineAt() int { return 1 + bytes.Count(w.data[:w.dec.InputOffset()], []byte("\n")) }

// skip consumes one complete value whose first token is tok.
func (w *lineWalker) skip(tok json.Token) bool {
	if d, ok := tok.(json.Delim); ok && (d == '{' || d == '[') {
		for w.dec.More() {
			t, err := w.dec.Token()
			if err != nil || !w.skip(t) {
				return false
			}
		}
		_, err := w.dec.Token()
		return err == nil
	}
	return true
}

// skipValue consumes the next complete value.
func (w *lineWalker) skipValue() bool {
	t, err := w.dec.Token()
	return err == nil && w.skip(t)
}

// object walks an object's keys, calling f with each key and its line; f
// consumes the value.
func (w *lineWalker) object(f func(key string, line int) bool) bool {
	for w.dec.More() {
		t, err := w.dec.Token()
		if err != nil {
			return false
		}
		key, _ := t.(string)
		if !f(key, w.lineAt()) {
			return false
		}
	}
	_, err := w.dec.Token()
	return err == nil
}

// isObject consumes the next token and says whether it opens an object;
// when not, it consumes the rest of that value too.
func (w *lineWalker) isObject() bool {
	t, err := w.dec.Token()
	if err != nil {
		return false
	}
	if d, ok := t.(json.Delim); ok && d == '{' {
		return true
	}
	w.skip(t)
	return false
}

// topKey records a top-level key's line and walks its value: the auth
// section's keys, each server's fields, anything else skipped.
func (w *lineWalker) topKey(top string, line int) bool {
	w.lines["/"+top] = line
	switch {
	case top == "auth":
		return !w.isObject() || w.object(w.authKey)
	case top == "mcpServers" || top == "servers":
		return !w.isObject() || w.object(w.server)
	}
	return w.skipValue()
}

// authKey records an auth key's line and, when its value is a list, the
// line of each element's first character.
func (w *lineWalker) authKey(key string, line int) bool {
	w.lines["/auth."+key] = line
	t, err := w.dec.Token()
	if err != nil {
		return false
	}
	if d, ok := t.(json.Delim); !ok || d != '[' {
		return w.skip(t)
	}
	for n := 0; w.dec.More(); n++ {
		w.lines[fmt.Sprintf("/auth.%s[%d]", key, n)] = w.lineAt() + elementLineOffset(w.data, w.dec.InputOffset())
		e, err := w.dec.Token()
		if err != nil || !w.skip(e) {
			return false
		}
	}
	_, err = w.dec.Token()
	return err == nil
}

// server records a server's line and the line of each of its fields.
func (w *lineWalker) server(name string, line int) bool {
	w.lines[name] = line
	if !w.isObject() {
		return true
	}
	return w.object(func(field string, line int) bool {
		w.lines[name+"/"+field] = line
		return w.skipValue()
	})
}

// elementLineOffset counts the newlines between offset (just after a
// delimiter or comma) and the next token, so a list element's line is that
// of its first character.
func elementLineOffset(data []byte, offset int64) int {
	n := 0
	for i := int(offset); i < len(data); i++ {
		switch data[i] {
		case '\n':
			n++
		case ' ', '\t', '\r', ',':
		default:
			return n
		}
	}
	return n
}

// lineOf finds the line of a server's field, else of the server, else of a
// top-level key (for auth fields, the most precise of "auth.key[i]",
// "auth.key" and "auth"); 0 when unknown.
func lineOf(lines map[string]int, server, field string) int {
	key, _, _ := strings.Cut(field, ".")
	if server == "" {
		if key == "auth" {
			// auth.rateLimits[2].burst → "/auth.rateLimits[2]", "/auth.rateLimits"
			rest := strings.TrimPrefix(field, "auth.")
			elem, _, _ := strings.Cut(rest, ".")
			if l, ok := lines["/auth."+elem]; ok {
				return l
			}
			name, _, _ := strings.Cut(elem, "[")
			if l, ok := lines["/auth."+name]; ok {
				return l
			}
		}
		return lines["/"+key]
	}
	if l, ok := lines[server+"/"+key]; ok {
		return l
	}
	return lines[server]
}

// cleanJSONError rewrites encoding/json's messages into what was expected.
func cleanJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("want %s, got JSON %s", te.Type, te.Value)
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.HasPrefix(msg, "json: ") {
		return msg[i+2:]
	}
	return msg
}

func keysOf(v any) map[string]bool {
	raw, _ := json.Marshal(v)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// parseAuth decodes and checks the "auth" section.
func parseAuth(raw json.RawMessage, refs *resolved, add func(field, format string, args ...any)) *Auth {
	var tree any
	_ = json.Unmarshal(raw, &tree)
	if _, ok := tree.(map[string]any); !ok {
		add("", "want an object")
		return nil
	}
	exp := newExpander(refs)
	tree = exp.expand(tree, "", func(path string, err error) { add(path, "%v", err) })
	raw, _ = json.Marshal(tree)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var a Auth
	if err := dec.Decode(&a); err != nil {
		add("", "%s", cleanJSONError(err))
		return nil
	}
	a.Secrets = exp.values()
	for _, name := range sortedKeys(a.Tokens) {
		tok := a.Tokens[name]
		switch {
		case strings.TrimSpace(tok) != tok:
			// An "authorization: Bearer" value is trimmed (RFC 9110 field
			// values), so such a token could never match.
			add("tokens."+name, "has leading or trailing whitespace (the value is not shown)")
		case len(tok) < 16:
			add("tokens."+name, "a bearer token must be at least 16 characters")
		}
		a.Secrets = append(a.Secrets, tok)
	}
	if a.JWT != nil && (a.JWT.JWKSFile == "") == (a.JWT.JWKSURL == "") {
		add("jwt", "set exactly one of jwksFile and jwksURL")
	}
	for i, r := range a.Rules {
		if r.Principal == "" {
			add(fmt.Sprintf("rules[%d].principal", i), "required (a glob over principal names)")
		}
		for _, g := range append(append([]string{r.Principal}, r.Allow...), r.Deny...) {
			if _, err := path.Match(g, ""); err != nil {
				add(fmt.Sprintf("rules[%d]", i), "%q is not a valid glob pattern", g)
			}
		}
	}
	for i, r := range a.RateLimits {
		at := fmt.Sprintf("rateLimits[%d]", i)
		if r.Principal == "" {
			add(at+".principal", "required (a glob over principal names)")
		} else if _, err := path.Match(r.Principal, ""); err != nil {
			add(at+".principal", "%q is not a valid glob pattern", r.Principal)
		}
		switch {
		case r.CallsPerSecond < 0 || math.IsInf(r.CallsPerSecond, 0) || math.IsNaN(r.CallsPerSecond):
			add(at+".callsPerSecond", "must be a positive number of calls per second, got %v", r.CallsPerSecond)
		case r.Burst < 0:
			add(at+".burst", "must be positive, got %d", r.Burst)
		case r.Burst > 0 && r.CallsPerSecond == 0:
			add(at+".burst", "needs callsPerSecond (burst is the size of its token bucket)")
		case r.MaxConcurrent < 0:
			add(at+".maxConcurrent", "must be positive, got %d", r.MaxConcurrent)
		case r.CallsPerSecond == 0 && r.MaxConcurrent == 0:
			add(at, "limits nothing: set callsPerSecond, maxConcurrent or both")
		}
	}
	if len(a.Tokens) == 0 && a.TokensFile == "" && a.JWT == nil && !a.MTLS {
		add("", "no way to authenticate: set tokens, tokensFile, jwt or mtls")
	}
	return &a
}
