package catalog

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool is one entry of the merged catalog. Entries are immutable once
// published: a change (including availability) produces a new entry.
type Tool struct {
	// Name is the exposed, callable name: "<server>__<tool>", valid for
	// ^[a-zA-Z0-9_-]{1,64}$.
	Name string
	// Server is the configured name of the upstream that provides the tool.
	Server string
	// OriginalName is the tool's name on its upstream, verbatim.
	OriginalName string
	Title        string
	Description  string
	// InputSchema and OutputSchema are JSON objects (nil when absent).
	InputSchema  map[string]any
	OutputSchema map[string]any
	// InputSchemaJSON and OutputSchemaJSON are the same schemas as JSON
	// text: as the upstream sent it (whitespace compacted; key order,
	// number literals and escapes kept) when the transport delivered it
	// (the bridge's taps, mcpbridge/rawschema.go), else the encoding of the decoded value. Nil when
	// absent. Shared: never modify.
	InputSchemaJSON  json.RawMessage
	OutputSchemaJSON json.RawMessage
	Annotations      *mcp.ToolAnnotations
	Meta             map[string]any
	// TaskSupport is whether a caller may ask for the tool to run as a
	// task: a 2025-11-25 upstream's execution.taskSupport as listed (go-sdk
	// drops the field; the bridge's taps record it), "optional" for every
	// tool of a 2026-07-28 upstream that offers the tasks extension (its
	// listing says nothing; the tool decides when called, rawschema.go's
	// session.taskSupport), or "required" once such a tool refused a plain
	// call for want of the extension: TaskSupportOptional,
	// TaskSupportRequired, TaskSupportForbidden, or "" when the upstream
	// said nothing (forbidden).
	TaskSupport string
	// SchemaHash is a stable hex hash of the input and output schemas.
	SchemaHash string
	// Available is false while the upstream has no ready session.
	Available bool

	// hash digests everything above (entryHash); it feeds the revision and
	// change detection.
	hash [32]byte
	// size estimates the bytes the entry holds (entryBytes), for the
	// history's byte budget.
	size int
}

// Snapshot is an immutable view of the whole catalog. Readers never lock.
type Snapshot struct {
	// Revision is content-derived: two processes with the same upstream
	// catalogs report the same revision.
	Revision string
	// Tools are sorted by Name. A snapshot the catalog built keeps its
	// list in chunks (chunks.go) and fills Tools from them once, when the
	// snapshot is first handed out by the catalog's accessors (Current,
	// Snapshot, History): every snapshot a reader gets has Tools.
	Tools []*Tool
	// Created is when this snapshot was published.
	Created time.Time

	// base is, for a principal's view (private.go), the shared
	// snapshot it was built on; nil for a shared snapshot.
	base *Snapshot

	// For the history's budget, a snapshot the catalog built knows what
	// it changed (0 seq: not built by a catalog, say a principal's view):
	// its number and its predecessor's, the estimated bytes of the entries
	// it brought and of those it dropped, and its whole estimated size.
	seq, prevSeq   uint64
	added, removed int
	bytes          int
	// delta is what changed from the predecessor (prevSeq): Diff's answer
	// without a walk of the whole list.
	delta *delta
	// lazy is, for a snapshot the catalog built, its list in chunks
	// (chunks.go); nil otherwise.
	lazy *lazyTools
}

// delta is a catalog change: entries new or changed, names gone; both
// sorted by name.
type delta struct {
	upserted []*Tool
	removed  []string
}

// Base is, for a principal's view of the catalog (Bridge.Tools: the shared
// catalog with that principal's per-principal listings merged in), the
// shared snapshot the view was built on; nil for a shared snapshot.
func (s *Snapshot) Base() *Snapshot { return s.base }

// Lookup returns the tool with the given exposed name. It searches the
// sorted Tools, so a retained snapshot costs one slice of pointers and no
// per-snapshot index.
func (s *Snapshot) Lookup(name string) (*Tool, bool) {
	if s.lazy != nil { // Tools may not be filled yet: the chunks are
		return s.lazy.lookup(name)
	}
	return lookupSorted(s.Tools, name, func(t *Tool) string { return t.Name })
}

// The catalog remembers recent snapshots for page tokens and watch
// resumption: at most historySize of them, no more than historyToolRefs
// tool pointers in all, and no more than historyBytes of estimated memory
// beyond the current snapshot's (snapshotBytes, counting every entry once
// however many snapshots share it; the current catalog itself is not
// budgeted, so a large catalog keeps its history). Entries are immutable
// and shared: a refresh that lists a tool unchanged reuses its entry
// (buildServerTools), and the servers that did not change keep theirs, so
// a snapshot costs 8 bytes per tool plus the entries that changed (with
// 20,000 tools the pointer budget keeps 26 snapshots, about 4 MiB; 26
// versions of a 60 KB schema fit the byte budget). Past a budget the
// oldest snapshots are forgotten: their revisions get a reset snapshot on
// resume and "no longer retained" as page tokens, unless a listing pinned
// them (snapshots.go, Pin). The current snapshot is always kept.
// (Variables so that tests can use small catalogs.)
var (
	historySize     = 128
	historyToolRefs = 512 << 10
	historyBytes    = 64 << 20
)

