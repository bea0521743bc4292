package service

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// benchSchema is a typical tool schema (a few typed properties).
var benchSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"file path"},` +
	`"limit":{"type":"integer","minimum":1,"maximum":1000,"default":100},"recursive":{"type":"boolean"}},"required":["path"]}`)

func benchFixture(b *testing.B, tools int) *watchFixture {
	f := newWatchFixture(b, nil, map[string][]string{"s": nil})
	for i := range tools {
		f.servers["s"].srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("tool_%05d", i), Description: "a generated tool of the benchmark",
			InputSchema: benchSchema}, noop)
	}
	f.waitCatalog(b, "the tools", func(s *mcpbridge.Snapshot) bool { return len(s.Tools) == tools })
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

// BenchmarkWatchFanout: one change delivered to 500 watchers of the whole
// catalog over one gRPC connection (bufconn); ns/op is the time until the
// last watcher has it. The watchers do not decode (discardCodec).
//
//	go test -run '^$' -bench WatchFanout -benchmem ./service
func BenchmarkWatchFanout(b *testing.B) {
	const watchers = 500
	f := benchFixture(b, 50)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan struct{}, watchers)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for range watchers {
		st, err := f.client.WatchCatalog(ctx, &toolsvcv1.WatchCatalogRequest{}, grpc.ForceCodecV2(discardCodec{}))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := st.Recv(); err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if _, err := st.Recv(); err != nil {
					return
				}
				got <- struct{}{} // no progress events: the interval is 30 s
			}
		}()
	}
	i := 0
	for b.Loop() {
		i++
		f.servers["s"].srv.AddTool(&mcp.Tool{Name: "tool_00000", Description: fmt.Sprint("change ", i), InputSchema: benchSchema}, noop)
		for range watchers {
			<-got
		}
	}
}
