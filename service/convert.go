package service

import (
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// toolCache keeps the wire form of the current snapshot's tools. Entries
// are immutable, so a tool unchanged between revisions reuses its message.
type toolCache struct {
	mu   sync.Mutex
	snap *mcpbridge.Snapshot
	list []*toolsvcv1.Tool
	m    map[*mcpbridge.Tool]*toolsvcv1.Tool
}

// tools returns the wire form of every tool of s, in order. The returned
// messages are shared: callers must not modify them.
func (c *toolCache) tools(s *mcpbridge.Snapshot, current bool) []*toolsvcv1.Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap == s {
		return c.list
	}
	m := make(map[*mcpbridge.Tool]*toolsvcv1.Tool, len(s.Tools))
	list := make([]*toolsvcv1.Tool, len(s.Tools))
	for i, t := range s.Tools {
		p := c.m[t]
		if p == nil {
			p = toolToProto(t)
		}
		m[t] = p
		list[i] = p
	}
	if current {
		c.snap, c.list, c.m = s, list, m
	}
	return list
}

// one returns the wire form of a single tool.
func (c *toolCache) one(t *mcpbridge.Tool) *toolsvcv1.Tool {
	c.mu.Lock()
	p := c.m[t]
	c.mu.Unlock()
	if p == nil {
		p = toolToProto(t)
	}
	return p
}

func toolToProto(t *mcpbridge.Tool) *toolsvcv1.Tool {
	p := &toolsvcv1.Tool{
		Name:         t.Name,
		Server:       t.Server,
		OriginalName: t.OriginalName,
		Title:        t.Title,
		Description:  t.Description,
		InputSchema:  toStruct(t.InputSchema),
		OutputSchema: toStruct(t.OutputSchema),
		SchemaHash:   t.SchemaHash,
		Available:    t.Available,
		Meta:         toStruct(t.Meta),
	}
	if a := t.Annotations; a != nil {
		p.Annotations = &toolsvcv1.ToolAnnotations{
			Title:           a.Title,
			ReadOnlyHint:    a.ReadOnlyHint,
			DestructiveHint: a.DestructiveHint,
			IdempotentHint:  a.IdempotentHint,
			OpenWorldHint:   a.OpenWorldHint,
		}
	}
	return p
}

// toStruct converts a decoded JSON object; nil stays nil. Values that are
// not JSON (impossible for decoded upstream data) are dropped.
func toStruct(m map[string]any) *structpb.Struct {
	if m == nil {
		return nil
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		return nil
	}
	return s
}

// anyToStruct converts any JSON-encodable object value.
func anyToStruct(v any) *structpb.Struct {
	switch v := v.(type) {
	case nil:
		return nil
	case map[string]any:
		return toStruct(v)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return toStruct(m)
}

func resultToProto(r *mcp.CallToolResult, log *slog.Logger) *toolsvcv1.CallToolResponse {
	out := &toolsvcv1.CallToolResponse{
		IsError:           r.IsError,
		StructuredContent: anyToStruct(r.StructuredContent),
		Meta:              toStruct(r.Meta),
	}
	if r.StructuredContent != nil && out.StructuredContent == nil {
		log.Warn("structuredContent is not a JSON object; dropped")
	}
	out.Content = make([]*toolsvcv1.Content, 0, len(r.Content))
	for _, c := range r.Content {
		out.Content = append(out.Content, contentToProto(c))
	}
	return out
}

func annotationsToProto(a *mcp.Annotations) *toolsvcv1.Annotations {
	if a == nil {
		return nil
	}
	p := &toolsvcv1.Annotations{LastModified: a.LastModified}
	for _, r := range a.Audience {
		p.Audience = append(p.Audience, string(r))
	}
	if a.Priority != 0 {
		pr := a.Priority
		p.Priority = &pr
	}
	return p
}

func contentToProto(c mcp.Content) *toolsvcv1.Content {
	switch c := c.(type) {
	case *mcp.TextContent:
		return &toolsvcv1.Content{Content: &toolsvcv1.Content_Text{Text: &toolsvcv1.TextContent{
			Text: c.Text, Annotations: annotationsToProto(c.Annotations), Meta: toStruct(c.Meta)}}}
	case *mcp.ImageContent:
		return &toolsvcv1.Content{Content: &toolsvcv1.Content_Image{Image: &toolsvcv1.ImageContent{
			Data: c.Data, MimeType: c.MIMEType, Annotations: annotationsToProto(c.Annotations), Meta: toStruct(c.Meta)}}}
	case *mcp.AudioContent:
		return &toolsvcv1.Content{Content: &toolsvcv1.Content_Audio{Audio: &toolsvcv1.AudioContent{
			Data: c.Data, MimeType: c.MIMEType, Annotations: annotationsToProto(c.Annotations), Meta: toStruct(c.Meta)}}}
	case *mcp.ResourceLink:
		return &toolsvcv1.Content{Content: &toolsvcv1.Content_ResourceLink{ResourceLink: &toolsvcv1.ResourceLink{
			Uri: c.URI, Name: c.Name, Title: c.Title, Description: c.Description, MimeType: c.MIMEType,
			Size: c.Size, Annotations: annotationsToProto(c.Annotations), Meta: toStruct(c.Meta)}}}
	case *mcp.EmbeddedResource:
		er := &toolsvcv1.EmbeddedResource{Annotations: annotationsToProto(c.Annotations), Meta: toStruct(c.Meta)}
		if rc := c.Resource; rc != nil {
			p := &toolsvcv1.ResourceContents{Uri: rc.URI, MimeType: rc.MIMEType, Meta: toStruct(rc.Meta)}
			if rc.Blob != nil {
				p.Contents = &toolsvcv1.ResourceContents_Blob{Blob: rc.Blob}
			} else {
				p.Contents = &toolsvcv1.ResourceContents_Text{Text: rc.Text}
			}
			er.Resource = p
		}
		return &toolsvcv1.Content{Content: &toolsvcv1.Content_Resource{Resource: er}}
	}
	// A content kind the API has no message for: keep its JSON as text
	// rather than lose it.
	raw, _ := json.Marshal(c)
	return &toolsvcv1.Content{Content: &toolsvcv1.Content_Text{Text: &toolsvcv1.TextContent{Text: string(raw)}}}
}
