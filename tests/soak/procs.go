package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is a process the soak started, in its own process group, with its
// output in a log file and the soak's markers in its environment.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once Wait returned
	err  error         // Wait's result, valid after done

	mu      sync.Mutex
	matches map[*regexp.Regexp]chan string // first submatch of each watched pattern
}

// markerEnv is the environment marker every process of this run carries:
// /proc/PID/environ tells the soak's processes (and their children) apart
// from anything else on the machine.
func markerEnv(run, owner string) []string {
	return []string{"SOAK_RUN=" + run, "SOAK_OWNER=" + owner}
}

// startChild starts name args with extra environment, stdout and stderr
// appended to logPath, and the given patterns watched in the output.
func startChild(name, logPath string, env []string, patterns []*regexp.Regexp, prog string, args ...string) (*child, error) {
	cmd := exec.Command(prog, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	c := &child{name: name, cmd: cmd, done: make(chan struct{}), matches: map[*regexp.Regexp]chan string{}}
	for _, re := range patterns {
		c.matches[re] = make(chan string, 1)
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			c.mu.Lock()
			for re, ch := range c.matches {
				if m := re.FindStringSubmatch(line); m != nil {
					v := m[0]
					if len(m) > 1 {
						v = m[1]
					}
					select {
					case ch <- v:
					default:
					}
					delete(c.matches, re)
				}
			}
			c.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		c.err = cmd.Wait()
		pw.Close()
		logf.Close()
		close(c.done)
	}()
	return c, nil
}

// waitMatch waits for the pattern's first match, the process's exit, or
// the timeout.
func (c *child) waitMatch(re *regexp.Regexp, ch chan string, timeout time.Duration) (string, error) {
	select {
	case v := <-ch:
		return v, nil
	case <-c.done:
		return "", fmt.Errorf("%s exited (%v) before printing %q", c.name, c.err, re)
	case <-time.After(timeout):
		return "", fmt.Errorf("%s did not print %q within %s", c.name, re, timeout)
	}
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// signalGroup sends sig to the child's whole process group.
func (c *child) signalGroup(sig syscall.Signal) { _ = syscall.Kill(-c.pid(), sig) }

// killGroup SIGKILLs the process group (continuing it first) and waits.
func (c *child) killGroup() {
	c.signalGroup(syscall.SIGCONT)
	c.signalGroup(syscall.SIGKILL)
	<-c.done
}

// terminate sends SIGTERM to the child and waits up to timeout before
// SIGKILLing the group; it returns Wait's error and whether it had to kill.
func (c *child) terminate(timeout time.Duration) (error, bool) {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return c.err, false
	case <-time.After(timeout):
		c.killGroup()
		return c.err, true
	}
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// procLive reports whether pid is a live (non-zombie) process.
func procLive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	f := strings.Fields(string(stat[i+2:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// procsWithEnv lists live processes whose environment holds every one of
// the KEY=VALUE pairs.
func procsWithEnv(kvs ...string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue
		}
		vars := bytes.Split(env, []byte{0})
		all := true
		for _, kv := range kvs {
			found := false
			for _, v := range vars {
				if string(v) == kv {
					found = true
					break
				}
			}
			if !found {
				all = false
				break
			}
		}
		if all && procLive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// rssBytes reads VmRSS of pid.
func rssBytes(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					return kb * 1024, true
				}
			}
		}
	}
	return 0, false
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}
