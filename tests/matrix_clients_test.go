package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The client matrix: the MCP clients users run against
// toolsvc's front door, each in every protocol era it speaks, each doing
// every operation the front door serves. A cell (client × era) runs the
// same client script twice: directly against the upstream (the go-sdk
// test server, tests/testserver -interactive, in resources mode), then
// through toolsvc's front door, where the upstream is "t" (tools and
// prompts named "t__<name>", resources under their own URIs). So a
// client's own bug is told apart: an operation fails the test when it
// fails through toolsvc and passes directly; one that fails both ways is a
// client limit, and must be in clientLimits with its reason. The table in
// docs/clients.md is this test's output (TOOLSVC_WRITE_CLIENT_TABLE=1
// writes it; without it the test fails when the table differs).

// clientOps are the operations, in the table's order.
var clientOps = []string{"list", "call", "progress", "elicitation", "elicitation/url", "sampling", "roots", "logging",
	"resources/list", "resources/read", "resources/templates", "resources/subscribe", "prompts/list", "prompts/get", "completion",
	"discovery", "tasks"}

// clientReport is what a cell runner prints: the protocol it negotiated,
// and each operation's value or error.
type clientReport struct {
	Protocol string `json:"protocol"`
	Ops      map[string]struct {
		Value json.RawMessage `json:"value"`
		Error string          `json:"error"`
	} `json:"ops"`
}

// clientLimits are the operations a client cannot do even directly
// against the upstream: "client/era/op" -> why.
var clientLimits = map[string]string{
	"python-sdk/2025-11-25/tasks": "mcp 2.x has no task API: 2025-11-25 tasks left its core, the 2026-07-28 extension is fastmcp-tasks'",
	"python-sdk/2026-07-28/tasks": "mcp 2.x has no task API: 2025-11-25 tasks left its core, the 2026-07-28 extension is fastmcp-tasks'",
	"fastmcp/2025-11-25/tasks":    "fastmcp 4.1.6's Client has no task API of its own: tasks are the fastmcp-tasks extension's (TestMCPFrontTasks2026 runs it)",
	"fastmcp/2026-07-28/tasks":    "fastmcp 4.1.6's Client has no task API of its own: tasks are the fastmcp-tasks extension's (TestMCPFrontTasks2026 runs it)",
	"go-sdk/2025-11-25/tasks":     "go-sdk v1.8.0's ClientSession has no task API (no task parameter on tools/call, no tasks/get or tasks/result)",
	"go-sdk/2026-07-28/tasks":     "go-sdk v1.8.0's ClientSession has no task API (no task parameter on tools/call, no tasks/get or tasks/result)",
	// The inspector's CLI: one request per run, its result printed; a
	// client that declares no capabilities and shows no notification.
	"inspector-cli/2025-11-25/progress":            "the CLI prints a call's result only, no progress notification",
	"inspector-cli/2025-11-25/elicitation":         "the CLI's client declares no elicitation",
	"inspector-cli/2025-11-25/elicitation/url":     "the CLI's client declares no elicitation",
	"inspector-cli/2025-11-25/sampling":            "the CLI's client declares no sampling",
	"inspector-cli/2025-11-25/roots":               "the CLI's client declares no roots",
	"inspector-cli/2025-11-25/logging":             "logging/setLevel only: each run is its own session and prints no log notification",
	"inspector-cli/2025-11-25/resources/subscribe": "the CLI has no resources/subscribe method",
	"inspector-cli/2025-11-25/completion":          "the CLI has no completion/complete method",
	"inspector-cli/2025-11-25/tasks":               "the CLI has no option for params.task: a plain call",
}

// frontGaps are operations toolsvc's front door does not serve to a
// client that does them directly: open defects, listed so that the table
// shows them ("gap") and the test fails when one changes (another error,
// or it passes). "client/era/op" -> the error it fails with through
// toolsvc, and why.
var frontGaps = map[string]struct{ want, why string }{
	"typescript-sdk-sse/2025-11-25/tasks": {"the server declares no tasks",
		"the front door runs tasks for streamable HTTP sessions only (mcpfront.tasksReach): a legacy SSE request carries no headers, which is how params.task reaches the handler; the TypeScript SDK speaks 2025-11-25 over SSE"},
}

