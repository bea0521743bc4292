package tests

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestHostileInputSchema: a real go-sdk upstream (tests/testserver over
// stdio, its add_tool) serves tools whose inputSchema reaches itself
// without descending into the arguments, and one legitimate recursive
// (tree) schema. Before the schema check the first call to any of the
// hostile ones ended toolsvc with a fatal stack overflow in jsonschema-go.
// Now each is detected before it is evaluated: a warning names the server
// and tool, the call is forwarded unvalidated (the rule for every schema
// toolsvc cannot use), and toolsvc stays up; the tree schema still
// validates.
func TestHostileInputSchema(t *testing.T) {
	p := startToolsvc(t, fmt.Sprintf(`{"mcpServers": {"up": %s}}`, stdioServer(`"refreshInterval": "1h"`)))
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	// The upstream is go-sdk: a tool's inputSchema must have type object.
	hostile := map[string]string{
		"ref_root":    `{"type": "object", "$ref": "#"}`,
		"defs_loop":   `{"type": "object", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}`,
		"prop_loop":   `{"type": "object", "$defs": {"a": {"$ref": "#/$defs/a"}}, "properties": {"x": {"$ref": "#/$defs/a"}}}`,
		"allof_root":  `{"type": "object", "allOf": [{"$ref": "#"}]}`,
		"anchor_loop": `{"type": "object", "$defs": {"a": {"$anchor": "A", "anyOf": [{"$ref": "#A"}]}}, "$ref": "#A"}`,
	}
	const tree = `{"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#"}}}}`
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range hostile {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range names {
		callJSON(t, ctx, p.client, "up__add_tool", fmt.Sprintf(`{"name": %q, "schema": %q}`, n, hostile[n]))
	}
	callJSON(t, ctx, p.client, "up__add_tool", fmt.Sprintf(`{"name": "tree", "schema": %q}`, tree))
	eventually(t, 20*time.Second, "the added tools in the catalog", func() bool {
		tools, _ := listAll(t, ctx, p.client, 0)
		for _, n := range append(names, "tree") {
			if !hasTool(tools, "up__"+n) {
				return false
			}
		}
		return true
	})

	for _, n := range names {
		tool := "up__" + n
		// Twice: the second call takes the cached (refused) schema.
		for range 2 {
			res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: `{"x": 1}`})
			if err != nil {
				t.Fatalf("%s: %v (toolsvc alive: %v)", tool, err, running(p))
			}
			if got := resultText(res); got != n+" ok" {
				t.Errorf("%s answered %q, want the upstream's %q", tool, got, n+" ok")
			}
		}
		p.log.waitFor(t, regexp.MustCompile(`level=WARN msg="inputSchema not used.*server=up tool=`+tool+` why="inputSchema cannot be evaluated safely: its subschemas refer to each other`), 5*time.Second)
	}

	// The legitimate recursive schema validates at every depth.
	res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__tree", ArgumentsJson: `{"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}`})
	if err != nil || resultText(res) != "tree ok" {
		t.Fatalf("valid tree arguments: %v, %v", res, err)
	}
	_, err = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__tree", ArgumentsJson: `{"children": [{"children": [{"name": 7}]}]}`})
	wantStatus(t, err, codes.InvalidArgument, "ARGUMENTS_INVALID", "up", "up__tree")
	// The path stops at the array whose items schema is a reference (locate
	// cannot compile it alone to find the failing element).
	if got := fieldViolations(err); len(got) != 1 || !strings.HasPrefix(got[0], "arguments_json.children[") {
		t.Errorf("tree violation names %q", got)
	}
	if strings.Contains(p.log.String(), "stack overflow") || !running(p) {
		t.Fatalf("toolsvc died")
	}
}

// running reports whether toolsvc is still running.
func running(p *toolsvcProc) bool {
	select {
	case <-p.exited():
		return false
	default:
		return true
	}
}
