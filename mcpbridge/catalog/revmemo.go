package catalog

import (
	"slices"
	"sync"
)

// A RevisionMemo computes the Revision of successive versions of one
// filtered list of tools — a view's tools under one rule set, snapshot
// after snapshot — at the cost of what changed: a server whose entries in
// the list are the same entries as in the version before (entries are
// immutable and shared between snapshots, so the same pointers are the
// same content) keeps its digest after a comparison of pointers; only the
// servers whose entries changed are digested again. Revision(tools) would
// allocate a digest per server and hash every entry on every version.
//
// The memo holds the last version's entries of each server it saw (the
// servers of the last list only). A list whose server's entries are not
// contiguous (a name sorting between another server's) is computed whole,
// with the same result. Safe for concurrent use.
type RevisionMemo struct {
	mu      sync.Mutex
	servers map[string]*memoServer
	pass    uint64
	parts   []serverPart // reused by each Revision
}

// memoServer is one server's entries in the last list and their digest
// (serverDigest(tools)).
type memoServer struct {
	tools  []*Tool
	digest [32]byte
	pass   uint64 // the last Revision that saw the server
}

// Revision is Revision(tools), reusing the digests of the servers whose
// entries did not change since the last call.
func (m *RevisionMemo) Revision(tools []*Tool) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.servers == nil {
		m.servers = map[string]*memoServer{}
	}
	m.pass++
	parts := m.parts[:0]
	for i := 0; i < len(tools); {
		server := tools[i].Server
		j := i + 1
		for j < len(tools) && tools[j].Server == server {
			j++
		}
		run := tools[i:j:j]
		ms := m.servers[server]
		switch {
		case ms == nil:
			ms = &memoServer{tools: run, digest: serverDigest(run)}
			m.servers[server] = ms
		case ms.pass == m.pass:
			// The server's entries are split: digest the list whole. The
			// memo's entries stay true (each digest is its entries').
			return Revision(tools)
		case !slices.Equal(ms.tools, run):
			ms.tools, ms.digest = run, serverDigest(run)
		}
		ms.pass = m.pass
		parts = append(parts, serverPart{server: server, digest: ms.digest})
		i = j
	}
	if len(m.servers) > len(parts) {
		for server, ms := range m.servers {
			if ms.pass != m.pass {
				delete(m.servers, server)
			}
		}
	}
	m.parts = parts
	return combine(parts)
}
