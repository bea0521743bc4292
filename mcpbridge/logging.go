package mcpbridge

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Upstream log messages (MCP logging: notifications/message) during a call.
//
// Which level the upstream is told: a session before 2026-07-28 whose
// server declares the logging capability is sent logging/setLevel "debug"
// once, right after connect: callers filter by their own level
// (CallOptions.OnLog receives everything), and a session-wide level set
// per call would race between concurrent calls and cost each call a round
// trip. From 2026-07-28 on there is no session level: a tools/call asks
// for logs in its own _meta (mcp.MetaKeyLogLevel), and the bridge sets it,
// to CallOptions.LogLevel, only on calls that have OnLog; other calls get
// none.
//
// Which call a log message belongs to: a notification carries no request
// id, so it is decided where the message is read, never when it is
// handled (go-sdk handles notifications on a queue behind its reader: a
// backlog read during one call would reach whichever call is alone in
// flight when the queue drains, another caller's). On streamable HTTP, a
// message on the response stream of a call's POST is that call's
// (the link tap, linkTap, marks it with the call's token), one on the
// standalone GET stream belongs to the only request in flight on the
// session as it is read, when that is a call. On stdio and SSE, it belongs to
// the only request written on the connection and not yet answered as it
// is read, when that is a call (wireCalls). Otherwise its owner is not
// certain and it goes to nobody; an owner that has returned by the time
// the message is handled gets nothing either. A message no call gets is
// only logged.
//
// Every message is logged by toolsvc at Debug (attrs "server",
// "log_level", "logger", and "data": redacted of the server's secrets and
// clipped to maxLogDataInLog, since it is the upstream's content).

// Log is one log message of an upstream (MCP notifications/message).
type Log struct {
	// Server is the configured name of the upstream that sent it.
	Server string
	// Level is the MCP level as the upstream sent it (debug, info, notice,
	// warning, error, critical, alert, emergency; clipped to maxLogLevelLen).
	Level mcp.LoggingLevel
	// Logger is the upstream's logger name, if any (clipped to
	// maxLogLoggerLen).
	Logger string
	// Data is the message's data as JSON. Data over MaxLogDataBytes is
	// replaced by a JSON string of its first MaxLogDataBytes bytes, and
	// Truncated is set.
	Data      json.RawMessage
	Truncated bool
}

// MaxLogDataBytes bounds a log message's Data as callers get it: a chatty
// upstream cannot make one log event larger than a client accepts.
const MaxLogDataBytes = 64 << 10

// maxLogDataInLog bounds the data of an upstream log message in toolsvc's
// own log.
const maxLogDataInLog = 2 << 10

const (
	maxLogLevelLen  = 32
	maxLogLoggerLen = 256
)

// upstreamLogLevel is the level a pre-2026-07-28 session asks its
// upstream for at connect (the callers filter).
const upstreamLogLevel mcp.LoggingLevel = "debug"

// logGrace bounds how long a call's result waits for log notifications
// read before it but still in the session's handler queue (go-sdk routes a
// response ahead of the notifications queued before it; see
// progressGrace). It is paid only when such notifications are pending.
const logGrace = 100 * time.Millisecond

// setLogLevel tells a pre-2026-07-28 upstream that declares logging to
// send its log messages from upstreamLogLevel, within the connect
// timeout. A refusal is logged, not fatal: the upstream then sends what it
// sends by default.
func (u *upstream) setLogLevel(s *session) {
	ir := s.cs.InitializeResult()
	if ir == nil || ir.Capabilities == nil || ir.Capabilities.Logging == nil || s.newProtocol() {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, u.cfg.ConnectTimeout)
	defer cancel()
	if err := s.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: upstreamLogLevel}); err != nil {
		u.log.Info("the upstream refused logging/setLevel; its log messages come at its own default level", "error", u.redact(err.Error()))
	}
}

// onLog is the session's notifications/message handler: it only delivers
// to the owning call's sink (which only queues) and logs, so it never
// blocks the session's notification path.
func (s *session) onLog(ctx context.Context, req *mcp.LoggingMessageRequest) {
	p := req.Params
	if p == nil {
		return
	}
	// Counted as read by the link tap (linkTap) on every transport: see
	// logCount.
	defer s.logs.handled()
	tok, _ := p.Meta[linkMetaKey].(string)
	it := s.interact.logOwner(tok)
	l := s.u.newLog(p)
	if s.u.log.Enabled(ctx, slog.LevelDebug) {
		s.u.log.Debug("upstream log message", "log_level", l.Level, "logger", l.Logger,
			"data", clipText(s.u.redactAll(string(l.Data)), maxLogDataInLog), "attributed", it != nil)
	}
	if it != nil {
		it.logs.deliver(l)
	}
}

// newLog is the Log of a notification's params, bounded.
func (u *upstream) newLog(p *mcp.LoggingMessageParams) Log {
	l := Log{Server: u.cfg.Name, Level: mcp.LoggingLevel(clipText(string(p.Level), maxLogLevelLen)), Logger: clipText(p.Logger, maxLogLoggerLen)}
	data, err := json.Marshal(p.Data)
	if err != nil {
		data = []byte("null")
	}
	if len(data) > MaxLogDataBytes {
		data, _ = json.Marshal(clipText(string(data), MaxLogDataBytes))
		l.Truncated = true
	}
	l.Data = data
	return l
}

// clipText is s cut to at most n bytes on a rune boundary, with "…" when
// cut.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// logSink delivers one call's log messages until the call returns; after
// close nothing more is delivered. OnLog is documented as non-blocking, so
// holding the small lock across it is fine.
type logSink struct {
	mu     sync.Mutex
	closed bool
	f      func(Log)
}

func (k *logSink) deliver(l Log) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.closed {
		k.f(l)
	}
}

func (k *logSink) close() {
	k.mu.Lock()
	k.closed = true
	k.mu.Unlock()
}

// logCount lets a call's result wait for the log notifications read before
// it: read counts the notifications/message the connection read (the link
// tap, linkTap, as each message is read), handled those the session's
// handler has seen.
// A result waits (settle) until handled reaches read as it was when the
// result came. A notification counted as read that never reaches the
// handler (go-sdk drops one whose params do not decode) would make every
// later wait run out; a wait that runs out therefore counts the missing
// ones as handled.
type logCount struct {
	read atomic.Int64
	mu   sync.Mutex
	done int64
	wake chan struct{} // closed when done advances; nil when nobody waits
}

func (c *logCount) readOne() { c.read.Add(1) }

func (c *logCount) handled() {
	c.mu.Lock()
	c.done++
	if c.wake != nil {
		close(c.wake)
		c.wake = nil
	}
	c.mu.Unlock()
}

// settle waits, at most grace and within ctx, until every notification
// read so far has been handled. Nothing pending costs nothing.
func (c *logCount) settle(ctx context.Context, grace time.Duration) {
	target := c.read.Load()
	var timer *time.Timer
	for {
		c.mu.Lock()
		if c.done >= target {
			c.mu.Unlock()
			return
		}
		if c.wake == nil {
			c.wake = make(chan struct{})
		}
		wake := c.wake
		c.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(grace)
			defer timer.Stop()
		}
		select {
		case <-wake:
		case <-timer.C:
			c.mu.Lock()
			c.done = max(c.done, target)
			c.mu.Unlock()
			return
		case <-ctx.Done():
			return
		}
	}
}
