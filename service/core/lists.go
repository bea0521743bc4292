package core

import (
	"context"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// The listings of the merged resource snapshot (resources, resource
// templates, prompts), for every wire: which items a list holds, who may
// see each, and one page of it. A wire converts the items to its form and
// authenticates before it asks.

// ListKind is one of the merged lists of the resource snapshot.
type ListKind[T any] struct {
	// Items are the list's entries in a snapshot (sorted, immutable).
	Items func(*mcpbridge.ResourceSnapshot) []T
	// visible is the caller's filter; only (nil: every server) narrows
	// it to the servers a request names.
	visible func(c *Core, ctx context.Context, only func(string) bool) func(T) bool
}

// The three lists.
var (
	Resources = ListKind[*mcpbridge.Resource]{
		Items:   func(s *mcpbridge.ResourceSnapshot) []*mcpbridge.Resource { return s.Resources },
		visible: ofVisibleServer(func(r *mcpbridge.Resource) string { return r.Server }),
	}
	Templates = ListKind[*mcpbridge.ResourceTemplate]{
		Items:   func(s *mcpbridge.ResourceSnapshot) []*mcpbridge.ResourceTemplate { return s.Templates },
		visible: ofVisibleServer(func(t *mcpbridge.ResourceTemplate) string { return t.Server }),
	}
	Prompts = ListKind[*mcpbridge.Prompt]{
		Items: func(s *mcpbridge.ResourceSnapshot) []*mcpbridge.Prompt { return s.Prompts },
		visible: func(c *Core, ctx context.Context, _ func(string) bool) func(*mcpbridge.Prompt) bool {
			v := c.ViewOf(ctx)
			return func(p *mcpbridge.Prompt) bool { return v.Prompt(p.Name) }
		},
	}
)

// ofVisibleServer keeps the items of servers whose resources the caller
// may see (resourceVisible).
func ofVisibleServer[T any](server func(T) string) func(*Core, context.Context, func(string) bool) func(T) bool {
	return func(c *Core, ctx context.Context, only func(string) bool) func(T) bool {
		vis := c.resourceVisible(ctx, only)
		return func(t T) bool { return vis(server(t)) }
	}
}

// ListPage is one page of the list kind for the caller of ctx
// (authenticated): from the snapshot and offset token names (empty: the
// current one, from its start; f names the token's field), at most size
// items the caller may see (and, with only, of the servers it names),
// converted by conv and bounded by budget bytes as cost measures them (nil
// cost: no bound). It returns the snapshot's revision and the token of
// the next page ("" at the end).
func ListPage[T, P any](c *Core, ctx context.Context, kind ListKind[T], only func(string) bool, token string, f Fields,
	size, budget int, conv func(T) P, cost func(P) int) (page []P, revision, next string, e *Error) {
	snap, off, e := c.resourceCursor(token, f)
	if e != nil {
		return nil, "", "", e
	}
	page, n := Page(kind.Items(snap), off, size, budget, kind.visible(c, ctx, only), conv, cost)
	if n >= 0 {
		// Pinned like a tool listing's revision (ToolPageToken): the
		// listing finishes on the revision it began on.
		c.bridge.Resources().Pin(snap, ToolsPrincipal(ctx))
		next = encodeResourcePageToken(snap.Revision, n)
	}
	return page, snap.Revision, next, nil
}
