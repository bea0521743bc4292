package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// setupCommand installs every peer the soak runs: the Python MCP SDK's venv
// (.venv/mcp, through scripts/pyenv.sh), fastmcp-tasks' venv (.venv/tasks,
// for the 2026-07-28 task upstream) and the TypeScript SDK
// (tests/node/node_modules). The soak does not run it by itself: it installs
// Debian packages with sudo and needs the network.
const setupCommand = "scripts/interop-deps.sh"

// checkPeers reports, before anything is built or started, what the
// upstreams (the twelve and the two task upstreams) need that root lacks; a fresh clone has neither SDK, and the
// soak used to fail only after its builds, with "fork/exec
// .venv/mcp/bin/python: no such file or directory".
func checkPeers(root string) error {
	var missing []string
	if _, err := os.Stat(filepath.Join(root, ".venv", "mcp", "bin", "python")); err != nil {
		missing = append(missing, "the Python MCP SDK venv .venv/mcp (scripts/pyenv.sh mcp creates it alone)")
	}
	if _, err := os.Stat(filepath.Join(root, ".venv", "tasks", "bin", "python")); err != nil {
		missing = append(missing, "the Python tasks venv .venv/tasks, fastmcp-tasks (scripts/pyenv.sh tasks creates it alone)")
	}
	if _, err := os.Stat(filepath.Join(root, "tests", "node", "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		missing = append(missing, "the TypeScript MCP SDK in tests/node/node_modules (npm ci in tests/node installs it alone)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing = append(missing, "node (Node.js 22 or later) on PATH")
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("the soak's upstreams need what is not installed:\n  - %s\nrun %s (from %s), then the soak again",
		strings.Join(missing, "\n  - "), setupCommand, root)
}
