package tests

import (
	"context"
	"strings"
	"testing"
	"time"
)

// rawControl reports a character that drives a terminal: C0 controls other
// than newline and tab, DEL, C1 controls and bidi overrides.
func rawControl(s string) (rune, bool) {
	for _, r := range s {
		if (r < ' ' && r != '\n' && r != '\t') || (r >= 0x7f && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return r, true
		}
	}
	return 0, false
}

// TestCLIEscapesUpstreamText: with an upstream (tests/termupstream) whose
// tool names, descriptions, results, progress, resources and prompts hold
// terminal control sequences, and a stdio server that dies printing them
// on stderr, no table or text output of the CLI carries a raw control
// character; each shows the sequence escaped (\x1b[2J).
func TestCLIEscapesUpstreamText(t *testing.T) {
	t.Parallel()
	term := helperBinary(t, "termupstream")
	p := startToolsvc(t, cfg{PingInterval: "1h", Servers: servers{
		"term":  {Command: term},
		"dying": {Command: "sh", Args: []string{"-c", `printf 'boom \033[2J\033]0;pwned\007\n' >&2; exit 3`}, Backoff: &backoff{Base: "1h", Max: "1h"}},
	}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	eventually(t, 10*time.Second, "the dying server's error to be recorded", func() bool {
		return serverStatus(t, ctx, p.client, "dying").GetLastError() != ""
	})
	lastErr := serverStatus(t, ctx, p.client, "dying").GetLastError()
	for _, c := range []struct {
		args    []string
		escaped bool // the output shows \x1b[2J
	}{
		{[]string{"tools"}, true},
		{[]string{"servers"}, strings.Contains(lastErr, "\x1b[2J")},
		{[]string{"refresh", "term"}, false},
		{[]string{"call", "term__paint"}, true},
		{[]string{"resources"}, true},
		{[]string{"read", "term://res"}, true},
		{[]string{"prompts"}, true},
		{[]string{"prompt", "term__greet"}, true},
		{[]string{"call", "term__no_such_tool\x1b[2J"}, true},
	} {
		out, err := execToolsvc(ctx, p.addr, c.args...)
		if err != nil && !strings.Contains(strings.Join(c.args, " "), "no_such") {
			t.Errorf("toolsvc %q: %v\n%s", c.args, err, out)
			continue
		}
		if r, bad := rawControl(out); bad {
			t.Errorf("toolsvc %q printed a raw %U:\n%q", c.args, r, out)
		}
		if c.escaped && !strings.Contains(out, `\x1b[2J`) {
			t.Errorf("toolsvc %q does not show the escaped sequence:\n%s", c.args, out)
		}
	}
	tools, _ := listAll(t, ctx, p.client, 0)
	if !hasTool(tools, "term__paint") {
		t.Fatalf("the hostile upstream's tools are not listed: %v", tools)
	}
	for _, tool := range tools {
		if !strings.HasPrefix(tool.GetName(), "term__") {
			continue
		}
		if r, bad := rawControl(tool.GetName()); bad {
			t.Errorf("exposed tool name %q holds %U", tool.GetName(), r)
		}
	}
}