// Catalog is the merged catalog of every upstream. Writers build a new
// Snapshot and publish it (snapshots.go): readers load the current one
// without locking, recent ones are remembered by revision within the
// history budgets above, and subscribers get a capacity-1 signal per
// change, so a writer never blocks on them.
//
// A change costs what changed: a writer rebuilds only the server it
// changes (its names, its digest) against an index of the exposed names
// the other servers hold, and the revision combines per-server digests
// (Revision), so with 500 upstreams of 100 tools one upstream's refresh
// hashes 100 entries, not 50,000. The new snapshot's sorted list is kept
// in chunks (chunks.go): the splice rebuilds the chunks that server's
// entries fall in and shares the others, so a storm of 500 refreshes does
// not copy the whole list 500 times; the flat list is built once per
// snapshot a reader asks for.
type Catalog struct {
	snapshots[Snapshot]
	budget *toolHistoryBudget

	mu       sync.Mutex // serialises writers' records; guards servers, warnings and pending
	servers  map[string]*serverEntry
	warnings map[string][]string // server -> warnings of the current snapshot (listing and naming)
	// pending are the servers whose entries changed since the last build
	// took them; flushMu serialises building and publishing (flush), and
	// is taken before mu.
	pending []string
	flushMu sync.Mutex

	// Guarded by flushMu (the builder's): exposed is, per server, its
	// entries as the current snapshot exposes them (after cross-server
	// collisions), sorted by name, with their digest; index maps every
	// exposed name of the current snapshot to its entry.
	exposed map[string]*exposedServer
	index   map[string]*Tool
	seq     uint64 // numbers the snapshots built (Snapshot.seq)
	// parts are the exposed servers that have tools, in order of server
	// name: what the revision combines (revisionOfParts), kept in order
	// as servers change so that a publication does not sort and walk the
	// map of every server (a third of a storm's publication: 500 parts
	// sorted for each of 500 refreshes).
	parts []*exposedServer
}

type serverEntry struct {
	prefix    string
	tools     []*Tool // named within the server, sorted by name
	warnings  []string
	available bool
}

// exposedServer is one server's part of the current snapshot.
type exposedServer struct {
	prefix string   // the names prefix its names were built from
	tools  []*Tool  // sorted by name
	digest [32]byte // serverDigest(tools)
	server string   // its name
}

// NewCatalog returns an empty catalog.
func NewCatalog() *Catalog {
	budget := &toolHistoryBudget{}
	c := &Catalog{
		snapshots: newSnapshots((*Snapshot).revision, func() int { return historySize }, historyBudget[Snapshot](budget)),
		budget:    budget,
		servers:   map[string]*serverEntry{},
		warnings:  map[string][]string{},
		exposed:   map[string]*exposedServer{},
		index:     map[string]*Tool{},
	}
	c.seq = 1
	c.publish(&Snapshot{Revision: combine(nil), Created: time.Now(), seq: 1, bytes: snapshotOverhead(0), lazy: newLazyTools(nil)})
	return c
}

func (s *Snapshot) revision() string { return s.Revision }

// Warnings returns the naming warnings for a server in the current snapshot.
func (c *Catalog) Warnings(server string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.warnings[server])
}

// SetServer replaces the tool set of one server and publishes the result.
// It reports the number of tools the server now has. Tools the server
// already had keep their exposed names (see buildServerTools).
func (c *Catalog) SetServer(server, prefix string, tools []*mcp.Tool, available bool) (int, error) {
	return c.SetServerTasks(server, prefix, tools, nil, available)
}

// SetServerTasks is SetServer with each tool's task support, by original
// name (TaskSupport).
func (c *Catalog) SetServerTasks(server, prefix string, tools []*mcp.Tool, taskSupport map[string]string, available bool) (int, error) {
	c.mu.Lock()
	prev := c.servers[server]
	c.mu.Unlock()
	for {
		// Converting schemas is the costly part: it runs outside the lock,
		// against the entry it read, and starts over if the entry changed
		// meanwhile.
		entries, warnings, err := buildServerTools(server, prefix, tools, taskSupport, available, heldNames(prev, prefix), reusable(prev, prefix))
		if err != nil {
			return 0, err
		}
		warnings = CapWarnings(warnings)
		c.mu.Lock()
		if cur := c.servers[server]; cur != prev {
			prev = cur
			c.mu.Unlock()
			continue
		}
		c.servers[server] = &serverEntry{prefix: prefix, tools: entries, warnings: warnings, available: available}
		c.changedLocked(server)
		c.mu.Unlock()
		c.flush()
		return len(entries), nil
	}
}

