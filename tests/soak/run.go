package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// result is the JSON line.
type result struct {
	LostEvents               int                `json:"lost_events"`
	RepeatedEvents           int64              `json:"repeated_events"`
	HungCalls                int64              `json:"hung_calls"`
	UnexplainedFailures      int                `json:"unexplained_failures"`
	LeakedProcesses          int                `json:"leaked_processes"`
	RSSGrowthPct             map[string]float64 `json:"rss_growth_pct"`
	GoroutineGrowthPct       map[string]float64 `json:"goroutine_growth_pct"`
	RevisionDisagreements    int                `json:"revision_disagreements"`
	UnsettledQuietPeriods    int                `json:"unsettled_quiet_periods"`
	UncleanReplicaExits      int                `json:"unclean_replica_exits"`
	InputOverdue             int                `json:"input_overdue"`
	InputWaitingLeft         int                `json:"input_waiting_left"`
	InputAbandoned           int64              `json:"input_abandoned"`
	InputMaxLateS            float64            `json:"input_max_late_s"`
	UpstreamKilledByAnswer   int                `json:"upstream_killed_by_answer"`
	UpstreamNotDeclined      int                `json:"upstream_not_declined"`
	InputExpiryDeclined      int                `json:"input_expiry_declined"`
	QuietBoundExceeded       int                `json:"quiet_bound_exceeded"`
	PrincipalFloodViolations int                `json:"principal_flood_violations"`
	FlooderRefused           int                `json:"flooder_refused"`
	OwnLogLines              int64              `json:"own_log_lines"`
	TasksStarted             int64              `json:"tasks_started"`
	TasksCompleted           int64              `json:"tasks_completed"`
	TasksLost                int                `json:"tasks_lost"`
	TaskWatchResumes         int64              `json:"task_watch_resumes"`
	Calls                    int64              `json:"calls"`
	ExplainedFailures        int                `json:"explained_failures"`
	Cancellations            int64              `json:"cancellations"`
	ProgressMessages         int64              `json:"progress_messages"`
	Listings                 int64              `json:"listings"`
	Watchers                 int                `json:"watchers"`
	WatchEvents              int64              `json:"watch_events"`
	WatchResumes             int64              `json:"watch_resumes"`
	FailuresByStatus         map[string]int     `json:"failures_by_status"`
	HostileChecks            map[string]int     `json:"hostile_checks"`
	GrowthSpanS              map[string]float64 `json:"growth_span_s"`
	Faults                   int                `json:"faults"`
	FaultsByKind             map[string]int     `json:"faults_by_kind"`
	QuietPeriods             int                `json:"quiet_periods"`
	MaxSettleS               float64            `json:"max_settle_s"`
	DurationS                float64            `json:"duration_s"`
	Load1                    string             `json:"loadavg"`
}

const maxGrowthPct = 10

func (r *result) failed() []string {
	var f []string
	if r.LostEvents > 0 {
		f = append(f, "lost_events")
	}
	if r.RepeatedEvents > 0 {
		f = append(f, "repeated_events")
	}
	if r.HungCalls > 0 {
		f = append(f, "hung_calls")
	}
	if r.UnexplainedFailures > 0 {
		f = append(f, "unexplained_failures")
	}
	if r.LeakedProcesses > 0 {
		f = append(f, "leaked_processes")
	}
	if r.RevisionDisagreements > 0 {
		f = append(f, "revision_disagreements")
	}
	if r.UnsettledQuietPeriods > 0 {
		f = append(f, "unsettled_quiet_periods")
	}
	if r.UncleanReplicaExits > 0 {
		f = append(f, "unclean_replica_exits")
	}
	for k, v := range r.RSSGrowthPct {
		if v > maxGrowthPct {
			f = append(f, "rss_growth_pct."+k)
		}
	}
	for k, v := range r.GoroutineGrowthPct {
		if v > maxGrowthPct {
			f = append(f, "goroutine_growth_pct."+k)
		}
	}
	if r.InputOverdue > 0 {
		f = append(f, "input_overdue")
	}
	if r.InputWaitingLeft > 0 {
		f = append(f, "input_waiting_left")
	}
	if r.InputAbandoned == 0 {
		f = append(f, "input_abandoned (none: no abandoned interactive call checked)")
	}
	if r.UpstreamKilledByAnswer > 0 {
		f = append(f, "upstream_killed_by_answer")
	}
	if r.UpstreamNotDeclined > 0 {
		f = append(f, "upstream_not_declined")
	}
	if r.InputExpiryDeclined == 0 {
		f = append(f, "input_expiry_declined (none: no expired request's decline checked)")
	}
	if r.QuietBoundExceeded > 0 {
		f = append(f, "quiet_bound_exceeded")
	}
	if r.PrincipalFloodViolations > 0 {
		f = append(f, "principal_flood_violations")
	}
	if r.FlooderRefused == 0 {
		f = append(f, "flooder_refused (none: the per-principal bound was never reached)")
	}
	if r.TasksLost > 0 {
		f = append(f, "tasks_lost")
	}
	if r.TasksStarted == 0 {
		f = append(f, "tasks_started (none: no task ran across a rolling restart)")
	}
	if r.QuietPeriods < 2 {
		f = append(f, "quiet_periods (fewer than 2: nothing compared)")
	}
	return f
}