// matrixClient is one client of the matrix, and how a cell runs it.
type matrixClient struct {
	name, version string
	eras          []string
	// sse: the client's session is a legacy SSE one (the go-sdk test
	// server in SSE mode directly, the front door's /sse through it).
	sse bool
	// run runs the cell's operations against the target in era.
	run func(t *testing.T, ctx context.Context, era string, to cellTarget) (clientReport, error)
}

// cellTarget is where one run of a cell goes: directly to the upstreams,
// or through toolsvc.
type cellTarget struct {
	// URL serves every operation but discovery and tasks; its tools and
	// prompts are named Prefix+name.
	URL, Prefix string
	// Discovery is the front door in progressive discovery ("" in the
	// direct run: see the "discovery" case of clientWant).
	Discovery string
	// TasksURL serves the task tool TasksPrefix+"slow" (the era's task
	// server: tests/node/tasks_server.mjs for 2025-11-25,
	// tests/python/tasks_server.py for 2026-07-28).
	TasksURL, TasksPrefix string
}

// scriptClient runs a cell runner script: argv URL ERA PREFIX
// DISCOVERY_URL TASKS_URL TASKS_PREFIX (DISCOVERY_URL may be empty), env
// (when not nil) added to its environment, one JSON report on its last
// stdout line.
func scriptClient(interp, script func(t *testing.T) string, env func(t *testing.T) []string) func(*testing.T, context.Context, string, cellTarget) (clientReport, error) {
	return func(t *testing.T, ctx context.Context, era string, to cellTarget) (clientReport, error) {
		cmd := exec.CommandContext(ctx, interp(t), script(t), to.URL, era, to.Prefix, to.Discovery, to.TasksURL, to.TasksPrefix)
		if env != nil {
			cmd.Env = append(os.Environ(), env(t)...)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var r clientReport
		if err != nil {
			return r, fmt.Errorf("%v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
			return r, fmt.Errorf("report %q: %v\nstderr:\n%s", out, err, stderr.String())
		}
		return r, nil
	}
}

func matrixClients() []matrixClient {
	py := func(venv string) func(t *testing.T) string {
		return func(t *testing.T) string { return venvBin(t, venv, "python") }
	}
	pyScript := func(name string) func(t *testing.T) string {
		return func(t *testing.T) string { return filepath.Join(rootDir(t), "tests", "python", name) }
	}
	tsNode := func(t *testing.T) string { return nodePath(t, node22) }
	tsScript := func(t *testing.T) string { return nodePath(t, "matrix_client.mjs") }
	tsCell := scriptClient(tsNode, tsScript, nil)
	// mcp-remote keeps OAuth state in MCP_REMOTE_CONFIG_DIR (~/.mcp-auth
	// by default): the test's own directory.
	viaMCPRemote := scriptClient(tsNode, tsScript, func(t *testing.T) []string {
		return []string{"MATRIX_MCP_REMOTE=" + nodePath(t, "node_modules/mcp-remote/dist/proxy.js"), "MCP_REMOTE_CONFIG_DIR=" + t.TempDir()}
	})
	return []matrixClient{
		{"python-sdk", "mcp 2.3.0 `Client` (`ClientSession`)", []string{"2025-11-25", "2026-07-28"}, false,
			scriptClient(py("mcp"), pyScript("matrix_client.py"), nil)},
		{"python-sdk-1", "mcp 1.30.0 `ClientSession`", []string{"2025-11-25"}, false,
			scriptClient(py("mcp1"), pyScript("matrix_client_v1.py"), nil)},
		{"fastmcp", "fastmcp 4.1.6 `Client`", []string{"2025-11-25", "2026-07-28"}, false,
			scriptClient(py("fastmcp"), pyScript("matrix_fastmcp.py"), nil)},
		{"fastmcp-tasks", "fastmcp 4.1.4 `Client` with fastmcp-tasks 4.1.4", []string{"2026-07-28"}, false,
			scriptClient(py("tasks"), pyScript("matrix_fastmcp.py"), nil)},
		{"typescript-sdk", "@modelcontextprotocol/sdk 1.32.2 `Client`", []string{"2025-11-25"}, false, tsCell},
		{"typescript-sdk-sse", "@modelcontextprotocol/sdk 1.32.2 `Client` over `SSEClientTransport`", []string{"2025-11-25"}, true, tsCell},
		{"mcp-remote", "mcp-remote 0.15.1 (stdio), the TypeScript SDK `Client` on it", []string{"2025-11-25"}, false, viaMCPRemote},
		{"inspector-cli", "MCP Inspector CLI (inspector-cli 1.0.3)", []string{"2025-11-25"}, false,
			scriptClient(tsNode, func(t *testing.T) string { return nodePath(t, "matrix_inspector.mjs") }, nil)},
		{"go-sdk", "go-sdk v1.8.0 `ClientSession`", []string{"2025-11-25", "2026-07-28"}, false, goClientCell},
	}
}

// clientWant judges one operation's value (prefix: the tools' and
// prompts' name prefix).
func clientWant(op, prefix string, v json.RawMessage) error {
	var s string
	var list []string
	var n int
	check := func(ok bool, want string) error {
		if !ok {
			return fmt.Errorf("got %s, want %s", v, want)
		}
		return nil
	}
	switch op {
	case "list", "resources/list", "resources/templates", "prompts/list", "logging", "completion":
		if err := json.Unmarshal(v, &list); err != nil {
			return fmt.Errorf("%s: %v", v, err)
		}
	case "progress":
		if err := json.Unmarshal(v, &n); err != nil {
			return fmt.Errorf("%s: %v", v, err)
		}
	default:
		if err := json.Unmarshal(v, &s); err != nil {
			return fmt.Errorf("%s: %v", v, err)
		}
	}
	switch op {
	case "list":
		return check(slices.Contains(list, prefix+"echo") && slices.Contains(list, prefix+"ask_name"), prefix+"echo and "+prefix+"ask_name")
	case "call":
		return check(s == "matrix", `"matrix"`)
	case "progress":
		// Later steps may race the result at the bridge (see
		// TestMCPFrontGoClient), and so may the first when it is only
		// 20 ms ahead of the result: on a loaded box (load 10) the
		// mcp-remote cell once got none. The runners' steps are 100 ms
		// apart, so the first is 100 ms ahead and always arrives.
		return check(n >= 1, "at least one progress notification")
	case "elicitation":
		return check(s == "hello Ada", `"hello Ada" (the form answered {name: Ada})`)
	case "elicitation/url":
		return check(s == "url accept", `"url accept" (the URL request accepted)`)
	case "sampling":
		return check(s == "model=hi there", `"model=hi there"`)
	case "roots":
		return check(s == "roots=file:///matrix", `"roots=file:///matrix"`)
	case "logging":
		return check(slices.Contains(list, "matrix"), "log messages tagged matrix")
	case "resources/list":
		return check(slices.Contains(list, "test://hello"), "test://hello")
	case "resources/read":
		return check(s == "hello from go", `"hello from go"`)
	case "resources/templates":
		return check(slices.Contains(list, "test://items/{id}"), "test://items/{id}")
	case "resources/subscribe":
		return check(s == "subscribed" || s == "listening", "subscribed (2025-11-25) or listening (2026-07-28)")
	case "prompts/list":
		return check(slices.Contains(list, prefix+"hi") && slices.Contains(list, prefix+"trip"), prefix+"hi and "+prefix+"trip")
	case "prompts/get":
		return check(s == "hi", `"hi"`)
	case "completion":
		return check(slices.Equal(list, []string{"Bergen", "Berlin", "Bern"}), "[Bergen Berlin Bern]")
	case "discovery":
		// Through toolsvc: search_tools("echo") found t__echo, and
		// call_tool called it. Directly (the upstream has no search):
		// the same tool called by name, so a client that cannot call
		// tools at all shows as its own limit.
		return check(s == prefix+"echo:matrix", `"`+prefix+`echo:matrix" (the tool found, and its answer)`)
	case "tasks":
		return check(s == "task:slept 50", `"task:slept 50" (slow{ms: 50} run as a task, its result read)`)
	}
	return fmt.Errorf("unknown operation %q", op)
}

// judge is each operation's outcome in a report: "" when it passed.
func judge(r clientReport, runErr error, era, prefix string) map[string]string {
	out := map[string]string{}
	for _, op := range clientOps {
		switch o, ok := r.Ops[op]; {
		case runErr != nil:
			out[op] = "the run failed: " + runErr.Error()
		case r.Protocol != era:
			out[op] = fmt.Sprintf("negotiated %q, not %s", r.Protocol, era)
		case !ok:
			out[op] = "not run"
		case o.Error != "":
			out[op] = o.Error
		default:
			if err := clientWant(op, prefix, o.Value); err != nil {
				out[op] = err.Error()
			} else {
				out[op] = ""
			}
		}
	}
	return out
}

// TestClientMatrix runs every cell (client × era), directly and through
// the front door, and checks docs/clients.md's table against the result.
// Subtests: TestClientMatrix/<client>/<era>.
func TestClientMatrix(t *testing.T) {
	t.Parallel()
	// The upstreams: go-sdk's server is stateful or stateless, not both:
	// stateful (the 2025-11-25 direct runs, and toolsvc's upstream) and
	// stateless (the 2026-07-28 direct runs, which a stateful go-sdk
	// server refuses).
	mode := resourcesModeFile(t, "resources,items,completions,subscribe")
	upstreamURL := func(m string) string {
		cmd := exec.Command(bin.testserver, "-mode", m, "-addr", "127.0.0.1:0", "-interactive")
		cmd.Env = append(os.Environ(), "TESTSERVER_RESOURCES_FILE="+mode)
		return startProc(t, cmd).log.waitFor(t, urlLineRE, 30*time.Second)
	}
	direct := map[string]string{"2025-11-25": upstreamURL("http"), "2026-07-28": upstreamURL("http-stateless")}
	directSSE := upstreamURL("sse") // the legacy SSE cells' (2025-11-25)
	// Tasks: the TypeScript SDK's task server (2025-11-25 experimental
	// tasks), directly and as toolsvc's upstream "k". The go-sdk test
	// server runs no tasks.
	tasks := startProc(t, exec.Command("node", nodePath(t, "tasks_server.mjs"), "http", "0")).log.waitFor(t, urlLineRE, 30*time.Second)
	// And fastmcp-tasks' server (the 2026-07-28 tasks extension), as "kp".
	port := freePort(t)
	pyTasks := startProc(t, exec.Command(venvBin(t, "tasks", "python"), filepath.Join(rootDir(t), "tests", "python", "tasks_server.py"), fmt.Sprint(port)))
	waitTCP(t, fmt.Sprintf("127.0.0.1:%d", port), 60*time.Second, pyTasks)
	tasksURL := map[string]string{"2025-11-25": tasks, "2026-07-28": fmt.Sprintf("http://127.0.0.1:%d/mcp", port)}
	tasksPrefix := map[string]string{"2025-11-25": "k__", "2026-07-28": "kp__"}
	p := startToolsvc(t, cfg{Servers: servers{"t": goHTTP(direct["2025-11-25"], upstream{}), "k": upstream{URL: tasks},
		"kp": upstream{URL: tasksURL["2026-07-28"], ProtocolVersion: "2026-07-28"}}},
		"--mcp-listen", "127.0.0.1:0")
	front := "http://" + p.mcpAddr + "/mcp"
	// Progressive discovery is a front door of its own: its tools/list is
	// search_tools and call_tool (no core tools), so a client finds t__echo
	// only by searching.
	pd := startToolsvc(t, cfg{Servers: servers{"t": goHTTP(direct["2025-11-25"], upstream{})}},
		"--mcp-listen", "127.0.0.1:0", "--mcp-discovery", "progressive")
	discovery := "http://" + pd.mcpAddr + "/mcp"

	type cell struct {
		client          matrixClient
		era             string
		direct, through map[string]string
	}
	var cells []*cell
	for _, c := range matrixClients() {
		for _, era := range c.eras {
			cells = append(cells, &cell{client: c, era: era})
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2) // two cells at a time: one core each
	for _, c := range cells {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			t.Run(c.client.name+"/"+c.era, func(t *testing.T) {
				// A generous bound: the inspector cell alone starts 36 node
				// processes, and the suite runs on a loaded box.
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
				defer cancel()
				to := cellTarget{URL: direct[c.era], TasksURL: tasksURL[c.era]}
				through := cellTarget{URL: front, Prefix: "t__", Discovery: discovery, TasksURL: front, TasksPrefix: tasksPrefix[c.era]}
				if c.client.sse {
					// Every session over SSE, but the direct task call's: the
					// task server serves streamable HTTP only.
					to.URL = directSSE
					through.URL, through.Discovery, through.TasksURL = sseURL(front), sseURL(discovery), sseURL(front)
				}
				r, err := c.client.run(t, ctx, c.era, to)
				c.direct = judge(r, err, c.era, "")
				r, err = c.client.run(t, ctx, c.era, through)
				c.through = judge(r, err, c.era, "t__")
				for _, op := range clientOps {
					key := c.client.name + "/" + c.era + "/" + op
					limit, known := clientLimits[key]
					gap, isGap := frontGaps[key]
					switch d, th := c.direct[op], c.through[op]; {
					case isGap && th != "" && d == "" && strings.Contains(th, gap.want):
						t.Logf("%s: a gap of toolsvc's (frontGaps: %s): %.300s", op, gap.why, th)
					case isGap:
						t.Errorf("%s: frontGaps says it fails through toolsvc with %q, passing directly; directly: %q; through: %q", op, gap.want, d, th)
					case th != "" && d == "":
						t.Errorf("%s fails through toolsvc, passes directly: %s", op, th)
					case d != "" && !known:
						t.Errorf("%s fails directly (a client limit? add it to clientLimits with the reason): %s", op, d)
					case d == "" && known:
						t.Errorf("%s passes directly: clientLimits says %q", op, limit)
					case known:
						t.Logf("%s: n/a, %s; directly: %.300s; through toolsvc: %.300s", op, limit, d, th)
					}
				}
			})
		}()
	}
	wg.Wait()
	table := clientTable(cells, func(c *cell) (string, string, string, map[string]string, map[string]string) {
		return c.client.name, c.client.version, c.era, c.direct, c.through
	})
	t.Logf("client matrix (%d cells, %v):\n%s", len(cells), time.Since(start).Round(100*time.Millisecond), table)
	if t.Failed() {
		return
	}
	checkDocTable(t, filepath.Join(rootDir(t), "docs", "clients.md"), tableBegin, tableEnd, table)
	summary := clientSummary(cells, func(c *cell) (string, string, string, map[string]string, map[string]string) {
		return c.client.name, c.client.version, c.era, c.direct, c.through
	})
	checkDocTable(t, filepath.Join(rootDir(t), "README.md"), summaryBegin, summaryEnd, summary)
}

// clientSummary is the matrix as the README shows it: one row per cell,
// the operations that pass through toolsvc counted, the others named.
func clientSummary[C any](cells []C, row func(C) (name, version, era string, direct, through map[string]string)) string {
	var b strings.Builder
	b.WriteString("| client | era | through toolsvc | n/a (the client's limit) | gap (toolsvc's) |\n|---|---|---|---|---|\n")
	for _, c := range cells {
		name, version, era, direct, through := row(c)
		pass := 0
		var na, gap, fail []string
		for _, op := range clientOps {
			_, isGap := frontGaps[name+"/"+era+"/"+op]
			switch {
			case through[op] == "":
				pass++
			case direct[op] != "":
				na = append(na, op)
			case isGap:
				gap = append(gap, op)
			default:
				fail = append(fail, op)
			}
		}
		cell := fmt.Sprintf("✓ %d of %d", pass, len(clientOps))
		if len(fail) > 0 {
			cell += ", FAIL: " + strings.Join(fail, ", ")
		}
		or := func(ops []string) string {
			if len(ops) == 0 {
				return "—"
			}
			return strings.Join(ops, ", ")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", version, era, cell, or(na), or(gap))
	}
	return b.String()
}

// sseURL is the legacy SSE endpoint of the front door whose streamable
// HTTP endpoint is mcpURL.
func sseURL(mcpURL string) string { return strings.TrimSuffix(mcpURL, "/mcp") + "/sse" }

// clientTable is the matrix as docs/clients.md shows it: one row per cell,
// one column per operation: "pass", "n/a" (the client's limit: fails
// directly too, see clientLimits), "gap" (toolsvc's: see frontGaps) or
// "FAIL".
func clientTable[C any](cells []C, row func(C) (name, version, era string, direct, through map[string]string)) string {
	var b strings.Builder
	b.WriteString("| client | version | era | " + strings.Join(clientOps, " | ") + " |\n")
	b.WriteString("|---|---|---|" + strings.Repeat("---|", len(clientOps)) + "\n")
	for _, c := range cells {
		name, version, era, direct, through := row(c)
		cols := []string{name, version, era}
		for _, op := range clientOps {
			_, isGap := frontGaps[name+"/"+era+"/"+op]
			switch {
			case through[op] == "":
				cols = append(cols, "pass")
			case isGap && direct[op] == "":
				cols = append(cols, "gap")
			case direct[op] != "":
				cols = append(cols, "n/a")
			default:
				cols = append(cols, "FAIL")
			}
		}
		b.WriteString("| " + strings.Join(cols, " | ") + " |\n")
	}
	return b.String()
}

const (
	tableBegin   = "<!-- client matrix: begin (TestClientMatrix writes this table) -->\n"
	tableEnd     = "<!-- client matrix: end -->\n"
	summaryBegin = "<!-- client summary: begin (TestClientMatrix writes this table) -->\n"
	summaryEnd   = "<!-- client summary: end -->\n"
)

// checkDocTable compares the table between the markers begin and end of
// the doc at path with table; TOOLSVC_WRITE_CLIENT_TABLE=1 writes it
// there instead.
func checkDocTable(t *testing.T, path, begin, end, table string) {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(doc), begin)
	old, after, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("%s has no table markers %q … %q", path, begin, end)
	}
	if old == table {
		return
	}
	if os.Getenv("TOOLSVC_WRITE_CLIENT_TABLE") == "1" {
		if err := os.WriteFile(path, []byte(before+begin+table+end+after), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote the table into %s", path)
		return
	}
	t.Errorf("%s's table is not this run's (TOOLSVC_WRITE_CLIENT_TABLE=1 writes it):\n got:\n%s\nwant:\n%s", path, old, table)
}

// goClientCell is the cell runner for go-sdk's client, in this process:
// the same operations and answers as the scripts.
func goClientCell(t *testing.T, ctx context.Context, era string, to cellTarget) (clientReport, error) {
	url, prefix, discovery := to.URL, to.Prefix, to.Discovery
	var mu sync.Mutex
	var logs []string
	progress := 0
	client := mcp.NewClient(&mcp.Implementation{Name: "matrix-go", Version: "1"}, &mcp.ClientOptions{
		// Both elicitation modes: inferred from the handler, go-sdk's
		// client would declare form only. (Roots: the SDK's default,
		// which setting Capabilities replaces.)
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Mode == "url" { // ask_url: the user "visits" the URL
				return &mcp.ElicitResult{Action: "accept"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: "hi there"}, Model: "matrix-model"}, nil
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			mu.Lock()
			defer mu.Unlock()
			if m, ok := r.Params.Data.(map[string]any); ok {
				logs = append(logs, fmt.Sprint(m["tag"]))
			}
		},
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress++
			mu.Unlock()
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///matrix", Name: "matrix"})
	var r clientReport
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		return r, err
	}
	defer cs.Close()
	r.Protocol = cs.InitializeResult().ProtocolVersion
	r.Ops = map[string]struct {
		Value json.RawMessage `json:"value"`
		Error string          `json:"error"`
	}{}
	run := func(op string, f func() (any, error)) {
		v, err := f()
		o := r.Ops[op]
		if err != nil {
			o.Error = err.Error()
		} else {
			o.Value, _ = json.Marshal(v)
		}
		r.Ops[op] = o
	}
	text := func(res *mcp.CallToolResult) string {
		var b strings.Builder
		if res.IsError {
			b.WriteString("error: ")
		}
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	call := func(name string, args map[string]any, meta mcp.Meta) (any, error) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: prefix + name, Arguments: args})
		if err != nil {
			return nil, err
		}
		return text(res), nil
	}
	modern := r.Protocol >= "2026-07-28"
	// seen waits, within a generous bound, for what the client's
	// notification handlers record: go-sdk's client may still be running
	// them when the call's result returns.
	seen := func(cond func() bool) {
		for deadline := time.Now().Add(defaultTestTimeout); ; time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			ok := cond()
			mu.Unlock()
			if ok || time.Now().After(deadline) {
				return
			}
		}
	}
	run("list", func() (any, error) {
		var names []string
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return nil, err
			}
			names = append(names, tool.Name)
		}
		slices.Sort(names)
		return names, nil
	})
	run("call", func() (any, error) { return call("echo", map[string]any{"text": "matrix"}, nil) })
	run("progress", func() (any, error) {
		if _, err := call("progress", map[string]any{"steps": 2, "step_ms": 100}, mcp.Meta{"progressToken": "matrix"}); err != nil {
			return nil, err
		}
		seen(func() bool { return progress > 0 })
		mu.Lock()
		defer mu.Unlock()
		return progress, nil
	})
	run("elicitation", func() (any, error) { return call("ask_name", nil, nil) })
	run("elicitation/url", func() (any, error) { return call("ask_url", nil, nil) })
	run("sampling", func() (any, error) { return call("ask_model", nil, nil) })
	run("roots", func() (any, error) { return call("ask_roots", nil, nil) })
	run("logging", func() (any, error) {
		var meta mcp.Meta
		if modern {
			meta = mcp.Meta{mcp.MetaKeyLogLevel: "debug"} // 2026-07-28: the request's own level
		} else if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			return nil, err
		}
		if _, err := call("log_levels", map[string]any{"tag": "matrix"}, meta); err != nil {
			return nil, err
		}
		seen(func() bool { return len(logs) > 0 })
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(logs), nil
	})
	run("resources/list", func() (any, error) {
		res, err := cs.ListResources(ctx, nil)
		if err != nil {
			return nil, err
		}
		var uris []string
		for _, x := range res.Resources {
			uris = append(uris, x.URI)
		}
		return uris, nil
	})
	run("resources/read", func() (any, error) {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://hello"})
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		for _, c := range res.Contents {
			b.WriteString(c.Text)
		}
		return b.String(), nil
	})
	run("resources/templates", func() (any, error) {
		res, err := cs.ListResourceTemplates(ctx, nil)
		if err != nil {
			return nil, err
		}
		var uris []string
		for _, x := range res.ResourceTemplates {
			uris = append(uris, x.URITemplate)
		}
		return uris, nil
	})
	run("resources/subscribe", func() (any, error) {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://hello"}); err != nil {
			return nil, err
		}
		if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://hello"}); err != nil {
			return nil, err
		}
		if modern {
			return "listening", nil
		}
		return "subscribed", nil
	})
	run("prompts/list", func() (any, error) {
		res, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			return nil, err
		}
		var names []string
		for _, x := range res.Prompts {
			names = append(names, x.Name)
		}
		return names, nil
	})
	run("prompts/get", func() (any, error) {
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: prefix + "hi"})
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		for _, m := range res.Messages {
			if tc, ok := m.Content.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String(), nil
	})
	run("completion", func() (any, error) {
		res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: prefix + "trip"},
			Argument: mcp.CompleteParamsArgument{Name: "city", Value: "Ber"}})
		if err != nil {
			return nil, err
		}
		v := slices.Clone(res.Completion.Values)
		slices.Sort(v)
		return v, nil
	})
	run("discovery", func() (any, error) {
		if discovery == "" {
			v, err := call("echo", map[string]any{"text": "matrix"}, nil)
			return fmt.Sprint(prefix, "echo:", v), err
		}
		dc, err := mcp.NewClient(&mcp.Implementation{Name: "matrix-go-discovery", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: discovery, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: era})
		if err != nil {
			return nil, err
		}
		defer dc.Close()
		res, err := dc.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "echo", "limit": 1}})
		if err != nil {
			return nil, err
		}
		var found struct{ Tools []struct{ Name string } }
		if err := json.Unmarshal([]byte(text(res)), &found); err != nil || len(found.Tools) == 0 {
			return nil, fmt.Errorf("search_tools answered %q: %v", text(res), err)
		}
		res, err = dc.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool",
			Arguments: map[string]any{"name": found.Tools[0].Name, "arguments": map[string]any{"text": "matrix"}}})
		if err != nil {
			return nil, err
		}
		return found.Tools[0].Name + ":" + text(res), nil
	})
	// go-sdk v1.8.0's client has no task API: ClientSession has no method
	// that sets CallToolParams' task, and none for tasks/get or
	// tasks/result (clientLimits).
	run("tasks", func() (any, error) {
		return nil, fmt.Errorf("go-sdk %s: ClientSession has no task API (no tasks/get, tasks/result)", "v1.8.0")
	})
	return r, nil
}
