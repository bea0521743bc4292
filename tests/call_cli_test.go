package tests

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestCLICallProgressAndContent: `toolsvc call` prints progress as it comes
// (lines on a non-terminal stderr, in order), the result on stdout, short
// descriptions of images, audio and resources, everything with --json, and
// a failed call's reason and field violations.
func TestCLICallProgressAndContent(t *testing.T) {
	t.Parallel()
	p := startCallFixture(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	run := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin.toolsvc, append([]string{"call", "--addr", p.addr}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("toolsvc call %s: %v", strings.Join(args, " "), err)
		}
		if code != wantCode {
			t.Fatalf("toolsvc call %s exited %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, &stdout, &stderr)
		}
		return stdout.String(), stderr.String()
	}

	out, errOut := run(0, "s__progress_steps", `{"steps": 3, "step_ms": 5, "settle_ms": 300}`)
	if strings.TrimSpace(out) != "done" {
		t.Errorf("stdout = %q, want done", out)
	}
	if want := "progress 1/3 step 1\nprogress 2/3 step 2\nprogress 3/3 step 3\n"; errOut != want {
		t.Errorf("stderr = %q, want %q", errOut, want)
	}

	out, _ = run(0, "h__all_content")
	for _, want := range []string{
		"hello\n",
		"[image image/png, 7 B]\n",
		"[audio audio/wav, 8 B]\n",
		`[resource link file:///tmp/a.txt "a.txt" text/plain, 4 B]` + "\n",
		"[resource mem://t text/plain, 13 characters of text]\n",
		"[resource mem://b application/octet-stream, 4 B]\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("call h__all_content lacks %q:\n%s", want, out)
		}
	}
	out, _ = run(3, "--json", "h__all_content", `{"is_error": true}`)
	for _, want := range []string{
		base64.StdEncoding.EncodeToString([]byte{0x89, 'P', 'N', 'G', 0, 1, 2}),
		`"structuredContent":{`, `"isError":true`, `"embedded text"`, `"lastModified":"2026-01-02T03:04:05Z"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("call --json h__all_content lacks %q:\n%s", want, out)
		}
	}

	_, errOut = run(1, "s__strict", `{"count": "seven", "extra": 1}`)
	if !strings.Contains(errOut, "InvalidArgument") || !strings.Contains(errOut, "reason: ARGUMENTS_INVALID") || !strings.Contains(errOut, "arguments_json.") {
		t.Errorf("a failed call's stderr lacks the code, reason or field:\n%s", errOut)
	}
}
