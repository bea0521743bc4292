package tests

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// repoRoot is the repository root (tests run in tests/).
const repoRoot = ".."

// TestInteropExampleClients runs the Python, Node and Go clients of
// examples/ against a live toolsvc. Each lists the catalog, takes a watch's
// snapshot revision, calls a tool that adds a tool at runtime (on a
// TypeScript-SDK upstream), and resumes the watch from that revision: the
// resumed watch must bring the new tool as a change.
func TestInteropExampleClients(t *testing.T) {
	t.Parallel()
	p := startToolsvc(t, cfg{Servers: servers{"rt": {Command: "node", Args: []string{nodePath(t, "runtime_server.mjs"), "stdio"}},
		"demo": demoServer()}})
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}

	clients := []struct {
		lang  string
		setup func(t *testing.T) (cmd []string, env []string)
	}{
		{"python", func(t *testing.T) ([]string, []string) {
			py, env := pythonClient(t, root)
			return []string{py, filepath.Join(root, "examples/python/client.py")}, env
		}},
		{"node", func(t *testing.T) ([]string, []string) {
			if _, err := os.Stat(filepath.Join(root, "examples/node/node_modules/@toolsvc/client/dist/index.js")); err != nil {
				t.Fatalf("examples/node or the @toolsvc/client it uses is not installed and built (scripts/interop-deps.sh does both): %v", err)
			}
			return []string{"node", filepath.Join(root, "examples/node/client.mjs")}, nil
		}},
		{"go", func(t *testing.T) ([]string, []string) {
			exe := filepath.Join(t.TempDir(), "client")
			build := exec.Command("go", "build", "-o", exe, "./examples/go")
			build.Dir = root
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("building examples/go: %v\n%s", err, out)
			}
			return []string{exe}, nil
		}},
	}
	for _, c := range clients {
		t.Run(c.lang, func(t *testing.T) {
			argv, env := c.setup(t)
			name := "from_" + c.lang
			// WAIT_S 60: the added tool may reach the catalog after the
			// resumed watch's synced; the change then follows it.
			argv = append(argv, p.addr, "rt__add_tool", fmt.Sprintf(`{"name": %q}`, name), "rt__sleep", `{"ms": 400}`, "60")
			ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s client: %v\nstdout:\n%s\nstderr:\n%s", c.lang, err, &stdout, &stderr)
			}
			out := stdout.String()
			t.Logf("%s client output:\n%s", c.lang, out)
			snap := regexp.MustCompile(`(?m)^snapshot ([0-9a-f]+) (\d+) tools$`).FindStringSubmatch(out)
			switch {
			case !strings.Contains(out, "tool rt__echo\n"), !strings.Contains(out, "tool rt__sleep\n"):
				t.Errorf("%s client did not list the catalog", c.lang)
			case snap == nil:
				t.Errorf("%s client printed no snapshot line", c.lang)
			case !strings.Contains(out, fmt.Sprintf("call rt__add_tool ok add_tool %s ok\n", name)):
				t.Errorf("%s client's call result is missing", c.lang)
			case !streamedInOrder(out):
				t.Errorf("%s client's streaming call did not show progress in order, then the result", c.lang)
			case !strings.Contains(out, "resumed from "+snap[1]+"\n"):
				t.Errorf("%s client did not resume from its snapshot revision %s", c.lang, snap[1])
			case !regexp.MustCompile(`(?m)^changes [0-9a-f]+ .*\+rt__` + name + `\b`).MatchString(out):
				t.Errorf("%s client's resumed watch did not bring +rt__%s", c.lang, name)
			case !strings.Contains(out, "read demo://readme toolsvc demo upstream: tools echo, add and sleep; this resource\n"):
				t.Errorf("%s client did not read demo://readme", c.lang)
			case !strings.Contains(out, "got prompt demo__greet user: Please greet world warmly, in one sentence.\n"):
				t.Errorf("%s client did not get the demo__greet prompt", c.lang)
			}
		})
	}
}