// heldNames maps the original names of a server's current tools to their
// exposed names (nil when the server is new or its prefix changed).
func heldNames(e *serverEntry, prefix string) map[string]string {
	if e == nil || e.prefix != prefix {
		return nil
	}
	held := make(map[string]string, len(e.tools))
	for _, t := range e.tools {
		held[t.OriginalName] = t.Name
	}
	return held
}

// reusable maps the original names of a server's current entries to the
// entries, for buildServerTools to reuse (nil when the prefix changed: the
// names will).
func reusable(e *serverEntry, prefix string) map[string]*Tool {
	if e == nil || e.prefix != prefix {
		return nil
	}
	m := make(map[string]*Tool, len(e.tools))
	for _, t := range e.tools {
		m[t.OriginalName] = t
	}
	return m
}

// SetAvailable flips the availability of a server's tools, publishing a new
// snapshot only if something changed.
func (c *Catalog) SetAvailable(server string, available bool) {
	c.mu.Lock()
	e, ok := c.servers[server]
	if !ok || e.available == available {
		c.mu.Unlock()
		return
	}
	tools := make([]*Tool, len(e.tools))
	for i, t := range e.tools {
		nt := *t
		nt.Available = available
		nt.hash = entryHash(&nt)
		tools[i] = &nt
	}
	c.servers[server] = &serverEntry{prefix: e.prefix, tools: tools, warnings: e.warnings, available: available}
	c.changedLocked(server)
	c.mu.Unlock()
	c.flush()
}

// RemoveServer drops a server's tools.
func (c *Catalog) RemoveServer(server string) {
	c.mu.Lock()
	if _, ok := c.servers[server]; !ok {
		c.mu.Unlock()
		return
	}
	delete(c.servers, server)
	c.changedLocked(server)
	c.mu.Unlock()
	c.flush()
}

// changedLocked records that server's entry changed (c.mu held).
func (c *Catalog) changedLocked(server string) {
	if !slices.Contains(c.pending, server) {
		c.pending = append(c.pending, server)
	}
}

// flush publishes every change recorded so far in one snapshot. Writers
// that change servers at once (a refresh storm of many upstreams) share
// snapshots: each records its change and then flushes; the first to get
// flushMu publishes every change recorded by then, and the others find
// theirs published when they get it. A writer therefore returns once its
// change is visible, as when each published its own, and a storm makes as
// few snapshots (and as few events for watchers) as its writers overlap.
//
// The new snapshot is built holding flushMu only (the exposed parts, the
// name index and the snapshot numbers are the builder's): a writer records
// its change under mu while a snapshot is being built, so every change
// that lands during one build goes into the next one, and a storm's
// splices share copies of the merged list (one copy of 50,000 pointers
// for all the changes recorded meanwhile, not one each). A lone change
// finds no build running and is published at once, as before.
func (c *Catalog) flush() {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.mu.Unlock()
		return
	}
	servers := c.pending
	c.pending = nil
	entries := make(map[string]*serverEntry, len(servers))
	for _, server := range servers {
		entries[server] = c.servers[server]
	}
	c.mu.Unlock()
	snap, warnings := c.rebuild(servers, entries)
	c.mu.Lock()
	defer c.mu.Unlock()
	for server, w := range warnings {
		if entries[server] == nil {
			delete(c.warnings, server)
		} else {
			c.warnings[server] = w
		}
	}
	c.publish(snap)
}

// buildHook, when set (tests), runs in every build of a snapshot, before
// the merged list is spliced.
var buildHook func()

