package service

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
	"github.com/toolsvc/toolsvc/service/grpcedge"
)

// schemaFormat is a validated toolsvcv1.SchemaFormat: how a Tool carries
// its schemas on the wire.
type schemaFormat int

const (
	formatStruct schemaFormat = iota // SCHEMA_FORMAT_UNSPECIFIED, SCHEMA_FORMAT_STRUCT
	formatJSON                       // SCHEMA_FORMAT_JSON
	numFormats
)

// parseSchemaFormat validates a request's schema_format; field names it in
// the error.
func parseSchemaFormat(f toolsvcv1.SchemaFormat, field string) (schemaFormat, error) {
	switch f {
	case toolsvcv1.SchemaFormat_SCHEMA_FORMAT_UNSPECIFIED, toolsvcv1.SchemaFormat_SCHEMA_FORMAT_STRUCT:
		return formatStruct, nil
	case toolsvcv1.SchemaFormat_SCHEMA_FORMAT_JSON:
		return formatJSON, nil
	}
	return 0, invalidArgument(field, fmt.Sprintf("unknown schema format %d; use SCHEMA_FORMAT_STRUCT or SCHEMA_FORMAT_JSON", f))
}

// wireTool is one catalog entry in one format: the message (shared by
// events built from messages) and its encoding (shared by ListTools pages,
// which are concatenations of encoded tools).
type wireTool struct {
	msg *toolsvcv1.Tool
	enc []byte
}

func newWireTool(t *core.Tool, f schemaFormat) *wireTool {
	m := toolToWire(t, f)
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil { // impossible: Struct values come from decoded JSON
		b = nil
	}
	return &wireTool{msg: m, enc: b}
}

// toolCache keeps the wire form of the current snapshot's tools, per
// format. Entries are immutable, so a tool unchanged between revisions
// reuses its message and its encoding: a new revision encodes only the
// tools that changed.
type toolCache struct {
	f [numFormats]formatCache
}

type formatCache struct {
	mu   sync.Mutex
	snap *core.Snapshot
	list []*wireTool
	m    map[*core.Tool]*wireTool
}

// tools returns the wire form of every tool of s, in order. The result is
// shared: callers must not modify it. current says s is the catalog's
// current snapshot (only that one is kept).
func (c *toolCache) tools(s *core.Snapshot, current bool, f schemaFormat) []*wireTool {
	fc := &c.f[f]
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.snap == s {
		return fc.list
	}
	m := make(map[*core.Tool]*wireTool, len(s.Tools))
	list := make([]*wireTool, len(s.Tools))
	for i, t := range s.Tools {
		p := fc.m[t]
		if p == nil {
			p = newWireTool(t, f)
		}
		m[t] = p
		list[i] = p
	}
	if current {
		fc.snap, fc.list, fc.m = s, list, m
	}
	return list
}

// one returns the wire form of a single tool.
func (c *toolCache) one(t *core.Tool, f schemaFormat) *wireTool {
	fc := &c.f[f]
	fc.mu.Lock()
	p := fc.m[t]
	fc.mu.Unlock()
	if p == nil {
		p = newWireTool(t, f)
	}
	return p
}

func toolToWire(t *core.Tool, f schemaFormat) *toolsvcv1.Tool {
	p := &toolsvcv1.Tool{
		Name:         t.Name,
		Server:       t.Server,
		OriginalName: t.OriginalName,
		Title:        t.Title,
		Description:  t.Description,
		SchemaHash:   t.SchemaHash,
		Available:    t.Available,
		Meta:         grpcedge.Struct(t.Meta),
		TaskSupport:  t.TaskSupport,
	}
	if f == formatJSON {
		p.InputSchemaJson, p.OutputSchemaJson = string(t.InputSchemaJSON), string(t.OutputSchemaJSON)
	} else {
		p.InputSchema, p.OutputSchema = grpcedge.Struct(t.InputSchema), grpcedge.Struct(t.OutputSchema)
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

func resultToProto(r *mcp.CallToolResult, log *slog.Logger) *toolsvcv1.CallToolResponse {
	out := &toolsvcv1.CallToolResponse{
		IsError:           r.IsError,
		StructuredContent: grpcedge.AnyStruct(r.StructuredContent),
		Meta:              grpcedge.Struct(r.Meta),
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
			Text: c.Text, Annotations: annotationsToProto(c.Annotations), Meta: grpcedge.Struct(c.Meta)}}}
	case *mcp.ImageContent:
		return &toolsvcv1.Content{Content: &toolsvcv1.Content_Image{Image: &toolsvcv1.ImageContent{
			Data: c.Data, MimeType: c.MIMEType, Annotations: annotationsToProto(c.Annotations), Meta: grpcedge.Struct(c.Meta)}}}
	case *mcp.AudioContent:
		return &toolsvcv1.Content{Content: &toolsvcv1.Content_Audio{Audio: &toolsvcv1.AudioContent{
			Data: c.Data, MimeType: c.MIMEType, Annotations: annotationsToProto(c.Annotations), Meta: grpcedge.Struct(c.Meta)}}}
	case *mcp.ResourceLink:
		return &toolsvcv1.Content{Content: &toolsvcv1.Content_ResourceLink{ResourceLink: &toolsvcv1.ResourceLink{
			Uri: c.URI, Name: c.Name, Title: c.Title, Description: c.Description, MimeType: c.MIMEType,
			Size: c.Size, Annotations: annotationsToProto(c.Annotations), Meta: grpcedge.Struct(c.Meta)}}}
	case *mcp.EmbeddedResource:
		er := &toolsvcv1.EmbeddedResource{Annotations: annotationsToProto(c.Annotations), Meta: grpcedge.Struct(c.Meta)}
		if rc := c.Resource; rc != nil {
			p := &toolsvcv1.ResourceContents{Uri: rc.URI, MimeType: rc.MIMEType, Meta: grpcedge.Struct(rc.Meta)}
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
