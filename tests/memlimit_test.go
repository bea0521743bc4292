package tests

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// memoryLimitLine is toolsvc's start log line saying which soft memory
// limit it gave the Go runtime.
var memoryLimitLine = regexp.MustCompile(`msg="memory limit".*`)

// gomemlimitMetric reads the runtime's own soft limit from toolsvc's
// metrics (client_golang's Go collector, from runtime/metrics).
func gomemlimitMetric(t *testing.T, adminAddr string) int64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^go_gc_gomemlimit_bytes (\S+)$`).FindStringSubmatch(scrape(t, adminAddr))
	if m == nil {
		t.Fatal("no go_gc_gomemlimit_bytes in toolsvc's metrics")
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return int64(f)
}

// TestMemoryLimitFromCgroup: toolsvc started inside a real memory cgroup
// limited to 512 MiB gives the Go runtime 90% of it as its soft limit
// (460 MiB), says so in its start log and shows it in
// go_gc_gomemlimit_bytes; a declared limit above the cgroup's does not
// raise it (the lower counts). The cgroup is a child of this test's own
// memory cgroup (v1 memory controller or v2), entered by a shell that then
// execs toolsvc; it needs root and a writable cgroup file system, and is
// skipped, saying why, where the machine refuses to create one
// (TestMemoryLimitPrecedence covers the rest without one).
func TestMemoryLimitFromCgroup(t *testing.T) {
	t.Parallel()
	const limit = 512 << 20
	dir := childMemoryCgroup(t, limit)
	p := startToolsvcWith(t, cfg{Servers: servers{"up": goStdio(upstream{RefreshInterval: "1h"})}}, startOpts{
		wrap: []string{"sh", "-c", `echo $$ > "$CGROUP_PROCS" && exec "$@"`, "sh"},
		env:  []string{"CGROUP_PROCS=" + filepath.Join(dir, "cgroup.procs"), "GOMEMLIMIT=", "GOGC=", "TOOLSVC_MEMORY_LIMIT="},
		args: []string{"--memory-limit", "1Gi"},
	})
	line := p.log.waitFor(t, memoryLimitLine, 30*time.Second)
	want := fmt.Sprintf("source=cgroup GOGC=400 soft_limit_bytes=%d soft_limit_mib=460 container_limit_bytes=%d", int64(limit*9/10), limit)
	if !strings.Contains(line, want) {
		t.Fatalf("start log %q; want it to contain %q", line, want)
	}
	if got := gomemlimitMetric(t, p.adminAddr); got != int64(limit*9/10) {
		t.Fatalf("go_gc_gomemlimit_bytes = %d; want %d", got, int64(limit*9/10))
	}
}

// TestMemoryLimitPrecedence: without a cgroup limit lower than it, the
// declared limit (--memory-limit, $TOOLSVC_MEMORY_LIMIT, as the Helm chart
// sets it) gives the runtime 90% of it; AUTOMEMLIMIT sets the share;
// GOMEMLIMIT wins over both; a value that is not a quantity of bytes stops
// toolsvc with exit status 2 naming the flag.
func TestMemoryLimitPrecedence(t *testing.T) {
	t.Parallel()
	// 64 MiB: lower than any cgroup limit a test machine runs under, so
	// the declared limit is the lower one.
	const declared = 64 << 20
	for _, tc := range []struct {
		name      string
		env, args []string
		want      string
		limit     int64
	}{
		{"declared", []string{"TOOLSVC_MEMORY_LIMIT=64Mi"}, nil,
			fmt.Sprintf("source=declared GOGC=400 soft_limit_bytes=%d soft_limit_mib=57 container_limit_bytes=%d", int64(declared*9/10), declared), int64(declared * 9 / 10)},
		{"flag over env, AUTOMEMLIMIT share", []string{"TOOLSVC_MEMORY_LIMIT=1Gi", "AUTOMEMLIMIT=0.5"}, []string{"--memory-limit", "67108864"},
			fmt.Sprintf("source=declared GOGC=400 soft_limit_bytes=%d soft_limit_mib=32 container_limit_bytes=%d", declared/2, declared), declared / 2},
		{"GOMEMLIMIT wins", []string{"TOOLSVC_MEMORY_LIMIT=64Mi", "GOMEMLIMIT=300MiB", "GOGC=100"}, nil,
			"source=GOMEMLIMIT GOGC=100 soft_limit_bytes=314572800 soft_limit_mib=300", 300 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := append([]string{"GOMEMLIMIT=", "GOGC="}, tc.env...)
			p := startToolsvcWith(t, cfg{Servers: servers{"up": goStdio(upstream{RefreshInterval: "1h"})}}, startOpts{env: env, args: tc.args})
			if line := p.log.waitFor(t, memoryLimitLine, 30*time.Second); !strings.Contains(line, tc.want) {
				t.Fatalf("start log %q; want it to contain %q", line, tc.want)
			}
			if got := gomemlimitMetric(t, p.adminAddr); got != tc.limit {
				t.Fatalf("go_gc_gomemlimit_bytes = %d; want %d", got, tc.limit)
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		for _, v := range []string{"12x", "-1Gi", "0"} {
			out, err := exec.Command(bin.toolsvc, "serve", "--memory-limit", v, "--listen", "127.0.0.1:0", "--admin-listen", "").CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "--memory-limit") || !strings.Contains(string(out), strconv.Quote(v)) {
				t.Fatalf("serve --memory-limit %s: %v, %q; want exit 2 naming --memory-limit and the value", v, err, out)
			}
		}
	})
}

// childMemoryCgroup creates a memory cgroup limited to limit bytes under
// this process's own (found through /proc/self/cgroup and
// /proc/self/mountinfo), removed at cleanup once its processes are gone.
func childMemoryCgroup(t *testing.T, limit int64) string {
	t.Helper()
	parent, v2 := ownMemoryCgroup(t)
	dir := filepath.Join(parent, fmt.Sprintf("toolsvc-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			t.Skipf("this machine does not allow creating a memory cgroup (%v); TestMemoryLimitPrecedence covers the limit without one", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// toolsvc and its upstream have exited (their cleanups ran
		// first); the kernel may take a moment to drop the group's last
		// process.
		eventually(t, 30*time.Second, "the test cgroup removed", func() bool {
			err := os.Remove(dir)
			return err == nil || errors.Is(err, fs.ErrNotExist)
		})
	})
	file := "memory.limit_in_bytes"
	if v2 {
		file = "memory.max"
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		t.Skipf("this machine does not allow limiting a memory cgroup (%v)", err)
	}
	return dir
}

// ownMemoryCgroup is the directory of this process's memory cgroup: the v1
// memory controller's where it is mounted (hybrid layouts too), else the
// v2 unified hierarchy's.
func ownMemoryCgroup(t *testing.T) (dir string, v2 bool) {
	t.Helper()
	paths := map[string]string{} // controller ("" for v2) → path in its hierarchy
	readLines(t, "/proc/self/cgroup", func(l string) {
		// hierarchy-ID:controller-list:path
		if f := strings.SplitN(l, ":", 3); len(f) == 3 {
			for _, c := range strings.Split(f[1], ",") {
				paths[c] = f[2]
			}
		}
	})
	var v1Mount, v2Mount, v1Root, v2Root string
	readLines(t, "/proc/self/mountinfo", func(l string) {
		// ID parent major:minor root mount-point options ... - fstype source super-options
		pre, post, ok := strings.Cut(l, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			return
		}
		switch {
		case g[0] == "cgroup" && strings.Contains(","+g[2]+",", ",memory,"):
			v1Root, v1Mount = f[3], f[4]
		case g[0] == "cgroup2" && v2Mount == "":
			v2Root, v2Mount = f[3], f[4]
		}
	})
	if p, ok := paths["memory"]; ok && v1Mount != "" {
		return filepath.Join(v1Mount, strings.TrimPrefix(p, v1Root)), false
	}
	if p, ok := paths[""]; ok && v2Mount != "" {
		return filepath.Join(v2Mount, strings.TrimPrefix(p, v2Root)), true
	}
	t.Skip("no memory cgroup is mounted on this machine")
	return "", false
}

func readLines(t *testing.T, path string, each func(string)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("%s: %v", path, err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		each(s.Text())
	}
}
