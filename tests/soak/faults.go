package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// fault is one injected fault: what it hit and when, and the failures it
// explains (see docs/soak.md).
type fault struct {
	kind    string
	server  string // "" = every server
	replica int    // -1 = every replica
	start   time.Time
	end     time.Time
	allowed []allowedStatus
}

type allowedStatus struct {
	code    codes.Code
	reasons []string // empty: any reason
	ops     []string // empty: any operation
}

// explainGrace is how long after a fault ends its failures stay explained:
// reconnect backoff (≤ 2 s), the breaker's cooldown (≤ 5 s + 10 %), a
// refresh, and a busy box.
const explainGrace = 15 * time.Second

var (
	upstreamDown = allowedStatus{code: codes.Unavailable, reasons: []string{"UPSTREAM_UNAVAILABLE", "CIRCUIT_OPEN"}}
	upstreamSlow = allowedStatus{code: codes.DeadlineExceeded, reasons: []string{"DEADLINE"}}
	// A replica going away: its own SHUTTING_DOWN, or gRPC's transport
	// status (no ErrorInfo) while the port is closed.
	replicaDown   = allowedStatus{code: codes.Unavailable}
	replicaCancel = allowedStatus{code: codes.Canceled, reasons: []string{""}}
	// A page token of the previous instance names a revision the new one
	// never issued.
	replicaToken = allowedStatus{code: codes.InvalidArgument, ops: []string{"list"}}
)

func (s *soak) explainedLocked(f *callFailure) bool {
	for _, ft := range s.faults {
		if ft.replica >= 0 && ft.replica != f.replica {
			continue
		}
		if ft.server != "" && ft.server != f.server {
			continue
		}
		end := ft.end
		if end.IsZero() {
			end = time.Now()
		}
		if f.end.Before(ft.start) || f.start.After(end.Add(explainGrace)) {
			continue
		}
		for _, a := range ft.allowed {
			if a.code != f.code {
				continue
			}
			if len(a.reasons) > 0 && !slices.Contains(a.reasons, f.reason) {
				continue
			}
			if len(a.ops) > 0 && !slices.Contains(a.ops, f.op) {
				continue
			}
			return true
		}
	}
	return false
}

func (s *soak) begin(kind, server string, replica int, allowed ...allowedStatus) *fault {
	f := &fault{kind: kind, server: server, replica: replica, start: time.Now(), allowed: allowed}
	s.mu.Lock()
	s.faults = append(s.faults, f)
	s.mu.Unlock()
	if s.verbose {
		s.logf("fault %s server=%q replica=%d", kind, server, replica)
	}
	return f
}

func (s *soak) finish(f *fault) {
	s.mu.Lock()
	f.end = time.Now()
	s.mu.Unlock()
}

