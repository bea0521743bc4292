package core

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

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
	// SearchNames is no index's: while the index's lexical stage is
	// being built, a Staged search is answered by a scan of the tool names
	// (scanNames) rather than waiting for it.
	SearchNames = "names"
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
	// Staged: the caller takes the lexical ranking while the index's
	// dense stage is still being built after a large change (the console's
	// search as you type: it asks again once the index is prepared) rather
	// than waiting for it; SearchResult.Complete says which it got. Off,
	// a search waits and ranks as configured, as every wire's does.
	Staged bool
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

// SearchResult is a search's hits, the revision they were ranked on, and
// the ranking that ordered them.
type SearchResult struct {
	Hits     []SearchHit
	Revision string
	// Ranking is SearchHybrid or SearchLexical: what ordered the hits.
	Ranking string
	// Complete: Ranking is the one the replica is configured for; false
	// only for a Staged search answered by the lexical stage while the
	// dense one is built (asking again once it is gives the full ranking).
	Complete bool
}

// toolIndex keeps a search index in step with the catalog.
type toolIndex struct {
	// mu: searches hold it shared, bringing the index to a new snapshot
	// exclusively, so a search ranks on exactly the snapshot it reports.
	// The dense stage of a large change is built after mu is released
	// (toolsearch.Index.EmbedPending, its own lock): searches then rank
	// lexically until it is done, and those that are not Staged finish it
	// (or wait for the one finishing it) first.
	mu   sync.RWMutex
	ix   *toolsearch.Index[*mcpbridge.Tool]
	snap *mcpbridge.Snapshot // what ix holds
	// preparing serialises PrepareSearch: a second waits for the one under
	// way and then finds the index prepared (the console's pages are told
	// when it is).
	preparing sync.Mutex
	// building counts those building a lexical stage (holding or waiting
	// for mu exclusively to bring the index to a snapshot): a Staged search
	// then scans the names instead of waiting.
	building atomic.Int32
}

// stagedChange is the number of changed tools from which the index is
// brought to a snapshot in stages (the lexical stage on every core, the
// vectors after: toolsearch.UpsertBatch); a smaller change is re-indexed
// tool by tool, vectors included, as before.
const stagedChange = 256

// PrepareSearch brings the search index to the current catalog ahead of a
// search: the console calls it when a page opens and when the catalog
// changes under an open page, so the first keystroke of a search does not
// wait for the index of 20,000 tools to be built and a deployment whose
// console is never opened still pays nothing. It is not a search (no
// principal, nothing ranked or returned, nothing audited): it does once,
// for the whole replica, what the next search would do, in stages: the
// lexical stage (Staged searches answer from it as soon as it is in),
// then the dense one. A call while another is under way waits for it and
// returns once it is done; a call when the index holds the current
// snapshot costs a read lock.
func (s *Core) PrepareSearch() {
	ti := &s.toolIndex
	ti.preparing.Lock()
	defer ti.preparing.Unlock()
	if s.SearchPrepared() {
		return
	}
	start := time.Now()
	var cur *mcpbridge.Snapshot
	var ix *toolsearch.Index[*mcpbridge.Tool]
	func() {
		ti.building.Add(1)
		defer ti.building.Add(-1) // even if the build panics: searches would scan names for good
		ti.mu.Lock()
		defer ti.mu.Unlock()
		cur = s.bridge.Catalog().Current()
		s.syncIndexToLocked(cur)
		ix = ti.ix
	}()
	lexical := time.Since(start)
	ix.EmbedPending()
	s.log.Info("search index prepared", "revision", cur.Revision, "tools", len(cur.Tools),
		"lexical_stage", lexical.Round(time.Millisecond), "took", time.Since(start).Round(time.Millisecond))
}

// SearchPrepared reports whether the search index holds the current
// catalog, every stage of it (a search now ranks as configured without
// re-indexing anything).
func (s *Core) SearchPrepared() bool {
	ti := &s.toolIndex
	ti.mu.RLock()
	defer ti.mu.RUnlock()
	return ti.ix != nil && ti.snap == s.bridge.Catalog().Current() && ti.ix.Pending() == 0
}

// SearchTools runs a search for the caller of ctx: the hits, best first,
// and the revision they were ranked on.
func (s *Core) SearchTools(ctx context.Context, in SearchInput, f Fields) ([]SearchHit, string, *Error) {
	r, e := s.SearchToolsRanked(ctx, in, f)
	return r.Hits, r.Revision, e
}

