package tests

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// procStat returns a live (non-zombie) process's parent pid, from
// /proc/PID/stat; ok is false for a gone or zombie process.
func procStat(pid int) (ppid int, ok bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// pid (comm) state ppid ...: comm may hold spaces, so parse after ')'.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
	if len(fields) < 2 || fields[0] == "Z" {
		return 0, false
	}
	ppid, _ = strconv.Atoi(fields[1])
	return ppid, true
}

// pids lists the numeric entries of /proc.
func pids() []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// childPIDs lists the live children of ppid whose command line contains
// match.
func childPIDs(ppid int, match string) []int {
	var out []int
	for _, pid := range pids() {
		if p, ok := procStat(pid); !ok || p != ppid {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(cmdline), match) {
			out = append(out, pid)
		}
	}
	return out
}

// procsWithEnv lists live (non-zombie) processes whose environment holds
// the given KEY=VALUE.
func procsWithEnv(kv string) []int {
	var out []int
	for _, pid := range pids() {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(env, []byte(kv)) {
			continue
		}
		if _, ok := procStat(pid); ok {
			out = append(out, pid)
		}
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	_, ok := procStat(pid)
	return ok
}

// eventually polls cond every 20 ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// httpUpstream is a go-sdk test server over HTTP that tests can kill,
// stop, continue and restart on the same address.
type httpUpstream struct {
	t    *testing.T
	addr string
	cmd  *exec.Cmd
	p    *proc
}

// newHTTPUpstream starts the go-sdk test upstream over streamable HTTP on a
// port below the kernel's ephemeral range (freePort): it is restarted on
// the same port, and a port-0 listener of a test running in parallel must
// not take it while it is down (toolsvc would reconnect to that test's
// upstream).
func newHTTPUpstream(t *testing.T) *httpUpstream {
	u := &httpUpstream{t: t, addr: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	u.start()
	return u
}

func (u *httpUpstream) url() string { return "http://" + u.addr + "/mcp" }

// start runs the server on u.addr (a fixed port after the first start, so a
// restart is the same upstream to toolsvc).
func (u *httpUpstream) start() {
	t := u.t
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p := startProc(t, exec.Command(bin.testserver, "-mode", "http", "-addr", u.addr))
		url, ok := p.log.wait(urlLineRE, 10*time.Second, p.done)
		if !ok {
			// The port may still be held briefly after a kill: retry.
			p.kill()
			if time.Now().After(deadline) {
				t.Fatalf("http upstream did not start on %s; output:\n%s", u.addr, p.log)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		u.addr = strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
		u.p, u.cmd = p, p.cmd
		return
	}
}

func (u *httpUpstream) kill() {
	u.p.kill()
	u.cmd = nil
}

func (u *httpUpstream) signal(sig syscall.Signal) { _ = u.cmd.Process.Signal(sig) }

// freeze stops the upstream (SIGSTOP) and returns once the kernel reports
// it stopped: kill returns when the signal is queued, and a request the
// process was already serving may still be answered before it stops.
func (u *httpUpstream) freeze() {
	u.t.Helper()
	u.signal(syscall.SIGSTOP)
	waitStopped(u.t, u.cmd.Process.Pid)
}

// waitStopped waits until process pid is in the stopped state ("T" in
// /proc/PID/stat).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	eventually(t, 5*time.Second, fmt.Sprintf("process %d to stop", pid), func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		i := bytes.LastIndexByte(b, ')') // the state follows the command name, which may hold spaces
		return i >= 0 && i+2 < len(b) && b[i+2] == 'T'
	})
}

func regexpMust(s string) *regexp.Regexp { return regexp.MustCompile(s) }

// execToolsvc runs a toolsvc client command against addr.
func execToolsvc(ctx context.Context, addr string, args ...string) (string, error) {
	full := append([]string{args[0], "--addr", addr}, args[1:]...)
	out, err := exec.CommandContext(ctx, bin.toolsvc, full...).CombinedOutput()
	return string(out), err
}
