package catalog

import (
	"cmp"
	"slices"
	"sync"
)

// A snapshot's list in chunks. Every publication of one upstream's tools
// used to copy the whole merged list: with 500 upstreams of 100 tools a
// storm of 500 refreshes copied 50,000 pointers 500 times (400 KB each,
// 3.95 KB per tool re-listed; docs/benchmarks.md). The catalog now keeps
// each snapshot's list as sorted chunks of about chunkSize entries: a
// splice rebuilds the chunks it touches and copies the chunk index (a
// pointer and two words per chunk), and the others are shared with the
// predecessor. The flat list (Snapshot.Tools, what every reader gets) is
// built once per snapshot, the first time the catalog hands the snapshot
// out (Current, Snapshot, History, Diff across snapshots); a storm's
// snapshots that nobody reads before the next one replaces them are never
// flattened, and the lookup of a call (Catalog.Lookup, Snapshot.Lookup)
// searches the chunks.
//
// Entries and chunks are immutable once published: a splice builds new
// chunks and never writes into one it read, and a flattened list is a
// new array. What a reader sees is unchanged: the same sorted list, the
// same revision (computed from the servers' digests, not the list), the
// same deltas.

// chunkSize is the chunks' size target: a splice copies about
// len/chunkSize chunk headers plus the chunks its entries fall in, and a
// chunk grown past twice this is split.
const chunkSize = 256

// lazyTools is a snapshot's list in chunks (each sorted, non-empty, in
// order).
type lazyTools struct {
	chunks [][]*Tool
	n      int
	once   sync.Once // fills the snapshot's Tools (flat)
}

func newLazyTools(chunks [][]*Tool) *lazyTools {
	l := &lazyTools{chunks: chunks}
	for _, ch := range chunks {
		l.n += len(ch)
	}
	return l
}

// chunkList is l's chunks (nil for nil).
func (l *lazyTools) chunkList() [][]*Tool {
	if l == nil {
		return nil
	}
	return l.chunks
}

// chunkOf is the index of the chunk a name belongs in: the first whose
// last name is not before it, else the last chunk.
func chunkOf(chunks [][]*Tool, name string) int {
	i, _ := slices.BinarySearchFunc(chunks, name, func(ch []*Tool, name string) int {
		return cmp.Compare(ch[len(ch)-1].Name, name)
	})
	return min(i, len(chunks)-1)
}

func (l *lazyTools) lookup(name string) (*Tool, bool) {
	if len(l.chunks) == 0 {
		return nil, false
	}
	return lookupSorted(l.chunks[chunkOf(l.chunks, name)], name, func(t *Tool) string { return t.Name })
}

// flat is s with Tools filled (s itself; nil for nil). Catalog snapshots
// fill it once; others have it.
func (s *Snapshot) flat() *Snapshot {
	if s != nil && s.lazy != nil {
		s.lazy.once.Do(func() {
			all := make([]*Tool, 0, s.lazy.n)
			for _, ch := range s.lazy.chunks {
				all = append(all, ch...)
			}
			s.Tools = all
		})
	}
	return s
}

// len is the number of tools in s.
func (s *Snapshot) len() int {
	if s.lazy != nil {
		return s.lazy.n
	}
	return len(s.Tools)
}

// spliceChunks is splice on a list in chunks: cur's chunks without the
// entries of out, with those of in (both sorted by name; no other entry of
// cur has the names of in). Chunks no entry falls in are shared, the others
// rebuilt (split when past twice chunkSize, dropped when emptied).
func spliceChunks(cur [][]*Tool, out, in []*Tool) [][]*Tool {
	if len(cur) == 0 {
		return appendChunks(nil, in)
	}
	next := make([][]*Tool, 0, len(cur)+len(in)/chunkSize+1)
	o, j := 0, 0
	for i, ch := range cur {
		// The entries that fall in chunk i: up to its last name, or all
		// that are left for the last chunk.
		oe, je := len(out), len(in)
		if i < len(cur)-1 {
			last := ch[len(ch)-1].Name
			oe = o + countUpTo(out[o:], last)
			je = j + countUpTo(in[j:], last)
		}
		if oe == o && je == j {
			next = append(next, ch)
			continue
		}
		next = appendChunks(next, splice(ch, out[o:oe], in[j:je]))
		o, j = oe, je
	}
	return next
}

// countUpTo is the number of leading entries of list (sorted by name)
// whose names are not after name.
func countUpTo(list []*Tool, name string) int {
	n, _ := slices.BinarySearchFunc(list, name, func(t *Tool, name string) int {
		if t.Name <= name {
			return -1
		}
		return 1
	})
	return n
}

// appendChunks appends list (sorted) to chunks: as it is when at most
// twice chunkSize, else in pieces of chunkSize (the last one taking the
// rest); nothing when empty.
func appendChunks(chunks [][]*Tool, list []*Tool) [][]*Tool {
	for len(list) > 2*chunkSize {
		chunks = append(chunks, list[:chunkSize:chunkSize])
		list = list[chunkSize:]
	}
	if len(list) > 0 {
		chunks = append(chunks, list)
	}
	return chunks
}

// Current returns the current snapshot, its Tools filled.
func (c *Catalog) Current() *Snapshot { return c.snapshots.Current().flat() }

// Snapshot returns a recent snapshot with the given revision, its Tools
// filled, if this process still remembers one.
func (c *Catalog) Snapshot(revision string) (*Snapshot, bool) {
	s, ok := c.snapshots.Snapshot(revision)
	return s.flat(), ok
}

// History returns the snapshots remembered, oldest first, their Tools
// filled.
func (c *Catalog) History() []*Snapshot {
	h := c.snapshots.History()
	for _, s := range h {
		s.flat()
	}
	return h
}

// Lookup returns the tool of the current snapshot with the given exposed
// name: a call's lookup, which needs no flat list (a storm's snapshots are
// not flattened for it).
func (c *Catalog) Lookup(name string) (*Tool, bool) { return c.snapshots.Current().Lookup(name) }

// Len is the number of tools in the current snapshot.
func (c *Catalog) Len() int { return c.snapshots.Current().len() }
