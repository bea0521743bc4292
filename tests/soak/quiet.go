package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// settleLimit bounds how long a quiet period waits for every replica to
// have every server ready and one stable, common revision. The replicas'
// refreshInterval (10 s) is the backstop for a list_changed that was lost
// while a session reconnected.
const settleLimit = 45 * time.Second

// quiet stops faults and load, waits for the system to settle, and checks
// the invariants: replicas agree, every watcher equals the truth (a fresh
// ListTools on its replica), and samples memory and goroutines.
func (s *soak) quiet(ctx context.Context) {
	s.faultGate.Lock()
	defer s.faultGate.Unlock()
	s.loadGate.Lock()
	defer s.loadGate.Unlock()
	t0 := time.Now()
	s.mu.Lock()
	s.quietPeriods++
	q := s.quietPeriods
	s.mu.Unlock()

	// Back to the base configuration (servers added by reloads go), so
	// that every quiet period measures the same set of sessions.
	s.cfgMu.Lock()
	var removed []*upstream
	for _, n := range sortedKeys(s.extras) {
		removed = append(removed, s.extras[n])
		delete(s.extras, n)
	}
	s.cfgMu.Unlock()
	if len(removed) > 0 {
		for _, u := range removed {
			f := s.begin("config-remove", u.name, -1)
			s.checkGone("removed server "+u.name, u.marker())
			defer s.finish(f)
		}
		if err := s.writeConfigs(); err != nil {
			s.logf("config: %v", err)
		}
	}

	var revs []string
	var why string
	stable := 0
	settled := false
	for time.Since(t0) < settleLimit && ctx.Err() == nil {
		cur, w := s.poll(ctx)
		if w == "" && slices.Equal(cur, revs) {
			stable++
		} else {
			stable = 0
		}
		revs, why = cur, w
		if stable >= 4 {
			settled = true
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	settle := time.Since(t0)
	s.mu.Lock()
	s.maxSettle = max(s.maxSettle, settle)
	if !settled && ctx.Err() == nil {
		s.unsettled++
		s.unsDetail = append(s.unsDetail, fmt.Sprintf("quiet period %d: not settled after %s: %s", q, settleLimit, why))
	}
	s.mu.Unlock()
	if ctx.Err() != nil {
		return
	}

	// Each replica runs exactly one child per stdio server of the current
	// configuration (a second one is a leak; none means the marker check
	// cannot see them).
	s.cfgMu.Lock()
	var stdio []*upstream
	for _, u := range s.base() {
		if u.stdio() {
			stdio = append(stdio, u)
		}
	}
	for _, n := range sortedKeys(s.extras) {
		stdio = append(stdio, s.extras[n])
	}
	s.cfgMu.Unlock()
	for _, r := range s.replicas {
		for _, u := range stdio {
			pids := u.stdioPIDs(r)
			switch {
			case len(pids) > 1:
				s.mu.Lock()
				s.leaked += len(pids) - 1
				s.leakDetail = append(s.leakDetail, fmt.Sprintf("quiet period %d: replica%d runs %d children for %s: %v", q, r.idx, len(pids), u.name, pids))
				s.mu.Unlock()
			case len(pids) == 0:
				s.mu.Lock()
				s.unsettled++
				s.unsDetail = append(s.unsDetail, fmt.Sprintf("quiet period %d: replica%d has no child marked %s (%s)", q, r.idx, u.marker(), r.owner()))
				s.mu.Unlock()
			}
		}
	}

	// The truth, per replica and schema format.
	truth := map[int]map[bool]map[string]*toolsvcv1.Tool{}
	truthRev := map[int]string{}
	for _, r := range s.replicas {
		truth[r.idx] = map[bool]map[string]*toolsvcv1.Tool{}
		for _, js := range []bool{false, true} {
			tools, rev, err := listAll(ctx, r, js)
			if err != nil {
				s.mu.Lock()
				s.unsettled++
				s.unsDetail = append(s.unsDetail, fmt.Sprintf("quiet period %d: replica%d ListTools: %v", q, r.idx, err))
				s.mu.Unlock()
				return
			}
			truth[r.idx][js] = tools
			truthRev[r.idx] = rev
		}
	}
	// With every server ready, each replica exposes exactly the hostile
	// upstream's usable tools.
	for _, r := range s.replicas {
		var names []string
		for n := range truth[r.idx][false] {
			if t, ok := strings.CutPrefix(n, s.hostile.name+"__"); ok {
				names = append(names, t)
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, hostileTools) {
			s.wrongResult("quiet-hostile-tools", r, s.hostile, t0, fmt.Sprintf("quiet period %d: the hostile upstream's tools are %q, want %q", q, names, hostileTools))
		}
	}
	for _, r := range s.replicas[1:] {
		if truthRev[r.idx] != truthRev[0] {
			s.mu.Lock()
			s.disagree++
			s.disDetail = append(s.disDetail, fmt.Sprintf("quiet period %d: replica0 %s, replica%d %s: %s", q, truthRev[0], r.idx, truthRev[r.idx],
				diff(truth[0][false], truth[r.idx][false])))
			s.mu.Unlock()
		}
	}

	// Watchers: wait until each holds its replica's revision, then compare.
	deadline := time.Now().Add(20 * time.Second)
	for _, w := range s.watchers {
		w.mu.Lock()
		r, cw := w.replica, w.cw
		w.mu.Unlock()
		want := truthRev[r.idx]
		for cw.Revision() != want && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		w.mu.Lock()
		shadow := w.shadow
		var d string
		if cw.Revision() != want {
			d = fmt.Sprintf("revision %s, replica%d has %s", cw.Revision(), r.idx, want)
		} else {
			have := map[string]*toolsvcv1.Tool{}
			for _, t := range cw.Tools() {
				have[t.GetName()] = t
			}
			if x := diff(truth[r.idx][w.json], have); x != "" {
				d = "catalog differs from the truth: " + x
			} else if x := diff(truth[r.idx][w.json], shadow); x != "" {
				d = "events applied by the soak differ from the truth: " + x
			}
		}
		w.mu.Unlock()
		if d != "" {
			s.mu.Lock()
			s.lost++
			s.lostDetail = append(s.lostDetail, fmt.Sprintf("quiet period %d: watcher %d on replica%d: %s", q, w.id, r.idx, d))
			s.mu.Unlock()
		}
	}

	// Memory and goroutines of each replica, with nothing in flight.
	for _, r := range s.replicas {
		mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		g, rss, err := r.metrics(mctx)
		cancel()
		if err != nil {
			s.logf("quiet period %d: replica%d metrics: %v", q, r.idx, err)
			continue
		}
		r.mu.Lock()
		if time.Since(r.started) >= s.warmup() && len(r.revSeen) >= historySize {
			r.samples = append(r.samples, quietSample{at: time.Now(), rss: rss, goroutines: g})
		}
		revs := len(r.revSeen)
		r.mu.Unlock()
		s.checkQuietBound(ctx, r, q, g)
		s.logf("quiet period %d: replica%d rss %.1f MiB, %v goroutines, %d revisions seen", q, r.idx, rss/(1<<20), g, revs)
	}
	// No interactive call outlives its bound: with no load, none waits.
	for _, r := range s.replicas {
		s.checkNoneWaiting(ctx, r, fmt.Sprintf("quiet period %d", q), 2*time.Second)
	}
	s.logf("quiet period %d: settled in %.1fs, revision %s, %d tools, %d calls, %d faults so far",
		q, settle.Seconds(), truthRev[0], len(truth[0][false]), s.calls.Load(), s.faultCount())
}

// The quiet bound: what the hostile interactive cases (parked.go) and
// the abandoned calls leave behind. In a quiet period nothing is in
// flight, so a request held per flood, or a goroutine per request, would
// show as growth over the instance's first quiet period however few
// revisions it has seen. The bound is generous: twice the first quiet
// period's goroutines plus 256, and twice its heap in use plus 512 MiB.
// Heap in use counts garbage not yet collected: the hostile big case's
// 4-25 MiB answers (107-125 MB allocated a call) and the catalog history
// (about 0.5 MiB a revision, up to its 64 MiB budget) took one replica
// from 22 MiB at the first quiet period to 204 MiB at the fourth, its
// goroutines from 224 to 226. TestParkedFloodIsBounded measured one
// unbounded flood at 1,583 goroutines and 1.18 GB.
const (
	quietGoroutineSlack = 256
	quietHeapSlack      = 512 << 20
)

// checkQuietBound checks replica r's goroutines (g) and go_memstats
// heap in use against its instance's first quiet period, or takes them as
// that base.
func (s *soak) checkQuietBound(ctx context.Context, r *replica, q int, g float64) {
	mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	m, err := r.metricValues(mctx)
	cancel()
	heap, ok := m["go_memstats_heap_inuse_bytes"]
	if err != nil || !ok {
		s.logf("quiet period %d: replica%d go_memstats_heap_inuse_bytes: %v (present %v)", q, r.idx, err, ok)
		return
	}
	r.mu.Lock()
	baseG, baseH := r.baseGoroutines, r.baseHeap
	if baseG == 0 {
		r.baseGoroutines, r.baseHeap = g, heap
	}
	r.mu.Unlock()
	if baseG == 0 {
		return
	}
	if g > 2*baseG+quietGoroutineSlack || heap > 2*baseH+quietHeapSlack {
		d := fmt.Sprintf("quiet period %d: replica%d %v goroutines and %.1f MiB heap in use, first quiet period %v and %.1f MiB",
			q, r.idx, g, heap/(1<<20), baseG, baseH/(1<<20))
		s.mu.Lock()
		s.quietBound = append(s.quietBound, d)
		s.mu.Unlock()
		s.logf("QUIET BOUND %s", d)
	}
}

// warmup is how long a replica instance runs before its memory and
// goroutines count as a baseline: heaps and pools grow to their working
// size first.
func (s *soak) warmup() time.Duration { return min(time.Minute, s.duration/2) }

// historySize is how many catalog revisions toolsvc keeps
// (mcpbridge/catalog/catalog.go). Each holds its tool entries, so a replica's
// memory grows with every revision until the history is full (measured:
// about 0.5 MiB per revision of a 200-tool catalog); the growth baseline is
// taken once the instance's watchers have seen this many revisions.
const historySize = 128

func (s *soak) faultCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.faults)
}

// poll returns every replica's current revision and why the system is not
// settled ("" when every configured server is ready everywhere and the
// replicas report one revision).
func (s *soak) poll(ctx context.Context) ([]string, string) {
	var revs []string
	var why []string
	s.cfgMu.Lock()
	want := len(s.base()) + len(s.extras)
	s.cfgMu.Unlock()
	for _, r := range s.replicas {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := r.client.ListServers(cctx, &toolsvcv1.ListServersRequest{})
		if err == nil {
			n := 0
			for _, sv := range resp.GetServers() {
				if sv.GetState() == toolsvcv1.ServerState_SERVER_STATE_READY {
					n++
				} else {
					why = append(why, fmt.Sprintf("replica%d %s %s (%s)", r.idx, sv.GetName(), sv.GetState(), sv.GetLastError()))
				}
			}
			if len(resp.GetServers()) != want {
				why = append(why, fmt.Sprintf("replica%d has %d servers, config %d", r.idx, len(resp.GetServers()), want))
			}
		} else {
			why = append(why, fmt.Sprintf("replica%d ListServers: %v", r.idx, err))
		}
		lt, err := r.client.ListTools(cctx, &toolsvcv1.ListToolsRequest{PageSize: 1})
		cancel()
		if err != nil {
			why = append(why, fmt.Sprintf("replica%d ListTools: %v", r.idx, err))
			revs = append(revs, "")
			continue
		}
		revs = append(revs, lt.GetRevision())
	}
	for _, r := range revs[1:] {
		if r != revs[0] {
			why = append(why, fmt.Sprintf("revisions %v", revs))
			break
		}
	}
	return revs, strings.Join(why, "; ")
}

// waitSettled waits until every server is ready on every replica and the
// replicas report one revision.
func (s *soak) waitSettled(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		_, why := s.poll(ctx)
		if why == "" {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("not settled after %s: %s", limit, why)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func listAll(ctx context.Context, r *replica, js bool) (map[string]*toolsvcv1.Tool, string, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out := map[string]*toolsvcv1.Tool{}
	tok, rev := "", ""
	req := &toolsvcv1.ListToolsRequest{PageSize: 50}
	if js {
		req.SchemaFormat = toolsvcv1.SchemaFormat_SCHEMA_FORMAT_JSON
	}
	for {
		req.PageToken = tok
		resp, err := r.client.ListTools(cctx, req)
		if err != nil {
			return nil, "", err
		}
		if rev != "" && rev != resp.GetRevision() {
			return nil, "", fmt.Errorf("pages of revisions %s and %s", rev, resp.GetRevision())
		}
		rev = resp.GetRevision()
		for _, t := range resp.GetTools() {
			out[t.GetName()] = t
		}
		if tok = resp.GetNextPageToken(); tok == "" {
			return out, rev, nil
		}
	}
}

// diff describes how have differs from want ("" if equal).
func diff(want, have map[string]*toolsvcv1.Tool) string {
	var missing, extra, changed []string
	for n, t := range want {
		h, ok := have[n]
		switch {
		case !ok:
			missing = append(missing, n)
		case !proto.Equal(t, h):
			changed = append(changed, n)
		}
	}
	for n := range have {
		if _, ok := want[n]; !ok {
			extra = append(extra, n)
		}
	}
	if len(missing)+len(extra)+len(changed) == 0 {
		return ""
	}
	slices.Sort(missing)
	slices.Sort(extra)
	slices.Sort(changed)
	return fmt.Sprintf("missing %v, extra %v, changed %v", missing, extra, changed)
}