// injectFaults starts a random fault every 1-4 s, at most two at a time and
// one per target, each holding the fault gate while it runs.
func (s *soak) injectFaults(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, 2)
	var busyMu sync.Mutex
	busy := map[string]bool{}
	lock := func(keys ...string) bool {
		busyMu.Lock()
		defer busyMu.Unlock()
		for _, k := range keys {
			if busy[k] {
				return false
			}
		}
		for _, k := range keys {
			busy[k] = true
		}
		return true
	}
	unlock := func(keys ...string) {
		busyMu.Lock()
		defer busyMu.Unlock()
		for _, k := range keys {
			delete(busy, k)
		}
	}
	restarts := 0
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.durn(time.Second, 4*time.Second)):
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		// The hostile upstream is a stdio child like the others: it takes
		// SIGKILL, SIGSTOP and config changes, not tool bursts.
		u := s.base()[s.intn(len(s.base()))]
		r := s.replicas[s.intn(len(s.replicas))]
		var keys []string
		var run func()
		n := s.intn(100)
		early := time.Since(s.start) < s.duration*6/10
		s.mu.Lock()
		switch {
		case s.abandonFaults == 0 && time.Since(s.start) > s.duration/3:
			n = 80 // at least one abandon-input fault per soak
		case s.taskFaults == 0 && time.Since(s.start) > s.duration/3:
			n, early = 68, true // at least one tasks-rolling-restart fault per soak
		}
		s.mu.Unlock()
		switch {
		case n < 22:
			keys = []string{u.name}
			run = func() { s.faultKill(u, r) }
		case n < 40:
			keys = []string{u.name}
			run = func() { s.faultStop(ctx, u, r) }
		case n < 50:
			if u.stdio() {
				keys = []string{u.name}
				run = func() { s.faultKill(u, r) }
			} else {
				keys = []string{u.name}
				run = func() { s.faultRestart(u) }
			}
		case n >= 68 && n < 70 && early:
			// Tasks across a rolling restart of all three replicas
			// (tasks.go), in the first 60 % of the soak like the
			// replica-restart fault: the task upstreams, the
			// configuration and the replicas stay as they are meanwhile.
			keys = []string{"replica", "config"}
			for _, t := range s.taskUps {
				keys = append(keys, t.name)
			}
			run = func() { s.faultTasksRollingRestart(ctx) }
		case n < 70:
			http := s.httpUpstreams()
			u = http[s.intn(len(http))]
			keys = []string{u.name, "tools"}
			run = func() { s.faultToolBurst(ctx, u) }
		case n < 76:
			keys = []string{"config"}
			run = func() { s.faultConfig() }
		case n < 84:
			// Its upstream, the configuration and the replicas stay as
			// they are while it waits for the expiries.
			keys = []string{abandonServer, "config", "replica"}
			run = func() { s.faultAbandonInput(ctx) }
		case n < 92 && early:
			// Rolling restarts take turns on replicas 0 and 1 during the
			// first 60 % of the soak; replica 2 runs the whole soak, so
			// its growth spans it, and the restarted instances have the
			// last 40 % for theirs.
			r = s.replicas[restarts%2]
			restarts++
			keys = []string{"replica", "replica" + fmt.Sprint(r.idx)}
			run = func() { s.faultReplicaRestart(r) }
		case n >= 92:
			keys = []string{"slow-watcher", "tools"}
			run = func() { s.faultSlowWatcher(ctx) }
		default:
			keys = []string{"config"}
			run = func() { s.faultConfig() }
		}
		if !lock(keys...) {
			<-sem
			continue
		}
		s.faultGate.RLock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer unlock(keys...)
			defer s.faultGate.RUnlock()
			run()
		}()
	}
}

func (s *soak) httpUpstreams() []*upstream {
	var out []*upstream
	for _, u := range s.upstreams {
		if !u.stdio() {
			out = append(out, u)
		}
	}
	return out
}

// faultKill SIGKILLs an upstream: an HTTP server's process group (restarted
// on the same port 0.3-2 s later), or one replica's stdio child (toolsvc
// restarts it).
func (s *soak) faultKill(u *upstream, r *replica) {
	if u.stdio() {
		f := s.begin("sigkill", u.name, r.idx, upstreamDown)
		defer s.finish(f)
		u.signal(r, syscall.SIGKILL)
		time.Sleep(time.Second)
		return
	}
	f := s.begin("sigkill+restart", u.name, -1, upstreamDown)
	defer s.finish(f)
	u.stopProc(false)
	time.Sleep(s.durn(300*time.Millisecond, 2*time.Second))
	if err := u.start(); err != nil {
		s.logf("restart %s: %v", u.name, err)
	}
}

