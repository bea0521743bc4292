package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

func TestEventQueueNeverBlocksAndKeepsLatestProgress(t *testing.T) {
	t.Parallel()
	q := newEventQueue()
	// A reader that keeps up gets everything, in order.
	for i := 1; i <= 5; i++ {
		q.putProgress(mcpbridge.Progress{Progress: float64(i)})
	}
	if got := q.take(); len(got) != 5 || got[0].progress.Progress != 1 || got[4].progress.Progress != 5 {
		t.Fatalf("take() = %v, want progress 1..5", got)
	}
	// Nobody reads: every put still returns (a blocking put would hang the
	// test), the backlog stays bounded, and the newest value is kept.
	for i := 1; i <= 10000; i++ {
		q.putProgress(mcpbridge.Progress{Progress: float64(i), Total: 10000})
	}
	got := q.take()
	if len(got) != progressBacklog || got[0].progress.Progress != 1 || got[len(got)-2].progress.Progress != progressBacklog-1 || got[len(got)-1].progress.Progress != 10000 {
		t.Fatalf("take() after 10000 unread puts = %d items (%v ... %v); want %d: 1..%d, then 10000",
			len(got), got[0], got[len(got)-1], progressBacklog, progressBacklog-1)
	}
	if rest := q.take(); len(rest) != 0 {
		t.Fatalf("take() after take() = %v, want empty", rest)
	}
	select {
	case <-q.ready:
	default:
		t.Fatal("no ready signal after puts")
	}
}

func logLine(level mcp.LoggingLevel, i int) mcpbridge.Log {
	return mcpbridge.Log{Server: "up", Level: level, Data: json.RawMessage(fmt.Sprint(i))}
}

// Log messages are never merged: past logBacklog unread the oldest are
// dropped, counted, and a notice saying how many comes first; progress
// merging does not touch them, and the order of what stays is kept.
func TestEventQueueDropsOldestLogsAndCounts(t *testing.T) {
	t.Parallel()
	q := newEventQueue()
	const n = 1000
	for i := range n {
		q.putLog(logLine("info", i))
		q.putProgress(mcpbridge.Progress{Progress: float64(i)})
	}
	got := q.take()
	if len(got) != 1+logBacklog+progressBacklog {
		t.Fatalf("take() = %d events, want %d (notice, logs, progress)", len(got), 1+logBacklog+progressBacklog)
	}
	notice := got[0].log
	var nd struct {
		Dropped int `json:"dropped"`
	}
	if notice == nil || notice.Level != "warning" || notice.Logger != "toolsvc" || notice.Server != "up" ||
		json.Unmarshal(notice.Data, &nd) != nil || nd.Dropped != n-logBacklog {
		t.Fatalf("first event = %+v, want a toolsvc warning that %d were dropped", got[0], n-logBacklog)
	}
	next, lastProgress := n-logBacklog, -1.0
	for _, ev := range got[1:] {
		if ev.log != nil {
			if string(ev.log.Data) != fmt.Sprint(next) {
				t.Fatalf("log %s, want %d: the newest %d kept in order", ev.log.Data, next, logBacklog)
			}
			next++
			continue
		}
		if ev.progress.Progress <= lastProgress {
			t.Fatalf("progress %v after %v", ev.progress.Progress, lastProgress)
		}
		lastProgress = ev.progress.Progress
	}
	if next != n || lastProgress != n-1 {
		t.Fatalf("last log %d, last progress %v; want %d and %d", next-1, lastProgress, n-1, n-1)
	}
	if again := q.take(); len(again) != 0 {
		t.Fatalf("a second take() = %v; the drop count must be reported once", again)
	}
}

// Run sends progress and log messages in the order they came, filters the
// log messages by the caller's level, asks the bridge for that level, and
// sends what came before the result.
func TestRelayOrderAndLevel(t *testing.T) {
	t.Parallel()
	var got []string
	r := Relay{
		Progress: func(p mcpbridge.Progress) error { got = append(got, fmt.Sprintf("p%v", p.Progress)); return nil },
		Log:      func(l mcpbridge.Log) error { got = append(got, string(l.Level)+string(l.Data)); return nil },
		LogLevel: "warning",
	}
	var asked mcp.LoggingLevel
	_, err, sendErr := r.Run(func(o *mcpbridge.CallOptions) (*mcp.CallToolResult, error) {
		asked = o.LogLevel
		levels := []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency", "bogus"}
		for i, l := range levels {
			o.OnLog(logLine(l, i))
			o.OnProgress(mcpbridge.Progress{Progress: float64(i)})
		}
		return &mcp.CallToolResult{}, nil
	})
	if err != nil || sendErr != nil {
		t.Fatalf("Run = %v, %v", err, sendErr)
	}
	want := "p0 p1 p2 warning3 p3 error4 p4 critical5 p5 alert6 p6 emergency7 p7 p8"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("sent %q, want %q", g, want)
	}
	if asked != "warning" {
		t.Errorf("CallOptions.LogLevel = %q, want warning", asked)
	}
	// Nothing asked: no callbacks, so the bridge asks for nothing.
	_, _, _ = Relay{}.Run(func(o *mcpbridge.CallOptions) (*mcp.CallToolResult, error) {
		if o.OnLog != nil || o.OnProgress != nil {
			t.Error("callbacks set for a relay that sends nothing")
		}
		return nil, nil
	})
}

// A send that fails stops sending, calls Stop, and reports the error;
// later events still never block the caller.
func TestRelayStopsWhenASendFails(t *testing.T) {
	t.Parallel()
	gone := errors.New("stream gone")
	var stopped sync.WaitGroup
	stopped.Add(1)
	sends := 0
	r := Relay{Log: func(mcpbridge.Log) error { sends++; return gone }, Stop: stopped.Done}
	_, _, sendErr := r.Run(func(o *mcpbridge.CallOptions) (*mcp.CallToolResult, error) {
		o.OnLog(logLine("info", 1))
		stopped.Wait() // the sender failed and stopped the call
		for i := range 2 * logBacklog {
			o.OnLog(logLine("info", i))
		}
		return nil, errors.New("cancelled")
	})
	if !errors.Is(sendErr, gone) || sends != 1 {
		t.Fatalf("sendErr = %v after %d sends, want %v after 1", sendErr, sends, gone)
	}
}

func TestLogLevels(t *testing.T) {
	t.Parallel()
	for i, l := range []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"} {
		if !ValidLogLevel(l) || LogLevelRank(mcp.LoggingLevel(l)) != i {
			t.Errorf("level %q: valid %v rank %d, want valid, rank %d", l, ValidLogLevel(l), LogLevelRank(mcp.LoggingLevel(l)), i)
		}
	}
	for _, l := range []string{"", "DEBUG", "warn", "verbose"} {
		if ValidLogLevel(l) {
			t.Errorf("ValidLogLevel(%q) = true", l)
		}
	}
}