// rebuild is the snapshot that follows the current one once the entries
// of servers changed to entries[server] (nil when removed), with the
// changed servers' warnings; flushMu held.
// Exposed names that collide across servers (possible only through
// sanitising) are resolved so that a name keeps meaning the tool it meant:
// a tool keeps the name it had in the current snapshot (unless its
// server's names prefix changed since); a newcomer whose name another
// server's tool holds gets a stable hash suffix and a warning (servers
// changed together are named in order of server name). Only the changed
// servers' entries are visited; the others' parts are reused as they are.
func (c *Catalog) rebuild(servers []string, entries map[string]*serverEntry) (*Snapshot, map[string][]string) {
	slices.Sort(servers)
	var out, in []*Tool
	warnings := make(map[string][]string, len(servers))
	for _, server := range servers {
		o, i, w := c.rename(server, entries[server])
		out, in = append(out, o...), append(in, i...)
		warnings[server] = w
	}
	byName := func(a, b *Tool) int { return cmp.Compare(a.Name, b.Name) }
	slices.SortFunc(out, byName)
	slices.SortFunc(in, byName)
	if h := buildHook; h != nil {
		h()
	}

	cur := c.cur.Load()
	all := newLazyTools(spliceChunks(cur.lazy.chunkList(), out, in))
	added, removed := changedBytes(out, in)
	up, rm := DiffTools(out, in)
	c.seq++
	return &Snapshot{
		Revision: c.revisionOfParts(),
		Created:  time.Now(),
		seq:      c.seq,
		prevSeq:  cur.seq,
		added:    added,
		removed:  removed,
		bytes:    cur.bytes - snapshotOverhead(cur.len()) + snapshotOverhead(all.n) + added - removed,
		delta:    &delta{upserted: up, removed: rm},
		lazy:     all,
	}, warnings
}

// rename names server's entries e (nil: the server is gone) against the
// other servers' (the index) and records its part of the next snapshot;
// it returns the entries the current snapshot exposes for server and
// those the next will, each sorted by name, and the server's warnings;
// flushMu held.
func (c *Catalog) rename(server string, e *serverEntry) (out, in []*Tool, warnings []string) {
	old := c.exposed[server]
	held := map[string]string{} // original name -> exposed name, when the prefix did not change
	if old != nil {
		out = old.tools
		for _, t := range old.tools {
			delete(c.index, t.Name)
			if e != nil && old.prefix == e.prefix {
				held[t.OriginalName] = t.Name
			}
		}
	}
	if e == nil {
		delete(c.exposed, server)
		c.setPart(server, nil)
		return out, nil, nil
	}
	warnings = slices.Clone(e.warnings)
	tools := make([]*Tool, 0, len(e.tools))
	var newcomers []*Tool
	for _, t := range e.tools {
		name, ok := held[t.OriginalName]
		if !ok {
			newcomers = append(newcomers, t)
			continue
		}
		t = renamed(t, name)
		c.index[t.Name] = t
		tools = append(tools, t)
	}
	for _, t := range newcomers {
		if other, taken := c.index[t.Name]; taken {
			nt := renamed(t, uniqueName(c.index, withSuffix(t.Name, stableHash(hashSuffixLen, t.Server, t.OriginalName))))
			warnings = append(warnings, fmt.Sprintf(
				"tool %q would be exposed as %q, already used by server %q; exposed as %q", t.OriginalName, t.Name, other.Server, nt.Name))
			t = nt
		}
		c.index[t.Name] = t
		tools = append(tools, t)
	}
	slices.SortFunc(tools, func(a, b *Tool) int { return cmp.Compare(a.Name, b.Name) })
	x := &exposedServer{prefix: e.prefix, tools: tools, digest: serverDigest(tools), server: server}
	c.exposed[server] = x
	if len(tools) > 0 {
		c.setPart(server, x)
	} else {
		c.setPart(server, nil)
	}
	return out, tools, warnings
}

// setPart puts x in the revision's parts as server's (nil: none); flushMu
// held.
func (c *Catalog) setPart(server string, x *exposedServer) {
	i, found := slices.BinarySearchFunc(c.parts, server, func(p *exposedServer, name string) int {
		return cmp.Compare(p.server, name)
	})
	switch {
	case found && x != nil:
		c.parts[i] = x
	case found:
		c.parts = slices.Delete(c.parts, i, i+1)
	case x != nil:
		c.parts = slices.Insert(c.parts, i, x)
	}
}

// renamed is t exposed as name (t itself when that is its name).
func renamed(t *Tool, name string) *Tool {
	if name == t.Name {
		return t
	}
	nt := *t
	nt.Name = name
	nt.hash = entryHash(&nt)
	return &nt
}

// splice is cur (sorted by name) without the entries named as those of
// out, and with those of in (sorted by name; no other entry of cur has
// their names): the positions are found by binary search, and the rest of
// cur is copied in runs, so no entry is read but about log(len(cur)) per
// entry of out and in.
func splice(cur, out, in []*Tool) []*Tool {
	byName := func(t *Tool, name string) int { return cmp.Compare(t.Name, name) }
	rm := make([]int, 0, len(out)) // ascending: out is sorted
	for _, t := range out {
		if i, ok := slices.BinarySearchFunc(cur, t.Name, byName); ok {
			rm = append(rm, i)
		}
	}
	ins := make([]int, len(in)) // ascending: in is sorted
	for j, t := range in {
		ins[j], _ = slices.BinarySearchFunc(cur, t.Name, byName)
	}
	all := make([]*Tool, 0, len(cur)-len(rm)+len(in))
	prev, r, j := 0, 0, 0
	for {
		next := len(cur)
		if r < len(rm) {
			next = min(next, rm[r])
		}
		if j < len(ins) {
			next = min(next, ins[j])
		}
		all = append(all, cur[prev:next]...)
		for j < len(ins) && ins[j] == next { // they sort before cur[next] (or replace it)
			all = append(all, in[j])
			j++
		}
		if r < len(rm) && rm[r] == next {
			r++
			prev = next + 1
			continue
		}
		prev = next
		if next == len(cur) {
			return all
		}
	}
}

