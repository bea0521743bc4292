package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDocErrorReasons checks that every ErrorInfo reason the core and the
// front door can send (the string constants named Reason… or reason… in
// service/core and service/mcpfront) is in docs/errors.md, so a caller
// meeting one finds what it means.
func TestDocErrorReasons(t *testing.T) {
	doc, err := os.ReadFile("../../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, dir := range []string{"../../service/core", "../../service/mcpfront"} {
		for name, r := range reasonConstants(t, dir) {
			reasons[name] = r
		}
	}
	// The core alone has more than 30: fewer means the parse missed them.
	if len(reasons) < 30 {
		t.Fatalf("found only %d reason constants: %v", len(reasons), reasons)
	}
	for name, r := range reasons {
		if !strings.Contains(string(doc), "`"+r+"`") {
			t.Errorf("docs/errors.md does not document %s (%s)", r, name)
		}
	}
}

// A reason as callers see it: upper case and underscores.
var reasonValue = regexp.MustCompile(`^[A-Z][A-Z_]+$`)

// reasonConstants returns the reason constants of the package in dir, by
// name (file:name), parsed from its non-test sources.
func reasonConstants(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Reason") && !strings.HasPrefix(n.Name, "reason") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err == nil && reasonValue.MatchString(v) {
						out[filepath.Base(f)+":"+n.Name] = v
					}
				}
			}
		}
	}
	return out
}
