package tests

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The interop matrix's upstreams: one MCP server per SDK, all with the same
// tools (echo, add_tool, wait_cancel; see tests/python/matrix_server.py),
// over each transport the SDK serves.

const (
	sdkGo     = "go"     // go-sdk v1.8.0: tests/testserver
	sdkTS     = "ts"     // @modelcontextprotocol/sdk 1.32.2: tests/node/runtime_server.mjs
	sdkPython = "python" // mcp 2.3.0 (MCPServer): tests/python/matrix_server.py in .venv/mcp

	trStdio     = "stdio"
	trHTTP      = "http"      // streamable HTTP with sessions
	trStateless = "stateless" // streamable HTTP without sessions
	trSSE       = "sse"       // the deprecated 2024-11-05 HTTP+SSE transport
)

// rootDir is the repository's top directory, absolute.
func rootDir(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// venvBin returns an executable of a project venv (scripts/pyenv.sh),
// failing the test if the venv is missing.
func venvBin(t *testing.T, venv, name string) string {
	t.Helper()
	p := filepath.Join(rootDir(t), ".venv", venv, "bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not installed (run scripts/interop-deps.sh, which creates the Python venvs): %v", p, err)
	}
	return p
}

// matrixCommand is the command line of the SDK's matrix server over a
// transport; port is ignored for stdio.
func matrixCommand(t *testing.T, sdk, transport string, port int) (string, []string) {
	t.Helper()
	p := strconv.Itoa(port)
	addr := "127.0.0.1:" + p
	switch sdk {
	case sdkGo:
		mode := map[string]string{trStdio: "stdio", trHTTP: "http", trStateless: "http-stateless", trSSE: "sse"}[transport]
		if transport == trStdio {
			return bin.testserver, []string{"-mode", mode}
		}
		return bin.testserver, []string{"-mode", mode, "-addr", addr}
	case sdkTS:
		mode := map[string]string{trStdio: "stdio", trHTTP: "http", trStateless: "http-stateless", trSSE: "sse"}[transport]
		if transport == trStdio {
			return "node", []string{nodePath(t, "runtime_server.mjs"), mode}
		}
		return "node", []string{nodePath(t, "runtime_server.mjs"), mode, p}
	case sdkPython:
		script := filepath.Join(rootDir(t), "tests", "python", "matrix_server.py")
		mode := map[string]string{trStdio: "stdio", trHTTP: "streamable-http", trStateless: "stateless-http", trSSE: "sse"}[transport]
		if transport == trStdio {
			return venvBin(t, "mcp", "python"), []string{script, mode}
		}
		return venvBin(t, "mcp", "python"), []string{script, mode, p}
	}
	t.Fatalf("unknown SDK %q", sdk)
	return "", nil
}

// freePort returns a loopback TCP port that was free a moment ago, chosen
// below the kernel's ephemeral range when it can be: every listener on
// port 0 (toolsvc's gRPC and admin servers, the tests' own) takes its port
// from that range, so a port picked there can be taken before the server
// meant for it binds.
func freePort(t *testing.T) int {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	if low > 11000 {
		for range 50 {
			port := 10000 + rand.IntN(low-10000)
			if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
				l.Close()
				return port
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ownsListener reports whether a process in p's process group listens on
// port (so that a server counted as ready is the one started, not another
// process that took its port).
func ownsListener(p *proc, port int) bool {
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			if i := strings.LastIndexByte(f[1], ':'); i >= 0 {
				if n, err := strconv.ParseInt(f[1][i+1:], 16, 32); err == nil && int(n) == port {
					inodes["socket:["+f[9]+"]"] = true
				}
			}
		}
	}
	if len(inodes) == 0 {
		return false
	}
	pgid := p.cmd.Process.Pid
	for _, pid := range pids() {
		if g, err := syscall.Getpgid(pid); err != nil || g != pgid {
			continue
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && inodes[l] {
				return true
			}
		}
	}
	return false
}

// waitTCP waits until something accepts connections on addr: with p, until
// p (or its process group) is what listens there.
func waitTCP(t *testing.T, addr string, timeout time.Duration, p *proc) {
	t.Helper()
	_, portStr, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portStr)
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			if p == nil || ownsListener(p, port) {
				return
			}
			err = fmt.Errorf("another process listens on %s", addr)
		}
		if time.Now().After(deadline) || (p != nil && !alive(p.cmd.Process.Pid)) {
			out := ""
			if p != nil {
				out = p.log.String()
			}
			t.Fatalf("%s not listening on %s after %s: %v; server output:\n%s", "the server", addr, timeout, err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// matrixUpstream is one cell's upstream server. stdio upstreams are run by
// toolsvc itself (serverJSON names the command); HTTP ones by the test, on
// a fixed port so that a restart comes back at the same URL.
type matrixUpstream struct {
	t              *testing.T
	sdk, transport string
	dir            string // $MATRIX_DIR: wait_cancel's side files
	port           int
	proc           *proc
}

func startMatrixUpstream(t *testing.T, sdk, transport string) *matrixUpstream {
	t.Helper()
	u := &matrixUpstream{t: t, sdk: sdk, transport: transport, dir: t.TempDir()}
	if transport != trStdio {
		u.port = freePort(t)
		u.start(t)
	}
	return u
}

// start runs the server on u.port; t is the calling (sub)test's, which a
// failure fails (the process belongs to the cell's test, u.t, which cleans
// it up).
func (u *matrixUpstream) start(t *testing.T) {
	t.Helper()
	name, args := matrixCommand(t, u.sdk, u.transport, u.port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "MATRIX_DIR="+u.dir)
		p := startProc(u.t, cmd)
		addr := fmt.Sprintf("127.0.0.1:%d", u.port)
		// A server that exits (the port still held after a kill) is retried.
		for alive(p.cmd.Process.Pid) && time.Now().Before(deadline) {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				if ownsListener(p, u.port) {
					u.proc = p
					return
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s upstream did not listen on %s; output:\n%s", u.sdk, u.transport, addr, p.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// url is the endpoint toolsvc connects to.
func (u *matrixUpstream) url() string {
	path := "/mcp"
	if u.transport == trSSE {
		path = "/sse"
	}
	return fmt.Sprintf("http://127.0.0.1:%d%s", u.port, path)
}

// serverJSON is the toolsvc server entry (without toolsvc's own keys).
func (u *matrixUpstream) server(s upstream) upstream {
	switch u.transport {
	case trStdio:
		s.Command, s.Args = matrixCommand(u.t, u.sdk, u.transport, 0)
		s.Env = map[string]string{"MATRIX_DIR": u.dir}
	case trSSE:
		s.Type, s.URL = "sse", u.url()
	default:
		s.Type, s.URL = "http", u.url()
	}
	return s
}

// sideRecord reads $MATRIX_DIR/<id>.<event>: the pid that wrote it and when.
func (u *matrixUpstream) sideRecord(id, event string) (pid int, at time.Time, ok bool) {
	b, err := os.ReadFile(filepath.Join(u.dir, id+"."+event))
	if err != nil {
		return 0, time.Time{}, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, time.Time{}, false
	}
	pid, err1 := strconv.Atoi(f[0])
	ns, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, time.Time{}, false
	}
	return pid, time.Unix(0, ns), true
}

// waitSideRecord polls for a side record.
func (u *matrixUpstream) waitSideRecord(id, event string, timeout time.Duration) (int, time.Time, bool) {
	deadline := time.Now().Add(timeout)
	for {
		if pid, at, ok := u.sideRecord(id, event); ok {
			return pid, at, true
		}
		if time.Now().After(deadline) {
			return 0, time.Time{}, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
