package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
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
