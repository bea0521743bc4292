package service

import (
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/types/known/emptypb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// wireCodec is gRPC's proto codec, except for the messages this service
// pre-encodes (watch events: an Empty whose unknown fields are the event;
// ListTools pages: a ListToolsResponse with only unknown fields). Their
// wire form is exactly those bytes, so the codec hands gRPC the shared,
// immutable bytes instead of copying them into a new buffer per stream:
// one change to 10,000 watchers, or a snapshot to each of them, costs no
// copy per watcher. Everything else, and every Unmarshal, is the proto
// codec's.
type wireCodec struct{ encoding.CodecV2 }

func newWireCodec() encoding.CodecV2 {
	return wireCodec{encoding.GetCodecV2(protocodec.Name)}
}

func (c wireCodec) Marshal(v any) (mem.BufferSlice, error) {
	if b := preEncodedBytes(v); len(b) > 0 {
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	return c.CodecV2.Marshal(v)
}

// preEncodedBytes returns the wire form of a pre-encoded message (nil for
// any other): a message with no known field set marshals to exactly its
// unknown fields.
func preEncodedBytes(v any) []byte {
	switch m := v.(type) {
	case *emptypb.Empty:
		return m.ProtoReflect().GetUnknown()
	case *toolsvcv1.ListToolsResponse:
		if m.Tools == nil && m.NextPageToken == "" && m.Revision == "" {
			return m.ProtoReflect().GetUnknown()
		}
	}
	return nil
}
