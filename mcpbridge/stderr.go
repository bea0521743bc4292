package mcpbridge

import (
	"bytes"
	"log/slog"
	"sync"
	"time"
)

// stderrLogger logs a stdio child's stderr line by line, tagged with the
// server, bounded in line length and in rate (a chatty or looping child
// cannot flood toolsvc's log).
type stderrLogger struct {
	log    *slog.Logger
	redact func(string) string

	mu         sync.Mutex
	buf        []byte
	window     time.Time
	lines      int
	suppressed int
}

const (
	stderrMaxLine   = 1024
	stderrPerWindow = 50
	stderrWindow    = 10 * time.Second
)

func newStderrLogger(log *slog.Logger, redact func(string) string) *stderrLogger {
	return &stderrLogger{log: log, redact: redact}
}

func (w *stderrLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > stderrMaxLine {
		w.emit(w.buf)
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

func (w *stderrLogger) emit(line []byte) {
	now := time.Now()
	if now.Sub(w.window) >= stderrWindow {
		if w.suppressed > 0 {
			w.log.Warn("upstream stderr: lines suppressed", "lines", w.suppressed)
		}
		w.window, w.lines, w.suppressed = now, 0, 0
	}
	if w.lines >= stderrPerWindow {
		w.suppressed++
		return
	}
	w.lines++
	if len(line) > stderrMaxLine {
		line = append(line[:stderrMaxLine:stderrMaxLine], "…"...)
	}
	w.log.Info("upstream stderr", "line", w.redact(string(bytes.TrimRight(line, "\r"))))
}
