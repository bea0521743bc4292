package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

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
	t.Parallel()
	p := startToolsvc(t, cfg{Servers: servers{"up": goStdio(upstream{RefreshInterval: "1h"})}})
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

// nestedArgs is an arguments object nested depth levels deep (the object
// itself is level 1), as JSON text and as a map.
func nestedArgs(depth int) (string, map[string]any) {
	m := map[string]any{}
	for range depth - 1 {
		m = map[string]any{"a": m}
	}
	return strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1), m
}

// TestDeepArgumentsBounded: arguments nested 998 levels deep (what go-sdk's
// 1000-level message limit leaves for tools/call arguments) reach a real
// go-sdk upstream; deeper ones are INVALID_ARGUMENT naming the field and
// the limit at every edge (CallTool arguments_json and arguments,
// CallToolStream, the MCP front door), and the upstream stays up. Before
// the bound, 1,000-deep arguments passed the gRPC edge and the upstream
// could not decode the message and exited, for every caller.
func TestDeepArgumentsBounded(t *testing.T) {
	t.Parallel()
	p := startToolsvc(t, cfg{Servers: servers{"up": goStdio(upstream{RefreshInterval: "1h"})}}, "--mcp-listen", "127.0.0.1:0")
	base := "http://" + p.mcpAddr
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	callJSON(t, ctx, p.client, "up__add_tool", `{"name": "deep"}`)
	eventually(t, 20*time.Second, "up__deep in the catalog", func() bool {
		tools, _ := listAll(t, ctx, p.client, 0)
		return hasTool(tools, "up__deep")
	})
	connects := serverStatus(t, ctx, p.client, "up").GetConnectCount()

	okJSON, okMap := nestedArgs(998)
	if got := resultText(callJSON(t, ctx, p.client, "up__deep", okJSON)); got != "deep ok" {
		t.Fatalf("998 deep: %q", got)
	}
	okStruct, err := structpb.NewStruct(okMap)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__deep", Arguments: okStruct}); err != nil {
		t.Fatalf("998 deep Struct: %v", err)
	}
	for _, depth := range []int{999, 1000, 1000, 1000, 5000} {
		text, m := nestedArgs(depth)
		_, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__deep", ArgumentsJson: text})
		wantStatus(t, err, codes.InvalidArgument, "ARGUMENTS_INVALID", "up", "up__deep")
		if got := fieldViolations(err); !slices.Equal(got, []string{"arguments_json"}) || !strings.Contains(status.Convert(err).Message(), "deeper than 998 levels") {
			t.Errorf("%d deep arguments_json: %v (fields %q)", depth, err, got)
		}
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__deep", Arguments: s})
		// Past protobuf's recursion limit (5000 levels of Struct) the request
		// does not decode, so no tool is named.
		server, tool := "up", "up__deep"
		if depth == 5000 {
			server, tool = "", ""
		}
		wantStatus(t, err, codes.InvalidArgument, "ARGUMENTS_INVALID", server, tool)
		if got := fieldViolations(err); !slices.Equal(got, []string{"arguments"}) || !strings.Contains(status.Convert(err).Message(), "998 levels") {
			t.Errorf("%d deep arguments: fields %q", depth, got)
		}
		stream, err := p.client.CallToolStream(ctx, &toolsvcv1.CallToolStreamRequest{Name: "up__deep", ArgumentsJson: text})
		if err == nil {
			_, _, err = readStream(t, stream)
		}
		if got := fieldViolations(err); status.Code(err) != codes.InvalidArgument || !slices.Equal(got, []string{"arguments_json"}) {
			t.Errorf("%d deep CallToolStream: %v", depth, err)
		}
	}

	// The front door: go-sdk's decoder takes the same 998 levels of
	// arguments and refuses one more.
	fc := connectGoFront(t, ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, "")
	if res, err := fc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__deep", Arguments: okMap}); err != nil || res.IsError {
		t.Fatalf("front door, 998 deep: %v, %v", res, err)
	}
	_, deeper := nestedArgs(999)
	if _, err := fc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__deep", Arguments: deeper}); err == nil {
		t.Errorf("front door, 999 deep: accepted")
	}

	// The upstream never went down.
	if got := resultText(callJSON(t, ctx, p.client, "up__echo", `{"text": "still here"}`)); got != "still here" {
		t.Errorf("echo after the deep calls: %q", got)
	}
	if st := serverStatus(t, ctx, p.client, "up"); st.GetConnectCount() != connects || st.GetState() != toolsvcv1.ServerState_SERVER_STATE_READY {
		t.Errorf("upstream: connect count %d → %d, state %v; the deep calls must not reach it", connects, st.GetConnectCount(), st.GetState())
	}
}

