// Package catalogwatch keeps a local copy of toolsvc's tool catalog up to
// date through WatchCatalog, resuming automatically (with backoff) from the
// last revision it received when a stream ends with UNAVAILABLE or the
// connection drops, so Go clients do not re-implement the watch contract:
//
//	w := catalogwatch.New(toolsvcv1.NewToolServiceClient(conn), catalogwatch.Options{
//		OnEvent: func(ev catalogwatch.Event) { log.Print(ev.Kind, ev.Revision) },
//	})
//	err := w.Run(ctx) // until ctx ends or the server rejects the request
//
// The local copy (Tools, Lookup, Revision) always equals the server's view at
// Revision: the server sends the whole view (a snapshot), only the changes
// since the client's revision, or "synced". The watcher asks for large
// events in parts (WatchCatalogRequest.fragment) and applies an event only
// once its last part arrived, so it never holds part of a snapshot.
package catalogwatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Kind is what an event did to the local catalog.
type Kind int

// Event kinds.
const (
	// Snapshot replaced the local catalog (the first event of a new watch).
	Snapshot Kind = iota + 1
	// Reset replaced the local catalog because the server could not serve
	// the resume token (unknown, too old, or another replica's catalog).
	Reset
	// Changes upserted and removed tools.
	Changes
	// Synced confirmed that the local catalog is current.
	Synced
	// Progress is a keep-alive carrying the current revision.
	Progress
)

func (k Kind) String() string {
	switch k {
	case Snapshot:
		return "snapshot"
	case Reset:
		return "reset"
	case Changes:
		return "changes"
	case Synced:
		return "synced"
	case Progress:
		return "progress"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Event is one applied watch event.
type Event struct {
	Kind Kind
	// Revision is the revision of the local catalog after the event; it is
	// the resume token.
	Revision string
	// Tools is the whole catalog for Snapshot and Reset; Upserted and
	// Removed are set for Changes. The messages are shared: do not modify.
	Tools    []*toolsvcv1.Tool
	Upserted []*toolsvcv1.Tool
	Removed  []string
	// Resumed is true for the first event of a stream that resumed from a
	// revision (after a reconnect, or Options.ResumeToken).
	Resumed bool
	// Parts is how many messages the event arrived in: 1, or more for a
	// large event the server split (WatchCatalogResponse.fragment).
	Parts int
	// Raw is the message as received (the parts of a split event merged
	// into one).
	Raw *toolsvcv1.WatchCatalogResponse
}

// Options configure a Watcher. The zero value watches every tool.
type Options struct {
	// Servers and ExcludeUnavailable select the view (WatchCatalogRequest).
	Servers            []string
	ExcludeUnavailable bool
	// SchemaFormat is how tools carry their schemas (the request's
	// schema_format): SCHEMA_FORMAT_JSON gives the upstream's exact JSON
	// text in Tool.input_schema_json and is cheaper to receive. It does not
	// change revisions.
	SchemaFormat toolsvcv1.SchemaFormat
	// ResumeToken and Initial start from a catalog the caller already holds
	// (for example from a previous run); without Initial a resume token is
	// ignored.
	ResumeToken string
	Initial     []*toolsvcv1.Tool
	// OnEvent is called after each event was applied, on Run's goroutine.
	OnEvent func(Event)
	// OnRetry is called before waiting to resume after a stream failed.
	OnRetry func(err error, wait time.Duration)
	// MinBackoff and MaxBackoff bound the jittered exponential wait before
	// a resume (defaults 100 ms and 10 s). The wait restarts from
	// MinBackoff once a resumed stream delivered an event.
	MinBackoff, MaxBackoff time.Duration
}

// Watcher maintains the local catalog. Its methods are safe for concurrent
// use; Run must be called once.
type Watcher struct {
	client toolsvcv1.ToolServiceClient
	opts   Options

	mu      sync.Mutex
	tools   map[string]*toolsvcv1.Tool
	rev     string
	have    bool // tools/rev hold a catalog the server sent (or Initial)
	streams int
}

// New returns a Watcher; call Run to start it.
func New(client toolsvcv1.ToolServiceClient, opts Options) *Watcher {
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 100 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(10*time.Second, opts.MinBackoff)
	}
	w := &Watcher{client: client, opts: opts, tools: map[string]*toolsvcv1.Tool{}}
	if opts.Initial != nil && opts.ResumeToken != "" {
		for _, t := range opts.Initial {
			w.tools[t.GetName()] = t
		}
		w.rev, w.have = opts.ResumeToken, true
	}
	return w
}

// Revision is the revision of the local catalog ("" before the first event).
func (w *Watcher) Revision() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rev
}