// changedBytes is the size of the entries in brings that out did not
// hold, and of those out held that in does not.
func changedBytes(out, in []*Tool) (added, removed int) {
	had := make(map[*Tool]bool, len(out))
	for _, t := range out {
		had[t] = true
	}
	for _, t := range in {
		if had[t] {
			delete(had, t)
			continue
		}
		added += t.size
	}
	for t := range had {
		removed += t.size
	}
	return added, removed
}

// revisionOfParts combines the servers' digests (Revision), as combine
// would, from the parts kept in order; flushMu held.
func (c *Catalog) revisionOfParts() string {
	h := sha256.New()
	var buf []byte
	for _, x := range c.parts {
		buf = appendPart(buf[:0], x.server, x.digest)
		h.Write(buf)
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// Revision is the content revision of a list of tools sorted by name: 32
// hex digits over every entry's content. It digests each server's entries
// (in name order), then the servers' digests in order of server name, so
// that the catalog updates it in time proportional to the server that
// changed. A Snapshot's Revision is the Revision of its Tools; a filtered
// view of a snapshot (say, one server's tools) has the Revision of its own
// list, so equal views have equal revisions on every process.
func Revision(tools []*Tool) string {
	if len(tools) == 0 {
		return combine(nil)
	}
	// One running digest per server; a catalog's names group a server's
	// tools under its prefix, so the last one found is usually the next.
	byServer := map[string]hash.Hash{}
	var last string
	var h hash.Hash
	for _, t := range tools {
		if h == nil || t.Server != last {
			last = t.Server
			if h = byServer[last]; h == nil {
				h = sha256.New()
				byServer[last] = h
			}
		}
		h.Write(t.hash[:])
	}
	parts := make([]serverPart, 0, len(byServer))
	for server, h := range byServer {
		p := serverPart{server: server}
		h.Sum(p.digest[:0])
		parts = append(parts, p)
	}
	return combine(parts)
}

// appendPart appends a server's share of the revision's input to buf:
// "<len>:<server>;" then its digest.
func appendPart(buf []byte, server string, digest [32]byte) []byte {
	buf = strconv.AppendInt(buf, int64(len(server)), 10)
	return append(append(append(append(buf, ':'), server...), ';'), digest[:]...)
}

type serverPart struct {
	server string
	digest [32]byte
}

// serverDigest digests one server's entries, sorted by name.
func serverDigest(tools []*Tool) [32]byte {
	h := sha256.New()
	for _, t := range tools {
		h.Write(t.hash[:])
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// combine digests the servers' digests in order of server name.
func combine(parts []serverPart) string {
	slices.SortFunc(parts, func(a, b serverPart) int { return cmp.Compare(a.server, b.server) })
	h := sha256.New()
	var buf []byte
	for _, p := range parts {
		buf = appendPart(buf[:0], p.server, p.digest)
		h.Write(buf)
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// toolHistoryBudget is the tool catalog's history budget beyond
// historySize: historyToolRefs tool pointers and historyBytes of estimated
// memory beyond the current snapshot's.
// Its methods run under the history's lock.
type toolHistoryBudget struct {
	refs     int // tool pointers held by history
	bytes    int // estimated bytes held by history (snapshotBytes, shared entries once)
	curBytes int // of which the current snapshot's own (snapshotBytes)
}

func (b *toolHistoryBudget) added(prev, s *Snapshot) {
	b.refs += s.len()
	if follows(prev, s) {
		// The catalog knows what s changed: no walk of its entries.
		b.bytes += snapshotOverhead(s.len()) + s.added
		b.curBytes = s.bytes
		return
	}
	var newest []*Tool
	if prev != nil {
		newest = prev.flat().Tools
	}
	b.bytes += snapshotOverhead(s.len()) + unsharedBytes(newest, s.flat().Tools)
	b.curBytes = snapshotBytes(s)
}

func (b *toolHistoryBudget) dropped(old, next *Snapshot) {
	b.refs -= old.len()
	// The entries only the forgotten snapshot held (an entry is counted
	// once per run of consecutive snapshots holding it): those next
	// replaced or removed.
	if follows(old, next) {
		b.bytes -= snapshotOverhead(old.len()) + next.removed
		return
	}
	b.bytes -= snapshotOverhead(old.len()) + unsharedBytes(next.flat().Tools, old.flat().Tools)
}

// follows reports that the catalog built s as the successor of prev, so
// s's added and removed are relative to prev.
func follows(prev, s *Snapshot) bool {
	return prev != nil && s.seq != 0 && prev.seq != 0 && s.prevSeq == prev.seq
}

func (b *toolHistoryBudget) over() bool {
	return b.refs > historyToolRefs || b.bytes-b.curBytes > historyBytes
}

// historyBytes returns the estimated bytes the history holds beyond the
// current snapshot (what historyBytes bounds).
func (c *Catalog) historyBytes() int {
	c.snapshots.mu.Lock()
	defer c.snapshots.mu.Unlock()
	return c.budget.bytes - c.budget.curBytes
}

// snapshotOverhead is what a snapshot costs besides its entries: the
// struct and its list of n pointers (counted flat: a snapshot handed out
// has its list filled, chunks.go).
func snapshotOverhead(n int) int { return 128 + 8*n }

// snapshotBytes is a snapshot's whole cost, as if it shared nothing.
func snapshotBytes(s *Snapshot) int {
	return snapshotOverhead(s.len()) + unsharedBytes(nil, s.flat().Tools)
}

// unsharedBytes is the size of the entries of b (sorted by name) that a
// (sorted by name) does not hold.
func unsharedBytes(a, b []*Tool) int {
	n, i := 0, 0
	for _, t := range b {
		for i < len(a) && a[i].Name < t.Name {
			i++
		}
		if i < len(a) && a[i] == t {
			continue
		}
		n += t.size
	}
	return n
}

// Diff returns what moves a client holding from to the state of to: tools
// that are new or changed in to, and names that are gone.
// When the catalog built to right after from, what it changed is known
// and the answer costs what changed.
func Diff(from, to *Snapshot) (upserted []*Tool, removed []string) {
	if follows(from, to) && to.delta != nil {
		return slices.Clone(to.delta.upserted), slices.Clone(to.delta.removed)
	}
	return DiffTools(from.flat().Tools, to.flat().Tools)
}

// DiffTools is Diff for two lists of tools sorted by name (for example
// filtered views of two snapshots).
func DiffTools(a, b []*Tool) (upserted []*Tool, removed []string) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i].Name < b[j].Name):
			removed = append(removed, a[i].Name)
			i++
		case i == len(a) || b[j].Name < a[i].Name:
			upserted = append(upserted, b[j])
			j++
		default:
			if a[i] != b[j] && a[i].hash != b[j].hash {
				upserted = append(upserted, b[j])
			}
			i++
			j++
		}
	}
	return upserted, removed
}

// buildServerTools names and converts one server's tool list. A tool the
// server already had keeps the exposed name it had (held: original name →
// exposed name): a name an agent cached must not start calling another tool
// because a newcomer sorts before it. Newcomers are named in order of
// original name, so on a fresh start the result does not depend on the
// order the upstream listed them in.
//
// An entry of prev (original name → the server's current entry) whose tool
// is listed unchanged is reused as it is: entries are immutable, so every
// snapshot, and every cached encoding of it (service's toolCache), shares
// it. A changed tool whose schemas did not change shares their decoded form.
func buildServerTools(server, prefix string, tools []*mcp.Tool, taskSupport map[string]string, available bool, held map[string]string, prev map[string]*Tool) ([]*Tool, []string, error) {
	sorted := slices.Clone(tools)
	slices.SortStableFunc(sorted, func(a, b *mcp.Tool) int { return cmp.Compare(a.Name, b.Name) })
	var warnings []string
	seen := make(map[string]bool, len(sorted))
	used := make(map[string]*Tool, len(sorted))
	out := make([]*Tool, 0, len(sorted))
	var newcomers []*Tool
	reused := map[*Tool]bool{}
	for _, mt := range sorted {
		if mt == nil {
			continue
		}
		if seen[mt.Name] {
			warnings = append(warnings, fmt.Sprintf("tool %q listed more than once; the first is used", mt.Name))
			continue
		}
		seen[mt.Name] = true
		old := prev[mt.Name]
		t, err := convertTool(server, mt, taskSupport[mt.Name], available, old)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("tool %q skipped: %v", mt.Name, err))
			continue
		}
		if t == old { // unchanged; prev comes from the same entry as held
			used[t.Name] = t
			reused[t] = true
			continue
		}
		if name, ok := held[mt.Name]; ok {
			t.Name = name // held names are unique within the server
			used[name] = t
			continue
		}
		newcomers = append(newcomers, t)
	}
	for _, t := range newcomers {
		name := exposedName(prefix, server, t.OriginalName)
		if other, taken := used[name]; taken {
			alt := uniqueName(used, withSuffix(name, stableHash(hashSuffixLen, server, t.OriginalName)))
			warnings = append(warnings, fmt.Sprintf("tools %q and %q both map to %q; %q is exposed as %q",
				other.OriginalName, t.OriginalName, name, t.OriginalName, alt))
			name = alt
		}
		t.Name = name
		used[name] = t
	}
	for _, t := range used {
		if !reused[t] {
			t.hash = entryHash(t)
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Tool) int { return cmp.Compare(a.Name, b.Name) })
	return out, warnings, nil
}

