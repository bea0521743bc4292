package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// prober checks liveness every PingInterval with its own deadline: ping, or
// a one-page tools/list for upstreams that reject ping. A transport failure
// marks the session dead at once; a timeout marks it degraded, and
// PingFailures timeouts in a row mark it dead. Wait() alone is not enough:
// it can take seconds or never return (docs/upstream-behaviour.md §2).
func (s *session) prober() {
	u := s.u
	if u.cfg.PingInterval <= 0 {
		return
	}
	t := time.NewTicker(u.cfg.PingInterval)
	defer t.Stop()
	// Under 2026-07-28 ping is no method of the protocol (go-sdk's stateless
	// server answers it MethodNotFound, or HTTP 400 without the per-request
	// _meta): probe with tools/list from the start.
	useList := s.newProtocol()
	slow := 0
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.deadCtx.Done():
			return
		case <-t.C:
		case <-s.probeNow:
			// A call lost its response without an answer from the
			// upstream: find out now whether the session is still alive.
		}
		err := s.probe(useList)
		if err != nil && !useList && pingUnsupported(err) {
			u.log.Info("upstream rejects ping; probing with tools/list instead")
			useList = true
			err = s.probe(true)
		}
		if _, ok := answered(err); ok {
			err = nil // any answer proves the session alive
		}
		if o := u.b.cfg.Observer; o != nil && err != nil && s.ctx.Err() == nil {
			o.ProbeFailed(u.cfg.Name)
		}
		switch {
		case err == nil:
			if slow > 0 {
				slow = 0
				u.setState(StateReady, "")
			}
		case s.ctx.Err() != nil:
			return
		case isSessionDead(err):
			u.recordDeath(s, "probe", err)
			s.markDead(fmt.Errorf("probe: %w", err))
			return
		default:
			slow++
			msg := fmt.Sprintf("probe %d/%d failed: %s", slow, u.cfg.PingFailures, u.redact(err.Error()))
			if slow >= u.cfg.PingFailures {
				u.recordDeath(s, "probe", err)
				s.markDead(errors.New(msg))
				return
			}
			u.setState(StateDegraded, msg)
		}
	}
}

func (s *session) probe(useList bool) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.u.cfg.PingTimeout)
	defer cancel()
	var err error
	if useList {
		_, err = s.cs.ListTools(ctx, &mcp.ListToolsParams{})
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
