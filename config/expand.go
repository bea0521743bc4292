package config

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/toolsvc/toolsvc/internal/boundedfile"
)

// MaxFileRefSize is the largest file a ${file:} reference reads: 1 MiB.
// Secrets are tokens, keys and certificates (a 4096-bit RSA key in PEM is
// about 3 KiB, a public CA bundle about 220 KiB), so the cap leaves room for
// any of them while bounding what one reference can cost. The file is read
// through the limit, never read whole and checked afterwards.
const MaxFileRefSize = 1 << 20

// MaxResolvedBytes bounds what the ${ENV} and ${file:} references of one
// configuration file resolve to in total: 16 MiB. Without it, one 1 MiB file
// referenced ten thousand times would need 10 GB.
const MaxResolvedBytes = 16 << 20

// errOverBudget is reported when a file's references resolve to more than
// MaxResolvedBytes.
var errOverBudget = fmt.Errorf("the references of this configuration resolve to more than %d MiB in total (the limit)", MaxResolvedBytes>>20)

// refPattern matches ${NAME} and ${file:/path}; $${ is a literal ${.
var refPattern = regexp.MustCompile(`\$\$\{|\$\{([^}]*)\}`)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// expander resolves secret references in string values and remembers every
// resolved value, so that they can be redacted wherever they might appear.
type expander struct {
	lookupEnv func(string) (string, bool)
	readFile  func(string) ([]byte, error)
	secrets   map[string]bool
	refs      *resolved
}

// resolved is what the references of one configuration file resolved to,
// shared by every expander of one Parse.
type resolved struct {
	// budget is what the references may still add (MaxResolvedBytes).
	budget int
	// values are the strings that held references and the references
	// themselves, as written and as resolved, for redacting problem texts.
	values []resolution
}

// resolution is a string as written (with ${…}) and as resolved.
type resolution struct{ written, value string }

func newResolved() *resolved { return &resolved{budget: MaxResolvedBytes} }

func newExpander(refs *resolved) *expander {
	return &expander{lookupEnv: os.LookupEnv, readFile: readRefFile, secrets: map[string]bool{}, refs: refs}
}

// redact replaces every resolved value in a problem's text by where it came
// from ("the value from ${TIMEOUT}"): a value resolved into a wrongly typed
// field must not be printed ("<the secret>" is not a duration). Quoted forms
// (as %q and JSON print them) are replaced whatever their length; bare
// occurrences from 4 characters on, like the log redaction (shorter ones
// would match ordinary words).
func (r *resolved) redact(msg string) string {
	vals := slices.Clone(r.values)
	// Longest first: a whole string before the references inside it.
	slices.SortStableFunc(vals, func(a, b resolution) int { return len(b.value) - len(a.value) })
	for _, v := range vals {
		if v.value == "" {
			continue
		}
		from := v.written
		if !refPattern.MatchString(from) || refPattern.FindString(from) != from {
			from = strconv.Quote(from)
		}
		with := "the value from " + from
		js, _ := json.Marshal(v.value)
		msg = strings.ReplaceAll(msg, strconv.Quote(v.value), with)
		msg = strings.ReplaceAll(msg, string(js), with)
		if len(v.value) >= 4 {
			msg = strings.ReplaceAll(msg, v.value, with)
		}
	}
	return msg
}

// MaxConfigFileSize is the largest configuration file, and file it names
// (a JWKS, a tokens file), that toolsvc reads: 16 MiB, far above any real
// one; the configuration file is trusted, but a path that points at a
// device by mistake must not exhaust memory or hang a reload.
const MaxConfigFileSize = 16 << 20

// ReadFile reads a configuration file, or a file it names (jwt.jwksFile,
// auth.tokensFile), with the rules of ${file:} (readRefFile) and a limit of
// MaxConfigFileSize bytes.
func ReadFile(name string) ([]byte, error) {
	b, err := readBounded(name, MaxConfigFileSize, "a configuration file")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return b, nil
}

// readRefFile reads the file of a ${file:} reference: a regular file (after
// following symlinks, as Kubernetes secret mounts are) of at most
// MaxFileRefSize bytes (readBounded).
func readRefFile(name string) ([]byte, error) {
	return readBounded(name, MaxFileRefSize, "${file:}")
}

// readBounded reads a regular file of at most limit bytes, through a limit
// (boundedfile.Read: the rules every file toolsvc reads follows). what
// names the reader in refusals.
func readBounded(name string, limit int64, what string) ([]byte, error) {
	b, _, err := boundedfile.Read(name, limit, what)
	return b, err
}

// expandString resolves the references in s.
func (e *expander) expandString(s string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var firstErr error
	hadRef := false
	out := refPattern.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$${" {
			return "${"
		}
		ref := m[2 : len(m)-1]
		hadRef = true
		var v string
		switch {
		case strings.HasPrefix(ref, "file:"):
			path := strings.TrimPrefix(ref, "file:")
			b, err := e.readFile(path)
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("${file:%s}: %w", path, err)
				}
				return ""
			}
			v = strings.TrimRight(string(b), "\r\n")
		case envName.MatchString(ref):
			val, ok := e.lookupEnv(ref)
			if !ok {
				if firstErr == nil {
					firstErr = fmt.Errorf("${%s}: environment variable is not set", ref)
				}
				return ""
			}
			v = val
		default:
			if firstErr == nil {
				firstErr = fmt.Errorf("%q: want ${ENV_VAR} or ${file:/path} (write $${ for a literal ${)", m)
			}
			return ""
		}
		if e.refs.budget < len(v) {
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", m, errOverBudget)
			}
			return ""
		}
		e.refs.budget -= len(v)
		e.refs.values = append(e.refs.values, resolution{m, v})
		if len(v) >= 4 {
			e.secrets[v] = true
		}
		return v
	})
	if hadRef {
		e.refs.values = append(e.refs.values, resolution{s, out})
	}
	return out, firstErr
}

// expand walks a decoded JSON value and resolves references in every
// string (keys stay as written). It reports each failure with its path.
func (e *expander) expand(v any, path string, report func(path string, err error)) any {
	switch v := v.(type) {
	case string:
		out, err := e.expandString(v)
		if err != nil {
			report(path, err)
		}
		return out
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			v[k] = e.expand(v[k], p, report)
		}
		return v
	case []any:
		for i := range v {
			v[i] = e.expand(v[i], fmt.Sprintf("%s[%d]", path, i), report)
		}
		return v
	}
	return v
}

func (e *expander) values() []string {
	out := make([]string, 0, len(e.secrets))
	for v := range e.secrets {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}
