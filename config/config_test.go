package config

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

func TestParseClaudeDesktopShape(t *testing.T) {
	t.Parallel()
	data := []byte(`{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
      "env": {"DEBUG": "1"}
    },
    "remote": {"url": "http://127.0.0.1:3000/mcp", "headers": {"Authorization": "Bearer s3cret"}},
    "typed": {"type": "http", "url": "https://example.test/mcp", "callTimeout": "15s", "backoff": {"base": "2s", "max": "30s"}}
  }
}`)
	c, err := Parse("claude.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Bridge.Servers) != 3 || len(c.Warnings) != 0 {
		t.Fatalf("servers %d, warnings %q; want 3 and none", len(c.Bridge.Servers), c.Warnings)
	}
	byName := map[string]mcpbridge.ServerConfig{}
	for _, s := range c.Bridge.Servers {
		byName[s.Name] = s
	}
	if fs := byName["filesystem"]; fs.Transport != mcpbridge.TransportStdio || fs.Command != "npx" || len(fs.Args) != 3 || fs.Env["DEBUG"] != "1" {
		t.Errorf("filesystem = %+v", fs)
	}
	if r := byName["remote"]; r.Transport != mcpbridge.TransportStreamableHTTP || r.Headers["Authorization"] != "Bearer s3cret" {
		t.Errorf("remote = %+v", r)
	}
	if ty := byName["typed"]; ty.CallTimeout != 15*time.Second || ty.BackoffBase != 2*time.Second || ty.BackoffMax != 30*time.Second {
		t.Errorf("typed = %+v", ty)
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	t.Parallel()
	data := []byte(`{
  "mcpServers": {
    "a__b": {"command": "x"},
    "nocmd": {"args": []},
    "both": {"command": "x", "url": "http://h/mcp"},
    "dur": {"command": "x", "callTimeout": "15"},
    "typ": {"type": "carrier-pigeon", "url": "http://h"},
    "args": {"command": "x", "args": "not-a-list"},
    "ok": {"command": "x", "mystery": 1}
  },
  "extra": true
}`)
	_, err := Parse("bad.json", data)
	var probs Problems
	if !errors.As(err, &probs) {
		t.Fatalf("Parse = %v, want Problems", err)
	}
	msg := err.Error()
	for _, want := range []string{
		`bad.json:3: server "a__b": field "name"`,
		`bad.json:4: server "nocmd": field "command": required`,
		`bad.json:5: server "both": field "url": set either`,
		`bad.json:6: server "dur": field "callTimeout": "15" is not a duration`,
		`bad.json:7: server "typ": field "type": "carrier-pigeon" is not supported`,
		`bad.json:8: server "args": field "args": want []string`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("problems lack %q:\n%s", want, msg)
		}
	}
	if len(probs) != 6 {
		t.Errorf("%d problems, want 6:\n%s", len(probs), msg)
	}
}

