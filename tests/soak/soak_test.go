package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestSoak2m is CI's soak: the command itself, for two minutes. It fails
// when the command exits non-zero (an invariant failed, or it could not
// run). The replicas are built without -race (every other end-to-end test
// runs a race-built toolsvc; a race-built heap needs longer than two
// minutes to reach its working size, so its growth would measure warm-up);
// SOAK_RACE=1 builds them with -race.
func TestSoak2m(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak runs for two minutes")
	}
	if os.Getenv("TOOLSVC_SOAK") != "1" {
		// scripts/test.sh runs it on its own after the rest of the suite,
		// so that its load does not share the box with the other packages.
		t.Skip("set TOOLSVC_SOAK=1 to run the two-minute soak (scripts/test.sh does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	args := []string{"run", ".", "-duration", "2m", "-dir", t.TempDir()}
	if os.Getenv("SOAK_RACE") == "1" {
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = os.Environ()
	cmd.WaitDelay = 30 * time.Second
	err := cmd.Run()
	t.Logf("result: %s", bytes.TrimSpace(stdout.Bytes()))
	if err != nil {
		t.Fatalf("soak: %v\n%s", err, stderr.String())
	}
	if !bytes.Contains(stdout.Bytes(), []byte(`"lost_events":0`)) {
		t.Fatalf("soak printed no result line:\n%s", stderr.String())
	}
}

// TestSoakFailsAtOnceWithoutPeers: the soak command in a checkout without
// the Python venv and the TypeScript SDK (a fresh clone) exits 2 before it
// builds or starts anything, naming what is missing and the command that
// installs it (it used to fail after its builds with "fork/exec
// .venv/mcp/bin/python: no such file or directory").
func TestSoakFailsAtOnceWithoutPeers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	exe := filepath.Join(t.TempDir(), "soak")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// A module root like a fresh clone's: go.mod, no .venv, no node_modules.
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module github.com/toolsvc/toolsvc\n\ngo 1.26.0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	cmd := exec.CommandContext(ctx, exe, "-duration", "1s", "-dir", work)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("soak in a fresh checkout = %v (want exit status 2):\n%s", err, out)
	}
	for _, want := range []string{".venv/mcp", ".venv/tasks", "tests/node/node_modules", "run scripts/interop-deps.sh"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("soak output lacks %q:\n%s", want, out)
		}
	}
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Errorf("the soak built or started something before failing: %v", entries)
	}
}
