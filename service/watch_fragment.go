package service

import (
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

// Large watch events. A snapshot of 100,000 tools is about 9 MB, and so is
// the changes event of a laggard resuming across a large change: one
// message that size is over the server's send limit and every client's
// default receive limit (4 MiB in grpc-go, grpcio and grpc-js). A client
// that sets WatchCatalogRequest.fragment gets such an event split into
// parts of at most watchFragmentBytes (the response limit if lower), as
// etcd splits large watch responses (WatchCreateRequest.fragment,
// https://github.com/etcd-io/etcd/blob/main/api/etcdserverpb/rpc.proto):
// each part is an event of the same kind and revision holding some of the
// entries, fragment = true on all but the last, so a client never acts on
// part of an event. A client that did not ask gets the event whole, or,
// when it is over the response limit, RESOURCE_EXHAUSTED /
// RESPONSE_TOO_LARGE saying so (resuming would fail the same way). An
// entry too large for any message (one tool over the limit) is the same
// error for every client, naming the tool.

// watchFragmentBytes is the size parts of a split event aim for: well
// under the default receive limit of gRPC clients.
const watchFragmentBytes = 1 << 20

// eventMessages is one event as sent: one message, or the parts of a split
// event, or why it cannot be sent. Shared by every stream of a group.
type eventMessages struct {
	msgs []proto.Message
	err  error
}

// encodeEvent encodes an event for a stream that accepts fragments or
// not: the messages are pre-encoded (preEncode).
func (s *Server) encodeEvent(m *toolsvcv1.WatchCatalogResponse, fragment bool) eventMessages {
	limit := s.core.MaxResponseBytes()
	budget := limit
	if fragment {
		budget = min(watchFragmentBytes, limit)
	}
	parts := splitEvent(m, budget)
	kind := "event"
	if fd := m.ProtoReflect().WhichOneof(eventOneof); fd != nil {
		kind = string(fd.Name())
	}
	if !fragment && len(parts) > 1 {
		size := proto.Size(m)
		return eventMessages{err: plainError(core.ResourceExhausted, ReasonResponseTooLarge, fmt.Sprintf("the watch %s is %d bytes, over the %d-byte limit of one message (serve --max-response-bytes); "+
			"set WatchCatalogRequest.fragment to receive it in parts", kind, size, limit),
			map[string]string{"event": kind, "limit": "max-response-bytes", "limit_bytes": strconv.Itoa(limit), "size_bytes": strconv.Itoa(size)})}
	}
	out := eventMessages{msgs: make([]proto.Message, len(parts))}
	for i, p := range parts {
		if size := proto.Size(p); size > limit {
			// Only a part with a single entry can be over the limit.
			what, meta := "an entry", map[string]string{}
			if t := p.GetSnapshot().GetTools(); len(t) == 1 {
				what, meta["tool"] = fmt.Sprintf("tool %q", t[0].GetName()), t[0].GetName()
			} else if t := p.GetChanges().GetUpserted(); len(t) == 1 {
				what, meta["tool"] = fmt.Sprintf("tool %q", t[0].GetName()), t[0].GetName()
			}
			meta["event"], meta["limit"] = kind, "max-response-bytes"
			meta["limit_bytes"], meta["size_bytes"] = strconv.Itoa(limit), strconv.Itoa(size)
			return eventMessages{err: plainError(core.ResourceExhausted, ReasonResponseTooLarge, fmt.Sprintf("the watch %s holds %s of %d bytes, over the %d-byte limit of any message (serve --max-response-bytes)",
				kind, what, size, limit), meta)}
		}
		out.msgs[i] = preEncode(p)
	}
	return out
}

var eventOneof = (&toolsvcv1.WatchCatalogResponse{}).ProtoReflect().Descriptor().Oneofs().ByName("event")

// splitEvent returns m, or, when it is larger than budget bytes, parts of
// it: each a WatchCatalogResponse with m's revision and an event of m's
// kind holding consecutive entries of m's repeated fields (in field order)
// and every other field of m's event (snapshot.reset), fragment set on
// all but the last. A part holds at least one entry, so a part with one
// large entry may be over budget. Entries are shared with m.
func splitEvent(m *toolsvcv1.WatchCatalogResponse, budget int) []*toolsvcv1.WatchCatalogResponse {
	if proto.Size(m) <= budget {
		return []*toolsvcv1.WatchCatalogResponse{m}
	}
	fd := m.ProtoReflect().WhichOneof(eventOneof)
	if fd == nil || fd.Message() == nil {
		return []*toolsvcv1.WatchCatalogResponse{m}
	}
	ev := m.ProtoReflect().Get(fd).Message()
	newPart := func() (*toolsvcv1.WatchCatalogResponse, protoreflect.Message) {
		pe := ev.New()
		ev.Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			if !f.IsList() {
				pe.Set(f, v)
			}
			return true
		})
		p := &toolsvcv1.WatchCatalogResponse{Revision: m.GetRevision(), Fragment: true}
		p.ProtoReflect().Set(fd, protoreflect.ValueOfMessage(pe))
		return p, pe
	}
	cur, curEv := newPart()
	// The part without entries, plus the growth of the event's length
	// prefix (at most 4 more bytes below 256 MiB).
	base := proto.Size(cur) + 4
	size, n := base, 0
	var parts []*toolsvcv1.WatchCatalogResponse
	fields := ev.Descriptor().Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		if !f.IsList() {
			continue
		}
		src := ev.Get(f).List()
		for j := range src.Len() {
			v := src.Get(j)
			var es int
			if f.Kind() == protoreflect.MessageKind {
				es = protowire.SizeBytes(proto.Size(v.Message().Interface()))
			} else { // string lists (removed names)
				es = protowire.SizeBytes(len(v.String()))
			}
			es += protowire.SizeTag(f.Number())
			if n > 0 && size+es > budget {
				parts = append(parts, cur)
				cur, curEv = newPart()
				size, n = base, 0
			}
			curEv.Mutable(f).List().Append(v)
			size += es
			n++
		}
	}
	cur.Fragment = false
	return append(parts, cur)
}
