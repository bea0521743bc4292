package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// The task commands of the CLI (docs/cli.md, "Tasks from the shell"): `toolsvc call --task`,
// `toolsvc tasks`, `toolsvc task HANDLE [--watch|--cancel]`, against the
// real task servers of tasks_test.go.

// runCLI runs a toolsvc client command against addr and wants its exit
// code; it returns stdout and stderr.
func runCLI(t *testing.T, ctx context.Context, addr string, wantCode int, args ...string) (string, string) {
	t.Helper()
	full := append([]string{args[0], "--addr", addr}, args[1:]...)
	cmd := exec.CommandContext(ctx, bin.toolsvc, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("toolsvc %s: %v", strings.Join(args, " "), err)
	}
	if code != wantCode {
		t.Fatalf("toolsvc %s exited %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, &stdout, &stderr)
	}
	return stdout.String(), stderr.String()
}

var handleLineRE = regexp.MustCompile(`(?m)^task (t1\.[A-Za-z0-9_-]+)$`)

// TestCLITasks: on a 2025-11-25 (TypeScript SDK, stdio) and a 2026-07-28
// (Python SDK) upstream: call --task prints the handle and follows the task
// to its result (status changes on stderr), or to the tool's own failure
// (exit 3); --detach prints only the handle; tasks lists it; task shows,
// cancels (exit 4 when then watched) and takes a handle prefix or the task
// id; a tool that cannot run as a task prints its plain result; a forged
// handle prints the reason.
func TestCLITasks(t *testing.T) {
	all := taskServers(t)
	p := startToolsvc(t, cfg{Servers: servers{"ts": all["ts"], "py": all["py"]}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*defaultTestTimeout)
	defer cancel()
	for _, server := range []string{"ts", "py"} {
		t.Run(server, func(t *testing.T) {
			tool := server + "__slow"
			out, errOut := runCLI(t, ctx, p.addr, 0, "call", "--task", "--ttl", "2m", tool, `{"ms": 300}`)
			if out != "slept 300\n" {
				t.Errorf("call --task stdout = %q, want slept 300", out)
			}
			if !handleLineRE.MatchString(errOut) || !strings.Contains(errOut, "status working\n") || !strings.Contains(errOut, "status completed\n") {
				t.Errorf("call --task stderr lacks the handle line or the statuses:\n%s", errOut)
			}

			out, errOut = runCLI(t, ctx, p.addr, 3, "call", "--task", tool, `{"ms": 50, "fail": true}`)
			if !strings.Contains(out, "boom") || !strings.Contains(errOut, "the tool reported an error") {
				t.Errorf("a failing task: stdout %q, stderr:\n%s", out, errOut)
			}

			out, errOut = runCLI(t, ctx, p.addr, 0, "call", "--task", "--detach", tool, `{"ms": 30000}`)
			handle := strings.TrimSpace(out)
			if !strings.HasPrefix(handle, "t1.") || strings.Contains(handle, "\n") || !strings.Contains(errOut, "toolsvc task "+handle+" --watch") {
				t.Fatalf("call --task --detach: stdout %q, stderr:\n%s", out, errOut)
			}
			list, _ := runCLI(t, ctx, p.addr, 0, "tasks", "--server", server)
			if !strings.HasPrefix(list, "HANDLE ") || !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(handle[:15])+` .* `+tool+` +`+server+` +working `).MatchString(list) {
				t.Errorf("tasks --server %s lacks the working task %s:\n%s", server, handle[:15], list)
			}
			js, _ := runCLI(t, ctx, p.addr, 0, "tasks", "--json")
			if !strings.Contains(js, `"handle":"`+handle+`"`) {
				t.Errorf("tasks --json lacks the handle:\n%s", js)
			}
			show, _ := runCLI(t, ctx, p.addr, 0, "task", handle[:15])
			id := regexp.MustCompile(`(?m)^task id:\s+(\S+)$`).FindStringSubmatch(show)
			if !strings.Contains(show, "handle:   "+handle+"\n") || !strings.Contains(show, "status:   working") || id == nil {
				t.Fatalf("task PREFIX:\n%s", show)
			}
			cancelled, _ := runCLI(t, ctx, p.addr, 0, "task", id[1], "--cancel")
			if !strings.Contains(cancelled, "status:   cancelled") {
				t.Errorf("task ID --cancel:\n%s", cancelled)
			}
			_, errOut = runCLI(t, ctx, p.addr, 4, "task", "--watch", handle)
			if !strings.Contains(errOut, "status cancelled") || !strings.Contains(errOut, "the task was cancelled") {
				t.Errorf("task --watch of a cancelled task: stderr:\n%s", errOut)
			}

			out, errOut = runCLI(t, ctx, p.addr, 0, "call", "--task", server+"__echo", `{"text": "plain"}`)
			if out != "plain\n" || !strings.Contains(errOut, "without a task") {
				t.Errorf("call --task of a plain tool: stdout %q, stderr:\n%s", out, errOut)
			}
		})
	}
	// A 2025-11-25 task that asks shows input_required without saying
	// what: the watch says it cannot answer, and keeps waiting.
	out, _ := runCLI(t, ctx, p.addr, 0, "call", "--task", "--detach", "ts__ask")
	w := startProc(t, exec.Command(bin.toolsvc, "task", "--addr", p.addr, strings.TrimSpace(out), "--watch"))
	w.log.waitFor(t, regexp.MustCompile(`^the task waits for input the upstream does not describe`), 20*time.Second)
	w.stop()

	_, errOut := runCLI(t, ctx, p.addr, 1, "task", "t1."+strings.Repeat("A", 60))
	if !strings.Contains(errOut, "InvalidArgument") || !strings.Contains(errOut, "reason: TASK_HANDLE_INVALID") {
		t.Errorf("task with a forged handle: stderr:\n%s", errOut)
	}
	_, errOut = runCLI(t, ctx, p.addr, 1, "task", "t1.nope")
	if !strings.Contains(errOut, "no task of yours matches") {
		t.Errorf("task with an unknown prefix: stderr:\n%s", errOut)
	}
	// A task id is base64url, which may begin with "-" (a Python SDK
	// upstream's, about one time in 64): the id, not an undefined flag.
	_, errOut = runCLI(t, ctx, p.addr, 1, "task", "-sbg6s6qQSvmlkc77XMXDKksDPYVLBX", "--cancel")
	if !strings.Contains(errOut, `no task of yours matches "-sbg6s6qQSvmlkc77XMXDKksDPYVLBX"`) {
		t.Errorf("task -ID --cancel: stderr:\n%s", errOut)
	}
	_, errOut = runCLI(t, ctx, p.addr, 2, "call", "--detach", "py__slow")
	if !strings.Contains(errOut, "go with --task") {
		t.Errorf("call --detach without --task: stderr:\n%s", errOut)
	}
}

// TestCLITaskInputOnTerminal: a 2026-07-28 task that waits for input is
// answered on the terminal (the prompts of `toolsvc call`) through
// UpdateTask, and its result printed; without a terminal the watch says how
// to answer, and a second watch on a terminal answers.
func TestCLITaskInputOnTerminal(t *testing.T) {
	all := taskServers(t)
	p := startToolsvc(t, cfg{Servers: servers{"py": all["py"]}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	const wait = 20 * time.Second

	term := openPTY(t)
	cmd := exec.CommandContext(ctx, bin.toolsvc, "call", "--addr", p.addr, "--task", "py__ask")
	var stdout bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = term.term, &stdout, term.term
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	at := term.expect(t, 0, "status input_required", wait)
	at = term.expect(t, at, "Your name?", wait)
	at = term.expect(t, at, "Fill in the form?", wait)
	term.typeLine(t, "")
	term.expect(t, at, "[string, required] > ", wait)
	term.typeLine(t, "Ada")
	if err := cmd.Wait(); err != nil || stdout.String() != "hello Ada\n" {
		t.Fatalf("call --task py__ask on a terminal: %v, stdout %q\nterminal:\n%s", err, &stdout, term.Screen())
	}

	// No terminal: the watch says how to answer and keeps waiting; a
	// watch on a terminal answers, and both print the result.
	out, _ := runCLI(t, ctx, p.addr, 0, "call", "--task", "--detach", "py__ask")
	handle := strings.TrimSpace(out)
	bg := exec.CommandContext(ctx, bin.toolsvc, "task", "--addr", p.addr, handle, "--watch")
	var bgOut bytes.Buffer
	var bgErr syncBuffer
	bg.Stdout, bg.Stderr = &bgOut, &bgErr
	if err := bg.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, wait, "the hint to answer on a terminal", func() bool {
		return strings.Contains(bgErr.String(), "answer it on a terminal: toolsvc task "+handle+" --watch")
	})
	term = openPTY(t)
	cmd = exec.CommandContext(ctx, bin.toolsvc, "task", "--addr", p.addr, handle, "--watch")
	stdout.Reset()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = term.term, &stdout, term.term
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	at = term.expect(t, 0, "Fill in the form?", wait)
	term.typeLine(t, "")
	term.expect(t, at, "> ", wait)
	term.typeLine(t, "Bob")
	if err := cmd.Wait(); err != nil || stdout.String() != "hello Bob\n" {
		t.Fatalf("task --watch on a terminal: %v, stdout %q\nterminal:\n%s", err, &stdout, term.Screen())
	}
	if err := bg.Wait(); err != nil || bgOut.String() != "hello Bob\n" {
		t.Errorf("task --watch without a terminal: %v, stdout %q, stderr:\n%s", err, &bgOut, &bgErr)
	}

	// stdin ends while asked: the command fails and answers cancel, so
	// the task stops waiting at once.
	term = openPTY(t)
	cmd = exec.CommandContext(ctx, bin.toolsvc, "call", "--addr", p.addr, "--task", "py__ask")
	cmd.Stdin, cmd.Stderr = term.term, term.term
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	at = term.expect(t, 0, "task t1.", wait)
	term.expect(t, at, "Fill in the form?", wait)
	handle = regexp.MustCompile(`task (t1\.[A-Za-z0-9_-]+)`).FindStringSubmatch(term.Screen())[1]
	term.control.Write([]byte{4}) // Ctrl-D: end of input
	if err := cmd.Wait(); err == nil {
		t.Errorf("call --task with stdin ended mid-question: exited 0\n%s", term.Screen())
	}
	// The process may exit before the terminal's reader has taken its
	// last line: wait for it rather than read the screen once.
	term.expect(t, 0, "stdin ended", wait)
	eventually(t, wait, "the task to stop waiting for input", func() bool {
		got, err := p.client.GetTask(ctx, &toolsvcv1.GetTaskRequest{Handle: handle})
		return err == nil && got.GetTask().GetStatus() != toolsvcv1.TaskStatus_TASK_STATUS_INPUT_REQUIRED
	})

	// Ctrl-C while following: the command stops (130) and says how to
	// follow again; the task goes on.
	out, _ = runCLI(t, ctx, p.addr, 0, "call", "--task", "--detach", "py__slow", `{"ms": 30000}`)
	handle = strings.TrimSpace(out)
	var intErr syncBuffer
	intr := exec.CommandContext(ctx, bin.toolsvc, "task", "--addr", p.addr, handle, "--watch")
	intr.Stderr = &intErr
	if err := intr.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, wait, "the watch to show the task working", func() bool { return strings.Contains(intErr.String(), "status working") })
	if err := intr.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := intr.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(intErr.String(), "the task goes on: toolsvc task "+handle+" --watch") {
		t.Errorf("task --watch interrupted: %v, stderr:\n%s", err, intErr.String())
	}
	got, err := p.client.GetTask(ctx, &toolsvcv1.GetTaskRequest{Handle: handle})
	if err != nil || got.GetTask().GetStatus() != toolsvcv1.TaskStatus_TASK_STATUS_WORKING {
		t.Errorf("after the interrupted watch the task is %v, %v; want working", got.GetTask().GetStatus(), err)
	}
}

// TestCLITaskWatchResumes: the replica serving `toolsvc task --watch` stops
// mid-task (its watch ends SHUTTING_DOWN, then connections are refused);
// another replica with the same state key comes up at the address, and the
// watch resumes there and prints the result.
func TestCLITaskWatchResumes(t *testing.T) {
	all := taskServers(t)
	key := filepath.Join(t.TempDir(), "state.key")
	if err := os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := cfg{Servers: servers{"py": all["py"]}}
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	a := startToolsvc(t, conf, "--state-key-file", key, "--listen", listen)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	out, _ := runCLI(t, ctx, listen, 0, "call", "--task", "--detach", "py__slow", `{"ms": 4000}`)
	handle := strings.TrimSpace(out)
	w := startProc(t, exec.Command(bin.toolsvc, "task", "--addr", listen, handle, "--watch"))
	w.log.waitFor(t, regexp.MustCompile(`^status working$`), 20*time.Second)
	a.stop()
	w.log.waitFor(t, regexp.MustCompile(`^watch: stream ended \(Unavailable: .*\); resuming in `), 20*time.Second)
	startToolsvc(t, conf, "--state-key-file", key, "--listen", listen)
	w.log.waitFor(t, regexp.MustCompile(`^slept 4000$`), 30*time.Second)
	select {
	case <-w.done:
		if w.err != nil {
			t.Errorf("task --watch exited %v; output:\n%s", w.err, w.log)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("task --watch did not exit after the result; output:\n%s", w.log)
	}
}
