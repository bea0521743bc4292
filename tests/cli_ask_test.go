package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCLIAsksOnTerminal: `toolsvc call` on a terminal (a pseudo-terminal)
// answers a tool that asks by asking the person: what is typed reaches the
// tool's result, for a relayed (2026-07-28) and a parked (2025-11-25)
// upstream, over one or two rounds; roots are the current directory.
// Without a terminal, or with --no-input, nothing is offered and the
// server's policy answers.
func TestCLIAsksOnTerminal(t *testing.T) {
	t.Parallel()
	httpURL := startProc(t, exec.Command(bin.testserver, "-mode", "http", "-interactive")).log.waitFor(t, urlLineRE, 30*time.Second)
	stdio26 := upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}, ProtocolVersion: "2026-07-28"}
	p := startToolsvc(t, cfg{Servers: servers{"old": {URL: httpURL}, "new": stdio26}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()

	// onTerminal runs toolsvc call with the terminal as stdin and stderr,
	// lets talk type the answers, and returns stdout.
	onTerminal := func(t *testing.T, dir string, talk func(*pty), args ...string) string {
		t.Helper()
		term := openPTY(t)
		cmd := exec.CommandContext(ctx, bin.toolsvc, append([]string{"call", "--addr", p.addr}, args...)...)
		cmd.Dir = dir
		var stdout bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = term.term, &stdout, term.term
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		talk(term)
		if err := <-done; err != nil {
			t.Fatalf("toolsvc call %q: %v\nterminal:\n%s\nstdout:\n%s", args, err, term.Screen(), &stdout)
		}
		return stdout.String()
	}
	const wait = 20 * time.Second
	for _, server := range []string{"new", "old"} {
		t.Run(server, func(t *testing.T) {
			got := onTerminal(t, "", func(term *pty) {
				at := term.expect(t, 0, "What is your name?", wait)
				at = term.expect(t, at, "Fill in the form?", wait)
				term.typeLine(t, "")
				at = term.expect(t, at, "name: Your name", wait)
				at = term.expect(t, at, "[string, required] > ", wait)
				term.typeLine(t, "") // required: asked again
				at = term.expect(t, at, "required: please give a value", wait)
				term.typeLine(t, "Ada Lovelace")
			}, server+"__ask_name")
			if got != "hello Ada Lovelace\n" {
				t.Errorf("ask_name answered on the terminal printed %q", got)
			}

			got = onTerminal(t, "", func(term *pty) {
				term.expect(t, 0, "Fill in the form?", wait)
				term.typeLine(t, "d")
			}, server+"__ask_name")
			if got != "declined\n" {
				t.Errorf("ask_name declined on the terminal printed %q", got)
			}

			got = onTerminal(t, "", func(term *pty) {
				at := term.expect(t, 0, "site: https://login.example", wait)
				at = term.expect(t, at, "URL:  https://login.example/authorize?x=1", wait)
				term.expect(t, at, "press Enter", wait)
				term.typeLine(t, "")
			}, server+"__ask_url")
			if got != "url accept\n" {
				t.Errorf("ask_url confirmed on the terminal printed %q", got)
			}

			dir := t.TempDir()
			root := (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
			got = onTerminal(t, dir, func(term *pty) {
				term.expect(t, 0, "sharing the current directory, "+root, wait)
			}, server+"__ask_roots")
			if got != "roots="+root+"\n" {
				t.Errorf("ask_roots on the terminal printed %q, want roots=%s", got, root)
			}

			// --no-input on a terminal: nothing offered, nothing asked.
			got = onTerminal(t, "", func(*pty) {}, "--no-input", server+"__ask_name")
			if got != "declined\n" {
				t.Errorf("ask_name --no-input printed %q, want the policy's decline", got)
			}
			// No terminal: the same.
			out, err := exec.CommandContext(ctx, bin.toolsvc, "call", "--addr", p.addr, server+"__ask_name").Output()
			if err != nil || string(out) != "declined\n" {
				t.Errorf("ask_name without a terminal: %q, %v; want the policy's decline", out, err)
			}
		})
	}
	// A hostile URL request: the message cannot print a
	// line of its own, the host is shown in punycode (a Cyrillic і in
	// "gіthub.com"), invisible characters are shown, and a URL that is not
	// http(s) is not offered: it is declined without a question.
	hostile := func(u, msg string) string {
		b, _ := json.Marshal(map[string]string{"url": u, "message": msg})
		return string(b)
	}
	var screen string
	got := onTerminal(t, "", func(term *pty) {
		at := term.expect(t, 0, `The tool asks you to open a URL: Sign in\n  site: https://github.com\u200b`, wait)
		at = term.expect(t, at, "site: https://xn--gthub-n2e.com", wait)
		at = term.expect(t, at, "URL:  https://xn--gthub-n2e.com/login?next=%E2%80%AEexe", wait)
		term.expect(t, at, "press Enter", wait)
		screen = term.Screen()
		term.typeLine(t, "")
	}, "new__ask_url_given", hostile("https://g\u0456thub.com/login?next=\u202eexe", "Sign in\n  site: https://github.com\u200b"))
	if got != "url accept\n" {
		t.Errorf("ask_url_given with a homograph host printed %q", got)
	}
	if strings.Contains(screen, "\u0456") || strings.Contains(screen, "\u202e") || strings.Contains(screen, "\u200b") ||
		regexp.MustCompile(`(?m)^\s*site: https://github\.com`).MatchString(screen) {
		t.Errorf("the terminal shows the upstream's Unicode or its fake line:\n%s", screen)
	}
	for _, u := range []string{"javascript:alert(document.cookie)", "https://git\u200bhub.com/"} {
		got = onTerminal(t, "", func(term *pty) {
			term.expect(t, 0, "; declined", wait)
		}, "new__ask_url_given", hostile(u, "Open it"))
		if got != "url decline\n" {
			t.Errorf("ask_url_given with %q printed %q; want it declined unasked", u, got)
		}
	}
	// Two rounds mid-call (a 2025-11-25 upstream): each question on the
	// terminal, each answer to the tool.
	got = onTerminal(t, "", func(term *pty) {
		at := term.expect(t, 0, "first?", wait)
		term.typeLine(t, "a")
		at = term.expect(t, at, "> ", wait)
		term.typeLine(t, "Ada")
		at = term.expect(t, at, "second?", wait)
		term.typeLine(t, "")
		term.expect(t, at, "> ", wait)
		term.typeLine(t, "Bob")
	}, "old__ask_twice")
	if got != "Ada+Bob\n" {
		t.Errorf("ask_twice on the terminal printed %q", got)
	}
	// stdin ends while asked, or Ctrl-C: the call is cancelled (the tool
	// hears it at once) and the command fails.
	term := openPTY(t)
	cmd := exec.CommandContext(ctx, bin.toolsvc, "call", "--addr", p.addr, "old__ask_wait", `{"id": "ctrl-d"}`)
	cmd.Stdin, cmd.Stderr = term.term, term.term
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	term.expect(t, 0, "Fill in the form?", wait)
	term.control.Write([]byte{4}) // Ctrl-D: end of input
	if err := cmd.Wait(); err == nil {
		t.Errorf("toolsvc call with stdin ended mid-question: exited 0\n%s", term.Screen())
	}
	// The process may exit before the terminal's reader has taken its
	// last line: wait for it rather than read the screen once.
	term.expect(t, 0, "stdin ended", wait)
	if rec := waitCancelRecord(t, ctx, p.client, "old", "ctrl-d", 10*time.Second); !rec.finished {
		t.Errorf("the tool did not hear the cancel: %+v", rec)
	}
	// Ctrl-C while asked: the same.
	term = openPTY(t)
	cmd = exec.CommandContext(ctx, bin.toolsvc, "call", "--addr", p.addr, "old__ask_wait", `{"id": "ctrl-c"}`)
	cmd.Stdin, cmd.Stderr = term.term, term.term
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	term.expect(t, 0, "Fill in the form?", wait)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Errorf("toolsvc call interrupted mid-question exited 0\n%s", term.Screen())
	}
	if rec := waitCancelRecord(t, ctx, p.client, "old", "ctrl-c", 10*time.Second); !rec.finished {
		t.Errorf("the tool did not hear the cancel after Ctrl-C: %+v", rec)
	}
}