// uniqueName returns name, or name with a counter, that is not in used.
func uniqueName(used map[string]*Tool, name string) string {
	if _, taken := used[name]; !taken {
		return name
	}
	for i := 2; ; i++ {
		alt := withSuffix(name, fmt.Sprint(i))
		if _, taken := used[alt]; !taken {
			return alt
		}
	}
}

// convertTool converts an upstream tool; it returns prev itself (the
// server's current entry for the tool, or nil) when nothing changed, and
// shares prev's decoded schemas when their text did not change.
func convertTool(server string, mt *mcp.Tool, taskSupport string, available bool, prev *Tool) (*Tool, error) {
	var prevIn, prevOut json.RawMessage
	if prev != nil {
		prevIn, prevOut = prev.InputSchemaJSON, prev.OutputSchemaJSON
	}
	inJSON, in, inSame, err := schemaObject(mt.InputSchema, prevIn)
	if err != nil {
		return nil, fmt.Errorf("inputSchema: %w", err)
	}
	outJSON, out, outSame, err := schemaObject(mt.OutputSchema, prevOut)
	if err != nil {
		return nil, fmt.Errorf("outputSchema: %w", err)
	}
	inSame, outSame = inSame && prev != nil, outSame && prev != nil
	if inSame && outSame && unchangedBesidesSchemas(prev, server, mt, taskSupport, available) {
		// Most of a re-list: nothing to build (the comparison below, without
		// the entry it would build and discard first).
		return prev, nil
	}
	if inSame {
		inJSON, in = prev.InputSchemaJSON, prev.InputSchema
	}
	if outSame {
		outJSON, out = prev.OutputSchemaJSON, prev.OutputSchema
	}
	var ann *mcp.ToolAnnotations
	if mt.Annotations != nil {
		a := *mt.Annotations
		ann = &a
	}
	var meta map[string]any
	if len(mt.Meta) > 0 {
		meta = map[string]any(mt.Meta)
	}
	// The hash is over the JSON text, so a change a client reading
	// SCHEMA_FORMAT_JSON can see (10 becoming 10.0) is a change. Without raw
	// text this is the digest of json.Marshal([]any{in, out}).
	sum := sha256.Sum256(slices.Concat([]byte("["), orNull(inJSON), []byte(","), orNull(outJSON), []byte("]")))
	t := &Tool{
		Server:           server,
		OriginalName:     mt.Name,
		Title:            mt.Title,
		Description:      mt.Description,
		InputSchema:      in,
		OutputSchema:     out,
		InputSchemaJSON:  inJSON,
		OutputSchemaJSON: outJSON,
		Annotations:      ann,
		Meta:             meta,
		TaskSupport:      taskSupport,
		SchemaHash:       hex.EncodeToString(sum[:16]),
		Available:        available,
	}
	if prev != nil && inSame && outSame && prev.Available == available && prev.Server == t.Server &&
		prev.Title == t.Title && prev.Description == t.Description && prev.SchemaHash == t.SchemaHash && prev.TaskSupport == t.TaskSupport &&
		reflect.DeepEqual(prev.Annotations, t.Annotations) && reflect.DeepEqual(prev.Meta, t.Meta) {
		return prev, nil
	}
	t.size = entryBytes(t)
	return t, nil
}

