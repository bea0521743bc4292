package service

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/toolsvc/toolsvc/service/core"
)

// End observes a finished call once: fail is what the caller got (nil
// for OK), isError whether the tool reported its own failure, outBytes the
// response bytes sent. It records the call metrics and the audit line and
// releases the principal's concurrency slot. Calls to unknown tools are
// counted under server and tool "unknown" (no catalog label to spend).
func (c *Call) End(fail *core.Error, isError bool, outBytes int) {
	if c.ended {
		return
	}
	c.ended = true
	if c.release != nil {
		c.release()
	}
	took := time.Since(c.start)
	outcome := "ok"
	switch {
	case fail != nil:
		outcome = fail.Code.String()
	case isError:
		outcome = "tool_error"
	}
	_, targetServer := c.targetNames()
	server, tool := "unknown", "unknown"
	if c.target.Tool != nil {
		server, tool = c.target.Tool.Server, c.target.Tool.Name
	}
	if m := c.s.opts.Metrics; m != nil {
		m.callsInFlight.Dec()
		m.calls.WithLabelValues(server, tool, outcome).Inc()
		m.callDuration.WithLabelValues(server, outcome).Observe(took.Seconds())
	}
	as := c.auth
	if as == nil { // refused before it was decided under a state
		as = c.s.currentAuth()
	}
	if a := as.audit; a != nil {
		attrs := []slog.Attr{
			slog.String("principal", c.principal.Name), slog.String("tool", c.in.Name), slog.String("server", targetServer),
			slog.String("outcome", outcome), slog.Duration("duration", took),
			slog.Int("request_bytes", c.in.Size), slog.Int("response_bytes", outBytes),
		}
		if as.auditArgs {
			attrs = append(attrs, slog.Any("arguments", c.auditArguments()))
		}
		a.LogAttrs(context.Background(), slog.LevelInfo, "tool call", attrs...)
	}
}

// auditArguments is the call's arguments as JSON for the audit line.
func (c *Call) auditArguments() json.RawMessage {
	if c.in.ArgumentsJSON != "" {
		return json.RawMessage(c.in.ArgumentsJSON)
	}
	if c.in.Arguments == nil {
		return json.RawMessage("{}")
	}
	b, err := json.Marshal(c.in.Arguments)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}