// SearchToolsRanked is SearchTools with the ranking that ordered the
// hits (in.Staged: the lexical stage's while the dense one is built).
func (s *Core) SearchToolsRanked(ctx context.Context, in SearchInput, f Fields) (SearchResult, *Error) {
	op, err := s.Begin(ctx, OpToolSearch, f)
	if err != nil {
		e := op.Fail(err)
		op.End(e)
		return SearchResult{}, e
	}
	r, e := s.search(op, in)
	op.end(e, false, slog.Int("query_bytes", len(in.Query)), slog.Int("results", len(r.Hits)))
	return r, e
}

func (s *Core) search(op *Operation, in SearchInput) (SearchResult, *Error) {
	keep, e := s.searchFilter(op.Context(), in)
	if e != nil {
		return SearchResult{}, e
	}
	limit := min(in.Limit, MaxSearchLimit)
	switch {
	case in.Limit < 0:
		return SearchResult{}, in.invalid(or(in.LimitField, "limit"), "must not be negative, got "+itoa(in.Limit))
	case in.Limit == 0:
		limit = DefaultSearchLimit
	}
	if e := op.admitAll(); e != nil {
		return SearchResult{}, op.Fail(e)
	}
	// Per-user upstreams list through the caller's session, as for
	// ListTools; the search ranks the caller's view.
	s.bridge.PrimeCaller(op.ctx, op.principal.Name, op.subject)
	var r ranked
	if view := s.Tools(op.ctx).Current(); view.Base() != nil {
		r = s.searchPersonal(view, in.Query, limit, keep, in.Staged)
	} else {
		r = s.searchCurrent(in.Query, limit, keep, in.Staged)
	}
	complete := !r.lexicalStage && !r.names
	if len(r.hits) == 0 && !r.names && r.snap != nil {
		// The index ranks words, and drops a lone letter and stop words
		// (toolsearch's analysis): a query made only of those ("t", "get
		// a") matches nothing there, while a type-ahead box sends exactly
		// such a query after the first keystroke and the names scan
		// answered it before the index was ready. Such a query (or any
		// other the index finds nothing for) is matched against the tool
		// names instead, as complete as the index's answer.
		r = scanNames(r.snap, in.Query, limit, keep)
	}
	out := SearchResult{Hits: make([]SearchHit, len(r.hits)), Revision: r.rev, Ranking: s.searchRanking(), Complete: complete}
	switch {
	case r.names:
		out.Ranking = SearchNames
	case r.lexicalStage:
		out.Ranking = SearchLexical
	}
	for i, h := range r.hits {
		out.Hits[i] = SearchHit{Tool: h.Value, Score: h.Score}
	}
	return out, nil
}

// searchRanking is the ranking this replica's index gives once built:
// hybrid unless configured lexical or the embedded model does not load.
func (s *Core) searchRanking() string {
	if s.opts.SearchRanker == SearchLexical || !toolsearch.DenseAvailable(toolsearch.Defaults()) {
		return SearchLexical
	}
	return SearchHybrid
}

// ranked is what one search of the index gave.
type ranked struct {
	hits         []toolsearch.Hit[*mcpbridge.Tool]
	rev          string
	lexicalStage bool // only the lexical stage ranked them: the dense one is pending
	names        bool // no index ranked them: scanNames, while the lexical stage is built
	// snap is the snapshot (or principal's view) the index ranked, for
	// the names scan of a query it finds nothing for; nil for scanNames.
	snap *mcpbridge.Snapshot
}

// searchCurrent ranks on the current snapshot, bringing the index to it
// first if the catalog moved; it returns the revision ranked on. Unless
// staged, it first finishes the dense stage a large change left pending
// (or waits for the PrepareSearch finishing it).
func (s *Core) searchCurrent(q string, limit int, keep func(*mcpbridge.Tool) bool, staged bool) ranked {
	ti := &s.toolIndex
	cur := s.bridge.Catalog().Current()
	if staged && ti.building.Load() > 0 {
		// A preparation is building the lexical stage: not waited for.
		if !ti.mu.TryRLock() {
			return scanNames(cur, q, limit, keep)
		}
	} else {
		ti.mu.RLock()
	}
	if ti.ix != nil && ti.snap == cur {
		defer ti.mu.RUnlock()
		return s.rankLocked(q, limit, keep, staged)
	}
	ti.mu.RUnlock()
	if staged && ti.building.Load() > 0 {
		return scanNames(cur, q, limit, keep)
	}
	ti.mu.Lock()
	defer ti.mu.Unlock()
	func() {
		ti.building.Add(1)
		defer ti.building.Add(-1)
		s.syncIndexLocked()
	}()
	return s.rankLocked(q, limit, keep, staged)
}

