package mcpgrpc

import (
	"context"
	"testing"
	"time"

	pb "github.com/toolsvc/toolsvc/gen/model_context_protocol"
	"github.com/toolsvc/toolsvc/internal/memupstream"
	"github.com/toolsvc/toolsvc/service/core"
)

// BenchmarkListTools is one ListTools of a 1,000-tool catalog, called on
// the server directly (no transport): what the wire adds to the listing.
func BenchmarkListTools(b *testing.B) {
	u := memupstream.New(b, 999) // and echo
	s := New(core.New(u.Bridge, core.Options{}), nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		res, err := s.ListTools(ctx, &pb.ListToolsRequest{})
		if err == nil && len(res.GetTools()) == 1000 {
			break
		}
		if ctx.Err() != nil {
			b.Fatal("the catalog never listed 1000 tools")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.ListTools(ctx, &pb.ListToolsRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}
