package mcpgrpcup

import (
	"math"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
)

// A tools/call's result as go-sdk's value (docs/mcp-grpc.md, "A call's
// result: go-sdk's value, not JSON"). The RPC's answer used to be built as
// the MCP JSON shape, encoded, and decoded by go-sdk into the
// *mcp.CallToolResult the session awaits: a JSON round trip on every call
// (4–5 % of toolsvc's CPU on this path). Now the adapter builds that value
// itself and hands it over with mcp.DecodedResponse (a go-sdk patch), so
// the caller gets it with nothing encoded or decoded in between.
//
// The value must be exactly what the decode of the JSON would have given:
// TestCallResultValueMatchesJSON compares the two for every content kind.
// A result the decode would refuse or that only a decode can express is
// built as JSON as before (callToolJSON), so it is refused or delivered
// exactly as it was:
//   - an input-required result (its resultType is go-sdk's unexported field);
//   - a Struct nested deeper than maxValueDepth (go-sdk refuses JSON nested
//     deeper than 1000 levels: "exceeded maximum nesting depth of 1000");
//   - a number that is not finite (encoding/json refuses it), or a
//     resource link's size beyond an int64 (go-sdk's decode refuses it).

// maxValueDepth is the deepest Struct or list nesting a result built as a
// value may hold: far below go-sdk's 1000-level bound on the result's
// JSON, of which the result's own object, its content array, a block and
// an embedded resource take 4.
const maxValueDepth = 64

// callResultValue is r as go-sdk would decode the JSON callToolJSON makes
// of it, or nil when r must go as JSON (see above).
func callResultValue(r *pb.CallToolResponse) *mcp.CallToolResult {
	if !plainStruct(r.GetStructuredContent(), maxValueDepth) {
		return nil
	}
	for _, b := range r.GetContent() {
		if !plainBlock(b.GetText(), b.GetImage(), b.GetAudio(), b.GetEmbeddedResource(), b.GetResourceLink()) {
			return nil
		}
	}
	out := &mcp.CallToolResult{Content: make([]mcp.Content, 0, len(r.GetContent())), IsError: r.GetIsError()}
	// callResultJSON's structuredContent is omitted when empty: nil then.
	if m := structMap(r.GetStructuredContent()); len(m) > 0 {
		out.StructuredContent = m
	}
	for _, b := range r.GetContent() {
		out.Content = append(out.Content, contentValue(b.GetText(), b.GetImage(), b.GetAudio(), b.GetEmbeddedResource(), b.GetResourceLink()))
	}
	return out
}

// contentValue is contentJSON's block as go-sdk decodes it. Its _meta
// follows contentJSON's: a text block's is omitted when empty (textJSON's
// omitempty), the others' only when absent (omitEmpty keeps {}).
func contentValue(text *pb.TextContent, image *pb.ImageContent, audio *pb.AudioContent, res *pb.EmbeddedResource, link *pb.Resource) mcp.Content {
	switch {
	case text != nil:
		return &mcp.TextContent{Text: text.GetText(), Meta: nonEmpty(structMap(text.GetMetadata()))}
	case image != nil:
		return &mcp.ImageContent{Data: image.GetData(), MIMEType: image.GetMimeType(), Meta: structMap(image.GetMetadata())}
	case audio != nil:
		return &mcp.AudioContent{Data: audio.GetData(), MIMEType: audio.GetMimeType(), Meta: structMap(audio.GetMetadata())}
	case res != nil && res.GetContents() != nil:
		return &mcp.EmbeddedResource{Resource: contentsValue(res.GetContents()), Meta: structMap(res.GetMetadata())}
	case link != nil:
		out := &mcp.ResourceLink{URI: link.GetUri(), Name: link.GetName(), Title: link.GetTitle(), Description: link.GetDescription(),
			MIMEType: link.GetMimeType(), Meta: structMap(link.GetMetadata())}
		if n := link.GetSize(); n > 0 {
			size := int64(n) // at most MaxInt64 (plainBlock)
			out.Size = &size
		}
		return out
	}
	return &mcp.TextContent{}
}