// TestExamplesAsPrinted runs the run lines of examples/README.md's Python,
// Node and Go sections as printed (read from the file, so the test follows
// the docs), against a toolsvc serving the demo upstream as "demo" at the
// printed address. Only what is machine-specific is replaced: the address,
// and the README's /tmp/toolsvc-venv interpreter by the project's
// .venv/client with the package on its path; the install lines are what
// scripts/interop-deps.sh does. Each must exit 0 by itself having reached
// every part the README describes: the list, the snapshot, the call, the
// streaming call, the resumed watch (synced: nothing changed), a resource
// read and a prompt.
func TestExamplesAsPrinted(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "examples", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	runLines := exampleRunLines(t, string(readme))
	p := startToolsvc(t, cfg{Servers: servers{"demo": demoServer()}})
	py, pyEnv := pythonClient(t, root)
	for _, lang := range []string{"Python", "Node", "Go"} {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			line := runLines[lang]
			if line == "" {
				t.Fatalf("examples/README.md's %s section has no run line", lang)
			}
			const printedAddr, printedPython = "localhost:50051", "/tmp/toolsvc-venv/bin/python"
			if !strings.Contains(line, printedAddr) {
				t.Fatalf("%s run line does not name %s: %s", lang, printedAddr, line)
			}
			run := strings.ReplaceAll(strings.ReplaceAll(line, printedAddr, p.addr), printedPython, py)
			if lang == "Node" {
				if _, err := os.Stat(filepath.Join(root, "examples/node/node_modules/@toolsvc/client/dist/index.js")); err != nil {
					t.Fatalf("examples/node or the @toolsvc/client it uses is not installed and built (scripts/interop-deps.sh does both): %v", err)
				}
			}
			// Generous: the Go line's go run builds first, and the box is shared.
			ctx, cancel := context.WithTimeout(t.Context(), 10*defaultTestTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", run)
			cmd.Dir, cmd.Env = root, append(os.Environ(), pyEnv...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s\n%v\nstdout:\n%s\nstderr:\n%s", line, err, &stdout, &stderr)
			}
			out := stdout.String()
			t.Logf("%s:\n%s", line, out)
			snap := regexp.MustCompile(`(?m)^snapshot ([0-9a-f]+) \d+ tools$`).FindStringSubmatch(out)
			want := []string{"tool demo__echo\n", "tool demo__sleep\n", "call demo__echo ok hi\n"}
			if snap != nil {
				want = append(want, "resumed from "+snap[1]+"\n", "synced "+snap[1]+"\n")
			} else {
				t.Errorf("%s printed no snapshot line", lang)
			}
			if strings.Contains(line, "demo__sleep") {
				if !regexp.MustCompile(`(?m)^progress \d+/500\b.*\n(.*\n)*stream result ok slept 500 ms\n`).MatchString(out) {
					t.Errorf("%s: the streaming call of demo__sleep shows no progress before its result", lang)
				}
			} else {
				want = append(want, "stream result ok hi\n") // the same call, streamed
			}
			want = append(want, "read demo://readme toolsvc demo upstream: tools echo, add and sleep; this resource\n",
				"got prompt demo__greet user: Please greet world warmly, in one sentence.\n")
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("%s did not print %q", lang, w)
				}
			}
		})
	}
}

// exampleRunLines returns, per section of examples/README.md ("Python",
// "Node", "Go"), the line of its code block that runs the section's client
// example.
func exampleRunLines(t *testing.T, readme string) map[string]string {
	t.Helper()
	runs := map[string]*regexp.Regexp{
		"Python": regexp.MustCompile(`^\S+ examples/python/client\.py `),
		"Node":   regexp.MustCompile(`^node examples/node/client\.mjs `),
		"Go":     regexp.MustCompile(`^go run \./examples/go `),
	}
	out := map[string]string{}
	section, inCode := "", false
	for _, l := range strings.Split(readme, "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			inCode = !inCode
		case !inCode && strings.HasPrefix(l, "## "):
			section, _, _ = strings.Cut(strings.TrimPrefix(l, "## "), " ")
		case inCode && runs[section] != nil && runs[section].MatchString(l):
			if out[section] != "" {
				t.Fatalf("examples/README.md's %s section has two run lines: %s and %s", section, out[section], l)
			}
			out[section] = l
		}
	}
	return out
}

// pythonClient is the interpreter of .venv/client (scripts/pyenv.sh: the
// toolsvc package's dependencies) and the environment that puts the package
// (clients/python/src) on its path, for the Python examples.
func pythonClient(t *testing.T, root string) (string, []string) {
	t.Helper()
	py := filepath.Join(root, ".venv", "client", "bin", "python")
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("no %s (scripts/interop-deps.sh creates it): %v", py, err)
	}
	return py, []string{"PYTHONPATH=" + filepath.Join(root, "clients", "python", "src")}
}

