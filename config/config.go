// Package config loads toolsvc configuration files: the "mcpServers" JSON
// that Claude Desktop and Cursor users already have, plus toolsvc's own
// camelCase keys. Every problem is reported at once, each naming the file,
// the server and the field.
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
	Tools              *struct {
		Allow []string `json:"allow"`
		Deny  []string `json:"deny"`
	} `json:"tools"`
	// OAuth authenticates to a streamable HTTP upstream (oauth.go).
	OAuth json.RawMessage `json:"oauth"`
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
func Parse(file string, data []byte) (*Config, error) {
	var probs Problems
	var lines map[string]int // computed on the first problem
	if isYAML(file) {
		j, l, err := yamlToJSON(data)
		if err != nil {
			return nil, Problems{{File: file, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}}
		}
		data, lines = j, l
	}
	add := func(server, field, format string, args ...any) {
		if lines == nil {
			lines = keyLines(data)
		}
		probs = append(probs, Problem{File: file, Line: lineOf(lines, server, field), Server: server, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	var top map[string]json.RawMessage
	if !isYAML(file) { // the YAML decoder refuses duplicate keys itself
		if dups := duplicateKeys(data); len(dups) > 0 {
			for _, d := range dups {
				probs = append(probs, d.problem(file))
			}
			return nil, probs
		}
	}
	if err := json.Unmarshal(data, &top); err != nil {
		p := Problem{File: file, Msg: "not a JSON object: " + err.Error()}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			p.Line = 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		}
		return nil, Problems{p}
	}
	cfg := &Config{}
	for _, k := range sortedKeys(top) {
		if !topKeys[k] {
			cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("%s: unknown key %q ignored", file, k))
		}
	}
	var f fileJSON
	for _, k := range sortedKeys(top) {
		if !topKeys[k] {
			continue
		}
		one, _ := json.Marshal(map[string]json.RawMessage{k: top[k]})
		if err := json.Unmarshal(one, &f); err != nil {
			add("", k, "%s", cleanJSONError(err))
		}
	}
	if f.MCPServers != nil && f.Servers != nil {
		add("", "servers", "use either \"mcpServers\" or \"servers\", not both")
	}
	servers := f.MCPServers
	if servers == nil {
		servers = f.Servers
	}
	if servers == nil {
		add("", "mcpServers", "required: an object mapping server names to their settings")
	}
	// Every reference of the file draws on one budget (MaxResolvedBytes),
	// and no problem text shows what a reference resolved to.
	refs := newResolved()
	if len(f.Auth) > 0 && string(f.Auth) != "null" {
		cfg.Auth = parseAuth(f.Auth, refs, func(field, format string, args ...any) { add("", "auth."+field, format, args...) })
	}
	b := &cfg.Bridge
	b.StartupTimeout, b.ConnectTimeout, b.CallTimeout = f.StartupTimeout.D, f.ConnectTimeout.D, f.CallTimeout.D
	b.RefreshTimeout, b.RefreshInterval = f.RefreshTimeout.D, f.RefreshInterval.D
	b.PingInterval, b.PingTimeout = f.PingInterval.D, f.PingTimeout.D

	for _, name := range sortedKeys(servers) {
		raw := servers[name]
		// Resolve ${ENV} and ${file:…} in every string value first.
		var tree any
		if err := json.Unmarshal(raw, &tree); err != nil {
			add(name, "", "want an object of server settings")
			continue
		}
		if _, ok := tree.(map[string]any); !ok {
			add(name, "", "want an object of server settings")
			continue
		}
		exp := newExpander(refs)
		expandFailed := false
		tree = exp.expand(tree, "", func(path string, err error) {
			add(name, path, "%v", err)
			expandFailed = true
		})
		raw, _ = json.Marshal(tree)
		var keys map[string]json.RawMessage
		_ = json.Unmarshal(raw, &keys)
		for _, k := range sortedKeys(keys) {
			if !serverKeys[k] {
				cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("%s: server %q: unknown key %q ignored", file, name, k))
			}
		}
		var sj serverJSON
		bad := expandFailed
		for _, k := range sortedKeys(keys) {
			if !serverKeys[k] {
				continue
			}
			one, _ := json.Marshal(map[string]json.RawMessage{k: keys[k]})
			if err := json.Unmarshal(one, &sj); err != nil {
				add(name, k, "%s", cleanJSONError(err))
				bad = true
			}
		}
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
			Secrets:        exp.values(),
			NamePrefix:     sj.NamePrefix,
			BareNames:      sj.BareNames,
			Elicitation:    sj.Elicitation,
			AuthRetry:      sj.AuthRetry.D, ForwardPrincipal: sj.ForwardPrincipal,
		}
		if len(sj.OAuth) > 0 && string(sj.OAuth) != "null" {
			oc, err := ParseOAuth(sj.OAuth)
			if err != nil {
				add(name, "oauth", "%v", err)
				bad = true
			} else {
				sc.OAuth = oc
				sc.Secrets = append(sc.Secrets, oauthSecrets(oc)...)
			}
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
		switch strings.ToLower(sj.Type) {
		case "":
			switch {
			case sj.Command != "" && sj.URL != "":
				add(name, "url", "set either \"command\" (stdio) or \"url\" (HTTP), not both")
				bad = true
			case sj.Command != "":
				sc.Transport = mcpbridge.TransportStdio
			case sj.URL != "":
				sc.Transport = mcpbridge.TransportStreamableHTTP
			default:
				add(name, "command", "required: \"command\" for a stdio server or \"url\" for an HTTP server")
				bad = true
			}
		case "stdio":
			sc.Transport = mcpbridge.TransportStdio
			if sj.Command == "" {
				add(name, "command", "required for a stdio server")
				bad = true
			}
		case "http", "streamable-http", "streamablehttp":
			sc.Transport = mcpbridge.TransportStreamableHTTP
			if sj.URL == "" {
				add(name, "url", "required for an HTTP server")
				bad = true
			}
		case "sse":
			sc.Transport = mcpbridge.TransportSSE
			if sj.URL == "" {
				add(name, "url", "required for an SSE server")
				bad = true
			}
		default:
			add(name, "type", "%q is not supported: want \"stdio\", \"http\" (streamable HTTP) or \"sse\" (the deprecated HTTP+SSE transport)", sj.Type)
			bad = true
		}
		if sj.Disabled {
			cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("%s: server %q is disabled", file, name))
			continue
		}
		// The rules for a server's settings live in mcpbridge: every
		// problem, mapped to its line here.
		for _, fe := range sc.Problems() {
			if fe.Field == "transport" && sc.Transport == 0 {
				continue // the file's type/command/url problem is reported above
			}
			add(name, fe.Field, "%v", fe.Err)
			bad = true
		}
		if !bad {
			b.Servers = append(b.Servers, sc)
		}
	}
	// Rules across servers (the servers here have no problems of their own).
	for _, fe := range mcpbridge.CheckServers(b.Servers) {
		add(fe.Server, fe.Field, "%v", fe.Err)
	}
	if len(probs) > 0 {
		for i := range probs {
			probs[i].Msg = refs.redact(probs[i].Msg)
		}
		return nil, probs
	}
	return cfg, nil
}

