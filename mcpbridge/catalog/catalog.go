package catalog

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
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
	// TaskSupport is the tool's execution.taskSupport as a 2025-11-25
	// upstream listed it (go-sdk drops the field; the bridge's taps record it):
	// TaskSupportOptional, TaskSupportRequired, TaskSupportForbidden, or ""
	// when the upstream said nothing (forbidden in 2025-11-25; a 2026-07-28
	// upstream never says: its tool decides when called, tasks.go).
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
	// Tools are sorted by Name.
	Tools []*Tool
	// Created is when this snapshot was published.
	Created time.Time

	// base is, for a principal's view (private.go), the shared
	// snapshot it was built on; nil for a shared snapshot.
	base *Snapshot
}

// Base is, for a principal's view of the catalog (Bridge.Tools: the shared
// catalog with that principal's per-principal listings merged in), the
// shared snapshot the view was built on; nil for a shared snapshot.
func (s *Snapshot) Base() *Snapshot { return s.base }

// Lookup returns the tool with the given exposed name. It searches the
// sorted Tools, so a retained snapshot costs one slice of pointers and no
// per-snapshot index.
func (s *Snapshot) Lookup(name string) (*Tool, bool) {
	return lookupSorted(s.Tools, name, func(t *Tool) string { return t.Name })
}

// The catalog remembers recent snapshots for page tokens and watch
// resumption: at most historySize of them, no more than historyToolRefs
// tool pointers in all, and no more than historyBytes of estimated memory
// beyond the current snapshot's (snapshotBytes, counting every entry once
// however many snapshots share it; the current catalog itself is not
// budgeted, so a large catalog keeps its history). Entries are immutable and shared: a refresh that lists a tool
// unchanged reuses its entry (buildServerTools), and a server that did not
// change keeps its slice, so a snapshot costs 8 bytes per tool plus the
// entries that changed (with 20,000 tools the pointer budget keeps 26
// snapshots, about 4 MiB; 26 versions of a 60 KB schema fit the byte
// budget). Past a budget the oldest snapshots are forgotten: their
// revisions get a reset snapshot on resume and "no longer retained" as
// page tokens. The current snapshot is always kept. (Variables so that
// tests can use small catalogs.)
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
type Catalog struct {
	snapshots[Snapshot]
	budget *toolHistoryBudget

	mu       sync.Mutex // serialises writers; guards the fields below
	servers  map[string]*serverEntry
	warnings map[string][]string // server -> naming warnings of the current snapshot
	named    map[string]string   // server -> names prefix its tools had in the current snapshot
}

type serverEntry struct {
	prefix    string
	tools     []*Tool // named within the server, sorted by name
	warnings  []string
	available bool
}