// unchangedBesidesSchemas reports whether prev, whose schemas' text mt
// sends again, is what convertTool would build of mt: the check at its
// end (the schema hash is over the same text), made on mt's own fields.
func unchangedBesidesSchemas(prev *Tool, server string, mt *mcp.Tool, taskSupport string, available bool) bool {
	if prev.Available != available || prev.Server != server || prev.Title != mt.Title || prev.Description != mt.Description ||
		prev.TaskSupport != taskSupport || !reflect.DeepEqual(prev.Annotations, mt.Annotations) {
		return false
	}
	if len(mt.Meta) == 0 {
		return prev.Meta == nil
	}
	return jsonEqual(prev.Meta, map[string]any(mt.Meta))
}

// jsonEqual is reflect.DeepEqual for values decoded from JSON (objects,
// arrays, strings, numbers, booleans, null), without reflection, which
// made three allocations per _meta compared; any other type is left to
// reflect.DeepEqual.
func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) || (a == nil) != (bm == nil) {
			return false
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok || !jsonEqual(av, bv) {
				return false
			}
		}
		return true
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) || (a == nil) != (bs == nil) {
			return false
		}
		for i := range a {
			if !jsonEqual(a[i], bs[i]) {
				return false
			}
		}
		return true
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	case float64:
		bf, ok := b.(float64)
		return ok && a == bf
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb
	case nil:
		return b == nil
	}
	return reflect.DeepEqual(a, b)
}

