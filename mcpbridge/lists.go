package mcpbridge

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listPages lists every page of one list method (tools, resources,
// resource templates, prompts), guarding against a cursor loop. An
// upstream that answers MethodNotFound for the first page has none of that
// kind: a tools-only upstream without resources/templates/list
// (docs/upstream-behaviour.md §3), or one without tools/list (tools are
// listed whatever the capabilities say: isMethodNotFound in gosdk.go).
func listPages[T any](ctx context.Context, method string, page func(cursor string) ([]T, string, error)) ([]T, error) {
	var all []T
	seen := map[string]bool{}
	cur := ""
	for {
		items, next, err := page(cur)
		if cur == "" && isMethodNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("%s returned cursor %q twice", method, next)
		}
		seen[next] = true
		cur = next
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// listTools lists every page of tools, each schema as the upstream sent it
// (rawschema.go), and keeps the upstream's ttlMs (2026-07-28).
func (s *session) listTools(ctx context.Context) ([]*mcp.Tool, error) {
	return listPages(ctx, "tools/list", func(cur string) ([]*mcp.Tool, string, error) {
		r, err := s.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cur})
		if err != nil {
			return nil, "", err
		}
		s.ttl.Store(int64(r.TTLMs))
		return s.raw.attach(r.Tools), r.NextCursor, nil
	})
}

func (s *session) listResources(ctx context.Context) ([]*mcp.Resource, error) {
	return listPages(ctx, "resources/list", func(cur string) ([]*mcp.Resource, string, error) {
		r, err := s.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cur})
		if err != nil {
			return nil, "", err
		}
		return r.Resources, r.NextCursor, nil
	})
}

func (s *session) listTemplates(ctx context.Context) ([]*mcp.ResourceTemplate, error) {
	return listPages(ctx, "resources/templates/list", func(cur string) ([]*mcp.ResourceTemplate, string, error) {
		r, err := s.cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cur})
		if err != nil {
			return nil, "", err
		}
		return r.ResourceTemplates, r.NextCursor, nil
	})
}

func (s *session) listPrompts(ctx context.Context) ([]*mcp.Prompt, error) {
	return listPages(ctx, "prompts/list", func(cur string) ([]*mcp.Prompt, string, error) {
		r, err := s.cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cur})
		if err != nil {
			return nil, "", err
		}
		return r.Prompts, r.NextCursor, nil
	})
}
