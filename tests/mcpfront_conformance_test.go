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
)

// conformanceFixtureBin builds tests/conformancefixture: a go-sdk server with
// the suite's own test_* tool fixtures.
// frontConformancePass are the server scenarios of
// @modelcontextprotocol/conformance that must pass against the front door
// with server-everything and tests/conformancefixture (bareNames) behind
// toolsvc. The others cannot pass there, for reasons listed in
// frontConformanceWhy, or are racy (frontConformanceRacy).
var frontConformancePass = []string{
	"server-initialize", "ping", "logging-set-level", "tools-list",
	"server-sse-multiple-streams", "dns-rebinding-protection",
	// The fixture's resources and prompts, through the front door (the
	// prompts by their bare names).
	"resources-list", "prompts-list", "resources-read-text", "resources-read-binary", "resources-templates-read",
	"resources-subscribe", "resources-unsubscribe", "prompts-get-simple", "prompts-get-with-args",
	"prompts-get-embedded-resource", "prompts-get-with-image",
	// The fixture's test_* tools, called by their bare names.
	"tools-call-simple-text", "tools-call-image", "tools-call-audio", "tools-call-embedded-resource",
	"tools-call-mixed-content", "tools-call-error",
	// A result that overtakes its last progress notifications waits for
	// them (mcpbridge progressGrace), so all three arrive.
	"tools-call-with-progress",
	// Elicitation and sampling: the fixture's server-to-client requests
	// reach the suite's client (a 2025-11-25 session that declared them)
	// through the call's flight and the front door's askClient.
	"tools-call-elicitation", "tools-call-sampling", "elicitation-sep1034-defaults", "elicitation-sep1330-enums",
	// The upstream's notifications/message during the call, relayed at the
	// level the client set (core.Relay, mcpfront dispatch); a result waits
	// for the messages read before it (mcpbridge logGrace).
	"tools-call-with-logging",
	// completion/complete through the core to the prompt's upstream (the
	// fixture declares no completions: no values).
	"completion-complete",
}

// frontConformanceRacy are scenarios that pass in some runs only: their
// outcome depends on a race outside this test: each maps to the one failure
// it may show instead (anything else fails the test) and why.
var frontConformanceRacy = map[string]struct{ failure, why string }{}

var timestampRE = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[0-9TZ-]+$`)

// frontConformanceWhy explains each scenario that is not in
// frontConformancePass (checked: a scenario listed here that starts
// passing is reported, so the list stays true).
var frontConformanceWhy = map[string]string{
	"json-schema-2020-12": "not run by the suite's default server run (2025-11-25 only); the fixture has json_schema_2020_12_tool",
	"server-sse-polling":  "not run by the suite's default server run (2025-11-25 only); the fixture has test_reconnection",
}

// TestMCPFrontConformanceServer runs the conformance suite in server mode
// against the front door, server-everything behind toolsvc, and logs every
// scenario with its result.
func TestMCPFrontConformanceServer(t *testing.T) {
	t.Parallel()
	n22, cli := nodePath(t, node22), nodePath(t, conformanceCLI)
	fixture := helperBinary(t, "conformancefixture")
	// The fixture's tools keep their own names (bareNames), as the suite
	// calls them; server-everything's keep the everything__ prefix.
	c := cfg{Servers: servers{"everything": goHTTP(startEverythingHTTP(t), upstream{}), "fixture": {Command: fixture, BareNames: true}}}
	p := startToolsvc(t, c, "--mcp-listen", "127.0.0.1:0")
	base := "http://" + p.mcpAddr
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
	for s, racy := range frontConformanceRacy {
		r, ok := results[s]
		switch {
		case !ok:
			t.Errorf("scenario %s did not run", s)
		case strings.Contains(r, "passed, 0 failed") && !strings.HasPrefix(r, "0 passed"):
		case strings.HasPrefix(r, "0 passed, 1 failed") && strings.HasSuffix(strings.TrimSpace(r), racy.failure):
			t.Logf("scenario %s lost the race this run (%s)", s, racy.why)
		default:
			t.Errorf("scenario %s: %q, want every check passed or only %q", s, r, racy.failure)
		}
	}
	for _, s := range names {
		if _, racy := frontConformanceRacy[s]; racy || slicesContains(frontConformancePass, s) {
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
