package tests

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentFrameworksProgressiveDiscovery: with progressive discovery
// (the front door lists demo__echo, search_tools and call_tool), agents of
// real frameworks whose scripted model searches and then uses the tool it
// found (demo__add, never listed at the start) get its result
// (tests/python/agents_discovery.py, in .venv/agents: openai-agents,
// langchain-mcp-adapters with langgraph, pydantic-ai): an openai-agents
// Agent calls it by name, which it offers only because its session's
// tools/list grew with the search; a langchain agent whose tools were fixed
// at its start calls it through call_tool; a langchain session that
// searched lists it after a list_changed; and a pydantic-ai Agent
// (MCPToolset, FunctionModel) offered search_tools and call_tool calls it
// through call_tool.
func TestAgentFrameworksProgressiveDiscovery(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	py := filepath.Join(root, ".venv", "agents", "bin", "python")
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("no %s (scripts/pyenv.sh agents creates it): %v", py, err)
	}
	p := startToolsvc(t, cfg{Servers: servers{"demo": demoServer()}},
		"--mcp-listen", "127.0.0.1:0", "--mcp-discovery", "progressive", "--mcp-core-tools", "demo__echo")
	ctx, cancel := context.WithTimeout(t.Context(), 3*defaultTestTimeout) // three frameworks' imports
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join(root, "tests", "python", "agents_discovery.py"),
		"http://"+p.mcpAddr+"/mcp", "add two numbers together", "demo__add", `{"a": 2, "b": 40}`)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	out := stdout.String()
	t.Logf("agents:\n%s", out)
	if err != nil {
		t.Fatalf("agents_discovery.py: %v\nstdout:\n%s\nstderr:\n%s", err, out, &stderr)
	}
	for _, framework := range []string{"openai-agents", "langchain", "langchain-session", "pydantic-ai"} {
		// demo__add's result: {"sum":42} as text (and structured content).
		line := framework + " answer: "
		i := strings.Index(out, "\n"+line)
		if strings.HasPrefix(out, line) {
			i = 0
		} else if i >= 0 {
			i++
		}
		if i < 0 {
			t.Errorf("%s gave no answer", framework)
			continue
		}
		answer, _, _ := strings.Cut(out[i+len(line):], "\n")
		if !strings.Contains(answer, `"sum":42`) {
			t.Errorf("%s answered %q, want demo__add's {\"sum\":42}", framework, answer)
		}
	}
}
