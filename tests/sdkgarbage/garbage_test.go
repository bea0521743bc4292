// Package sdkgarbage is a minimal, self-contained reproduction of go-sdk's
// per-message decode garbage, meant to be sent to the SDK's maintainers. It
// uses only go-sdk's public API and the standard library:
//
//	go test -run XXX -bench . -benchmem ./tests/sdkgarbage
//	go test -run XXX -bench SDKDecodeMessage -benchmem -memprofile mem.out ./tests/sdkgarbage
//	go tool pprof -sample_index=alloc_space -top mem.out
//
// go-sdk v1.8.0 decodes every JSON value through internal/json.Unmarshal,
// which builds a new segmentio/encoding json.Decoder over a bytes.Reader for
// each value; the decoder's first read allocates a 32 KiB buffer whatever the
// size of the value. A tools/call response is decoded three times on the
// client (readBatch's batch probe, the message, and the CallToolResult), so
// a 100-byte response costs about 100 KiB of garbage. The standard library's
// json.Unmarshal of the same bytes allocates about a hundred bytes per value
// (see docs/benchmarks.md for the figures).
package sdkgarbage

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A typical small tools/call response, as an upstream sends it.
const response = `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello"}],"isError":false}}`

const result = `{"content":[{"type":"text","text":"hello"}],"isError":false}`

// BenchmarkSDKDecodeMessage decodes one JSON-RPC response with go-sdk's
// public jsonrpc.DecodeMessage (what the transports do per message).
func BenchmarkSDKDecodeMessage(b *testing.B) {
	data := []byte(response)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jsonrpc.DecodeMessage(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdlibDecodeMessage decodes the same bytes into the same shape
// (envelope with a raw result) with encoding/json, for comparison.
func BenchmarkStdlibDecodeMessage(b *testing.B) {
	data := []byte(response)
	b.ReportAllocs()
	for b.Loop() {
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(data, &msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSDKCallToolResult decodes a CallToolResult (its UnmarshalJSON
// uses the SDK's internal decoder).
func BenchmarkSDKCallToolResult(b *testing.B) {
	data := []byte(result)
	b.ReportAllocs()
	for b.Loop() {
		var r mcp.CallToolResult
		if err := json.Unmarshal(data, &r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdlibCallToolResult decodes the same bytes into an equivalent
// plain struct with encoding/json.
func BenchmarkStdlibCallToolResult(b *testing.B) {
	data := []byte(result)
	b.ReportAllocs()
	for b.Loop() {
		var r struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		}
		if err := json.Unmarshal(data, &r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSDKCallRoundTrip is one tools/call of a trivial tool between a
// go-sdk client and server in one process (in-memory transports): the
// garbage of both ends per call.
func BenchmarkSDKCallRoundTrip(b *testing.B) {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil
		})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		cs.Close()
		ss.Wait()
	}()
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cs.CallTool(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
}
