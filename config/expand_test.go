package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFileReferenceRefusesNonRegularFiles: ${file:} reads regular files of
// at most MaxFileRefSize bytes; devices, FIFOs, directories, /proc files and
// oversized files are refused at once (never read whole, never waited on),
// each problem naming the file, the server, the field and its line.
func TestFileReferenceRefusesNonRegularFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, MaxFileRefSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link-to-zero")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, path, want string }{
		{"dev-zero", "/dev/zero", "not a regular file"},
		{"symlink-to-dev-zero", link, "not a regular file"},
		{"dev-stdin", "/dev/stdin", "not a regular file"},
		{"fifo", fifo, "not a regular file"},
		{"directory", dir, "not a regular file"},
		{"proc-environ", "/proc/self/environ", "pseudo-file"},
		{"sys-file", "/sys/kernel/mm/transparent_hugepage/enabled", "pseudo-file"},
		{"oversized", big, "larger than the 1 MiB limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := os.Stat(c.path); err != nil {
				t.Skipf("%s: %v", c.path, err)
			}
			data := fmt.Sprintf("{\"mcpServers\": {\n  \"s\": {\"command\": \"x\",\n    \"env\": {\"TOKEN\": \"${file:%s}\"}}}}", c.path)
			_, err := Parse("c.json", []byte(data))
			var probs Problems
			if !errors.As(err, &probs) || len(probs) != 1 {
				t.Fatalf("Parse(${file:%s}) = %v, want one problem", c.path, err)
			}
			want := fmt.Sprintf(`c.json:3: server "s": field "env.TOKEN": ${file:%s}: `, c.path)
			if msg := probs[0].Error(); !strings.HasPrefix(msg, want) || !strings.Contains(msg, c.want) {
				t.Errorf("problem = %q, want it to start %q and say %q", msg, want, c.want)
			}
		})
	}
}

