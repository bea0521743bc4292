package service

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/emptypb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

// wireCodec is gRPC's proto codec, except for the messages this service
// pre-encodes (watch events: an Empty whose unknown fields are the event;
// ListTools pages: a ListToolsResponse with only unknown fields). Their
// wire form is exactly those bytes, so the codec hands gRPC the shared,
// immutable bytes instead of copying them into a new buffer per stream:
// one change to 10,000 watchers, or a snapshot to each of them, costs no
// copy per watcher. Everything else is the proto codec's; a request that
// does not decode is marked for INVALID_ARGUMENT (see Unmarshal).
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

// undecodableField is the unknown field that marks a request that did not
// decode: the highest field number protobuf allows, which no toolsvc
// message uses.
const undecodableField protowire.Number = protowire.MaxValidNumber

// Unmarshal decodes a request (this codec is the server's: it decodes
// nothing else). grpc-go reports any codec error as INTERNAL ("grpc: error
// unmarshalling request"), before any interceptor runs, yet a request that
// does not decode (a string that is not UTF-8, a Struct nested past
// protobuf's recursion limit, malformed bytes) is the caller's fault. So a
// failure leaves the message empty but for a marker (unknown field
// undecodableField: the offending field's name, a NUL, the decoder's
// error), and the interceptors NewGRPCServer installs answer
// INVALID_ARGUMENT naming the field (undecodableUnary, undecodableStream).
func (c wireCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.CodecV2.Unmarshal(data, v)
	m, ok := v.(proto.Message)
	if err == nil || !ok {
		return err
	}
	field := blameField(m.ProtoReflect(), data.Materialize())
	proto.Reset(m)
	mark := protowire.AppendTag(nil, undecodableField, protowire.BytesType)
	mark = protowire.AppendString(mark, field+"\x00"+err.Error())
	m.ProtoReflect().SetUnknown(mark)
	return nil
}

// blameField names the top-level field of m whose bytes in b do not decode
// ("" when none can be singled out).
func blameField(m protoreflect.Message, b []byte) string {
	fields := m.Descriptor().Fields()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return ""
		}
		val := b[:n]
		b = b[n:]
		fd := fields.ByNumber(num)
		if fd == nil || typ != protowire.BytesType {
			continue
		}
		v, _ := protowire.ConsumeBytes(val)
		switch {
		case fd.IsMap():
			// A map entry: key (1) and value (2); strings must be UTF-8.
			if !utf8Fields(v) || (fd.MapValue().Kind() == protoreflect.MessageKind && !entryDecodes(m, fd, v)) {
				return string(fd.Name())
			}
		case fd.Kind() == protoreflect.StringKind:
			if !utf8.Valid(v) {
				return string(fd.Name())
			}
		case fd.Kind() == protoreflect.MessageKind && !fd.IsList():
			if proto.Unmarshal(v, m.NewField(fd).Message().Interface()) != nil {
				return string(fd.Name())
			}
		case fd.Kind() == protoreflect.MessageKind:
			if proto.Unmarshal(v, m.NewField(fd).List().NewElement().Message().Interface()) != nil {
				return string(fd.Name())
			}
		}
	}
	return ""
}

// utf8Fields reports whether every length-delimited field of a map entry
// is valid UTF-8 (toolsvc's maps are string to string).
func utf8Fields(b []byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 || !utf8.Valid(v) {
				return false
			}
			b = b[n:]
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return false
		}
		b = b[n:]
	}
	return true
}

// entryDecodes reports whether a map entry with a message value decodes.
func entryDecodes(m protoreflect.Message, fd protoreflect.FieldDescriptor, b []byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return false
		}
		if num == 2 && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[:n])
			if proto.Unmarshal(v, m.NewField(fd).Map().NewValue().Message().Interface()) != nil {
				return false
			}
		}
		b = b[n:]
	}
	return true
}

// undecodable returns the INVALID_ARGUMENT status for a request Unmarshal
// marked, or nil.
func undecodable(v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return nil
	}
	u := m.ProtoReflect().GetUnknown()
	for len(u) > 0 {
		num, typ, n := protowire.ConsumeTag(u)
		if n < 0 {
			return nil
		}
		u = u[n:]
		if num == undecodableField && typ == protowire.BytesType {
			b, _ := protowire.ConsumeBytes(u)
			field, cause, _ := strings.Cut(string(b), "\x00")
			return grpcStatus(decodeFailure(m.ProtoReflect().Descriptor(), field, cause)).Err()
		}
		if n = protowire.ConsumeFieldValue(num, typ, u); n < 0 {
			return nil
		}
		u = u[n:]
	}
	return nil
}

// decodeFailure is the refusal of a request that did not decode: field is
// the offending top-level field ("" if unknown), cause the decoder's error.
func decodeFailure(md protoreflect.MessageDescriptor, field, cause string) *core.Error {
	var desc string
	switch {
	case strings.Contains(cause, "invalid UTF-8"):
		desc = "contains a string that is not valid UTF-8 (protobuf strings must be)"
	case strings.Contains(cause, "recursion depth"):
		desc = "nests too deeply for protobuf to decode"
		if field == "arguments" {
			desc = fmt.Sprintf("nests too deeply for protobuf to decode; arguments nest at most %d levels of objects and arrays", core.MaxArgumentsDepth)
		}
	default:
		desc = fmt.Sprintf("does not decode as %s: %s", md.FullName(), clipText(cause))
	}
	if field == "" {
		field = "request"
		desc = fmt.Sprintf("the %s %s", md.Name(), desc)
	}
	if field == "arguments" || field == "arguments_json" {
		return core.InvalidArguments(core.Violation(field, desc))
	}
	return core.InvalidField(field, desc)
}

// undecodableUnary answers INVALID_ARGUMENT for a unary request the codec
// could not decode.
func undecodableUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := undecodable(req); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

// undecodableStream does the same for the requests a stream receives.
func undecodableStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return handler(srv, &decodeCheckedStream{ss})
}

type decodeCheckedStream struct{ grpc.ServerStream }

func (s *decodeCheckedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return undecodable(m)
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