func (s *soak) soak(ctx context.Context, race bool, nWatchers int, quietEvery time.Duration, plotPath string) (*result, error) {
	if !strings.Contains(os.Getenv("GORACE"), "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	}
	s.race = race
	if err := s.build(race); err != nil {
		return nil, err
	}
	if quietEvery <= 0 {
		quietEvery = max(20*time.Second, s.duration/12)
	}
	defer s.teardown()

	// Twelve upstreams.
	for _, sdk := range []string{sdkGo, sdkTS, sdkPy} {
		for _, tr := range []string{trStdio, trHTTP, trStateless, trSSE} {
			u := &upstream{s: s, name: sdk + "-" + tr, sdk: sdk, tr: tr}
			if tr != trStdio {
				p, err := freePort()
				if err != nil {
					return nil, err
				}
				u.port = p
			}
			s.upstreams = append(s.upstreams, u)
		}
	}
	s.hostile = &upstream{s: s, name: hostileName, sdk: sdkHostile, tr: trStdio}
	// The two task upstreams (tasks.go), over streamable HTTP.
	for _, sdk := range []string{sdkTasksTS, sdkTasksPy} {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		s.taskUps = append(s.taskUps, &upstream{s: s, name: sdk, sdk: sdk, tr: trHTTP, port: p})
	}
	if err := parallel(s.base(), func(u *upstream) error {
		if u.stdio() {
			return nil
		}
		return u.start()
	}); err != nil {
		return nil, err
	}
	// The principals' bearer tokens (principals.go).
	s.tokens = map[string]string{}
	for _, p := range []string{principalSoak, principalFlooder, principalOther} {
		tok := make([]byte, 16)
		if _, err := rand.Read(tok); err != nil {
			return nil, err
		}
		s.tokens[p] = hex.EncodeToString(tok)
	}
	// The replicas' shared state key: any replica opens any task handle.
	s.stateKey = filepath.Join(s.dir, "state.key")
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.WriteFile(s.stateKey, []byte(hex.EncodeToString(key)), 0o600); err != nil {
		return nil, err
	}
	for i := range 3 {
		p1, err1 := freePort()
		p2, err2 := freePort()
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("ports: %v %v", err1, err2)
		}
		d := filepath.Join(s.dir, fmt.Sprintf("replica%d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		s.replicas = append(s.replicas, &replica{s: s, idx: i, port: p1, adminPort: p2, configPath: filepath.Join(d, "config.json")})
	}
	if err := s.writeConfigs(); err != nil {
		return nil, err
	}
	if err := parallel(s.replicas, func(r *replica) error { return r.start() }); err != nil {
		return nil, err
	}
	for _, r := range s.replicas {
		conn, err := dial(r.addr(), s.tokens[principalSoak])
		if err != nil {
			return nil, err
		}
		r.conn, r.client = conn, newClient(conn)
		for _, p := range []string{principalFlooder, principalOther} {
			c, err := dial(r.addr(), s.tokens[p])
			if err != nil {
				return nil, err
			}
			r.principalConns = append(r.principalConns, c)
		}
		r.flooder, r.other = newClient(r.principalConns[0]), newClient(r.principalConns[1])
	}
	// toolsvc is ready once every upstream had its first attempt; on a busy
	// box a Python or Node child may still be starting. The load starts
	// when every server is ready on every replica and they agree.
	if err := s.waitSettled(ctx, 2*time.Minute); err != nil {
		return nil, err
	}
	s.logf("3 replicas ready with %d upstreams", len(s.base()))

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.runCtx = runCtx
	var wg sync.WaitGroup
	if err := s.startWatchers(runCtx, &wg, nWatchers); err != nil {
		cancel()
		wg.Wait()
		return nil, err
	}
	sampleDone := make(chan struct{})
	go func() { defer close(sampleDone); s.sampler(runCtx) }()

	loadCtx, stopLoad := context.WithCancel(runCtx)
	var loadWG sync.WaitGroup
	for i := range 6 {
		loadWG.Add(1)
		go func() { defer loadWG.Done(); s.loadWorker(loadCtx, i) }()
	}
	loadWG.Add(1)
	go func() { defer loadWG.Done(); s.hopper(loadCtx) }()
	faultCtx, stopFaults := context.WithCancel(runCtx)
	faultDone := make(chan struct{})
	go func() { defer close(faultDone); s.injectFaults(faultCtx) }()

	end := s.start.Add(s.duration)
	next := time.Now().Add(quietEvery)
	for time.Now().Before(end) && ctx.Err() == nil {
		wait := time.Until(next)
		if r := time.Until(end); r < wait {
			wait = r
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		if ctx.Err() != nil || !time.Now().Before(end) {
			break
		}
		s.quiet(runCtx)
		next = time.Now().Add(quietEvery)
	}
	stopFaults()
	<-faultDone
	s.faultGate.Lock() // no fault in progress
	s.faultGate.Unlock()
	if ctx.Err() == nil {
		s.quiet(runCtx) // the last quiet period
	}
	stopLoad()
	loadWG.Wait()
	elapsed := time.Since(s.start)
	cancel()
	wg.Wait()
	<-sampleDone
	for _, r := range s.replicas {
		r.conn.Close()
		for _, c := range r.principalConns {
			c.Close()
		}
	}
	s.teardown()
	s.leakChecks.Wait()
	// Nothing of this run may be left.
	if pids := procsWithEnv("SOAK_RUN=" + s.run); len(pids) > 0 {
		s.mu.Lock()
		s.leaked += len(pids)
		for _, pid := range pids {
			s.leakDetail = append(s.leakDetail, fmt.Sprintf("after teardown: pid %d (%s)", pid, cmdline(pid)))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		s.mu.Unlock()
	}
	res := s.result(elapsed)
	if err := s.plot(plotPath); err != nil {
		s.logf("plot: %v", err)
		return nil, err
	}
	return res, nil
}

var teardownOnce sync.Once

// teardown stops every replica (SIGTERM, children checked) and upstream.
func (s *soak) teardown() {
	teardownOnce.Do(func() {
		var wg sync.WaitGroup
		for _, r := range s.replicas {
			wg.Add(1)
			go func() { defer wg.Done(); r.stop() }()
		}
		wg.Wait()
		for _, u := range s.base() {
			if !u.stdio() {
				u.stopProc(false)
			}
		}
	})
}

func parallel[T any](items []T, f func(T) error) error {
	errs := make(chan error, len(items))
	for _, it := range items {
		go func() { errs <- f(it) }()
	}
	var first error
	for range items {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (s *soak) result(elapsed time.Duration) *result {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := &result{
		LostEvents:               s.lost,
		RepeatedEvents:           s.repeated.Load(),
		HungCalls:                s.hung.Load(),
		LeakedProcesses:          s.leaked,
		RSSGrowthPct:             map[string]float64{},
		GoroutineGrowthPct:       map[string]float64{},
		RevisionDisagreements:    s.disagree,
		UnsettledQuietPeriods:    s.unsettled,
		UncleanReplicaExits:      len(s.exitDetail),
		InputOverdue:             len(s.overdue),
		InputWaitingLeft:         s.waitingLeft,
		InputAbandoned:           s.abandonedCalls.Load(),
		InputMaxLateS:            float64(s.maxInputLate.Milliseconds()) / 1000,
		UpstreamNotDeclined:      len(s.notDeclined),
		InputExpiryDeclined:      s.expiryChecks,
		QuietBoundExceeded:       len(s.quietBound),
		PrincipalFloodViolations: len(s.floodViolations),
		FlooderRefused:           s.flooderRefused,
		OwnLogLines:              s.ownLogLines.Load(),
		TasksStarted:             s.tasksStarted.Load(),
		TasksCompleted:           s.tasksCompleted.Load(),
		TasksLost:                len(s.tasksLost),
		TaskWatchResumes:         s.taskResumes.Load(),
		Calls:                    s.calls.Load(),
		Cancellations:            s.cancelled.Load(),
		ProgressMessages:         s.progress.Load(),
		Listings:                 s.listings.Load(),
		Watchers:                 len(s.watchers),
		WatchEvents:              s.watchEvents.Load(),
		WatchResumes:             s.resumes.Load(),
		FailuresByStatus:         map[string]int{},
		HostileChecks:            maps.Clone(s.hostileChecks),
		GrowthSpanS:              map[string]float64{},
		Faults:                   len(s.faults),
		FaultsByKind:             map[string]int{},
		QuietPeriods:             s.quietPeriods,
		MaxSettleS:               round(s.maxSettle.Seconds()),
		DurationS:                round(elapsed.Seconds()),
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		res.Load1 = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	for _, f := range s.faults {
		res.FaultsByKind[f.kind]++
	}
	for i := range s.failures {
		f := &s.failures[i]
		f.explained = s.explainedLocked(f)
		res.FailuresByStatus[f.code.String()+"/"+f.reason]++
		if f.explained {
			res.ExplainedFailures++
		} else {
			res.UnexplainedFailures++
			if f.op == "hostile-deep-answer-then-answer" {
				// the session that was sent a refused answer no longer
				// answers a proper one
				res.UpstreamKilledByAnswer++
			}
		}
	}
	for _, r := range s.replicas {
		if len(r.samples) < 2 {
			continue
		}
		first, last := r.samples[0], r.samples[len(r.samples)-1]
		k := fmt.Sprintf("replica%d", r.idx)
		res.RSSGrowthPct[k] = round(100 * (last.rss - first.rss) / first.rss)
		res.GoroutineGrowthPct[k] = round(100 * (last.goroutines - first.goroutines) / first.goroutines)
		res.GrowthSpanS[k] = round(last.at.Sub(first.at).Seconds())
	}
	return res
}

func round(v float64) float64 { return float64(int64(v*10+0.5*sign(v))) / 10 }

func sign(v float64) float64 {
	if v < 0 {
		return -1
	}
	return 1
}
