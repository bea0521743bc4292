package core

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsvc/toolsvc/internal/toolsearch"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// Tool search: one more operation of the engine (operation.go). A search
// authenticates, takes a slot of the principal's rate limit like a call,
// ranks only the tools the principal may see, and is observed and audited
// like every operation (the audit line has the query's length and the
// number of results, never the query's text: it is the caller's data).
//
// The index (internal/toolsearch) follows the catalog: built on the first
// search (a deployment that never searches pays nothing), then brought to
// the current snapshot before each search by re-indexing the tools that
// changed since the snapshot it holds (mcpbridge.Diff): the cost of a
// catalog change is per changed tool. A search reports the revision of the
// snapshot its index held, so its ranking is the one every replica
// computes for that revision.

// OpToolSearch is a SearchTools operation.
var OpToolSearch = OpKind{method: "tools/search", audit: "tool search"}

// The rankings SearchTools can use (Options.SearchRanker): the lexical
// index fused with the embedded model's similarity, or the index alone
// (internal/toolsearch, docs/search.md).
const (
	SearchHybrid  = "hybrid"
	SearchLexical = "lexical"
)

// Search limits (the wires' defaults and bounds).
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 100
	MaxQueryBytes      = 1024
	maxGlobBytes       = 256
)

// Hints filters tools by their annotations' hints; nil fields do not
// filter.
type Hints struct {
	ReadOnly, Destructive, Idempotent, OpenWorld *bool
}

// SearchInput is a search request, as a wire parsed it.
type SearchInput struct {
	Query    string
	Limit    int // 0: DefaultSearchLimit
	Servers  []string
	Hints    Hints
	NameGlob string
	// Field names of the wire, for errors: Query, Limit, NameGlob, Servers
	// ("" : the gRPC names).
	QueryField, LimitField, GlobField, ServersField string
	// InArguments: the fields are a tool's arguments (the front door's
	// search_tools), so a refusal of one, an unknown server included, is
	// ARGUMENTS_INVALID, as for any tool's arguments, and a model can fix
	// it. The error is built so here, once: the audit line and the caller
	// see the same reason.
	InArguments bool
}

// invalid is the refusal of one of in's fields: REQUEST_INVALID, or
// ARGUMENTS_INVALID for a tool's arguments (InArguments).
func (in SearchInput) invalid(field, desc string) *Error {
	if in.InArguments {
		return InvalidArguments(Violation(field, desc))
	}
	return InvalidField(field, desc)
}

// SearchHit is one ranked tool.
type SearchHit struct {
	Tool  *mcpbridge.Tool
	Score float64
}

// toolIndex keeps a search index in step with the catalog.
type toolIndex struct {
	// mu: searches hold it shared, bringing the index to a new snapshot
	// exclusively, so a search ranks on exactly the snapshot it reports.
	mu   sync.RWMutex
	ix   *toolsearch.Index[*mcpbridge.Tool]
	snap *mcpbridge.Snapshot // what ix holds
	// preparing: a PrepareSearch is bringing the index to the catalog (the
	// others return at once instead of queueing on mu).
	preparing atomic.Bool
}

// PrepareSearch brings the search index to the current catalog ahead of a
// search: the console calls it when a page opens and when the catalog
// changes under an open page, so the first keystroke of a search does not
// wait for the index of 20,000 tools to be built (0.6–1.0 s without -race)
// and a deployment whose console is never opened still pays nothing. It is
// not a search (no principal, nothing ranked or returned, nothing audited):
// it does once, for the whole replica, what the next search would do. A
// call while another is under way returns at once; a call when the index
// holds the current snapshot costs a read lock.
func (s *Core) PrepareSearch() {
	ti := &s.toolIndex
	if !ti.preparing.CompareAndSwap(false, true) {
		return
	}
	defer ti.preparing.Store(false)
	cur := s.bridge.Catalog().Current()
	ti.mu.RLock()
	current := ti.ix != nil && ti.snap == cur
	ti.mu.RUnlock()
	if current {
		return
	}
	ti.mu.Lock()
	defer ti.mu.Unlock()
	start := time.Now()
	s.syncIndexToLocked(cur)
	s.log.Info("search index prepared", "revision", cur.Revision, "tools", len(cur.Tools), "took", time.Since(start).Round(time.Millisecond))
}

// SearchPrepared reports whether the search index holds the current
// catalog (a search now ranks without re-indexing anything).
func (s *Core) SearchPrepared() bool {
	ti := &s.toolIndex
	ti.mu.RLock()
	defer ti.mu.RUnlock()
	return ti.ix != nil && ti.snap == s.bridge.Catalog().Current()
}

