package mcpgrpc

import (
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
	"github.com/toolsvc/toolsvc/service/grpcedge"
)

// The catalog's and the upstreams' MCP values in the binding's form. What
// the binding has no field for is dropped (a tool's execution, a
// resource's size when it is unknown); a content kind it has no message
// for keeps its JSON as text rather than be lost, as on ToolService.

func msDuration(ms int) time.Duration { return time.Duration(max(ms, 0)) * time.Millisecond }

func toolToProto(name, title, desc string, in, out map[string]any, a *mcp.ToolAnnotations, meta map[string]any) *pb.Tool {
	t := &pb.Tool{Name: name, Title: title, Description: desc, InputSchema: grpcedge.Struct(in), OutputSchema: grpcedge.Struct(out), Metadata: grpcedge.Struct(meta)}
	if t.InputSchema == nil {
		t.InputSchema = &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("object")}}
	}
	if a != nil {
		t.Annotations = &pb.ToolAnnotations{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint, IdempotentHint: a.IdempotentHint,
			DestructiveHint: a.DestructiveHint != nil && *a.DestructiveHint, OpenWorldHint: a.OpenWorldHint != nil && *a.OpenWorldHint}
	}
	return t
}

func annotationsToProto(a *mcp.Annotations) *pb.Annotations {
	if a == nil {
		return nil
	}
	p := &pb.Annotations{}
	for _, r := range a.Audience {
		switch r {
		case "user":
			p.Audience = append(p.Audience, pb.Role_ROLE_USER)
		case "assistant":
			p.Audience = append(p.Audience, pb.Role_ROLE_ASSISTANT)
		}
	}
	if a.Priority != 0 {
		pr := float32(a.Priority)
		p.Priority = &pr
	}
	if a.LastModified != "" {
		lm := a.LastModified
		p.LastModified = &lm
	}
	return p
}

func iconsToProto(icons []mcp.Icon) []*pb.Icon {
	var out []*pb.Icon
	for _, i := range icons {
		p := &pb.Icon{Src: i.Source, MimeType: i.MIMEType, Sizes: i.Sizes}
		switch i.Theme {
		case "light":
			p.Theme = pb.Icon_THEME_LIGHT
		case "dark":
			p.Theme = pb.Icon_THEME_DARK
		}
		out = append(out, p)
	}
	return out
}

func resourceToProto(r *mcp.Resource) *pb.Resource {
	return &pb.Resource{Uri: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MimeType: r.MIMEType,
		Annotations: annotationsToProto(r.Annotations), Size: uint64(max(r.Size, 0)), Icons: iconsToProto(r.Icons), Metadata: grpcedge.Struct(r.Meta)}
}

func resourceLinkToProto(r *mcp.ResourceLink) *pb.Resource {
	p := &pb.Resource{Uri: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MimeType: r.MIMEType,
		Annotations: annotationsToProto(r.Annotations), Icons: iconsToProto(r.Icons), Metadata: grpcedge.Struct(r.Meta)}
	if r.Size != nil && *r.Size > 0 {
		p.Size = uint64(*r.Size)
	}
	return p
}

func templateToProto(t *mcp.ResourceTemplate) *pb.ResourceTemplate {
	return &pb.ResourceTemplate{UriTemplate: t.URITemplate, Name: t.Name, Title: t.Title, Description: t.Description,
		MimeType: t.MIMEType, Annotations: annotationsToProto(t.Annotations), Icons: iconsToProto(t.Icons), Metadata: grpcedge.Struct(t.Meta)}
}

// promptToProto is a listed prompt under its exposed name.
func promptToProto(name string, p *mcp.Prompt) *pb.Prompt {
	out := &pb.Prompt{Name: name, Title: p.Title, Description: p.Description, Icons: iconsToProto(p.Icons), Metadata: grpcedge.Struct(p.Meta)}
	for _, a := range p.Arguments {
		if a != nil {
			out.Arguments = append(out.Arguments, &pb.Prompt_Argument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
		}
	}
	return out
}

func contentsToProto(c *mcp.ResourceContents) *pb.ResourceContents {
	p := &pb.ResourceContents{Uri: c.URI, MimeType: c.MIMEType, Metadata: grpcedge.Struct(c.Meta)}
	if c.Blob != nil {
		p.Blob = c.Blob
	} else {
		p.Text = c.Text
	}
	return p
}

func roleToProto(r mcp.Role) pb.Role {
	switch r {
	case "user":
		return pb.Role_ROLE_USER
	case "assistant":
		return pb.Role_ROLE_ASSISTANT
	}
	return pb.Role_ROLE_UNKNOWN
}

// contentToProto is one content block; a kind the binding has no message
// for is its JSON as text.
func contentToProto(c mcp.Content) *pb.CallToolResponse_Content {
	switch c := c.(type) {
	case *mcp.TextContent:
		return &pb.CallToolResponse_Content{Text: &pb.TextContent{Text: c.Text, Annotations: annotationsToProto(c.Annotations), Metadata: grpcedge.Struct(c.Meta)}}
	case *mcp.ImageContent:
		return &pb.CallToolResponse_Content{Image: &pb.ImageContent{Data: c.Data, MimeType: c.MIMEType,
			Annotations: annotationsToProto(c.Annotations), Metadata: grpcedge.Struct(c.Meta)}}
	case *mcp.AudioContent:
		return &pb.CallToolResponse_Content{Audio: &pb.AudioContent{Data: c.Data, MimeType: c.MIMEType,
			Annotations: annotationsToProto(c.Annotations), Metadata: grpcedge.Struct(c.Meta)}}
	case *mcp.ResourceLink:
		return &pb.CallToolResponse_Content{ResourceLink: resourceLinkToProto(c)}
	case *mcp.EmbeddedResource:
		er := &pb.EmbeddedResource{Annotations: annotationsToProto(c.Annotations), Metadata: grpcedge.Struct(c.Meta)}
		if c.Resource != nil {
			er.Contents = contentsToProto(c.Resource)
		}
		return &pb.CallToolResponse_Content{EmbeddedResource: er}
	}
	raw, _ := json.Marshal(c)
	return &pb.CallToolResponse_Content{Text: &pb.TextContent{Text: string(raw)}}
}

func callResultToProto(r *mcp.CallToolResult, common *pb.ResponseFields) *pb.CallToolResponse {
	out := &pb.CallToolResponse{Common: common, IsError: r.IsError, StructuredContent: grpcedge.AnyStruct(r.StructuredContent),
		Content: make([]*pb.CallToolResponse_Content, 0, len(r.Content))}
	for _, c := range r.Content {
		out.Content = append(out.Content, contentToProto(c))
	}
	return out
}

func promptMessageToProto(m *mcp.PromptMessage) *pb.PromptMessage {
	out := &pb.PromptMessage{Role: roleToProto(m.Role)}
	if m.Content == nil {
		return out
	}
	c := contentToProto(m.Content)
	out.Text, out.Image, out.Audio, out.EmbeddedResource, out.ResourceLink = c.Text, c.Image, c.Audio, c.EmbeddedResource, c.ResourceLink
	return out
}