// NewCatalog returns an empty catalog.
func NewCatalog() *Catalog {
	budget := &toolHistoryBudget{}
	c := &Catalog{
		snapshots: newSnapshots((*Snapshot).revision, func() int { return historySize }, historyBudget[Snapshot](budget)),
		budget:    budget,
		servers:   map[string]*serverEntry{},
		warnings:  map[string][]string{},
		named:     map[string]string{},
	}
	c.publish(c.buildLocked())
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
		c.publish(c.buildLocked())
		c.mu.Unlock()
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
	defer c.mu.Unlock()
	e, ok := c.servers[server]
	if !ok || e.available == available {
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
	c.publish(c.buildLocked())
}

// RemoveServer drops a server's tools.
func (c *Catalog) RemoveServer(server string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.servers[server]; !ok {
		return
	}
	delete(c.servers, server)
	c.publish(c.buildLocked())
}

// buildLocked merges every server's tools into a new snapshot. Exposed
// names that collide across servers (possible only through sanitising) are
// resolved so that a name keeps meaning the tool it meant: a tool keeps the
// name it had in the current snapshot; a newcomer whose name is taken gets
// a stable hash suffix (among newcomers, the server that sorts first keeps
// the name).
func (c *Catalog) buildLocked() *Snapshot {
	names := make([]string, 0, len(c.servers))
	total := 0
	for name, e := range c.servers {
		names = append(names, name)
		total += len(e.tools)
	}
	sort.Strings(names)
	type key struct{ server, original string }
	held := map[key]string{}
	if cur := c.cur.Load(); cur != nil {
		for _, t := range cur.Tools {
			held[key{t.Server, t.OriginalName}] = t.Name
		}
	}
	warnings := map[string][]string{}
	index := make(map[string]*Tool, total)
	all := make([]*Tool, 0, total)
	var newcomers []*Tool
	rename := func(t *Tool, name string) *Tool {
		if name == t.Name {
			return t
		}
		nt := *t
		nt.Name = name
		nt.hash = entryHash(&nt)
		return &nt
	}
	// Incumbents first: every tool the current snapshot has keeps its name,
	// unless its server's names prefix changed since (the held name was
	// built from another prefix, or none: bareNames).
	named := make(map[string]string, len(names))
	for _, server := range names {
		e := c.servers[server]
		warnings[server] = append(warnings[server], e.warnings...)
		prev, wasNamed := c.named[server]
		named[server] = e.prefix
		for _, t := range e.tools {
			name, ok := held[key{t.Server, t.OriginalName}]
			if !ok || !wasNamed || prev != e.prefix {
				newcomers = append(newcomers, t)
				continue
			}
			if _, taken := index[name]; taken {
				newcomers = append(newcomers, t)
				continue
			}
			t = rename(t, name)
			index[t.Name] = t
			all = append(all, t)
		}
	}
	for _, t := range newcomers {
		if other, taken := index[t.Name]; taken {
			nt := rename(t, uniqueName(index, withSuffix(t.Name, stableHash(hashSuffixLen, t.Server, t.OriginalName))))
			warnings[t.Server] = append(warnings[t.Server], fmt.Sprintf(
				"tool %q would be exposed as %q, already used by server %q; exposed as %q", t.OriginalName, t.Name, other.Server, nt.Name))
			t = nt
		}
		index[t.Name] = t
		all = append(all, t)
	}
	slices.SortFunc(all, func(a, b *Tool) int { return cmp.Compare(a.Name, b.Name) })
	c.warnings = warnings
	c.named = named
	return &Snapshot{
		Revision: Revision(all),
		Tools:    all,
		Created:  time.Now(),
	}
}

// Revision is the content revision of a list of tools sorted by name: 32
// hex digits over every entry's content. A Snapshot's Revision is the
// Revision of its Tools; a filtered view of a snapshot (say, one server's
// tools) has the Revision of its own list, so equal views have equal
// revisions on every process.
func Revision(tools []*Tool) string {
	h := sha256.New()
	for _, t := range tools {
		h.Write(t.hash[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
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
	var newest []*Tool
	if prev != nil {
		newest = prev.Tools
	}
	b.refs += len(s.Tools)
	b.bytes += snapshotOverhead(s) + unsharedBytes(newest, s.Tools)
	b.curBytes = snapshotBytes(s)
}

func (b *toolHistoryBudget) dropped(old, next *Snapshot) {
	b.refs -= len(old.Tools)
	// The entries only the forgotten snapshot held (an entry is counted
	// once per run of consecutive snapshots holding it).
	b.bytes -= snapshotOverhead(old) + unsharedBytes(next.Tools, old.Tools)
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
// struct and its slice of pointers.
func snapshotOverhead(s *Snapshot) int { return 128 + 8*cap(s.Tools) }

// snapshotBytes is a snapshot's whole cost, as if it shared nothing.
func snapshotBytes(s *Snapshot) int { return snapshotOverhead(s) + unsharedBytes(nil, s.Tools) }

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
func Diff(from, to *Snapshot) (upserted []*Tool, removed []string) {
	return DiffTools(from.Tools, to.Tools)
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
