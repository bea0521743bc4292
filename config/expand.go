package config

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// refPattern matches ${NAME} and ${file:/path}; $${ is a literal ${.
var refPattern = regexp.MustCompile(`\$\$\{|\$\{([^}]*)\}`)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// expander resolves secret references in string values and remembers every
// resolved value, so that they can be redacted wherever they might appear.
type expander struct {
	lookupEnv func(string) (string, bool)
	readFile  func(string) ([]byte, error)
	secrets   map[string]bool
}

func newExpander() *expander {
	return &expander{lookupEnv: os.LookupEnv, readFile: os.ReadFile, secrets: map[string]bool{}}
}

// expandString resolves the references in s.
func (e *expander) expandString(s string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var firstErr error
	out := refPattern.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$${" {
			return "${"
		}
		ref := m[2 : len(m)-1]
		var v string
		switch {
		case strings.HasPrefix(ref, "file:"):
			path := strings.TrimPrefix(ref, "file:")
			b, err := e.readFile(path)
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("${file:%s}: cannot read the file: %v", path, unwrapPathError(err))
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
		if len(v) >= 4 {
			e.secrets[v] = true
		}
		return v
	})
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

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
