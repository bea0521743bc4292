package mcpbridge

import (
	"context"
	"time"
)

// keep runs a ready session on its supervisor's goroutine until the session
// dies, its context ends, or an operator asks for a reconnect (operator is
// then true). It is the session's refresher and its prober in one loop:
// the refresher re-lists after list_changed marks (after a trailing
// debounce), as a backstop for lost pushes every RefreshInterval, when
// the upstream's ttlMs runs out, every PushlessRefresh while the push
// channel is down, and re-opens a 2026-07-28 session's
// subscriptions/listen stream with backoff when the upstream closes it;
// the prober checks liveness every PingInterval (prober.go).
//
// What blocks — a debounce and its re-list, an operator's refresh,
// re-opening the listen stream, a probe — runs on a goroutine started for
// it that reports back here: at most one refresher job and one probe at a
// time, so a slow listing never holds a probe back, nor a probe a listing,
// and an idle session costs the bridge no goroutine but this one (it was
// three: supervisor, refresher, prober; with 500 upstreams, 1,000
// goroutines and their stacks; the Wait watcher starts only when the
// session ends: watchEnd, session.go). While a refresher job
// runs its inputs wait (their channels keep what arrived), as they did
// for the refresher goroutine that was busy: a mark that lands during a
// listing causes exactly one more pass.
func (s *session) keep(reconnect <-chan struct{}) (operator bool) {
	u := s.u
	st := &refreshTimers{backstop: s.nextBackstop()}
	refreshing := false
	refreshed := make(chan refreshDone, 1)
	run := func(j refreshJob) {
		if j.reopen {
			st.reopen = nil
			st.reopens++
		}
		refreshing = true
		s.wg.Go(func() { refreshed <- s.refreshWork(j) })
	}

	var tick <-chan time.Time
	probeNow := s.probeNow
	if u.cfg.PingInterval > 0 {
		t := time.NewTicker(u.cfg.PingInterval)
		defer t.Stop()
		tick = t.C
	} else {
		probeNow = nil // no prober: nothing answers requestProbe
	}
	probing := false
	probed := make(chan probeDone, 1)
	// Under 2026-07-28 ping is no method of the protocol (go-sdk's
	// stateless server answers it MethodNotFound, or HTTP 400 without the
	// per-request _meta): probe with tools/list from the start.
	pr := prober{useList: s.newProtocol()}
	probe := func() {
		probing = true
		useList := pr.useList
		s.wg.Go(func() { probed <- s.probeWork(useList) })
	}

	for {
		// A busy refresher or prober takes no new work: nil channels.
		var dirty, kick <-chan struct{}
		var backstop, retry, reopen <-chan time.Time
		var refreshReq chan chan error
		if !refreshing {
			dirty, kick, refreshReq = s.dirty, s.push.kick, s.refreshReq
			backstop, retry, reopen = st.backstop, st.retry, st.reopen
		}
		var ptick <-chan time.Time
		var pnow <-chan struct{}
		if !probing {
			ptick, pnow = tick, probeNow
		}
		select {
		case <-s.deadCtx.Done():
			return false
		case <-reconnect:
			return true
		case <-s.ctx.Done():
			return false
		case <-dirty:
			run(refreshJob{debounce: true})
		case <-backstop:
			run(refreshJob{})
		case <-retry:
			run(refreshJob{})
		case <-kick:
			if s.pushChanged(st) {
				run(refreshJob{})
			}
		case <-reopen:
			run(refreshJob{reopen: true})
		case reply := <-refreshReq:
			run(refreshJob{reply: reply})
		case d := <-refreshed:
			refreshing = false
			s.refreshed(st, d)
		case <-ptick:
			probe()
		case <-pnow:
			// A call lost its response without an answer from the
			// upstream: find out now whether the session is still alive.
			probe()
		case d := <-probed:
			probing = false
			s.probed(&pr, d)
		}
	}
}

// refreshJob is one piece of the refresher's work: a re-list (debounced
// after list_changed marks), an operator's refresh (its answer goes to
// reply), or re-opening the listen stream.
type refreshJob struct {
	debounce, reopen bool
	reply            chan error
}

// refreshDone is a refreshJob's outcome; gone: the session ended during
// its debounce.
type refreshDone struct {
	job  refreshJob
	err  error
	gone bool
}

// refreshWork does a refreshJob's blocking part.
func (s *session) refreshWork(j refreshJob) refreshDone {
	switch {
	case j.reopen:
		ctx, cancel := context.WithTimeout(s.ctx, s.u.cfg.ConnectTimeout)
		defer cancel()
		return refreshDone{job: j, err: s.reopenListen(ctx)}
	case j.debounce && !s.debounce():
		return refreshDone{job: j, gone: true}
	}
	err := s.refresh()
	if j.reply != nil {
		j.reply <- err // capacity 1 (Bridge.Refresh)
	}
	return refreshDone{job: j, err: err}
}

// refreshed applies a refreshJob's outcome to the refresher's timers: a
// failed re-list is retried with backoff, a failed re-open of the listen
// stream tried again after a longer backoff.
func (s *session) refreshed(st *refreshTimers, d refreshDone) {
	u := s.u
	switch {
	case d.gone:
	case d.job.reopen:
		if d.err != nil && s.ctx.Err() == nil && !s.isDead() {
			u.log.Warn("re-opening the subscriptions/listen stream failed", "error", u.redact(d.err.Error()), "attempt", st.reopens)
			st.reopen = time.After(backoff(u.cfg.BackoffBase, u.cfg.BackoffMax, st.reopens))
		}
	case d.job.reply != nil:
		st.backstop = s.nextBackstop()
		if d.err == nil {
			st.retry, st.failures = nil, 0
		}
	default:
		st.retry = nil
		st.backstop = s.nextBackstop()
		switch {
		case d.err == nil:
			st.failures = 0
		case s.ctx.Err() != nil || s.isDead():
		default:
			st.failures++
			st.retry = time.After(backoff(u.cfg.BackoffBase, u.cfg.BackoffMax, st.failures))
		}
	}
}