// SearchTools runs a search for the caller of ctx: the hits, best first,
// and the revision they were ranked on.
func (s *Core) SearchTools(ctx context.Context, in SearchInput, f Fields) ([]SearchHit, string, *Error) {
	op, err := s.Begin(ctx, OpToolSearch, f)
	if err != nil {
		e := op.Fail(err)
		op.End(e)
		return nil, "", e
	}
	hits, rev, e := s.search(op, in)
	op.end(e, false, slog.Int("query_bytes", len(in.Query)), slog.Int("results", len(hits)))
	return hits, rev, e
}

func (s *Core) search(op *Operation, in SearchInput) ([]SearchHit, string, *Error) {
	keep, e := s.searchFilter(op.Context(), in)
	if e != nil {
		return nil, "", e
	}
	limit := min(in.Limit, MaxSearchLimit)
	switch {
	case in.Limit < 0:
		return nil, "", in.invalid(or(in.LimitField, "limit"), "must not be negative, got "+itoa(in.Limit))
	case in.Limit == 0:
		limit = DefaultSearchLimit
	}
	if e := op.admitAll(); e != nil {
		return nil, "", op.Fail(e)
	}
	// Per-user upstreams list through the caller's session, as for
	// ListTools; the search ranks the caller's view.
	s.bridge.PrimeCaller(op.ctx, op.principal.Name, op.subject)
	var hits []toolsearch.Hit[*mcpbridge.Tool]
	var rev string
	if view := s.Tools(op.ctx).Current(); view.Base() != nil {
		hits, rev = s.searchPersonal(view, in.Query, limit, keep)
	} else {
		hits, rev = s.searchCurrent(in.Query, limit, keep)
	}
	out := make([]SearchHit, len(hits))
	for i, h := range hits {
		out[i] = SearchHit{Tool: h.Value, Score: h.Score}
	}
	return out, rev, nil
}

// searchCurrent ranks on the current snapshot, bringing the index to it
// first if the catalog moved; it returns the revision ranked on.
func (s *Core) searchCurrent(q string, limit int, keep func(*mcpbridge.Tool) bool) ([]toolsearch.Hit[*mcpbridge.Tool], string) {
	ti := &s.toolIndex
	ti.mu.RLock()
	if ti.ix != nil && ti.snap == s.bridge.Catalog().Current() {
		defer ti.mu.RUnlock()
		return ti.ix.Search(q, limit, keep), ti.snap.Revision
	}
	ti.mu.RUnlock()
	ti.mu.Lock()
	defer ti.mu.Unlock()
	s.syncIndexLocked()
	return ti.ix.Search(q, limit, keep), ti.snap.Revision
}

