package mcpbridge

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The prober checks liveness every PingInterval with its own deadline:
// ping, or a one-page tools/list for upstreams that reject ping. A
// transport failure marks the session dead at once; a timeout marks it
// degraded, and PingFailures timeouts in a row mark it dead. Wait() alone
// is not enough: it can take seconds or never return
// (docs/upstream-behaviour.md §2). Its ticker and its state live in the
// session's loop (keep, sessionloop.go); each probe runs on a goroutine of
// its own (probeWork) and its outcome is applied there (probed).

// prober is the prober's state between probes.
type prober struct {
	useList bool // probe with tools/list: the upstream rejects ping
	slow    int  // probe timeouts in a row
}

// probeDone is one probe's outcome.
type probeDone struct {
	err     error
	useList bool
}

// probeWork probes once: with ping, or tools/list if useList or the
// upstream rejects ping (then useList is true from now on). Any answer
// proves the session alive.
func (s *session) probeWork(useList bool) probeDone {
	err := s.probe(useList)
	if err != nil && !useList && pingUnsupported(err) {
		s.u.log.Info("upstream rejects ping; probing with tools/list instead")
		useList = true
		err = s.probe(true)
	}
	if _, ok := answered(err); ok {
		err = nil
	}
	return probeDone{err: err, useList: useList}
}

// probed applies a probe's outcome: ready again after a good one,
// degraded after a timeout, dead after a transport failure or
// PingFailures timeouts in a row.
func (s *session) probed(pr *prober, d probeDone) {
	u := s.u
	pr.useList = d.useList
	err := d.err
	if o := u.b.cfg.Observer; o != nil && err != nil && s.ctx.Err() == nil {
		o.ProbeFailed(u.cfg.Name)
	}
	switch {
	case err == nil:
		if pr.slow > 0 {
			pr.slow = 0
			u.setState(StateReady, "")
		}
	case s.ctx.Err() != nil:
	case isSessionDead(err):
		u.recordDeath(s, "probe", err)
		s.markDead(fmt.Errorf("probe: %w", err))
	default:
		pr.slow++
		msg := fmt.Sprintf("probe %d/%d failed: %s", pr.slow, u.cfg.PingFailures, u.redact(err.Error()))
		if pr.slow >= u.cfg.PingFailures {
			u.recordDeath(s, "probe", err)
			s.markDead(errors.New(msg))
			return
		}
		u.setState(StateDegraded, msg)
	}
}

func (s *session) probe(useList bool) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.u.cfg.PingTimeout)
	defer cancel()
	ctx = connClosing(ctx) // no connection kept for the probe's sake (streamhttp.go)
	var err error
	if useList {
		// As a refresh lists (lists.go): schemas as text, not decoded, and
		// the same form in go-sdk's cache of a 2026-07-28 session's lists.
		_, err = s.cs.ListTools(mcp.WithRawToolSchemas(ctx), &mcp.ListToolsParams{})
	} else {
		err = s.cs.Ping(ctx, &mcp.PingParams{})
	}
	if err != nil && ctx.Err() != nil && s.ctx.Err() == nil {
		return fmt.Errorf("%w within %s", errProbeTimeout, s.u.cfg.PingTimeout)
	}
	return err
}

// errProbeTimeout is a probe that got no answer in time (slow, not dead).
var errProbeTimeout = errors.New("no answer")

// pingUnsupported reports an upstream that rejects ping itself (rather than
// failing to answer): any JSON-RPC error the upstream answered. go-sdk's
// stateless server, for one, answers a ping without the 2026-07-28 _meta
// with HTTP 400 and InvalidParams; an answer of any kind proves the
// session alive.
func pingUnsupported(err error) bool {
	if errors.Is(err, errProbeTimeout) {
		return false
	}
	_, ok := answered(err)
	return ok
}
