package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// frontConformancePass are the server scenarios of
// @modelcontextprotocol/conformance that must pass against the front door
// with server-everything behind toolsvc. The others cannot pass there, for
// reasons outside the front door, listed in frontConformanceWhy.
var frontConformancePass = []string{
	"server-initialize", "ping", "logging-set-level", "tools-list",
	"server-sse-multiple-streams", "dns-rebinding-protection",
	// go-sdk answers these with empty lists until issue 15 lands.
	"resources-list", "prompts-list",
}

var timestampRE = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[0-9TZ-]+$`)

// frontConformanceWhy explains each scenario that is not in
// frontConformancePass (checked: a scenario listed here that starts
// passing is reported, so the list stays true).
var frontConformanceWhy = map[string]string{
	"tools-call-":         "calls the suite's own test_* tools (test_simple_text, …), which server-everything does not have; toolsvc also exposes every tool as <server>__<tool>",
	"elicitation-":        "calls the suite's test_* elicitation tools (see tools-call-)",
	"json-schema-2020-12": "looks for the suite's json_schema_2020_12_tool",
	"completion-complete": "completion/complete is not part of the front door (tools only)",
	"resources-":          "resources are issue 15's; the front door serves tools only until it lands",
	"prompts-":            "prompts are issue 15's; the front door serves tools only until it lands",
	"server-sse-polling":  "calls the suite's test_* tool",
}

// TestMCPFrontConformanceServer runs the conformance suite in server mode
// against the front door, server-everything behind toolsvc, and logs every
// scenario with its result.
func TestMCPFrontConformanceServer(t *testing.T) {
	n22, cli := nodePath(t, node22), nodePath(t, conformanceCLI)
	cfg := fmt.Sprintf(`{"mcpServers": {"everything": {"url": %s}}}`, jsonString(startEverythingHTTP(t)))
	p := startToolsvc(t, cfg, "--mcp-listen", "127.0.0.1:0")
	base := "http://" + p.log.waitFor(t, mcpFrontRE, 10*time.Second)
	dir := t.TempDir()
	cmd := exec.Command(n22, cli, "server", "--url", base+"/mcp", "-o", dir)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	out, _ := cmd.CombinedOutput() // exits non-zero: some scenarios cannot pass here
	files, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	if len(files) == 0 {
		t.Fatalf("no checks.json; output:\n%s", out)
	}
	results := map[string]string{}
	for _, f := range files {
		scenario := strings.TrimPrefix(filepath.Base(filepath.Dir(f)), "server-")
		scenario = timestampRE.ReplaceAllString(scenario, "")
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var list []conformanceCheck
		if err := json.Unmarshal(raw, &list); err != nil {
			t.Fatal(err)
		}
		pass, fail := 0, []string{}
		for _, c := range list {
			switch c.Status {
			case "SUCCESS":
				pass++
			case "FAILURE":
				fail = append(fail, c.ID+": "+c.ErrorMessage)
			}
		}
		results[scenario] = fmt.Sprintf("%d passed, %d failed %s", pass, len(fail), strings.Join(fail, "; "))
		if len(fail) == 0 && pass == 0 {
			results[scenario] = "no checks"
		}
	}
	names := make([]string, 0, len(results))
	for s := range results {
		names = append(names, s)
	}
	sort.Strings(names)
	for _, s := range names {
		t.Logf("%-32s %s", s, results[s])
	}
	for _, s := range frontConformancePass {
		r, ok := results[s]
		if !ok || strings.HasPrefix(r, "0 passed") || !strings.Contains(r, "passed, 0 failed") {
			t.Errorf("scenario %s: %q, want every check passed", s, r)
		}
	}
	for _, s := range names {
		if slicesContains(frontConformancePass, s) {
			continue
		}
		why := ""
		for prefix, w := range frontConformanceWhy {
			if strings.HasPrefix(s, prefix) {
				why = w
			}
		}
		switch {
		case why == "":
			t.Errorf("scenario %s (%s) is neither required to pass nor explained", s, results[s])
		case strings.Contains(results[s], "passed, 0 failed") && !strings.HasPrefix(results[s], "0 passed"):
			t.Logf("scenario %s now passes: move it to frontConformancePass", s)
		}
	}
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