// rankLocked searches the index; ti.mu is held (shared or exclusive).
func (s *Core) rankLocked(q string, limit int, keep func(*mcpbridge.Tool) bool, staged bool) ranked {
	ti := &s.toolIndex
	if !staged {
		ti.ix.EmbedPending()
	}
	hits, lexicalStage := ti.ix.SearchStaged(q, limit, keep)
	return ranked{hits: hits, rev: ti.snap.Revision, lexicalStage: lexicalStage, snap: ti.snap}
}

// searchPersonal ranks on view, a principal's view of the catalog (the
// shared snapshot view.Base() with that principal's per-principal
// listings): the index is brought to the shared snapshot, the principal's
// own tools are added for this search and removed after it, so the
// ranking is exactly that of an index of view, and the shared index is
// left as it was. It holds the index exclusively (the added tools are
// this caller's): searches of principals with per-principal listings are
// serialised, at a cost per search of their own tools.
func (s *Core) searchPersonal(view *mcpbridge.Snapshot, q string, limit int, keep func(*mcpbridge.Tool) bool, staged bool) ranked {
	ti := &s.toolIndex
	if staged && ti.building.Load() > 0 {
		return scanNames(view, q, limit, keep)
	}
	ti.mu.Lock()
	defer ti.mu.Unlock()
	s.syncIndexToLocked(view.Base())
	own, _ := mcpbridge.Diff(view.Base(), view)
	// Removed however the ranking ends: a panic recovered above must not
	// leave this principal's tools in the shared index, for others.
	defer func() {
		for _, t := range own {
			ti.ix.Remove(t.Name)
		}
	}()
	for _, t := range own {
		ti.ix.Upsert(s.toolDoc(t, s.bridge.Instructions(t.Server)))
	}
	r := s.rankLocked(q, limit, keep, staged)
	r.rev, r.snap = view.Revision, view
	return r
}

// scanNames ranks without an index (SearchNames): the tools of snap whose
// name contains the most of the query's words (letters and digits, case
// folded), then by name; a tool matching none is not returned. A scan of
// the names costs a few milliseconds at 20,000 tools, where the index's
// lexical stage costs hundreds (docs/console.md).
func scanNames(snap *mcpbridge.Snapshot, q string, limit int, keep func(*mcpbridge.Tool) bool) ranked {
	words := strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	words = words[:min(len(words), 32)]
	r := ranked{rev: snap.Revision, names: true}
	if len(words) == 0 {
		return r
	}
	type hit struct {
		t *mcpbridge.Tool
		n int
	}
	var hits []hit
	for _, t := range snap.Tools {
		name := strings.ToLower(t.Name) // no copy when already lower case
		n := 0
		for _, w := range words {
			if strings.Contains(name, w) {
				n++
			}
		}
		if n > 0 && keep(t) {
			hits = append(hits, hit{t, n})
		}
	}
	// snap.Tools is sorted by name: a stable sort by matches keeps it so.
	slices.SortStableFunc(hits, func(a, b hit) int { return b.n - a.n })
	for _, h := range hits[:min(len(hits), limit)] {
		r.hits = append(r.hits, toolsearch.Hit[*mcpbridge.Tool]{Key: h.t.Name, Value: h.t, Score: float64(h.n) / float64(len(words))})
	}
	return r
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
		if _, ok := instructions[t.Server]; !ok {
			instructions[t.Server] = s.bridge.Instructions(t.Server)
		}
	}
	if len(upserted) >= stagedChange {
		// The lexical stage on every core (a document's text, its
		// parameters' included, is made in the workers too); the vectors
		// are left to EmbedPending, which makes each document again from
		// the same values (the aliases as they are now, not after a
		// reload), so it embeds the text the postings hold.
		aliases := make([]string, len(upserted))
		for i, t := range upserted {
			aliases[i] = strings.Join(s.bridge.SearchAliases(t.Server, t.OriginalName), "\n")
		}
		ti.ix.UpsertBatch(len(upserted), func(i int) toolsearch.Doc[*mcpbridge.Tool] {
			t := upserted[i]
			d := ToolDoc(t, instructions[t.Server])
			d.Text[toolsearch.FieldAliases] = aliases[i]
			return d
		})
	} else {
		for _, t := range upserted {
			ti.ix.Upsert(s.toolDoc(t, instructions[t.Server]))
		}
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