// searchPersonal ranks on view, a principal's view of the catalog (the
// shared snapshot view.Base() with that principal's per-principal
// listings): the index is brought to the shared snapshot, the principal's
// own tools are added for this search and removed after it, so the
// ranking is exactly that of an index of view, and the shared index is
// left as it was. It holds the index exclusively (the added tools are
// this caller's): searches of principals with per-principal listings are
// serialised, at a cost per search of their own tools.
func (s *Core) searchPersonal(view *mcpbridge.Snapshot, q string, limit int, keep func(*mcpbridge.Tool) bool) ([]toolsearch.Hit[*mcpbridge.Tool], string) {
	ti := &s.toolIndex
	ti.mu.Lock()
	defer ti.mu.Unlock()
	s.syncIndexToLocked(view.Base())
	own, _ := mcpbridge.Diff(view.Base(), view)
	for _, t := range own {
		ti.ix.Upsert(s.toolDoc(t, s.bridge.Instructions(t.Server)))
	}
	hits := ti.ix.Search(q, limit, keep)
	for _, t := range own {
		ti.ix.Remove(t.Name)
	}
	return hits, view.Revision
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// searchFilter checks the request's fields and returns what a result must
// pass: the principal may see it, and every filter of the request.
func (s *Core) searchFilter(ctx context.Context, in SearchInput) (func(*mcpbridge.Tool) bool, *Error) {
	qf := or(in.QueryField, "query")
	switch {
	case in.Query == "":
		return nil, in.invalid(qf, "required")
	case len(in.Query) > MaxQueryBytes:
		return nil, in.invalid(qf, "longer than "+itoa(MaxQueryBytes)+" bytes")
	}
	gf := or(in.GlobField, "name_glob")
	if len(in.NameGlob) > maxGlobBytes {
		return nil, in.invalid(gf, "longer than "+itoa(maxGlobBytes)+" bytes")
	}
	if _, err := path.Match(in.NameGlob, ""); err != nil {
		return nil, in.invalid(gf, "not a glob: "+err.Error())
	}
	only, e := s.serverFilter(in.Servers, func(i int, name string) *Error {
		field := fmt.Sprintf("%s[%d]", or(in.ServersField, "servers"), i)
		if in.InArguments {
			return InvalidArguments(Violation(field, fmt.Sprintf("no configured server %q", Clip(name))))
		}
		return &Error{Code: NotFound, Reason: ReasonServerNotFound, Message: fmt.Sprintf("%s: no configured server %q", field, Clip(name)),
			Violations: []FieldViolation{Violation(field, "not a configured server")}}
	})
	if e != nil {
		return nil, e
	}
	view := s.ViewOf(ctx)
	glob, h := in.NameGlob, in.Hints
	return func(t *mcpbridge.Tool) bool {
		if !view.Tool(t.Name) {
			return false
		}
		if only != nil && !only(t.Server) {
			return false
		}
		if glob != "" {
			if ok, _ := path.Match(glob, t.Name); !ok {
				return false
			}
		}
		return h.match(t.Annotations)
	}, nil
}

// match applies the hint filter with MCP's defaults for unset hints.
func (h Hints) match(a *mcp.ToolAnnotations) bool {
	var ro, idem bool
	destructive, open := true, true
	if a != nil {
		ro, idem = a.ReadOnlyHint, a.IdempotentHint
		if a.DestructiveHint != nil {
			destructive = *a.DestructiveHint
		}
		if a.OpenWorldHint != nil {
			open = *a.OpenWorldHint
		}
	}
	is := func(want *bool, got bool) bool { return want == nil || *want == got }
	return is(h.ReadOnly, ro) && is(h.Destructive, destructive) && is(h.Idempotent, idem) && is(h.OpenWorld, open)
}

// syncIndexLocked brings the index to the current snapshot: the tools
// that changed since the one it holds are re-indexed. ti.mu is held.
func (s *Core) syncIndexLocked() { s.syncIndexToLocked(s.bridge.Catalog().Current()) }

// syncIndexToLocked brings the index to the shared snapshot cur.
func (s *Core) syncIndexToLocked(cur *mcpbridge.Snapshot) {
	ti := &s.toolIndex
	if ti.ix == nil {
		opts := toolsearch.Defaults()
		if s.opts.SearchRanker == SearchLexical {
			opts = toolsearch.Lexical(opts)
		}
		ti.ix = toolsearch.New[*mcpbridge.Tool](&opts)
		ti.snap = &mcpbridge.Snapshot{}
	}
	if ti.snap == cur {
		return
	}
	upserted, removed := mcpbridge.Diff(ti.snap, cur)
	for _, name := range removed {
		ti.ix.Remove(name)
	}
	instructions := map[string]string{}
	for _, t := range upserted {
		in, ok := instructions[t.Server]
		if !ok {
			in = s.bridge.Instructions(t.Server)
			instructions[t.Server] = in
		}
		ti.ix.Upsert(s.toolDoc(t, in))
	}
	ti.snap = cur
}

// toolDoc is ToolDoc with the aliases the configuration gives the tool
// (searchAliases, by its upstream name).
func (s *Core) toolDoc(t *mcpbridge.Tool, instructions string) toolsearch.Doc[*mcpbridge.Tool] {
	d := ToolDoc(t, instructions)
	d.Text[toolsearch.FieldAliases] = strings.Join(s.bridge.SearchAliases(t.Server, t.OriginalName), "\n")
	return d
}

// ToolDoc is the searchable text of a catalog tool.
func ToolDoc(t *mcpbridge.Tool, instructions string) toolsearch.Doc[*mcpbridge.Tool] {
	title := t.Title
	if a := t.Annotations; a != nil && a.Title != "" && a.Title != title {
		title += "\n" + a.Title
	}
	return toolsearch.Doc[*mcpbridge.Tool]{
		Key: t.Name, Value: t, Server: t.Server, Instructions: instructions,
		Text: [toolsearch.NumFields]string{
			toolsearch.FieldName:        t.OriginalName,
			toolsearch.FieldTitle:       title,
			toolsearch.FieldDescription: t.Description,
			toolsearch.FieldParams:      toolsearch.SchemaText(t.InputSchema),
			toolsearch.FieldServer:      t.Server,
		},
	}
}

// SearchDoc is a tool with its server's instructions: what the index
// holds of it (the eval builds its corpus from these).
type SearchDoc struct {
	Tool         *mcpbridge.Tool
	Instructions string
}
