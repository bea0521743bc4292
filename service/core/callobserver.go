package core

import (
	"encoding/json"
	"log/slog"
)

// End observes a finished call once: fail is what the caller got (nil
// for OK), isError whether the tool reported its own failure, outBytes the
// response bytes sent. The operation engine records the metrics and the
// audit line (with the call's sizes and, when configured, its arguments)
// and releases the principal's concurrency slot. Calls to unknown tools
// are counted under server and tool "unknown" (no catalog label to spend).
func (c *Call) End(fail *Error, isError bool, outBytes int) {
	as := c.op.auth
	if as == nil { // refused before it was decided under a state
		as = c.op.s.CurrentAuth()
	}
	if as.audit == nil {
		c.op.end(fail, isError) // no audit line: no attributes to build
		return
	}
	extra := []slog.Attr{slog.Int("request_bytes", c.in.Size), slog.Int("response_bytes", outBytes)}
	if as.auditArgs {
		extra = append(extra, slog.Any("arguments", c.auditArguments()))
	}
	c.op.end(fail, isError, extra...)
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