// TestDuplicateArgumentKeys: arguments_json naming a key twice is refused
// (INVALID_ARGUMENT naming the key's path) at the gRPC edge and the front
// door alike, before it reaches the upstream: toolsvc validated the last
// value while the upstream received both.
func TestDuplicateArgumentKeys(t *testing.T) {
	t.Parallel()
	p := startToolsvc(t, cfg{Servers: servers{"up": goStdio(upstream{RefreshInterval: "1h"})}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	for in, field := range map[string]string{
		`{"text": 1, "text": "valid"}`:                  "arguments_json.text",
		`{"text": "x", "o": {"k": [{"z": 1, "z": 2}]}}`: "arguments_json.o.k[0].z",
	} {
		_, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__echo", ArgumentsJson: in})
		wantStatus(t, err, codes.InvalidArgument, "ARGUMENTS_INVALID", "up", "up__echo")
		if got := fieldViolations(err); !slices.Equal(got, []string{field}) {
			t.Errorf("%s: fields %q, want %q", in, got, field)
		}
	}
	if n := upstreamCalls(t, ctx, p.client, "up")["echo"]; n != 0 {
		t.Errorf("the upstream received %v echo calls", n)
	}
}

// TestHostileValidationCost: a real go-sdk upstream serves schemas that
// checkSchema accepts (their recursion descends into the arguments) but
// whose alternatives each descend into the same member, so validating
// arguments nested d levels costs 2^d schema applications: 40 levels would
// have pinned a CPU in jsonschema-go's validator for hours, past any
// deadline. Such a call is now refused before validation, INVALID_ARGUMENT
// / ARGUMENTS_INVALID naming the field and the limit, for arguments_json
// and arguments alike; the operator gets one warning naming server and
// tool; shallow arguments are still validated and forwarded, and toolsvc
// keeps serving.
func TestHostileValidationCost(t *testing.T) {
	t.Parallel()
	p := startToolsvc(t, cfg{Servers: servers{"up": goStdio(upstream{RefreshInterval: "1h"})}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	schemas := map[string]string{
		"anyof_items": `{"type": "object", "properties": {"a": {"$ref": "#/$defs/t"}},
			"$defs": {"t": {"anyOf": [{"items": {"$ref": "#/$defs/t"}}, {"items": {"$ref": "#/$defs/t"}}]}}}`,
		"allof_props": `{"type": "object", "allOf": [{"properties": {"a": {"$ref": "#"}}}, {"properties": {"a": {"$ref": "#"}}}]}`,
	}
	nestedArrays := func(depth int) string {
		return `{"a": ` + strings.Repeat(`[`, depth) + strings.Repeat(`]`, depth) + `}`
	}
	args := map[string]func(depth int) string{
		"anyof_items": nestedArrays,
		"allof_props": func(depth int) string { s, _ := nestedArgs(depth); return s },
	}
	for _, n := range []string{"allof_props", "anyof_items"} {
		callJSON(t, ctx, p.client, "up__add_tool", fmt.Sprintf(`{"name": %q, "schema": %q}`, n, schemas[n]))
	}
	eventually(t, 20*time.Second, "the added tools in the catalog", func() bool {
		tools, _ := listAll(t, ctx, p.client, 0)
		return hasTool(tools, "up__anyof_items") && hasTool(tools, "up__allof_props")
	})

	for _, n := range []string{"allof_props", "anyof_items"} {
		tool := "up__" + n
		// Shallow arguments: validated (the schema is used) and forwarded.
		res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: tool, ArgumentsJson: args[n](6)})
		if err != nil || resultText(res) != n+" ok" {
			t.Fatalf("%s, 6 levels: %v, %v", tool, res, err)
		}
		// 40 levels, twice over arguments_json and once as a Struct.
		deep := args[n](40)
		var m map[string]any
		if err := json.Unmarshal([]byte(deep), &m); err != nil {
			t.Fatal(err)
		}
		st, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		for i, req := range []*toolsvcv1.CallToolRequest{
			{Name: tool, ArgumentsJson: deep}, {Name: tool, ArgumentsJson: deep}, {Name: tool, Arguments: st},
		} {
			field := "arguments_json"
			if i == 2 {
				field = "arguments"
			}
			_, err := p.client.CallTool(ctx, req)
			ei := wantStatus(t, err, codes.InvalidArgument, "ARGUMENTS_INVALID", "up", tool)
			if ei.GetMetadata()["limit"] != "max_validation_steps" || ei.GetMetadata()["max_validation_steps"] == "" {
				t.Errorf("%s: ErrorInfo metadata %v, want the validation limit", tool, ei.GetMetadata())
			}
			if got := fieldViolations(err); !slices.Equal(got, []string{field}) {
				t.Errorf("%s: violations on %q, want %s", tool, got, field)
			}
		}
		p.log.waitFor(t, regexp.MustCompile(`level=WARN msg="arguments refused unvalidated.*server=up tool=`+tool+` limit=`), 5*time.Second)
		if c := strings.Count(p.log.String(), "tool="+tool+" limit="); c != 1 {
			t.Errorf("%s: %d warnings, want one", tool, c)
		}
	}
	// Still serving: a call after the refusals goes through.
	res, err := p.client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "up__anyof_items", ArgumentsJson: nestedArrays(3)})
	if err != nil || resultText(res) != "anyof_items ok" || !running(p) {
		t.Fatalf("after the refusals: %v, %v (running %v)", res, err, running(p))
	}
}