func TestParseWarnings(t *testing.T) {
	t.Parallel()
	c, err := Parse("w.json", []byte(`{"mcpServers": {"ok": {"command": "x", "mystery": 1}, "off": {"command": "y", "disabled": true}}, "extra": true}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Bridge.Servers) != 1 || len(c.Warnings) != 3 {
		t.Fatalf("servers %d, warnings %q; want 1 server and 3 warnings", len(c.Bridge.Servers), c.Warnings)
	}
}

func TestParseSyntaxError(t *testing.T) {
	t.Parallel()
	_, err := Parse("s.json", []byte("{\n  \"mcpServers\": {,\n}"))
	if err == nil || !strings.HasPrefix(err.Error(), "s.json:2: ") {
		t.Fatalf("Parse(syntax error) = %v, want it to name s.json line 2", err)
	}
}

func TestParseMissingServers(t *testing.T) {
	t.Parallel()
	_, err := Parse("e.json", []byte(`{}`))
	if err == nil || !strings.Contains(err.Error(), `field "mcpServers": required`) {
		t.Fatalf("Parse({}) = %v", err)
	}
}

func TestSecretsNotInProblems(t *testing.T) {
	t.Parallel()
	_, err := Parse("x.json", []byte(`{"mcpServers": {"r": {"url": "ftp://h", "headers": {"Authorization": "Bearer TOPSECRET"}}}}`))
	if err == nil || strings.Contains(err.Error(), "TOPSECRET") {
		t.Fatalf("Parse = %v; want an error without the header value", err)
	}
}

func TestParseSupervisionKeys(t *testing.T) {
	t.Parallel()
	c, err := Parse("s.json", []byte(`{"pingInterval": "2s", "mcpServers": {"s": {"command": "x",
		"pingTimeout": "1s", "pingFailures": 4, "stableAfter": "3s", "maxConcurrentCalls": 8, "maxQueuedCalls": 16,
		"breaker": {"failures": 5, "cooldown": "10s", "maxCooldown": "1m"}, "envPassthrough": ["GH_TOKEN"], "validateArguments": false}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Bridge.Servers[0]
	if c.Bridge.PingInterval != 2*time.Second || s.PingTimeout != time.Second || s.PingFailures != 4 || s.StableAfter != 3*time.Second ||
		s.MaxConcurrentCalls != 8 || s.MaxQueuedCalls != 16 || s.Breaker.Failures != 5 || s.Breaker.Cooldown != 10*time.Second ||
		s.Breaker.MaxCooldown != time.Minute || len(s.EnvPassthrough) != 1 || !s.SkipArgumentValidation {
		t.Fatalf("parsed = %+v", s)
	}
	_, err = Parse("n.json", []byte(`{"mcpServers": {"s": {"command": "x", "maxConcurrentCalls": -1}}}`))
	if err == nil || !strings.Contains(err.Error(), `field "maxConcurrentCalls": must not be negative`) {
		t.Fatalf("negative maxConcurrentCalls: %v", err)
	}
}

func TestParseYAMLLines(t *testing.T) {
	t.Parallel()
	_, err := Parse("c.yaml", []byte("mcpServers:\n  ok:\n    command: x\n  bad:\n    url: ftp://nope\n    callTimeout: soon\n"))
	msg := fmt.Sprint(err)
	for _, want := range []string{`c.yaml:5: server "bad": field "url"`, `c.yaml:6: server "bad": field "callTimeout": "soon" is not a duration`} {
		if !strings.Contains(msg, want) {
			t.Errorf("YAML problems lack %q:\n%s", want, msg)
		}
	}
}

func TestParseSecretReferences(t *testing.T) {
	t.Setenv("TEST_TOKEN_X", "tok-123456")
	c, err := Parse("s.json", []byte(`{"mcpServers": {"s": {"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${TEST_TOKEN_X}", "X-Literal": "$${NOT_A_REF}"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Bridge.Servers[0]
	if s.Headers["Authorization"] != "Bearer tok-123456" || s.Headers["X-Literal"] != "${NOT_A_REF}" {
		t.Fatalf("headers = %v", s.Headers)
	}
	_, err = Parse("s.json", []byte(`{"mcpServers": {"s": {"command": "x", "env": {"A": "${NOPE_NOT_SET_X}", "B": "${file:/nonexistent/x}", "C": "${bad ref}"}}}}`))
	msg := fmt.Sprint(err)
	for _, want := range []string{`field "env.A": ${NOPE_NOT_SET_X}: environment variable is not set`, `field "env.B": ${file:/nonexistent/x}: cannot read the file`, `field "env.C"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("problems lack %q:\n%s", want, msg)
		}
	}
}

// FuzzParse: the loader never panics, and whatever it accepts passes the
// bridge's own validation.
func FuzzParse(f *testing.F) {
	f.Add("c.json", []byte(`{"mcpServers": {"a": {"command": "x", "args": ["1"], "env": {"K": "v"}}}}`))
	f.Add("c.json", []byte(`{"servers": {"b": {"type": "http", "url": "http://h/mcp", "headers": {"A": "${HOME}"}}}}`))
	f.Add("c.yaml", []byte("mcpServers:\n  a:\n    command: x\n    tools: {allow: ['a*']}\n"))
	f.Add("c.json", []byte(`{"mcpServers": {"a__b": {"url": 3}}, "callTimeout": "x"}`))
	f.Add("c.json", []byte(`{"auth": {"tokens": {"a": "0123456789abcdef"}, "rateLimits": [{"principal": "a*", "callsPerSecond": 0.5, "burst": 2}, {"principal": "[", "maxConcurrent": -1}]}, "mcpServers": {"x": {"command": "x"}}}`))
	f.Add("c.yaml", []byte("auth:\n  tokens: {a: '0123456789abcdef'}\n  rateLimits:\n    - {principal: p, maxConcurrent: 1}\n    - burst: 2\nmcpServers:\n  x: {command: x}\n"))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		c, err := Parse(name, data)
		if err != nil {
			var probs Problems
			if errors.As(err, &probs) {
				for _, p := range probs {
					if p.Line < 0 {
						t.Fatalf("problem with a negative line: %v", p)
					}
				}
			}
			return
		}
		if c.Auth != nil {
			for _, r := range c.Auth.RateLimits {
				if _, err := path.Match(r.Principal, ""); err != nil || r.Principal == "" || r.CallsPerSecond < 0 || r.Burst < 0 ||
					r.MaxConcurrent < 0 || (r.CallsPerSecond == 0 && r.MaxConcurrent == 0) || (r.Burst > 0 && r.CallsPerSecond == 0) {
					t.Fatalf("Parse accepted a rate limit the limiter cannot use: %+v", r)
				}
			}
		}
		for _, s := range c.Bridge.Servers {
			if err := s.Validate(); err != nil {
				t.Fatalf("Parse accepted a server the bridge rejects: %v", err)
			}
		}
	})
}

// TestParseRateLimits: auth.rateLimits parses, and each bad rule is
// reported with the line of its own list element, in JSON and YAML.
func TestParseRateLimits(t *testing.T) {
	t.Parallel()
	good := []byte(`{"auth": {"tokens": {"a": "0123456789abcdef"},
  "rateLimits": [{"principal": "agent-*", "callsPerSecond": 5, "burst": 10, "maxConcurrent": 4}, {"principal": "*", "maxConcurrent": 2}]},
  "mcpServers": {"x": {"command": "x"}}}`)
	c, err := Parse("ok.json", good)
	if err != nil {
		t.Fatal(err)
	}
	want := []RateLimit{{Principal: "agent-*", CallsPerSecond: 5, Burst: 10, MaxConcurrent: 4}, {Principal: "*", MaxConcurrent: 2}}
	if !slices.Equal(c.Auth.RateLimits, want) {
		t.Errorf("rateLimits = %+v, want %+v", c.Auth.RateLimits, want)
	}
	bad := []byte(`{
  "auth": {
    "tokens": {"a": "0123456789abcdef"},
    "rateLimits": [
      {"principal": "ok", "callsPerSecond": 1},
      {"callsPerSecond": 1},
      {"principal": "[", "maxConcurrent": 1},
      {"principal": "p", "callsPerSecond": -1},
      {"principal": "p", "burst": 3},
      {"principal": "p", "callsPerSecond": 1, "maxConcurrent": -2},
      {"principal": "p"}
    ]
  },
  "mcpServers": {"x": {"command": "x"}}
}`)
	_, err = Parse("bad.json", bad)
	var probs Problems
	if !errors.As(err, &probs) {
		t.Fatalf("Parse = %v, want Problems", err)
	}
	msg := err.Error()
	for _, w := range []string{
		`bad.json:6: field "auth.rateLimits[1].principal": required`,
		`bad.json:7: field "auth.rateLimits[2].principal": "[" is not a valid glob pattern`,
		`bad.json:8: field "auth.rateLimits[3].callsPerSecond": must be a positive number`,
		`bad.json:9: field "auth.rateLimits[4].burst": needs callsPerSecond`,
		`bad.json:10: field "auth.rateLimits[5].maxConcurrent": must be positive`,
		`bad.json:11: field "auth.rateLimits[6]": limits nothing`,
	} {
		if !strings.Contains(msg, w) {
			t.Errorf("problems lack %q:\n%s", w, msg)
		}
	}
	if len(probs) != 6 {
		t.Errorf("%d problems, want 6:\n%s", len(probs), msg)
	}
	_, err = Parse("c.yaml", []byte("auth:\n  tokens: {a: \"0123456789abcdef\"}\n  rateLimits:\n    - principal: ok\n      maxConcurrent: 1\n    - principal: p\n      burst: 2\nmcpServers:\n  x: {command: x}\n"))
	if w := `c.yaml:6: field "auth.rateLimits[1].burst": needs callsPerSecond`; !strings.Contains(fmt.Sprint(err), w) {
		t.Errorf("YAML problems lack %q:\n%v", w, err)
	}
	// Unknown keys in a rule are errors, like every auth key.
	_, err = Parse("u.json", []byte(`{"auth": {"tokens": {"a": "0123456789abcdef"}, "rateLimits": [{"principal": "p", "rps": 1}]}, "mcpServers": {"x": {"command": "x"}}}`))
	if !strings.Contains(fmt.Sprint(err), `unknown field "rps"`) {
		t.Errorf("unknown rateLimits key: %v", err)
	}
}

func TestParseBareNames(t *testing.T) {
	t.Parallel()
	c, err := Parse("b.json", []byte(`{"mcpServers": {"main": {"command": "x", "bareNames": true}, "p": {"command": "y"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Bridge.Servers {
		if s.BareNames != (s.Name == "main") {
			t.Fatalf("server %q: bareNames = %v", s.Name, s.BareNames)
		}
	}
	_, err = Parse("b.json", []byte(`{"mcpServers": {"main": {"command": "x", "bareNames": true, "namePrefix": "m"}}}`))
	if err == nil || !strings.Contains(err.Error(), `server "main": field "bareNames": cannot be combined with namePrefix "m"`) {
		t.Fatalf("bareNames with namePrefix: %v", err)
	}
	_, err = Parse("b.json", []byte(`{"mcpServers": {"main": {"command": "x", "bareNames": "yes"}}}`))
	if err == nil || !strings.Contains(err.Error(), `field "bareNames"`) {
		t.Fatalf("bareNames \"yes\": %v", err)
	}
}

// TestServerNameCharacters: a server name or namePrefix outside the MCP
// tool-name characters is refused with the field named, and the problem
// text carries the name escaped, never a raw control character.
func TestServerNameCharacters(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ file, data, want string }{
		{"c.json", `{"mcpServers": {"a\u001b[2Jb": {"command": "x"}}}`, `server "a\x1b[2Jb": field "name": server name "a\x1b[2Jb" has characters outside [A-Za-z0-9_.-]`},
		{"c.json", `{"mcpServers": {"my server": {"command": "x"}}}`, `server "my server": field "name"`},
		{"c.yaml", "mcpServers:\n  \"a\\x07b\":\n    command: x\n", `c.yaml:2: server "a\ab": field "name"`},
		{"c.json", `{"mcpServers": {"ok": {"command": "x", "namePrefix": "p\u009b31m"}}}`, `server "ok": field "namePrefix": "p\u009b31m" must match`},
	} {
		_, err := Parse(c.file, []byte(c.data))
		msg := fmt.Sprint(err)
		if !strings.Contains(msg, c.want) {
			t.Errorf("Parse(%s) = %s\nwant %s", c.data, msg, c.want)
		}
		if strings.ContainsFunc(msg, func(r rune) bool { return r != '\n' && (r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0)) }) {
			t.Errorf("Parse(%s) problem holds a raw control character: %q", c.data, msg)
		}
	}
	c, err := Parse("c.json", []byte(`{"mcpServers": {"github.com": {"command": "x"}, "My-Server_2": {"command": "y"}}}`))
	if err != nil || len(c.Bridge.Servers) != 2 {
		t.Fatalf("Parse(valid names) = %v", err)
	}
}

// TestParseRefusesDuplicateJSONKeys: a key repeated in one JSON object (a
// second server of the same name, a repeated field, token or header) is
// refused like YAML refuses it, naming the key and both lines, instead of
// the last one silently winning.
func TestParseRefusesDuplicateJSONKeys(t *testing.T) {
	t.Parallel()
	data := []byte(`{
  "mcpServers": {
    "github": {"command": "gh-mcp"},
    "github": {"command": "evil"},
    "s": {"command": "x",
      "headers": {"A": "1", "A": "2"},
      "command": "y"}
  },
  "auth": {"tokens": {"a": "0123456789abcdef",
    "a": "fedcba9876543210"}, "rules": [{"principal": "p", "allow": [], "principal": "q"}]}
}`)
	_, err := Parse("d.json", data)
	var probs Problems
	if !errors.As(err, &probs) {
		t.Fatalf("Parse = %v, want Problems", err)
	}
	msg := err.Error()
	for _, want := range []string{
		`d.json:4: server "github": duplicate key "github" (first at line 3)`,
		`d.json:6: server "s": field "headers.A": duplicate key "A" (first at line 6)`,
		`d.json:7: server "s": field "command": duplicate key "command" (first at line 5)`,
		`d.json:10: field "auth.tokens.a": duplicate key "a" (first at line 9)`,
		`d.json:10: field "auth.rules[0].principal": duplicate key "principal" (first at line 10)`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("problems lack %q:\n%s", want, msg)
		}
	}
	if len(probs) != 5 {
		t.Errorf("%d problems, want 5:\n%s", len(probs), msg)
	}
	// The YAML loader already refuses them.
	if _, err := Parse("d.yaml", []byte("mcpServers:\n  a: {command: x}\n  a: {command: y}\n")); err == nil || !strings.Contains(err.Error(), "already defined") {
		t.Errorf("YAML duplicate = %v", err)
	}
	// Deep nesting is walked without recursion.
	deep := `{"mcpServers": {"s": {"command": "x", "env": {}}}, "x": ` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`
	if _, err := Parse("deep.json", []byte(deep)); err == nil || !strings.Contains(err.Error(), "exceeded max depth") {
		t.Errorf("Parse(100,000 nested arrays) = %v, want the decoder's depth refusal", err)
	}
}

// TestParseRefusesTokensWithWhitespace: a static auth token with leading or
// trailing whitespace (a stray space in the file, a "\t" from a secret file)
// is refused with its field named and without its value; the bearer header
// a client sends could never carry it.
func TestParseRefusesTokensWithWhitespace(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(file, []byte("file-token-0123456789 \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOOLSVC_TEST_WS_TOKEN", "\tenv-token-0123456789")
	data := fmt.Sprintf(`{"auth": {"tokens": {"lead": " lead-token-0123456789", "trail": "trail-token-0123456789 ",
		"env": "${TOOLSVC_TEST_WS_TOKEN}", "file": "${file:%s}", "ok": "ok-token-0123456789"}}, "mcpServers": {"x": {"command": "x"}}}`, file)
	_, err := Parse("t.json", []byte(data))
	var probs Problems
	if !errors.As(err, &probs) || len(probs) != 4 {
		t.Fatalf("Parse = %v, want 4 problems", err)
	}
	msg := err.Error()
	for _, name := range []string{"lead", "trail", "env", "file"} {
		if want := fmt.Sprintf(`field "auth.tokens.%s": has leading or trailing whitespace`, name); !strings.Contains(msg, want) {
			t.Errorf("problems lack %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "token-0123456789") {
		t.Errorf("a token value is in the problems:\n%s", msg)
	}
}

// TestParseDeepNestingIsBounded: a configuration of nested brackets as deep
// as a 4 MiB file allows is refused without the duplicate-key scan holding a
// frame per level (it stops at encoding/json's own depth limit, which then
// refuses the document).
func TestParseDeepNestingIsBounded(t *testing.T) {
	data := []byte(`{"mcpServers":` + strings.Repeat("[", 4<<20))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Parse("deep.json", data)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("Parse accepted 4 Mi nested arrays")
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 256<<20 {
		t.Fatalf("Parse allocated %d MiB for a 4 MiB file", grew>>20)
	}
}

// TestSearchAliases: a server's searchAliases reach the bridge's config;
// each bound is a problem naming the field.
func TestSearchAliases(t *testing.T) {
	cfg, err := Parse("c.json", []byte(`{"mcpServers": {"s": {"command": "x", "searchAliases": {"take_screenshot": ["grab an image of the page", "snapshot"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Bridge.Servers[0].SearchAliases["take_screenshot"]; len(got) != 2 || got[1] != "snapshot" {
		t.Errorf("SearchAliases = %v", cfg.Bridge.Servers[0].SearchAliases)
	}
	long := strings.Repeat("x", MaxAliasBytes+1)
	many := `"a"` + strings.Repeat(`, "a"`, MaxAliasesPerTool)
	for _, tc := range []struct{ aliases, want string }{
		{`{"t": []}`, `field "searchAliases.t": want at least one alias`},
		{`{"t": ["ok", " "]}`, `field "searchAliases.t[1]": empty`},
		{`{"t": ["` + long + `"]}`, `field "searchAliases.t[0]": longer than 256 bytes`},
		{`{"t": [` + many + `]}`, `field "searchAliases.t": 17 aliases, at most 16`},
		{`{"": ["a"]}`, `field "searchAliases": a tool name is empty`},
		{`{"t": "a"}`, `field "searchAliases"`},
	} {
		_, err := Parse("c.json", []byte(`{"mcpServers": {"s": {"command": "x", "searchAliases": `+tc.aliases+`}}}`))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("searchAliases %.40s: %v, want %q", tc.aliases, err, tc.want)
		}
	}
}

// TestParseGRPCServers: "type": "grpc" reaches an upstream serving the MCP
// gRPC binding at a grpc:// or grpcs:// url, with oauth on grpcs:// or a
// loopback grpc:// target; another scheme, a missing url, oauth without
// tokenUrl or over plaintext to another host, or per-user credentials are
// refused with the field named.
func TestParseGRPCServers(t *testing.T) {
	t.Parallel()
	c, err := Parse("g.json", []byte(`{"mcpServers": {"g": {"type": "grpc", "url": "grpcs://h:443", "headers": {"Authorization": "Bearer t"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Bridge.Servers[0]; s.Transport != mcpbridge.TransportGRPC || s.URL != "grpcs://h:443" || s.Headers["Authorization"] != "Bearer t" {
		t.Fatalf("server = %+v", s)
	}
	for _, ok := range []string{`"grpcs://h:443"`, `"grpc://127.0.0.1:9"`, `"grpc://localhost:9"`, `"grpc://[::1]:9"`} {
		if _, err := Parse("g.json", []byte(`{"mcpServers": {"g": {"type": "grpc", "url": `+ok+`, "oauth": {"clientId": "c", "clientSecret": "s", "tokenUrl": "https://as/token"}}}}`)); err != nil {
			t.Errorf("oauth on %s: %v", ok, err)
		}
	}
	for _, tc := range []struct{ conf, want string }{
		{`{"type": "grpc", "url": "http://h:1"}`, `field "url": want a grpc:// (plaintext) or grpcs:// (TLS) target`},
		{`{"type": "grpc"}`, `field "url": required for a gRPC server`},
		{`{"type": "grpc", "url": "grpc://h:1", "oauth": {"clientId": "c", "clientSecret": "s", "tokenUrl": "https://as/token"}}`, `field "oauth": needs a grpcs:// url: a token is sent over plaintext only to a loopback target`},
		{`{"type": "grpc", "url": "grpcs://h:1", "oauth": {"clientId": "c", "clientSecret": "s"}}`, `field "oauth.tokenUrl": required for a "type": "grpc" server`},
		{`{"type": "grpc", "url": "grpcs://h:1", "headers": {"Authorization": "Bearer t"}, "oauth": {"clientId": "c", "clientSecret": "s", "tokenUrl": "https://as/token"}}`, `field "oauth": set either oauth or an Authorization header, not both`},
		{`{"type": "grpc", "url": "grpc://h:1", "credentials": {"mode": "passthrough", "audience": "a"}}`, `field "credentials.mode": "passthrough" is only for streamable HTTP servers`},
	} {
		_, err := Parse("g.json", []byte(`{"mcpServers": {"g": `+tc.conf+`}}`))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.conf, err, tc.want)
		}
	}
}