// contentsValue is contentsJSON's resource contents as go-sdk decodes them.
func contentsValue(c *pb.ResourceContents) *mcp.ResourceContents {
	out := &mcp.ResourceContents{URI: c.GetUri(), MIMEType: c.GetMimeType(), Meta: structMap(c.GetMetadata())}
	if c.GetBlob() != nil {
		out.Blob = c.GetBlob()
	} else {
		out.Text = c.GetText()
	}
	return out
}

func nonEmpty(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	return m
}

// plainBlock reports whether every Struct of a content block is plain
// (plainStruct) and a link's size fits the int64 go-sdk decodes it into
// (a larger one fails that decode).
func plainBlock(text *pb.TextContent, image *pb.ImageContent, audio *pb.AudioContent, res *pb.EmbeddedResource, link *pb.Resource) bool {
	if link.GetSize() > math.MaxInt64 {
		return false
	}
	for _, s := range []*structpb.Struct{text.GetMetadata(), image.GetMetadata(), audio.GetMetadata(), res.GetMetadata(),
		res.GetContents().GetMetadata(), link.GetMetadata()} {
		if !plainStruct(s, maxValueDepth) {
			return false
		}
	}
	return true
}

// plainStruct reports whether s nests at most room levels of Structs and
// lists (s itself is one) and holds only finite numbers.
func plainStruct(s *structpb.Struct, room int) bool {
	if s == nil {
		return true
	}
	if room == 0 {
		return false
	}
	for _, v := range s.GetFields() {
		if !plainValue(v, room-1) {
			return false
		}
	}
	return true
}

func plainValue(v *structpb.Value, room int) bool {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		return !math.IsInf(k.NumberValue, 0) && !math.IsNaN(k.NumberValue)
	case *structpb.Value_StructValue:
		return plainStruct(k.StructValue, room)
	case *structpb.Value_ListValue:
		if room == 0 {
			return false
		}
		for _, e := range k.ListValue.GetValues() {
			if !plainValue(e, room-1) {
				return false
			}
		}
	}
	return true
}

// readResultValue is a complete resources/read answer as go-sdk decodes
// the JSON of it ({"contents": [contentsJSON…]}), or nil when it must go
// as JSON.
func readResultValue(r *pb.ReadResourceResponse) *mcp.ReadResourceResult {
	for _, x := range r.GetResource() {
		if !plainStruct(x.GetMetadata(), maxValueDepth) {
			return nil
		}
	}
	out := &mcp.ReadResourceResult{Contents: make([]*mcp.ResourceContents, 0, len(r.GetResource()))}
	for _, x := range r.GetResource() {
		out.Contents = append(out.Contents, contentsValue(x))
	}
	return out
}

// promptResultValue is a complete prompts/get answer as go-sdk decodes
// the JSON of it (a description and messages of contentJSON blocks), or
// nil when it must go as JSON.
func promptResultValue(r *pb.GetPromptResponse) *mcp.GetPromptResult {
	for _, m := range r.GetMessages() {
		if !plainBlock(m.GetText(), m.GetImage(), m.GetAudio(), m.GetEmbeddedResource(), m.GetResourceLink()) {
			return nil
		}
	}
	out := &mcp.GetPromptResult{Description: r.GetDescription(), Messages: make([]*mcp.PromptMessage, 0, len(r.GetMessages()))}
	for _, m := range r.GetMessages() {
		out.Messages = append(out.Messages, &mcp.PromptMessage{Role: mcp.Role(roleJSON(m.GetRole())),
			Content: contentValue(m.GetText(), m.GetImage(), m.GetAudio(), m.GetEmbeddedResource(), m.GetResourceLink())})
	}
	return out
}

// completeResultValue is a completion/complete answer as go-sdk decodes
// the JSON of it: it holds no Struct, so it is always a value.
func completeResultValue(r *pb.CompletionResponse) *mcp.CompleteResult {
	out := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: append([]string{}, r.GetValues()...), HasMore: r.GetHasMore()}}
	if r.TotalMatches != nil {
		out.Completion.Total = int(r.GetTotalMatches())
	}
	return out
}
