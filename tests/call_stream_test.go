package tests

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// readStream reads a CallToolStream to its end: the progress messages, the
// result (which must be last), and the final error (nil on a clean end).
func readStream(t *testing.T, s grpc.ServerStreamingClient[toolsvcv1.CallToolStreamResponse]) ([]*toolsvcv1.CallToolProgress, *toolsvcv1.CallToolResponse, error) {
	t.Helper()
	var (
		progress []*toolsvcv1.CallToolProgress
		result   *toolsvcv1.CallToolResponse
	)
	for {
		msg, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return progress, result, nil
		}
		if err != nil {
			return progress, result, err
		}
		if result != nil {
			t.Fatalf("a message after the result: %v", msg)
		}
		switch ev := msg.GetEvent().(type) {
		case *toolsvcv1.CallToolStreamResponse_Progress:
			progress = append(progress, ev.Progress)
		case *toolsvcv1.CallToolStreamResponse_Result:
			result = ev.Result
		default:
			t.Fatalf("stream message with no event: %v", msg)
		}
	}
}

// TestCallToolStreamProgress: a tool that reports 5 progress steps gives 5
// progress messages in order, then the result, over stdio and HTTP. A
// stream nobody reads while its tool floods progress does not hold up the
// session: another call's progress on the same upstream session flows
// meanwhile, and the unread stream later delivers merged, still increasing
// progress and its result.
func TestCallToolStreamProgress(t *testing.T) {
	t.Parallel()
	p := startCallFixture(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	for _, tr := range callTransports {
		t.Run(tr.name, func(t *testing.T) {
			tool := tr.server + "__progress_steps"
			// settle_ms keeps the tool running after its last step, so the
			// last notification is not overtaken by the result (progress
			// after the result is dropped by design).
			s, err := p.client.CallToolStream(ctx, &toolsvcv1.CallToolStreamRequest{Name: tool, ArgumentsJson: `{"steps": 5, "step_ms": 10, "settle_ms": 300}`})
			if err != nil {
				t.Fatal(err)
			}
			progress, result, err := readStream(t, s)
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if len(progress) != 5 {
				t.Fatalf("got %d progress messages, want 5: %v", len(progress), progress)
			}
			for i, pr := range progress {
				want := &toolsvcv1.CallToolProgress{Progress: float64(i + 1), Total: proto.Float64(5), Message: fmt.Sprintf("step %d", i+1)}
				if !proto.Equal(pr, want) {
					t.Errorf("progress[%d] = %v, want %v", i, pr, want)
				}
			}
			if result == nil || resultText(result) != "done" {
				t.Fatalf("result = %v, want text done", result)
			}

			// Flood an unread stream; meanwhile another streamed call on the
			// same session gets its progress. The session handles
			// notifications one at a time, in order, so the other call's
			// come after the flood's: had the flood's callback blocked on
			// its unread stream, none would arrive. How many arrive before
			// that call's result depends on how fast the session works
			// through the flood (late progress is dropped), so the check is
			// "some, in order", with a long settle.
			const flood = 500
			floodCtx, floodCancel := context.WithCancel(ctx)
			defer floodCancel()
			slow, err := p.client.CallToolStream(floodCtx, &toolsvcv1.CallToolStreamRequest{Name: tool,
				ArgumentsJson: fmt.Sprintf(`{"steps": %d, "pad": 1000, "settle_ms": 300}`, flood)})
			if err != nil {
				t.Fatal(err)
			}
			s, err = p.client.CallToolStream(ctx, &toolsvcv1.CallToolStreamRequest{Name: tool, ArgumentsJson: `{"steps": 5, "step_ms": 10, "settle_ms": 1500}`})
			if err != nil {
				t.Fatal(err)
			}
			progress, result, err = readStream(t, s)
			if err != nil || len(progress) == 0 || resultText(result) != "done" {
				t.Fatalf("a call beside an unread stream: %d progress, result %v, error %v; want progress, done, nil", len(progress), result, err)
			}
			for i, pr := range progress {
				if i > 0 && pr.GetProgress() <= progress[i-1].GetProgress() {
					t.Fatalf("progress beside the unread stream not increasing: %v", progress)
				}
			}
			beside := len(progress)
			progress, result, err = readStream(t, slow)
			if err != nil || resultText(result) != "done" {
				t.Fatalf("the unread stream, read late: result %v, error %v", result, err)
			}
			if len(progress) == 0 || len(progress) > flood {
				t.Fatalf("the unread stream delivered %d progress messages, want 1..%d", len(progress), flood)
			}
			for i := 1; i < len(progress); i++ {
				if progress[i].GetProgress() <= progress[i-1].GetProgress() {
					t.Fatalf("progress not increasing at %d: %v then %v", i, progress[i-1].GetProgress(), progress[i].GetProgress())
				}
			}
			t.Logf("%s: unread stream: %d of %d progress notifications delivered (the rest merged or late), last %v; the call beside it got %d of 5",
				tr.name, len(progress), flood, progress[len(progress)-1].GetProgress(), beside)
		})
	}
}

// TestCallResultFidelity: every MCP content type with annotations and
// _meta, structured content, result _meta and isError arrive intact, field
// by field, through CallTool and CallToolStream, over stdio and HTTP.
func TestCallResultFidelity(t *testing.T) {
	t.Parallel()
	p := startCallFixture(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	for _, tr := range callTransports {
		for _, isError := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/is_error=%v", tr.name, isError), func(t *testing.T) {
				req := &toolsvcv1.CallToolRequest{Name: tr.server + "__all_content", ArgumentsJson: fmt.Sprintf(`{"is_error": %v}`, isError)}
				got, err := p.client.CallTool(ctx, req)
				if err != nil {
					t.Fatalf("CallTool: %v (a tool's own failure must be OK with is_error)", err)
				}
				compareResult(t, got, wantAllContent(isError))
				s, err := p.client.CallToolStream(ctx, &toolsvcv1.CallToolStreamRequest{Name: req.GetName(), ArgumentsJson: req.GetArgumentsJson()})
				if err != nil {
					t.Fatal(err)
				}
				_, streamed, err := readStream(t, s)
				if err != nil {
					t.Fatalf("CallToolStream: %v", err)
				}
				compareResult(t, streamed, wantAllContent(isError))
			})
		}
	}
}