// entryBytes estimates the memory an entry holds: the struct, its strings,
// the schemas' text and decoded form, and its metadata.
func entryBytes(t *Tool) int {
	n := int(unsafe.Sizeof(*t)) + len(t.Name) + len(t.Server) + len(t.OriginalName) + len(t.Title) + len(t.Description) +
		len(t.SchemaHash) + len(t.InputSchemaJSON) + len(t.OutputSchemaJSON) +
		jsonBytes(t.InputSchema) + jsonBytes(t.OutputSchema) + jsonBytes(t.Meta)
	if t.Annotations != nil {
		n += int(unsafe.Sizeof(*t.Annotations)) + len(t.Annotations.Title)
	}
	return n
}

// jsonBytes estimates the heap a decoded JSON value holds (Go map buckets,
// interface boxes and string headers; within a factor of two of
// runtime.MemStats for schemas).
func jsonBytes(v any) int {
	switch v := v.(type) {
	case map[string]any:
		n := 48
		for k, x := range v {
			n += 48 + len(k) + jsonBytes(x)
		}
		return n
	case []any:
		n := 24 + 16*cap(v)
		for _, x := range v {
			n += jsonBytes(x)
		}
		return n
	case string:
		return 16 + len(v)
	case nil:
		return 0
	}
	return 8 // a boxed float64 or bool
}

// schemaObject returns a schema as JSON text and as a decoded object (nil,
// nil for an absent schema). Raw JSON (json.RawMessage, or a
// RawSchema from the bridge's taps, whose object is used as it is) keeps its
// text, compacted. same reports that the text is prev's (then
// the object is not decoded: the caller shares prev's).
func schemaObject(v any, prev json.RawMessage) (text json.RawMessage, obj map[string]any, same bool, err error) {
	raw, ok := v.(json.RawMessage)
	var decoded any // raw's value, when attach has it
	if d, isDecoded := v.(RawSchema); isDecoded {
		raw, decoded = d.SchemaText()
		ok = true
	}
	if !ok {
		m, err := AsObject(v)
		if err != nil || m == nil {
			return nil, nil, m == nil && prev == nil && err == nil, err
		}
		b, err := json.Marshal(m)
		return b, m, err == nil && prev != nil && bytes.Equal(b, prev), err
	}
	text = raw
	if !compactJSON(raw) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, nil, false, err
		}
		text = buf.Bytes()
	}
	if bytes.Equal(text, []byte("null")) {
		return nil, nil, prev == nil, nil
	}
	if prev != nil && bytes.Equal(text, prev) {
		return prev, nil, true, nil
	}
	if decoded != nil {
		m, isObject := decoded.(map[string]any)
		if !isObject {
			return nil, nil, false, fmt.Errorf("not a JSON object")
		}
		return text, m, false, nil
	}
	var m map[string]any
	if err := json.Unmarshal(text, &m); err != nil {
		return nil, nil, false, fmt.Errorf("not a JSON object")
	}
	return text, m, false, nil
}

// compactJSON reports JSON text with no whitespace outside its strings
// (json.Compact would return it unchanged). Validity is not checked.
func compactJSON(b []byte) bool {
	inStr, esc := false, false
	for _, c := range b {
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case ' ', '\t', '\n', '\r':
			return false
		}
	}
	return true
}

func orNull(b []byte) []byte {
	if b == nil {
		return []byte("null")
	}
	return b
}

// entryHash digests everything a client can see of a tool.
func entryHash(t *Tool) [32]byte {
	b, _ := json.Marshal(struct {
		N, S, O, T, D, H string
		A                *mcp.ToolAnnotations
		M                map[string]any
		V                bool
		K                string `json:",omitempty"` // omitted when empty: entries without task support hash as before
	}{t.Name, t.Server, t.OriginalName, t.Title, t.Description, t.SchemaHash, t.Annotations, t.Meta, t.Available, t.TaskSupport})
	return sha256.Sum256(b)
}
