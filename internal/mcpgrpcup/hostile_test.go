package mcpgrpcup

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
)

// deepResults answers every call with structured content nested depth
// levels deep ({"a":{"a":…}}), and echo with its text.
type deepResults struct {
	toolsOnly
	depth int
}

func nested(depth int) *structpb.Struct {
	s := &structpb.Struct{Fields: map[string]*structpb.Value{"leaf": structpb.NewBoolValue(true)}}
	for range depth - 1 {
		s = &structpb.Struct{Fields: map[string]*structpb.Value{"a": structpb.NewStructValue(s)}}
	}
	return s
}

func (s *deepResults) CallTool(ctx context.Context, req *pb.CallToolRequest) (*pb.CallToolResponse, error) {
	if req.GetRequest().GetName() == "echo" {
		return s.toolsOnly.CallTool(ctx, req)
	}
	return &pb.CallToolResponse{StructuredContent: nested(s.depth)}, nil
}

// TestDeepResults: a hostile gRPC upstream's structured content nested
// deeper than go-sdk decodes (1000 levels) or than protobuf decodes (10,000
// messages: about 5,000 Struct levels) fails that call with an error saying
// so, without a crash or a wedged session: the next call is answered. One
// within both is delivered whole. A real gRPC server on loopback.
func TestDeepResults(t *testing.T) {
	for _, tc := range []struct {
		depth int
		want  string // "" : delivered
	}{
		{500, ""},
		{1500, "exceeded maximum nesting depth of 1000"},
		{20000, "exceeded maximum recursion depth"},
	} {
		url, _ := serve(t, &deepResults{depth: tc.depth})
		cs := connect(t, url, nil, 16<<20)
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "deep", Arguments: map[string]any{}})
		switch {
		case tc.want == "" && err != nil:
			t.Fatalf("depth %d: %v, want the result", tc.depth, err)
		case tc.want == "":
			d := 0
			for m, ok := res.StructuredContent.(map[string]any); ok; m, ok = m["a"].(map[string]any) {
				d++
			}
			if d != tc.depth {
				t.Fatalf("depth %d: delivered %d levels", tc.depth, d)
			}
		case err == nil || !strings.Contains(err.Error(), tc.want):
			t.Fatalf("depth %d: %v, want an error saying %q", tc.depth, err, tc.want)
		}
		res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "ok"}})
		if err != nil || res.Content[0].(*mcp.TextContent).Text != "ok" {
			t.Fatalf("depth %d: a call after it: %v, %v", tc.depth, res, err)
		}
	}
}