// faultStop SIGSTOPs an upstream for 0.5-4 s, then SIGCONTs it: calls in
// flight may run into their deadline, the probes may declare the session
// dead.
func (s *soak) faultStop(ctx context.Context, u *upstream, r *replica) {
	rep := -1
	if u.stdio() {
		rep = r.idx
	}
	f := s.begin("sigstop", u.name, rep, upstreamSlow, upstreamDown)
	defer s.finish(f)
	if !u.signal(r, syscall.SIGSTOP) {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(s.durn(500*time.Millisecond, 4*time.Second)):
	}
	u.signal(r, syscall.SIGCONT)
	if u.stdio() {
		// The process toolsvc had may have been replaced while stopped;
		// continue whatever carries the marker.
		for _, pid := range u.stdioPIDs(r) {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
}

// faultRestart restarts an HTTP upstream gracefully (SIGTERM) on its port.
func (s *soak) faultRestart(u *upstream) {
	f := s.begin("restart", u.name, -1, upstreamDown)
	defer s.finish(f)
	u.stopProc(true)
	if err := u.start(); err != nil {
		s.logf("restart %s: %v", u.name, err)
	}
}

// faultToolBurst adds 1-6 tools to an HTTP upstream (its tool set is
// process-wide) and, on the TypeScript server, removes some. Each add is
// sent through every replica: the Python SDK announces list_changed only
// on the session that called. Tools are capped at 10 per upstream process;
// a restart clears them.
func (s *soak) faultToolBurst(ctx context.Context, u *upstream) {
	f := s.begin("tool-burst", u.name, -1)
	defer s.finish(f)
	u.mu.Lock()
	have := len(u.dynamic)
	u.mu.Unlock()
	n := 1 + s.intn(6)
	for i := 0; i < n && have+i < 10; i++ {
		name := fmt.Sprintf("dyn_%d_%d", time.Now().UnixNano()%1e9, i)
		ok := true
		for _, r := range s.replicas {
			if !s.adminCall(ctx, r, u.name+"__add_tool", map[string]any{"name": name}) {
				ok = false
			}
		}
		if ok {
			u.mu.Lock()
			u.dynamic = append(u.dynamic, name)
			u.mu.Unlock()
		}
	}
	if u.sdk == sdkTS {
		u.mu.Lock()
		var victims []string
		for len(u.dynamic) > 0 && s.intn(2) == 0 {
			victims = append(victims, u.dynamic[0])
			u.dynamic = u.dynamic[1:]
		}
		u.mu.Unlock()
		for _, v := range victims {
			s.adminCall(ctx, s.replicas[s.intn(len(s.replicas))], u.name+"__remove_tool", map[string]any{"name": v})
		}
	}
}

// adminCall is a call the soak makes to drive a fault (not load): retried
// a few times, since another fault may be hitting the same path.
func (s *soak) adminCall(ctx context.Context, r *replica, tool string, a map[string]any) bool {
	for attempt := 0; attempt < 5 && ctx.Err() == nil; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		resp, err := r.client.CallTool(cctx, &toolsvcv1.CallToolRequest{Name: tool, Arguments: args(a)})
		cancel()
		if err == nil && !resp.GetIsError() {
			return true
		}
		time.Sleep(500 * time.Millisecond)
	}
	return false
}

// faultConfig rewrites every replica's config file: add an extra stdio
// server, remove one, or change a server (a new env value for a stdio
// server, a new header for an HTTP one), which restarts it.
func (s *soak) faultConfig() {
	s.cfgMu.Lock()
	n := s.intn(3)
	var f *fault
	switch {
	case n == 0 && len(s.extras) < 4 || len(s.extras) == 0:
		s.extraSeq++
		sdk := []string{sdkGo, sdkTS, sdkPy}[s.extraSeq%3]
		u := &upstream{s: s, name: fmt.Sprintf("extra-%d", s.extraSeq), sdk: sdk, tr: trStdio, gen: 1}
		s.extras[u.name] = u
		f = s.begin("config-add", u.name, -1)
	case n == 1:
		names := sortedKeys(s.extras)
		u := s.extras[names[s.intn(len(names))]]
		delete(s.extras, u.name)
		f = s.begin("config-remove", u.name, -1)
		marker := u.marker()
		defer s.checkGone("removed server "+u.name, marker)
	default:
		u := s.base()[s.intn(len(s.base()))]
		old := u.marker()
		u.mu.Lock()
		if u.stdio() {
			u.gen++
		} else {
			u.hdr++
		}
		u.mu.Unlock()
		f = s.begin("config-change", u.name, -1, upstreamDown)
		if u.stdio() {
			defer s.checkGone("changed server "+u.name+"'s old children", old)
		}
	}
	s.cfgMu.Unlock()
	defer s.finish(f)
	if err := s.writeConfigs(); err != nil {
		s.logf("config: %v", err)
	}
	time.Sleep(2 * time.Second)
}

// faultReplicaRestart is one step of a rolling restart: SIGTERM (toolsvc
// drains), wait, start again on the same ports, wait until ready.
func (s *soak) faultReplicaRestart(r *replica) {
	f := s.begin("replica-restart", "", r.idx, replicaDown, replicaCancel, replicaToken)
	defer s.finish(f)
	r.stop()
	if err := r.start(); err != nil {
		s.logf("replica restart: %v", err)
	}
}

// faultSlowWatcher stops one watcher from reading (its event callback
// blocks) while tools change, then lets it go.
func (s *soak) faultSlowWatcher(ctx context.Context) {
	w := s.watchers[s.intn(len(s.watchers))]
	f := s.begin("slow-watcher", "", -2)
	defer s.finish(f)
	hold := min(35*time.Second, max(5*time.Second, s.duration/40))
	release := make(chan struct{})
	w.slow.Store(&release)
	http := s.httpUpstreams()
	s.faultToolBurst(ctx, http[s.intn(len(http))])
	select {
	case <-ctx.Done():
	case <-time.After(hold):
	}
	w.slow.Store(nil)
	close(release)
}