// keyLines maps top-level keys ("/key"), auth keys ("/auth.key") and their
// list elements ("/auth.key[i]"), server names ("name") and server fields
// ("name/field") to their line in data, by walking the JSON tokens.
func keyLines(data []byte) map[string]int {
	lines := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(data))
	lineAt := func() int { return 1 + bytes.Count(data[:dec.InputOffset()], []byte("\n")) }
	// skip consumes one complete value whose first token is tok.
	var skip func(tok json.Token) bool
	skip = func(tok json.Token) bool {
		if d, ok := tok.(json.Delim); ok && (d == '{' || d == '[') {
			for dec.More() {
				t, err := dec.Token()
				if err != nil || !skip(t) {
					return false
				}
			}
			_, err := dec.Token()
			return err == nil
		}
		return true
	}
	// object walks an object's keys, calling f with each key and its line;
	// f consumes the value.
	object := func(f func(key string, line int) bool) bool {
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return false
			}
			key, _ := t.(string)
			if !f(key, lineAt()) {
				return false
			}
		}
		_, err := dec.Token()
		return err == nil
	}
	isObject := func() bool {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		if d, ok := t.(json.Delim); ok && d == '{' {
			return true
		}
		skip(t)
		return false
	}
	if !isObject() {
		return lines
	}
	object(func(top string, line int) bool {
		lines["/"+top] = line
		if top == "auth" {
			if !isObject() {
				return true
			}
			return object(func(key string, line int) bool {
				lines["/auth."+key] = line
				t, err := dec.Token()
				if err != nil {
					return false
				}
				if d, ok := t.(json.Delim); ok && d == '[' {
					for n := 0; dec.More(); n++ {
						lines[fmt.Sprintf("/auth.%s[%d]", key, n)] = lineAt() + elementLineOffset(data, dec.InputOffset())
						e, err := dec.Token()
						if err != nil || !skip(e) {
							return false
						}
					}
					_, err := dec.Token()
					return err == nil
				}
				return skip(t)
			})
		}
		if top != "mcpServers" && top != "servers" {
			t, err := dec.Token()
			return err == nil && skip(t)
		}
		if !isObject() {
			return true
		}
		return object(func(server string, line int) bool {
			lines[server] = line
			if !isObject() {
				return true
			}
			return object(func(field string, line int) bool {
				lines[server+"/"+field] = line
				t, err := dec.Token()
				return err == nil && skip(t)
			})
		})
	})
	return lines
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
