package main

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The upstreams: the interop matrix's servers (tests/matrix_upstreams_test.go),
// one per SDK (go-sdk tests/testserver, the TypeScript SDK's
// tests/node/runtime_server.mjs, the Python SDK's tests/python/matrix_server.py)
// and transport (stdio, streamable HTTP with and without sessions, legacy
// SSE): twelve in all. Every one has echo{text} and wait_cancel{id, ms}; the
// go-sdk ones also the tools that ask (-interactive: interactive.go);
// add_tool{name} registers a tool process-wide (remove_tool: TypeScript).
// stdio upstreams are children of each replica; the HTTP ones are the
// soak's, shared by the replicas, on fixed ports so a restart comes back at
// the same URL.

const (
	sdkGo = "go"
	sdkTS = "ts"
	sdkPy = "py"

	trStdio     = "stdio"
	trHTTP      = "http"
	trStateless = "stateless"
	trSSE       = "sse"
)

type upstream struct {
	s    *soak
	name string // the toolsvc server name
	sdk  string
	tr   string
	port int

	mu      sync.Mutex
	gen     int    // HTTP: process generation; stdio: config generation
	hdr     int    // HTTP: config generation (a header value)
	proc    *child // HTTP only
	dynamic []string
}

func (u *upstream) stdio() bool { return u.tr == trStdio }

// command is the server's command line (port ignored for stdio).
func (u *upstream) command() (string, []string) {
	p := strconv.Itoa(u.port)
	r := u.s.root
	switch u.sdk {
	case sdkHostile:
		return u.s.hostileserver, []string{"-mode", "soak"}
	case sdkTasksTS:
		return "node", []string{filepath.Join(r, "tests", "node", "tasks_server.mjs"), "http", p}
	case sdkTasksPy:
		return filepath.Join(r, ".venv", "tasks", "bin", "python"), []string{filepath.Join(r, "tests", "python", "tasks_server.py"), p}
	case sdkGo:
		mode := map[string]string{trStdio: "stdio", trHTTP: "http", trStateless: "http-stateless", trSSE: "sse"}[u.tr]
		if u.stdio() {
			return u.s.testserver, []string{"-mode", mode, "-interactive"}
		}
		return u.s.testserver, []string{"-mode", mode, "-interactive", "-addr", "127.0.0.1:" + p}
	case sdkTS:
		mode := map[string]string{trStdio: "stdio", trHTTP: "http", trStateless: "http-stateless", trSSE: "sse"}[u.tr]
		script := filepath.Join(r, "tests", "node", "runtime_server.mjs")
		if u.stdio() {
			return "node", []string{script, mode}
		}
		return "node", []string{script, mode, p}
	default:
		mode := map[string]string{trStdio: "stdio", trHTTP: "streamable-http", trStateless: "stateless-http", trSSE: "sse"}[u.tr]
		py := filepath.Join(r, ".venv", "mcp", "bin", "python")
		script := filepath.Join(r, "tests", "python", "matrix_server.py")
		if u.stdio() {
			return py, []string{script, mode}
		}
		return py, []string{script, mode, p}
	}
}

func (u *upstream) url() string {
	path := "/mcp"
	if u.tr == trSSE {
		path = "/sse"
	}
	return fmt.Sprintf("http://127.0.0.1:%d%s", u.port, path)
}

// marker is the SOAK_SRV value of the upstream's current generation.
func (u *upstream) marker() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return fmt.Sprintf("SOAK_SRV=%s@%d", u.name, u.gen)
}

// serverConfig is the toolsvc config entry.
func (u *upstream) serverConfig() map[string]any {
	m := u.s.commonServerKeys()
	u.mu.Lock()
	gen := u.gen
	u.mu.Unlock()
	switch u.tr {
	case trStdio:
		name, args := u.command()
		m["command"], m["args"] = name, args
		m["env"] = map[string]string{"SOAK_SRV": fmt.Sprintf("%s@%d", u.name, gen)}
	case trSSE:
		m["type"], m["url"] = "sse", u.url()
	default:
		m["type"], m["url"] = "http", u.url()
	}
	if u.sdk == sdkTasksPy {
		m["protocolVersion"] = taskEras[sdkTasksPy] // the tasks extension is offered at 2026-07-28 only
	}
	if !u.stdio() {
		u.mu.Lock()
		m["headers"] = map[string]string{"X-Soak-Config": fmt.Sprint(u.hdr)}
		u.mu.Unlock()
	}
	return m
}

// start runs an HTTP upstream on its port, retrying while the port is
// still held by a process that was just killed. A Python server with
// fastmcp takes long to import on a busy box: it gets 60 s to listen.
func (u *upstream) start() error {
	u.mu.Lock()
	u.gen++
	gen := u.gen
	u.mu.Unlock()
	name, args := u.command()
	deadline := time.Now().Add(60 * time.Second)
	addr := fmt.Sprintf("127.0.0.1:%d", u.port)
	for attempt := 0; ; attempt++ {
		env := append(markerEnv(u.s.run, fmt.Sprintf("up-%s-%d", u.name, gen)), fmt.Sprintf("SOAK_SRV=%s@%d", u.name, gen))
		c, err := startChild(u.name, filepath.Join(u.s.dir, "upstream-"+u.name+".log"), env, nil, name, args...)
		if err != nil {
			return err
		}
		for !c.exited() && time.Now().Before(deadline) {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				conn.Close()
				u.mu.Lock()
				u.proc, u.dynamic = c, nil
				u.mu.Unlock()
				return nil
			}
			time.Sleep(50 * time.Millisecond)
		}
		if time.Now().After(deadline) {
			c.killGroup()
			return fmt.Errorf("upstream %s did not listen on %s within 60s (see upstream-%s.log)", u.name, addr, u.name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopProc SIGKILLs (or SIGTERMs) the HTTP upstream's process group and
// schedules the check that nothing of it survives.
func (u *upstream) stopProc(graceful bool) {
	u.mu.Lock()
	c, gen := u.proc, u.gen
	u.proc = nil
	u.mu.Unlock()
	if c == nil {
		return
	}
	if graceful {
		c.terminate(5 * time.Second)
	} else {
		c.killGroup()
	}
	u.s.checkGone(fmt.Sprintf("upstream %s generation %d", u.name, gen), "SOAK_OWNER="+fmt.Sprintf("up-%s-%d", u.name, gen))
}

// stdioPIDs lists the replica instance's children serving this upstream.
func (u *upstream) stdioPIDs(r *replica) []int {
	owner := r.owner()
	if owner == "" {
		return nil
	}
	// The run marker keeps a soak from counting (or signalling) the
	// children of another soak running on the same machine, whose owners
	// and server markers have the same names.
	return procsWithEnv("SOAK_RUN="+u.s.run, "SOAK_OWNER="+owner, u.marker())
}

// signal sends sig to the upstream: the HTTP server's group, or the stdio
// children the replica runs. It reports whether anything was signalled.
func (u *upstream) signal(r *replica, sig syscall.Signal) bool {
	if u.stdio() {
		pids := u.stdioPIDs(r)
		for _, pid := range pids {
			_ = syscall.Kill(pid, sig)
		}
		return len(pids) > 0
	}
	u.mu.Lock()
	c := u.proc
	u.mu.Unlock()
	if c == nil {
		return false
	}
	c.signalGroup(sig)
	return true
}
