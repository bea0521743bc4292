package service

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// benchSchema is a typical tool schema (a few typed properties).
var benchSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"file path"},` +
	`"limit":{"type":"integer","minimum":1,"maximum":1000,"default":100},"recursive":{"type":"boolean"}},"required":["path"]}`)

func benchFixture(b *testing.B, tools int) *watchFixture { return benchFixtureWith(b, tools, 0) }

// benchFixtureWith is benchFixture whose upstream also has resources
// resources and as many prompts (none: it declares neither kind).
func benchFixtureWith(b *testing.B, tools, resources int) *watchFixture {
	f := newWatchFixtureWith(b, nil, map[string][]string{"s": nil}, resources > 0)
	for i := range tools {
		f.servers["s"].srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("tool_%05d", i), Description: "a generated tool of the benchmark",
			InputSchema: benchSchema}, noop)
	}
	for i := range resources {
		f.servers["s"].putResource(fmt.Sprintf("file:///bench/resource_%05d.txt", i), "a generated resource of the benchmark")
		f.servers["s"].putPrompt(fmt.Sprintf("prompt_%05d", i), "a generated prompt of the benchmark")
	}
	f.waitCatalog(b, "the tools", func(s *mcpbridge.Snapshot) bool { return len(s.Tools) == tools })
	f.waitResources(b, "the resources", func(s *mcpbridge.ResourceSnapshot) bool {
		return len(s.Resources) == resources && len(s.Prompts) == resources
	})
	return f
}

// BenchmarkListToolsPage: one 1000-tool page through gRPC (bufconn), per
// schema format, next to what the edge did before pages were pre-encoded
// (build the page's messages and let gRPC marshal them: "encode-per-call",
// measured without the transport, so it is a lower bound of the old cost).
//
//	go test -run '^$' -bench ListToolsPage -benchmem ./service
func BenchmarkListToolsPage(b *testing.B) {
	f := benchFixture(b, 1000)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		format toolsvcv1.SchemaFormat
	}{{"struct", toolsvcv1.SchemaFormat_SCHEMA_FORMAT_STRUCT}, {"json", toolsvcv1.SchemaFormat_SCHEMA_FORMAT_JSON}} {
		b.Run("grpc-"+tc.name, func(b *testing.B) {
			for b.Loop() {
				resp, err := f.client.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: 1000, SchemaFormat: tc.format})
				if err != nil || len(resp.GetTools()) != 1000 {
					b.Fatal(err, len(resp.GetTools()))
				}
			}
		})
	}
	b.Run("encode-per-call-struct", func(b *testing.B) {
		snap := f.bridge.Catalog().Current()
		for b.Loop() {
			resp := &toolsvcv1.ListToolsResponse{Revision: snap.Revision}
			for _, t := range snap.Tools {
				resp.Tools = append(resp.Tools, toolToProto(t))
			}
			if _, err := proto.Marshal(resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("preencoded-page-json", func(b *testing.B) {
		snap := f.bridge.Catalog().Current()
		for b.Loop() {
			all := f.svc.cache.tools(snap, true, formatJSON)
			if _, err := proto.Marshal(encodedListPage(all, "", snap.Revision)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// discardCodec is a client codec that does not decode: the fan-out
// benchmark measures the server, not 500 clients decoding on the same cores.
type discardCodec struct{}

func (discardCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}
func (discardCodec) Unmarshal(mem.BufferSlice, any) error { return nil }
func (discardCodec) Name() string                         { return "proto" }
