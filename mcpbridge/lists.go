package mcpbridge

import (
	"context"
	"crypto/sha256"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listPages lists every page of one list method (tools, resources,
// resource templates, prompts): call fetches the page at a cursor, page
// takes its entries and next cursor. It guards against a cursor loop. An
// upstream that answers MethodNotFound for the first page has none of that
// kind: a tools-only upstream without resources/templates/list
// (docs/upstream-behaviour.md §3), or one without tools/list (tools are
// listed whatever the capabilities say: isMethodNotFound in gosdk.go).
//
// A listing is bounded (maxListPages, maxListEntries, maxCursorBytes): an
// upstream answering with cursors without end was listed until the refresh
// timeout (30 s), every page kept, and every cursor too, each up to the
// message limit (TestHostileListingIsBounded). Past a bound the listing
// fails with an error naming it; the last good listing stays published.
func listPages[R, T any](ctx context.Context, method string, call func(cursor string) (R, error), page func(R) ([]T, string)) ([]T, error) {
	var all []T
	seen := map[[sha256.Size]byte]bool{} // digests: a listing keeps no cursor but the next
	cur := ""
	for pages := 1; ; pages++ {
		res, err := call(cur)
		if cur == "" && isMethodNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		items, next := page(res)
		if len(all)+len(items) > maxListEntries {
			return nil, fmt.Errorf("%s: more than %d entries (a listing holds at most %d; not published)", method, maxListEntries, maxListEntries)
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		if len(next) > maxCursorBytes {
			return nil, fmt.Errorf("%s: a cursor of more than %d bytes (%d; not followed)", method, maxCursorBytes, len(next))
		}
		if pages >= maxListPages {
			return nil, fmt.Errorf("%s: more than %d pages (a listing is at most %d; not published)", method, maxListPages, maxListPages)
		}
		d := sha256.Sum256([]byte(next))
		if seen[d] {
			return nil, fmt.Errorf("%s returned cursor %.64q twice", method, next)
		}
		seen[d] = true
		cur = next
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// The bounds of one listing (tools, resources, resource templates or
// prompts) of one session. A paginating server pages hundreds or a few
// thousand entries at a time (go-sdk's default page is 1,000), and its
// cursors are short opaque tokens; these leave a legitimate upstream two
// orders of magnitude of room. maxListEntries is the catalog history's
// budget (512 Ki tool pointers, catalog) over five.
const (
	maxListPages   = 1000
	maxListEntries = 100_000
	maxCursorBytes = 64 << 10
)

// listTools lists every page of tools, each schema as the upstream sent it
// (rawschema.go: go-sdk hands it over as text, attach decodes it if new), and keeps the upstream's ttlMs (2026-07-28). Each page's
// response is decoded and taken in holding the pass's turn of refresh work
// (hold, refreshwork.go), given back before the next page is asked for; the
// last page's is still held on return. Each page is asked for holding a
// place in the replica's window of listings on the wire, given back when
// its response arrives.
func (s *session) listTools(ctx context.Context, hold *workHold) ([]*mcp.Tool, error) {
	first := true
	// Schemas come as the text the upstream sent (rawschema.go).
	gated := mcp.WithRawToolSchemas(mcp.WithResultGate(ctx, hold.gate))
	tools, err := listPages(ctx, "tools/list", func(cur string) (*mcp.ListToolsResult, error) {
		hold.release() // no turn held while the upstream answers
		if err := hold.ask(ctx); err != nil {
			return nil, err
		}
		defer hold.arrived() // if the gate did not (an error, go-sdk's cache)
		return s.cs.ListTools(gated, &mcp.ListToolsParams{Cursor: cur})
	}, func(r *mcp.ListToolsResult) ([]*mcp.Tool, string) {
		s.ttl.Store(int64(r.TTLMs))
		if first { // the first page's cacheScope speaks for the listing
			s.listedPrivate.Store(r.CacheScope == "private")
			first = false
			if h := relistWorkHook; h != nil && len(r.Tools) > 0 {
				h(+1)
			}
		}
		return s.raw.attach(r.Tools), r.NextCursor
	})
	if err == nil {
		s.raw.keep(tools)
	}
	return tools, err
}

func (s *session) listResources(ctx context.Context) ([]*mcp.Resource, error) {
	return listPages(ctx, "resources/list", func(cur string) (*mcp.ListResourcesResult, error) {
		return s.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cur})
	}, func(r *mcp.ListResourcesResult) ([]*mcp.Resource, string) { return r.Resources, r.NextCursor })
}

func (s *session) listTemplates(ctx context.Context) ([]*mcp.ResourceTemplate, error) {
	return listPages(ctx, "resources/templates/list", func(cur string) (*mcp.ListResourceTemplatesResult, error) {
		return s.cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cur})
	}, func(r *mcp.ListResourceTemplatesResult) ([]*mcp.ResourceTemplate, string) {
		return r.ResourceTemplates, r.NextCursor
	})
}

func (s *session) listPrompts(ctx context.Context) ([]*mcp.Prompt, error) {
	return listPages(ctx, "prompts/list", func(cur string) (*mcp.ListPromptsResult, error) {
		return s.cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cur})
	}, func(r *mcp.ListPromptsResult) ([]*mcp.Prompt, string) { return r.Prompts, r.NextCursor })
}