// Tools returns the local catalog sorted by name. The messages are shared:
// do not modify them.
func (w *Watcher) Tools() []*toolsvcv1.Tool {
	w.mu.Lock()
	out := make([]*toolsvcv1.Tool, 0, len(w.tools))
	for _, t := range w.tools {
		out = append(out, t)
	}
	w.mu.Unlock()
	slices.SortFunc(out, func(a, b *toolsvcv1.Tool) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}

// Lookup returns one tool of the local catalog.
func (w *Watcher) Lookup(name string) (*toolsvcv1.Tool, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.tools[name]
	return t, ok
}

// Streams is how many WatchCatalog streams Run has opened.
func (w *Watcher) Streams() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.streams
}

// ErrProtocol is returned (wrapped) when the server sends an event the
// contract does not allow, such as changes before any snapshot.
var ErrProtocol = errors.New("catalogwatch: watch protocol violation")

// Run watches until ctx ends (returning ctx.Err()) or the server rejects
// the request (a non-retryable gRPC status such as INVALID_ARGUMENT or
// NOT_FOUND, or RESOURCE_EXHAUSTED without RetryInfo: an event too large
// to send, which every resume would meet again). Streams that end any
// other way are resumed from the last revision after a backoff.
func (w *Watcher) Run(ctx context.Context) error {
	wait := w.opts.MinBackoff
	for {
		delivered, err := w.stream(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !retryable(err) {
			return err
		}
		if delivered {
			wait = w.opts.MinBackoff
		}
		d := rand.N(wait) + 1 // full jitter
		if w.opts.OnRetry != nil {
			w.opts.OnRetry(err, d)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, w.opts.MaxBackoff)
	}
}

func retryable(err error) bool {
	if errors.Is(err, ErrProtocol) {
		return false
	}
	st := status.Convert(err)
	switch st.Code() {
	case codes.InvalidArgument, codes.NotFound, codes.PermissionDenied, codes.Unauthenticated,
		codes.Unimplemented, codes.FailedPrecondition, codes.OutOfRange, codes.AlreadyExists:
		return false
	case codes.ResourceExhausted:
		// Retried only when the server says when (RetryInfo, as for
		// RATE_LIMITED). Without it the limit is a size: the server's
		// RESPONSE_TOO_LARGE for an event too large for any message, or a
		// message over this client's receive limit (grpc-go reports that
		// locally, with no details); a resume meets it again.
		for _, d := range st.Details() {
			if _, ok := d.(*errdetails.RetryInfo); ok {
				return true
			}
		}
		return false
	}
	return true
}

// stream runs one WatchCatalog stream; delivered reports whether it applied
// at least one event.
func (w *Watcher) stream(ctx context.Context) (delivered bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w.mu.Lock()
	tok := ""
	if w.have {
		tok = w.rev
	}
	w.streams++
	w.mu.Unlock()
	st, err := w.client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{
		ResumeToken:        tok,
		Servers:            w.opts.Servers,
		ExcludeUnavailable: w.opts.ExcludeUnavailable,
		SchemaFormat:       w.opts.SchemaFormat,
		Fragment:           true,
	})
	if err != nil {
		return false, err
	}
	var parts eventParts // of a split event, not yet applied
	for first := true; ; {
		m, err := st.Recv()
		if err == io.EOF {
			return delivered, status.Error(codes.Unavailable, "watch stream ended without a status")
		}
		if err != nil {
			return delivered, err // parts of an unfinished event are dropped: the resume token is unchanged
		}
		n := len(parts.list) + 1
		if m, err = assemble(&parts, m); err != nil {
			return delivered, err
		}
		if m == nil {
			continue // more parts to come
		}
		ev, err := w.apply(m)
		if err != nil {
			return delivered, err
		}
		ev.Resumed, ev.Parts = first && tok != "", n
		first = false
		delivered = true
		if w.opts.OnEvent != nil {
			w.opts.OnEvent(ev)
		}
	}
}

