package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsvc/toolsvc/config"
)

// cfg is a toolsvc configuration file, typed: startToolsvc marshals it
// with encoding/json. The field names and tags follow config/config.go's
// schema (its own file types are unexported and decode-only);
// TestConfigBuilderSchema checks every key here against config.Parse.
// Durations are strings as in the file ("1h", "50ms"); zero values are left
// out, so a field not set is absent from the file (its default applies).
type cfg struct {
	Auth            *authCfg            `json:"auth,omitempty"`
	Kubernetes      *kubeCfg            `json:"kubernetes,omitempty"`
	Servers         map[string]upstream `json:"mcpServers"`
	StartupTimeout  string              `json:"startupTimeout,omitempty"`
	ConnectTimeout  string              `json:"connectTimeout,omitempty"`
	CallTimeout     string              `json:"callTimeout,omitempty"`
	RefreshTimeout  string              `json:"refreshTimeout,omitempty"`
	RefreshInterval string              `json:"refreshInterval,omitempty"`
	PingInterval    string              `json:"pingInterval,omitempty"`
	PingTimeout     string              `json:"pingTimeout,omitempty"`
	TokenStore      *tokenStoreCfg      `json:"tokenStore,omitempty"`
	// Serve is the serve section (config.Serve): key → value as in the
	// file (durations as strings, lists as arrays).
	Serve map[string]any `json:"serve,omitempty"`
}

// tokenStoreCfg is the "tokenStore" section (config.TokenStore).
type tokenStoreCfg struct {
	File    string         `json:"file,omitempty"`
	Redis   *redisStoreCfg `json:"redis,omitempty"`
	KeyFile string         `json:"keyFile"`
}

// redisStoreCfg is "tokenStore.redis".
type redisStoreCfg struct {
	URL     string `json:"url"`
	Prefix  string `json:"prefix,omitempty"`
	Lease   string `json:"lease,omitempty"`
	Timeout string `json:"timeout,omitempty"`
}

// kubeCfg is the "kubernetes" section (config.Kubernetes).
type kubeCfg struct {
	Sources       []string `json:"sources"`
	Namespaces    []string `json:"namespaces,omitempty"`
	LabelSelector string   `json:"labelSelector,omitempty"`
	Kubeconfig    string   `json:"kubeconfig,omitempty"`
	Resync        string   `json:"resync,omitempty"`
	Debounce      string   `json:"debounce,omitempty"`
	ClusterDomain string   `json:"clusterDomain,omitempty"`
}

// servers is cfg.Servers: upstream name → its settings.
type servers = map[string]upstream

// upstream is one entry of "mcpServers".
type upstream struct {
	Type               string            `json:"type,omitempty"`
	Command            string            `json:"command,omitempty"`
	Args               []string          `json:"args,omitempty"`
	Env                map[string]string `json:"env,omitempty"`
	Cwd                string            `json:"cwd,omitempty"`
	URL                string            `json:"url,omitempty"`
	Headers            map[string]string `json:"headers,omitempty"`
	Disabled           bool              `json:"disabled,omitempty"`
	ProtocolVersion    string            `json:"protocolVersion,omitempty"`
	ConnectTimeout     string            `json:"connectTimeout,omitempty"`
	CallTimeout        string            `json:"callTimeout,omitempty"`
	RefreshTimeout     string            `json:"refreshTimeout,omitempty"`
	RefreshInterval    string            `json:"refreshInterval,omitempty"`
	RefreshDebounce    string            `json:"refreshDebounce,omitempty"`
	PushlessRefresh    string            `json:"pushlessRefresh,omitempty"`
	ValidateArguments  *bool             `json:"validateArguments,omitempty"`
	Backoff            *backoff          `json:"backoff,omitempty"`
	PingInterval       string            `json:"pingInterval,omitempty"`
	PingTimeout        string            `json:"pingTimeout,omitempty"`
	PingFailures       int               `json:"pingFailures,omitempty"`
	StableAfter        string            `json:"stableAfter,omitempty"`
	Breaker            *breaker          `json:"breaker,omitempty"`
	MaxConcurrentCalls int               `json:"maxConcurrentCalls,omitempty"`
	MaxQueuedCalls     int               `json:"maxQueuedCalls,omitempty"`
	EnvPassthrough     []string          `json:"envPassthrough,omitempty"`
	NamePrefix         string            `json:"namePrefix,omitempty"`
	BareNames          bool              `json:"bareNames,omitempty"`
	Elicitation        string            `json:"elicitation,omitempty"`
	Input              string            `json:"input,omitempty"`
	Tools              *toolFilter       `json:"tools,omitempty"`
	OAuth              *oauthCfg         `json:"oauth,omitempty"`
	AuthRetry          string            `json:"authRetry,omitempty"`
	ForwardPrincipal   bool              `json:"forwardPrincipal,omitempty"`
	Credentials        *credsCfg         `json:"credentials,omitempty"`
	TLS                *upstreamTLS      `json:"tls,omitempty"`
	// Tool search (docs/search.md).
	SearchAliases map[string][]string `json:"searchAliases,omitempty"`
}

