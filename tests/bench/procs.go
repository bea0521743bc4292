package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a child process the benchmark started. Each runs in its own
// process group, so stopping it also stops what it spawned (the peers'
// stdio children, toolsvc's upstreams).
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when Wait returned and output is drained

	mu    sync.Mutex
	lines []string
	cond  chan struct{} // closed and replaced on every line
}

// procs owns every child; stopAll is deferred by main.
var procs struct {
	mu   sync.Mutex
	list []*proc
}

// start runs a command and collects stdout and stderr lines (both, so a
// child that prints its address on either is fine).
func start(name string, env []string, dir string, argv ...string) (*proc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	pw.Close()
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), cond: make(chan struct{})}
	procs.mu.Lock()
	procs.list = append(procs.list, p)
	procs.mu.Unlock()
	go func() {
		defer close(p.done)
		p.consume(pr)
		pr.Close()
		_ = cmd.Wait()
	}()
	return p, nil
}

func (p *proc) consume(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		p.mu.Lock()
		p.lines = append(p.lines, sc.Text())
		close(p.cond)
		p.cond = make(chan struct{})
		p.mu.Unlock()
	}
}

// waitFor returns the first submatch of re in the process's output.
func (p *proc) waitFor(ctx context.Context, re *regexp.Regexp, timeout time.Duration) (string, error) {
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		for _, l := range p.lines {
			if m := re.FindStringSubmatch(l); m != nil {
				p.mu.Unlock()
				if len(m) > 1 {
					return m[1], nil
				}
				return m[0], nil
			}
		}
		ch := p.cond
		p.mu.Unlock()
		select {
		case <-ch:
		case <-p.done:
			return "", fmt.Errorf("%s exited before printing %q; output:\n%s", p.name, re, p.output())
		case <-deadline:
			return "", fmt.Errorf("%s printed no line matching %q within %s; output:\n%s", p.name, re, timeout, p.output())
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ls := p.lines
	if len(ls) > 40 {
		ls = ls[len(ls)-40:]
	}
	return strings.Join(ls, "\n")
}

// stop sends SIGTERM to the process group, then SIGKILL after 10 s.
func (p *proc) stop() {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// Grandchildren that outlived their parent still hold the group.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// rssKiB is the process's VmRSS.
func (p *proc) rssKiB() int64 { return pidRSSKiB(p.cmd.Process.Pid) }

func pidRSSKiB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			var n int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &n)
			return n
		}
	}
	return 0
}

// groupRSSKiB is the VmRSS of every process in the process's group (it and
// what it spawned: workers, stdio children), summed.
func (p *proc) groupRSSKiB() int64 {
	pgid := p.cmd.Process.Pid
	dirs, _ := os.ReadDir("/proc")
	var sum int64
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		sum += pidRSSKiB(pid)
	}
	return sum
}

func stopAll() {
	procs.mu.Lock()
	list := procs.list
	procs.list = nil
	procs.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.stop()
		}()
	}
	wg.Wait()
}

// freePort returns a loopback port that was free a moment ago (for the
// peers, which take a port number, not a listener).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitPort waits until something accepts on addr.
func waitPort(ctx context.Context, p *proc, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited; output:\n%s", p.name, p.output())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not accepting on %s after %s; output:\n%s", p.name, addr, timeout, p.output())
		}
	}
}

// cpu is the process's user+system CPU time so far (from /proc, in clock
// ticks of 10 ms: use it over thousands of calls).
func (p *proc) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var ut, st int64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// selfCPU is this process's user+system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