// TestFileReferenceReadsRegularFiles: a regular file up to the limit,
// through a symlink (how Kubernetes mounts secrets), resolves as before:
// its trailing newline trimmed.
func TestFileReferenceReadsRegularFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("tok-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "current")
	if err := os.Symlink(tok, link); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(dir, "full")
	if err := os.WriteFile(full, []byte(strings.Repeat("a", MaxFileRefSize)), 0o600); err != nil {
		t.Fatal(err)
	}
	data := fmt.Sprintf(`{"mcpServers": {"s": {"command": "x", "env": {"A": "${file:%s}", "B": "${file:%s}"}}}}`, link, full)
	c, err := Parse("c.json", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	env := c.Bridge.Servers[0].Env
	if env["A"] != "tok-0123456789" || len(env["B"]) != MaxFileRefSize {
		t.Errorf("env = A %q, B %d bytes; want the token and %d bytes", env["A"], len(env["B"]), MaxFileRefSize)
	}
}

// TestReferencesBoundedInTotal: one file referenced many times cannot make
// a configuration resolve to more than MaxResolvedBytes.
func TestReferencesBoundedInTotal(t *testing.T) {
	t.Parallel()
	full := filepath.Join(t.TempDir(), "full")
	if err := os.WriteFile(full, []byte(strings.Repeat("a", MaxFileRefSize)), 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	for i := range MaxResolvedBytes/MaxFileRefSize + 1 {
		env = append(env, fmt.Sprintf(`"V%d": "${file:%s}"`, i, full))
	}
	data := fmt.Sprintf(`{"mcpServers": {"s": {"command": "x", "env": {%s}}}}`, strings.Join(env, ", "))
	_, err := Parse("c.json", []byte(data))
	if err == nil || !strings.Contains(err.Error(), "more than 16 MiB in total") {
		t.Fatalf("Parse(%d references to a 1 MiB file) = %v, want the total refused", len(env), err)
	}
}

// TestNoResolvedValueInProblems: a value resolved from ${ENV} or ${file:}
// into a field of the wrong type or form is never printed in the problem;
// the problem names the field and the reference instead. One case per kind
// of typed field: durations, numbers, booleans, enums, URLs, names, globs.
func TestNoResolvedValueInProblems(t *testing.T) {
	const secret = "Sekr1t-V4lue-9c1e"
	t.Setenv("TOOLSVC_TEST_TYPED", secret)
	file := filepath.Join(t.TempDir(), "typed")
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOOLSVC_TEST_DUR", "100ms")
	for _, ref := range []string{"${TOOLSVC_TEST_TYPED}", "${file:" + file + "}"} {
		for _, c := range []struct {
			kind, server, field, want string
		}{
			{"duration", `{"command": "x", "callTimeout": "REF"}`, "callTimeout", "the value from REF is not a duration"},
			{"nested duration", `{"command": "x", "breaker": {"cooldown": "REF"}}`, "breaker", "the value from REF is not a duration"},
			{"number", `{"command": "x", "pingFailures": "REF"}`, "pingFailures", "want int"},
			{"boolean", `{"command": "x", "bareNames": "REF"}`, "bareNames", "want bool"},
			{"enum type", `{"type": "REF", "url": "http://h/mcp"}`, "type", "the value from REF is not supported"},
			{"enum elicitation", `{"command": "x", "elicitation": "REF"}`, "elicitation", "got the value from REF"},
			{"enum protocolVersion", `{"command": "x", "protocolVersion": "REF"}`, "protocolVersion", "got the value from REF"},
			{"enum oauth.grant", `{"url": "http://h/mcp", "oauth": {"grant": "REF", "clientId": "c"}}`, "oauth.grant", "got the value from REF"},
			{"URL", `{"type": "http", "url": "REF"}`, "url", "want an http:// or https:// URL"},
			{"URL with a reference inside", `{"type": "http", "url": "ftp://REF@h/mcp"}`, "url", "want an http:// or https:// URL"},
			{"name prefix", `{"command": "x", "namePrefix": "REF!"}`, "namePrefix", `the value from "REF!" must match`},
			{"glob", `{"command": "x", "tools": {"deny": ["[REF"]}}`, "tools.deny[0]", `the value from "[REF" is not a valid glob pattern`},
		} {
			t.Run(c.kind+" "+ref[:5], func(t *testing.T) {
				data := fmt.Sprintf(`{"mcpServers": {"s": %s}}`, strings.ReplaceAll(c.server, "REF", ref))
				_, err := Parse("c.json", []byte(data))
				if err == nil {
					t.Fatalf("Parse(%s) = nil, want a problem", data)
				}
				msg := err.Error()
				if strings.Contains(msg, secret) {
					t.Fatalf("the resolved value is in the problem: %s", msg)
				}
				if want := strings.ReplaceAll(c.want, "REF", ref); !strings.Contains(msg, fmt.Sprintf(`field %q: `, c.field)) || !strings.Contains(msg, want) {
					t.Errorf("problem = %s\nwant it to name field %q and say %q", msg, c.field, want)
				}
			})
		}
	}
	// A duration compared with another is printed as parsed: still redacted.
	_, err := Parse("c.json", []byte(`{"mcpServers": {"s": {"command": "x", "backoff": {"base": "250ms", "max": "${TOOLSVC_TEST_DUR}"}}}}`))
	if msg := fmt.Sprint(err); !strings.Contains(msg, `field "backoff.max": must be at least backoff.base (250ms), got the value from ${TOOLSVC_TEST_DUR}`) {
		t.Errorf("backoff problem = %s", msg)
	}
	// The auth section: globs over principals.
	_, err = Parse("c.json", []byte(`{"auth": {"tokens": {"a": "0123456789abcdef"}, "rules": [{"principal": "[${TOOLSVC_TEST_TYPED}"}],
		"rateLimits": [{"principal": "[${TOOLSVC_TEST_TYPED}", "maxConcurrent": 1}]}, "mcpServers": {"x": {"command": "x"}}}`))
	if msg := fmt.Sprint(err); strings.Contains(msg, secret) || !strings.Contains(msg, `field "auth.rateLimits[0].principal": the value from "[${TOOLSVC_TEST_TYPED}"`) {
		t.Errorf("auth problems = %s", msg)
	}
}

// TestLoadRefusesNonRegularFiles: the configuration file itself (Load, and
// the serve and reload paths, which use ReadFile) is read with the rules of
// ${file:} and a 16 MiB limit: a config path that points at a device or a
// FIFO by mistake is refused at once, never read whole or waited on.
func TestLoadRefusesNonRegularFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, MaxConfigFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "config.json")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{link, "not a regular file"},
		{fifo, "not a regular file"},
		{"/proc/self/environ", "pseudo-file"},
		{big, "larger than the 16 MiB limit of a configuration file"},
	} {
		_, err := Load(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("Load(%s) = %v, want a refusal naming the file and saying %q", c.path, err, c.want)
		}
	}
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`{"mcpServers": {"s": {"command": "x"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(good); err != nil {
		t.Errorf("Load(a regular config) = %v", err)
	}
}