// assemble collects the parts of a split event (WatchCatalogResponse.
// fragment): it returns nil while more parts are to come, then the whole
// event, the parts merged into the first (every part holds some entries of
// the event's lists; proto.Merge appends lists). A part that does not
// continue the event (another revision or kind) breaks the contract.
func assemble(parts *eventParts, m *toolsvcv1.WatchCatalogResponse) (*toolsvcv1.WatchCatalogResponse, error) {
	if len(parts.list) > 0 {
		p := parts.list[0]
		if m.GetRevision() != p.GetRevision() || eventKind(m) != eventKind(p) {
			return nil, fmt.Errorf("%w: %s at %s while a %s at %s was in parts", ErrProtocol, eventKind(m), m.GetRevision(), eventKind(p), p.GetRevision())
		}
	}
	if m.GetFragment() {
		switch m.GetEvent().(type) {
		case *toolsvcv1.WatchCatalogResponse_Snapshot, *toolsvcv1.WatchCatalogResponse_Changes:
		default:
			return nil, fmt.Errorf("%w: %s in parts", ErrProtocol, eventKind(m))
		}
		if err := parts.add(m); err != nil {
			return nil, err
		}
		return nil, nil
	}
	if len(parts.list) == 0 {
		return m, nil
	}
	if err := parts.add(m); err != nil {
		return nil, err
	}
	whole := parts.list[0]
	for _, p := range parts.list[1:] {
		proto.Merge(whole, p)
	}
	whole.Fragment = false
	*parts = eventParts{}
	return whole, nil
}

// eventParts are the parts of one split event received so far, and their
// encoded size.
type eventParts struct {
	list  []*toolsvcv1.WatchCatalogResponse
	bytes int
}

// The parts of one event a watcher holds are bounded, as in the Python and
// TypeScript packages: 10,000 parts or 256 MiB of encoded parts, whichever
// comes first (toolsvc sends parts of about 1 MiB); a server that never
// ends an event, or sends an endless one, cannot grow the client past it.
const maxEventParts = 10_000

var maxEventBytes = 256 << 20 // a var for tests

// add holds m, or refuses it past the bounds.
func (p *eventParts) add(m *toolsvcv1.WatchCatalogResponse) error {
	if len(p.list) >= maxEventParts {
		return fmt.Errorf("%w: an event in more than %d parts", ErrProtocol, maxEventParts)
	}
	if p.bytes += proto.Size(m); p.bytes > maxEventBytes {
		return fmt.Errorf("%w: an event of more than %d MiB in parts", ErrProtocol, maxEventBytes>>20)
	}
	p.list = append(p.list, m)
	return nil
}

func eventKind(m *toolsvcv1.WatchCatalogResponse) string {
	if fd := m.ProtoReflect().WhichOneof(m.ProtoReflect().Descriptor().Oneofs().ByName("event")); fd != nil {
		return string(fd.Name())
	}
	return "no event"
}

// apply updates the local catalog with one (whole) event.
func (w *Watcher) apply(m *toolsvcv1.WatchCatalogResponse) (Event, error) {
	ev := Event{Revision: m.GetRevision(), Raw: m}
	if m.GetRevision() == "" {
		return ev, fmt.Errorf("%w: event without a revision", ErrProtocol)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch e := m.GetEvent().(type) {
	case *toolsvcv1.WatchCatalogResponse_Snapshot:
		ev.Kind, ev.Tools = Snapshot, e.Snapshot.GetTools()
		if e.Snapshot.GetReset_() {
			ev.Kind = Reset
		}
		w.tools = make(map[string]*toolsvcv1.Tool, len(ev.Tools))
		for _, t := range ev.Tools {
			w.tools[t.GetName()] = t
		}
	case *toolsvcv1.WatchCatalogResponse_Changes:
		if !w.have {
			return ev, fmt.Errorf("%w: changes before a snapshot", ErrProtocol)
		}
		ev.Kind, ev.Upserted, ev.Removed = Changes, e.Changes.GetUpserted(), e.Changes.GetRemoved()
		for _, name := range ev.Removed {
			delete(w.tools, name)
		}
		for _, t := range ev.Upserted {
			w.tools[t.GetName()] = t
		}
	case *toolsvcv1.WatchCatalogResponse_Synced:
		if !w.have || m.GetRevision() != w.rev {
			return ev, fmt.Errorf("%w: synced to %s while holding %q", ErrProtocol, m.GetRevision(), w.rev)
		}
		ev.Kind = Synced
	case *toolsvcv1.WatchCatalogResponse_Progress:
		if !w.have || m.GetRevision() != w.rev {
			return ev, fmt.Errorf("%w: progress at %s while holding %q", ErrProtocol, m.GetRevision(), w.rev)
		}
		ev.Kind = Progress
	default:
		return ev, fmt.Errorf("%w: unknown event", ErrProtocol)
	}
	w.rev, w.have = m.GetRevision(), true
	return ev, nil
}
