package service

import (
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service/core"
)

// A page token names the catalog revision its listing started from and the
// last tool name returned (keyset paging). Revisions are content-derived, so
// any replica that still has that revision can serve the next page.
const pageTokenVersion = "p1"

type pageToken struct {
	revision string
	after    string
}

func (t pageToken) encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(pageTokenVersion + ":" + t.revision + ":" + t.after))
}

var errBadPageToken = errors.New("malformed page token")

func decodePageToken(s string) (pageToken, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return pageToken{}, errBadPageToken
	}
	parts := strings.Split(string(raw), ":")
	if len(parts) != 3 || parts[0] != pageTokenVersion || !validRevision(parts[1]) || !mcpbridge.ValidExposedName(parts[2]) {
		return pageToken{}, errBadPageToken
	}
	return pageToken{revision: parts[1], after: parts[2]}, nil
}

// validRevision reports whether s has the shape of a catalog revision.
func validRevision(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// pageCache keeps the encoded pages of unfiltered listings of the current
// snapshot: every client paging through the catalog with the same page
// size gets the same bytes, built once per revision.
type pageCache struct {
	mu    sync.Mutex
	snap  *mcpbridge.Snapshot
	pages map[pageKey]*toolsvcv1.ListToolsResponse
	bytes int
}

type pageKey struct {
	format     schemaFormat
	start, end int
}

const pageCacheMaxBytes = 64 << 20

func (c *pageCache) page(snap *mcpbridge.Snapshot, f schemaFormat, start, end int, tools []*wireTool, next string) *toolsvcv1.ListToolsResponse {
	k := pageKey{f, start, end}
	c.mu.Lock()
	if c.snap == snap {
		if p := c.pages[k]; p != nil {
			c.mu.Unlock()
			return p
		}
	}
	c.mu.Unlock()
	p := encodedListPage(tools, next, snap.Revision)
	n := len(p.ProtoReflect().GetUnknown())
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap != snap || c.bytes+n > pageCacheMaxBytes {
		if c.snap != nil && c.snap != snap && snap.Created.Before(c.snap.Created) {
			return p // an old revision's page: serve it, keep the current ones
		}
		c.snap, c.pages, c.bytes = snap, map[pageKey]*toolsvcv1.ListToolsResponse{}, 0
	}
	c.pages[k] = p
	c.bytes += n
	return p
}

// encodedListPage returns a ListToolsResponse whose unknown fields are
// the wire form of {tools, next_page_token, revision}, in field order as
// proto.Marshal writes them. The message is shared: never modify it.
func encodedListPage(tools []*wireTool, next, revision string) *toolsvcv1.ListToolsResponse {
	n := len(next) + len(revision) + 16
	for _, t := range tools {
		n += len(t.enc) + 8
	}
	b := make([]byte, 0, n)
	for _, t := range tools {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, t.enc)
	}
	if next != "" {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, next)
	}
	if revision != "" {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendString(b, revision)
	}
	r := &toolsvcv1.ListToolsResponse{}
	r.ProtoReflect().SetUnknown(b)
	return r
}

// malformedToken refuses a page token that is not one toolsvc made.
func malformedToken(f core.Fields) *core.Error {
	return core.InvalidField(f.PageToken, "malformed; pass a "+f.NextPageToken+" from a previous response, or none for the first page")
}

// expiredToken refuses a page token whose revision is no longer retained.
func expiredToken(f core.Fields, what, rev string) *core.Error {
	return core.InvalidField(f.PageToken, fmt.Sprintf("%s revision %s is no longer retained; restart the listing without a %s", what, rev, f.PageToken))
}

// toolCursor resolves a tool listing's page token (empty: the current
// snapshot from its start) to the snapshot it names and the exposed name
// the listing continues after; f names the token's field.
func (s *Server) toolCursor(token string, f core.Fields) (*mcpbridge.Snapshot, string, *core.Error) {
	cat := s.bridge.Catalog()
	if token == "" {
		return cat.Current(), "", nil
	}
	tok, err := decodePageToken(token)
	if err != nil {
		return nil, "", malformedToken(f)
	}
	old, ok := cat.Snapshot(tok.revision)
	if !ok {
		return nil, "", expiredToken(f, "catalog", tok.revision)
	}
	return old, tok.after, nil
}

// toolsAfter is the index in snap's (sorted) tools of the first tool
// after the exposed name after ("": 0).
func toolsAfter(snap *mcpbridge.Snapshot, after string) int {
	if after == "" {
		return 0
	}
	return sort.Search(len(snap.Tools), func(i int) bool { return snap.Tools[i].Name > after })
}