func compareResult(t *testing.T, got, want *toolsvcv1.CallToolResponse) {
	t.Helper()
	if got.GetIsError() != want.GetIsError() {
		t.Errorf("is_error = %v, want %v", got.GetIsError(), want.GetIsError())
	}
	if !proto.Equal(got.GetStructuredContent(), want.GetStructuredContent()) {
		t.Errorf("structured_content = %v, want %v", got.GetStructuredContent(), want.GetStructuredContent())
	}
	if !proto.Equal(got.GetMeta(), want.GetMeta()) {
		t.Errorf("meta = %v, want %v", got.GetMeta(), want.GetMeta())
	}
	if len(got.GetContent()) != len(want.GetContent()) {
		t.Fatalf("%d content items, want %d:\n%s", len(got.GetContent()), len(want.GetContent()), prototext.Format(got))
	}
	for i := range want.GetContent() {
		if g, w := got.GetContent()[i], want.GetContent()[i]; !proto.Equal(g, w) {
			t.Errorf("content[%d]:\n got: %s\nwant: %s", i, prototext.Format(g), prototext.Format(w))
		}
	}
}

// wantAllContent is tests/testserver's all_content result on the wire.
func wantAllContent(isError bool) *toolsvcv1.CallToolResponse {
	st := func(m map[string]any) *structpb.Struct {
		s, err := structpb.NewStruct(m)
		if err != nil {
			panic(err)
		}
		return s
	}
	meta := func(k string) *structpb.Struct { return st(map[string]any{"k": k}) }
	return &toolsvcv1.CallToolResponse{
		IsError:           isError,
		Meta:              st(map[string]any{"trace": "abc", "n": 1}),
		StructuredContent: st(map[string]any{"answer": 42, "list": []any{"a", true, nil}, "nested": map[string]any{"x": 1.5}}),
		Content: []*toolsvcv1.Content{
			{Content: &toolsvcv1.Content_Text{Text: &toolsvcv1.TextContent{Text: "hello", Meta: meta("text"),
				Annotations: &toolsvcv1.Annotations{Audience: []string{"user", "assistant"}, Priority: proto.Float64(0.5), LastModified: "2026-01-02T03:04:05Z"}}}},
			{Content: &toolsvcv1.Content_Image{Image: &toolsvcv1.ImageContent{Data: []byte{0x89, 'P', 'N', 'G', 0, 1, 2}, MimeType: "image/png", Meta: meta("image"),
				Annotations: &toolsvcv1.Annotations{Priority: proto.Float64(1)}}}},
			{Content: &toolsvcv1.Content_Audio{Audio: &toolsvcv1.AudioContent{Data: []byte("RIFF\x00wav"), MimeType: "audio/wav", Meta: meta("audio")}}},
			{Content: &toolsvcv1.Content_ResourceLink{ResourceLink: &toolsvcv1.ResourceLink{Uri: "file:///tmp/a.txt", Name: "a.txt", Title: "A",
				Description: "a file", MimeType: "text/plain", Size: proto.Int64(4), Meta: meta("link"),
				Annotations: &toolsvcv1.Annotations{Audience: []string{"user"}}}}},
			{Content: &toolsvcv1.Content_Resource{Resource: &toolsvcv1.EmbeddedResource{Meta: meta("res-text"),
				Annotations: &toolsvcv1.Annotations{Priority: proto.Float64(0.25)},
				Resource: &toolsvcv1.ResourceContents{Uri: "mem://t", MimeType: "text/plain", Meta: meta("rc"),
					Contents: &toolsvcv1.ResourceContents_Text{Text: "embedded text"}}}}},
			{Content: &toolsvcv1.Content_Resource{Resource: &toolsvcv1.EmbeddedResource{Meta: meta("res-blob"),
				Resource: &toolsvcv1.ResourceContents{Uri: "mem://b", MimeType: "application/octet-stream",
					Contents: &toolsvcv1.ResourceContents_Blob{Blob: []byte{0, 255, 1, 254}}}}}},
		},
	}
}
