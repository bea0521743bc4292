package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// answered returns the JSON-RPC error in err that the upstream itself
// answered, if any. go-sdk reports an upstream's answer as a *jsonrpc.Error
// with the upstream's code; errors of its transports either carry the
// "rejected by transport" code (-32005: the request never reached a live
// upstream) or are not JSON-RPC errors at all.
func answered(err error) (*jsonrpc.Error, bool) {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && werr.Code != codeRejectedByTransport {
		return werr, true
	}
	return nil, false
}

// lostWithoutAnswer reports a request that ended without an answer from the
// upstream and without a known cause on our side: the transport gave up on
// it (go-sdk's streamable client reports "request terminated without
// response" when a response stream closes early, as it does when a
// TypeScript SDK server is killed mid-call). The request is lost; whether
// the session is too is for a probe to tell.
func lostWithoutAnswer(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	_, ok := answered(err)
	return !ok
}

// isSessionDead reports whether err means the session's transport is gone
// (as opposed to a protocol error on a live session).
func isSessionDead(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	switch {
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, mcp.ErrSessionMissing),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE):
		return true
	}
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		// -32005 is go-sdk's "rejected by transport": the request never
		// reached a live upstream (the HTTP POST failed). Any other code is
		// an answer from a live upstream.
		return werr.Code == codeRejectedByTransport
	}
	msg := err.Error()
	return strings.Contains(msg, "connection closed") || strings.Contains(msg, "EOF") ||
		strings.Contains(msg, "connection reset") || strings.Contains(msg, "connection refused") ||
		strings.Contains(msg, "broken pipe")
}

// codeRejectedByTransport is go-sdk's internal jsonrpc2.ErrRejected code.
const codeRejectedByTransport = -32005