// credsCfg is a server's "credentials" object (docs/credentials.md).
type credsCfg struct {
	Mode         string `json:"mode"`
	Issuer       string `json:"issuer,omitempty"`
	ClientID     string `json:"clientId,omitempty"`
	ClientSecret string `json:"clientSecret,omitempty"`
	Audience     string `json:"audience,omitempty"`
	MaxSessions  int    `json:"maxSessions,omitempty"`
	SessionIdle  string `json:"sessionIdle,omitempty"`
	PrivateTools bool   `json:"privateTools,omitempty"`
	// userOAuth
	Scopes             []string `json:"scopes,omitempty"`
	RequireSameSubject bool     `json:"requireSameSubject,omitempty"`
}

type backoff struct {
	Base string `json:"base,omitempty"`
	Max  string `json:"max,omitempty"`
}

type breaker struct {
	Failures    int    `json:"failures,omitempty"`
	Cooldown    string `json:"cooldown,omitempty"`
	MaxCooldown string `json:"maxCooldown,omitempty"`
}

type toolFilter struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// oauthCfg is a server's "oauth" object (config/oauth.go).
type oauthCfg struct {
	Grant        string   `json:"grant,omitempty"`
	ClientID     string   `json:"clientId,omitempty"`
	ClientSecret string   `json:"clientSecret,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	TokenURL     string   `json:"tokenUrl,omitempty"`
	RefreshToken string   `json:"refreshToken,omitempty"`
	RefreshFile  string   `json:"refreshTokenFile,omitempty"`
	Resource     string   `json:"resource,omitempty"`
	AuthMethod   string   `json:"authMethod,omitempty"`
	PrivateKey   string   `json:"privateKey,omitempty"`
	SigningAlg   string   `json:"signingAlg,omitempty"`
}

// authCfg is the "auth" section (config.Auth, whose nested types are
// anonymous and so cannot be written as literals here).
type authCfg struct {
	Tokens     map[string]string `json:"tokens,omitempty"`
	TokensFile string            `json:"tokensFile,omitempty"`
	MTLS       bool              `json:"mtls,omitempty"`
	JWT        *jwtCfg           `json:"jwt,omitempty"`
	Admins     []string          `json:"admins,omitempty"`
	Rules      []rule            `json:"rules,omitempty"`
	Audit      *audit            `json:"audit,omitempty"`
	// config.RateLimit is exported and its zero fields mean "absent".
	RateLimits []config.RateLimit `json:"rateLimits,omitempty"`
}

type jwtCfg struct {
	JWKSFile string `json:"jwksFile,omitempty"`
	JWKSURL  string `json:"jwksURL,omitempty"`
	Issuer   string `json:"issuer,omitempty"`
	Audience string `json:"audience,omitempty"`
}

// testJWT is the JWT section the tests' identity provider (newTestIDP)
// signs for.
func testJWT(jwksFile string) *jwtCfg {
	return &jwtCfg{JWKSFile: jwksFile, Issuer: "test-idp", Audience: "toolsvc"}
}

type rule struct {
	Principal string   `json:"principal"`
	Allow     []string `json:"allow,omitempty"`
	Deny      []string `json:"deny,omitempty"`
}

type audit struct {
	Enabled   *bool `json:"enabled,omitempty"`
	Arguments bool  `json:"arguments,omitempty"`
}

// goStdio is the go-sdk test upstream (tests/testserver) over stdio, with
// the settings of u.
func goStdio(u upstream) upstream {
	u.Command, u.Args = bin.testserver, []string{"-mode", "stdio"}
	return u
}

// goHTTP is an upstream over streamable HTTP at url, with the settings of u.
func goHTTP(url string, u upstream) upstream {
	u.URL = url
	return u
}

// demoServer is toolsvc's own built-in demo upstream (`toolsvc
// demo-server`) over stdio.
func demoServer() upstream {
	return upstream{Command: bin.toolsvc, Args: []string{"demo-server"}}
}

// bytes is the config file's content.
func (c cfg) bytes(t testing.TB) []byte {
	t.Helper()
	if c.Servers == nil {
		c.Servers = servers{} // the key is required
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// String is the config file's content (these types always marshal).
func (c cfg) String() string {
	if c.Servers == nil {
		c.Servers = servers{}
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// write replaces the file at path with c (for a reload: rewrite
// p.configPath, then SIGHUP).
func (c cfg) write(t testing.TB, path string) {
	t.Helper()
	if err := os.WriteFile(path, c.bytes(t), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestConfigBuilderSchema: every key the builder can write is one
// config.Parse knows (an unknown key would only be a warning, and the test
// meaning to set it would silently run on a default).
func TestConfigBuilderSchema(t *testing.T) {
	t.Parallel()
	yes := true
	all := upstream{Type: "stdio", Command: "x", Args: []string{"a"}, Env: map[string]string{"K": "v"}, Cwd: "/",
		ProtocolVersion: "2025-06-18", ConnectTimeout: "1s", CallTimeout: "1s", RefreshTimeout: "1s", RefreshInterval: "1h",
		RefreshDebounce: "1s", PushlessRefresh: "1s", ValidateArguments: &yes, Backoff: &backoff{Base: "1s", Max: "2s"},
		PingInterval: "1s", PingTimeout: "1s", PingFailures: 2, StableAfter: "1s",
		Breaker: &breaker{Failures: 3, Cooldown: "1s", MaxCooldown: "2s"}, MaxConcurrentCalls: 2, MaxQueuedCalls: 2,
		EnvPassthrough: []string{"HOME"}, NamePrefix: "p", Elicitation: "decline", Tools: &toolFilter{Allow: []string{"*"}, Deny: []string{"x"}},
		SearchAliases: map[string][]string{"echo": {"say it back"}}}
	remote := upstream{Type: "http", URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"X": "y"}, AuthRetry: "1s", ForwardPrincipal: true,
		OAuth: &oauthCfg{Grant: "refresh_token", ClientID: "c", ClientSecret: "s", Scopes: []string{"a"}, TokenURL: "http://127.0.0.1:1/token",
			RefreshToken: "r", Resource: "http://127.0.0.1:1/mcp", AuthMethod: "client_secret_post"}}
	c := cfg{StartupTimeout: "1s", ConnectTimeout: "1s", CallTimeout: "1s", RefreshTimeout: "1s", RefreshInterval: "1h",
		PingInterval: "1s", PingTimeout: "1s",
		Auth: &authCfg{Tokens: map[string]string{"alice": "tok-alice-0123456789"}, JWT: testJWT(filepath.Join(t.TempDir(), "jwks.json")),
			Admins: []string{"alice"}, Rules: []rule{{Principal: "alice", Allow: []string{"*"}, Deny: []string{"x"}}},
			Audit: &audit{Enabled: &yes, Arguments: true}, RateLimits: []config.RateLimit{{Principal: "*", CallsPerSecond: 1, Burst: 2, MaxConcurrent: 1}}},
		Kubernetes: &kubeCfg{Sources: []string{"mcpservers", "services"}, Namespaces: []string{"tools"}, LabelSelector: "a=b",
			Kubeconfig: "/k", Resync: "1h", Debounce: "50ms", ClusterDomain: "cluster.local"},
		Servers: servers{"all": all, "remote": remote, "bare": {Command: "x", BareNames: true},
			"user": {Type: "http", URL: "http://127.0.0.1:1/mcp", Credentials: &credsCfg{Mode: "userOAuth", Issuer: "http://127.0.0.1:1",
				ClientID: "c", ClientSecret: "s", Scopes: []string{"openid"}, RequireSameSubject: true, MaxSessions: 2, SessionIdle: "1m"}}},
		TokenStore: &tokenStoreCfg{Redis: &redisStoreCfg{URL: "redis://127.0.0.1:1/0", Prefix: "t:", Lease: "30s", Timeout: "2s"}, KeyFile: "/k"},
		Serve:      map[string]any{"logLevel": "debug", "mcpAllowedHosts": []string{"a"}, "shutdownTimeout": "5s", "maxParkedBytes": 1 << 20}}
	if err := os.WriteFile(c.Auth.JWT.JWKSFile, []byte(`{"keys": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := config.Parse("builder.json", c.bytes(t))
	if err != nil {
		t.Fatalf("config.Parse(builder output): %v\n%s", err, c.bytes(t))
	}
	if len(got.Warnings) > 0 {
		t.Fatalf("config.Parse warns about the builder's output: %q\n%s", got.Warnings, c.bytes(t))
	}
}