// TestInteropReadmeGrpcurl runs every grpcurl line of the README's Clients
// section against a live toolsvc with the demo upstream, so the one-liners
// stay true. grpcurl comes from scripts/interop-deps.sh (.bin/).
func TestInteropReadmeGrpcurl(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	grpcurl := filepath.Join(root, ".bin", "grpcurl")
	if _, err := os.Stat(grpcurl); err != nil {
		t.Fatalf("grpcurl is not installed (scripts/interop-deps.sh puts it in .bin/): %v", err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, clients, ok := strings.Cut(string(readme), "\n## Clients\n")
	if !ok {
		t.Fatal(`README.md has no "## Clients" section`)
	}
	clients, _, _ = strings.Cut(clients, "\n## ")
	var lines []string
	for _, l := range strings.Split(clients, "\n") {
		if strings.HasPrefix(l, "grpcurl ") {
			lines = append(lines, l)
		}
	}
	// What each kind of line must print. A new line needs an entry here.
	expect := []struct{ match, want string }{
		{"localhost:50051 list", "toolsvc.v1.ToolService"},
		{"Health/Check", `"status": "SERVING"`},
		{"-proto toolsvc/v1/toolsvc.proto", `"name": "demo__add"`},
		{"ListTools", `"name": "demo__add"`},
		{`"demo__add"`, `"sum": 42`},
		{`"demo__echo"`, `"text": "hi"`},
		{"ListServers", `"state": "SERVER_STATE_READY"`},
		{"resume_token", `"synced": {}`},
		{"WatchCatalog", `"snapshot": {`},
		{"ListResources", `"uri": "demo://readme"`},
		{"ReadResource", `"text": "toolsvc demo upstream:`},
		{"GetPrompt", `Please greet Ada warmly`},
	}
	if len(lines) < len(expect) {
		t.Fatalf("README Clients section has %d grpcurl lines, want at least %d", len(lines), len(expect))
	}

	p := startToolsvc(t, cfg{Servers: servers{"demo": demoServer()}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	_, rev := listAll(t, ctx, p.client, 0)

	for _, line := range lines {
		want := ""
		for _, e := range expect {
			if strings.Contains(line, e.match) {
				want = e.want
				break
			}
		}
		if want == "" {
			t.Errorf("README line has no expectation in this test: %s", line)
			continue
		}
		out, err := runShellLine(strings.ReplaceAll(line, "localhost:50051", p.addr), root,
			append(os.Environ(), "PATH="+filepath.Dir(grpcurl)+":"+os.Getenv("PATH"), "REV="+rev),
			strings.Contains(line, "WatchCatalog"), want)
		if !strings.Contains(out, want) {
			t.Errorf("%s\n  printed (err %v):\n%s\n  want it to contain %s", line, err, out, want)
		}
	}
}

// runShellLine runs a README line with bash. A stream (stream=true) runs
// until its output contains want, then is interrupted.
func runShellLine(line, dir string, env []string, stream bool, want string) (string, error) {
	cmd := exec.Command("bash", "-c", line)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return out.String(), err
		case <-tick.C:
			if stream && strings.Contains(out.String(), want) {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
				<-done
				return out.String(), nil
			}
		case <-deadline:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			return out.String(), fmt.Errorf("still running after 30s")
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a concurrent reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// streamedInOrder reports whether out shows at least the first progress
// message of the streaming call, every one in increasing order, then its
// result. The last steps may legitimately be missing: progress that loses
// the race with the result is dropped.
func streamedInOrder(out string) bool {
	steps := regexp.MustCompile(`(?m)^progress (\d)/4 quarter (\d)$`).FindAllStringSubmatchIndex(out, -1)
	res := regexp.MustCompile(`(?m)^stream result ok slept \d+ms$`).FindStringIndex(out)
	if len(steps) == 0 || res == nil || out[steps[0][2]:steps[0][3]] != "1" {
		return false
	}
	prev := 0
	for _, m := range steps {
		n := int(out[m[2]] - '0')
		if n <= prev || m[0] > res[0] {
			return false
		}
		prev = n
	}
	return true
}
