package service

import (
	"sync"

	"google.golang.org/protobuf/encoding/protowire"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

// pageCache keeps the encoded pages of unfiltered listings of the current
// snapshot: every client paging through the catalog with the same page
// size gets the same bytes, built once per revision.
type pageCache struct {
	mu    sync.Mutex
	snap  *core.Snapshot
	pages map[pageKey]*toolsvcv1.ListToolsResponse
	bytes int
}

type pageKey struct {
	format     schemaFormat
	start, end int
}

const pageCacheMaxBytes = 64 << 20

func (c *pageCache) page(snap *core.Snapshot, f schemaFormat, start, end int, tools []*wireTool, next string) *toolsvcv1.ListToolsResponse {
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
