package console

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/toolsvc/toolsvc/service/core"
)

// Bounds of the Calls page's ring of audit lines: the last MaxCallLines
// lines, each attribute's value clipped to MaxCallValueBytes.
const (
	MaxCallLines      = 2000
	MaxCallValueBytes = 256
	maxCallAttrs      = 16
	// maxCallsSent bounds the lines one answer or event carries.
	maxCallsSent = 500
)

// callLine is one audit line as the Calls page shows it.
type callLine struct {
	Seq       uint64            `json:"seq"`
	Time      time.Time         `json:"time"`
	Op        string            `json:"op"` // the audit message: "tool call", "resource read", …
	Principal string            `json:"principal"`
	Outcome   string            `json:"outcome"`
	MS        float64           `json:"ms"`
	Attrs     map[string]string `json:"attrs,omitempty"` // tool, server, uri, prompt, task, …
}

// Calls keeps the last audit lines of this replica for the Calls page: a
// slog.Handler (Tee) in front of the audit log's, so it sees exactly the
// lines the audit log gets (none when auth.audit is off).
type Calls struct {
	mu    sync.Mutex
	lines [MaxCallLines]callLine
	seq   uint64 // lines recorded so far; the newest is lines[(seq-1)%MaxCallLines]
}

// NewCalls returns an empty ring.
func NewCalls() *Calls { return &Calls{} }

// Tee is h with every record also kept in the ring.
func (cl *Calls) Tee(h slog.Handler) slog.Handler { return &teeHandler{cl: cl, next: h} }

type teeHandler struct {
	cl    *Calls
	next  slog.Handler
	attrs []slog.Attr // from WithAttrs
}

func (t *teeHandler) Enabled(ctx context.Context, l slog.Level) bool { return true }

func (t *teeHandler) Handle(ctx context.Context, r slog.Record) error {
	t.cl.record(r, t.attrs)
	if t.next.Enabled(ctx, r.Level) {
		return t.next.Handle(ctx, r)
	}
	return nil
}

func (t *teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &teeHandler{cl: t.cl, next: t.next.WithAttrs(as), attrs: append(append([]slog.Attr{}, t.attrs...), as...)}
}

func (t *teeHandler) WithGroup(name string) slog.Handler {
	return &teeHandler{cl: t.cl, next: t.next.WithGroup(name), attrs: t.attrs}
}

func (cl *Calls) record(r slog.Record, pre []slog.Attr) {
	l := callLine{Time: r.Time, Op: clip(r.Message, 64), Attrs: map[string]string{}}
	add := func(a slog.Attr) bool {
		switch a.Key {
		case "audit":
		case "principal":
			l.Principal = clip(a.Value.String(), MaxCallValueBytes)
		case "outcome":
			l.Outcome = clip(a.Value.String(), 64)
		case "duration":
			l.MS = float64(a.Value.Duration()) / float64(time.Millisecond)
		case "arguments":
			// The call's arguments (auth.audit.arguments) stay in the audit
			// log: a page shows who called what, not with what.
		default:
			if len(l.Attrs) < maxCallAttrs {
				l.Attrs[clip(a.Key, 64)] = clip(a.Value.String(), MaxCallValueBytes)
			}
		}
		return true
	}
	for _, a := range pre {
		add(a)
	}
	r.Attrs(add)
	cl.mu.Lock()
	l.Seq = cl.seq + 1
	cl.lines[cl.seq%MaxCallLines] = l
	cl.seq++
	cl.mu.Unlock()
}

// since is the lines after seq that keep accepts, oldest first, at most
// maxCallsSent (the newest of them), and the last seq recorded.
func (cl *Calls) since(seq uint64, keep func(*callLine) bool) ([]callLine, uint64) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	first := seq
	if cl.seq > MaxCallLines && first < cl.seq-MaxCallLines {
		first = cl.seq - MaxCallLines
	}
	var out []callLine
	for s := cl.seq; s > first && len(out) < maxCallsSent; s-- {
		l := &cl.lines[(s-1)%MaxCallLines]
		if keep(l) {
			out = append(out, *l)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, cl.seq
}

// callFilter is what a caller may see of the ring, with its filters: a
// principal its own lines only, an operator every line.
func callFilter(c *caller, r *http.Request) (func(*callLine) bool, *core.Error) {
	principal, e := query(r, "principal")
	if e != nil {
		return nil, e
	}
	tool, e := query(r, "tool")
	if e != nil {
		return nil, e
	}
	outcome, e := query(r, "outcome")
	if e != nil {
		return nil, e
	}
	return func(l *callLine) bool {
		if !c.admin && l.Principal != c.p.Name {
			return false
		}
		return (principal == "" || l.Principal == principal) && (tool == "" || l.Attrs["tool"] == tool) &&
			(outcome == "" || l.Outcome == outcome)
	}, nil
}

type callsBody struct {
	Seq   uint64     `json:"seq"`
	Lines []callLine `json:"lines"`
	Auth  bool       `json:"auth"` // false: no auth section, so no audit log and no lines
}

func (cs *Console) calls(c *caller, r *http.Request) (any, *core.Error) {
	keep, e := callFilter(c, r)
	if e != nil {
		return nil, e
	}
	if cs.opts.Calls == nil {
		return callsBody{Lines: []callLine{}}, nil
	}
	lines, seq := cs.opts.Calls.since(0, keep)
	if lines == nil {
		lines = []callLine{}
	}
	return callsBody{Seq: seq, Lines: lines, Auth: cs.c.AuthOf(c.ctx).Configured()}, nil
}
