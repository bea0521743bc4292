package mcpbridge

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Raw results: the MCP front door passes a tools/call or
// resources/read result that needs no change to its client as the upstream
// sent it, instead of encoding go-sdk's decoded value again. The bridge
// keeps the bytes the upstream sent next to the value go-sdk decoded them
// into:
//
//   - a caller asks with WithRawResults (the front door, for the requests
//     it may pass through; the gRPC edge never asks);
//   - each upstream request it makes (Session.call, ReadResource) gets a
//     rawRequest in its context, which the session's task tap (taskTap,
//     tasktap.go) registers when it writes the request, and fills with the
//     response's result when it reads it, before go-sdk decodes it;
//   - once go-sdk has decoded it, the bytes are bound to the decoded value
//     (RawResults.bind), and RawResults.Of gives them back only for that
//     very value. A result the core made itself (an input_required of a
//     parked call), or one that reached another request (a parked call's
//     result taken by its retry), is another value: it has no raw bytes,
//     and the front door encodes it as before.
//
// Every transport but streamable HTTP records them (taskTap says why HTTP
// does not yet: its results are the tests' slow-path reference).
//
// The bytes alias the message as the connection decoded it: toolsvc's
// stdio connection decodes each line from a copy of its own that nothing
// reuses (stdioconn.go); the streamable HTTP connection decodes a JSON body
// it allocated for that message, and an event's data through go-sdk's
// decoder, which copies every raw value (so the reused frame buffer is
// never aliased); go-sdk's connections hand the message to another
// goroutine, so they never reuse it either.

// RawResults collects the raw result of the requests a caller makes with
// its context (WithRawResults); it keeps the last one bound to its decoded
// value. Safe for concurrent use: a parked interactive call's upstream
// request runs on a goroutine of its own.
type RawResults struct {
	mu  sync.Mutex
	res any
	raw json.RawMessage
}

type rawResultsKey struct{}

// WithRawResults is ctx asking the bridge to keep the raw result of the
// tools/call and resources/read requests made with it in r.
func WithRawResults(ctx context.Context, r *RawResults) context.Context {
	return context.WithValue(ctx, rawResultsKey{}, r)
}

// Of returns the bytes the upstream sent for res, when res is the very
// value (a *mcp.CallToolResult or *mcp.ReadResourceResult) the bridge
// decoded them into.
func (r *RawResults) Of(res any) (json.RawMessage, bool) {
	if r == nil || res == nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.res != res || len(r.raw) == 0 {
		return nil, false
	}
	return r.raw, true
}

func (r *RawResults) bind(res any, raw json.RawMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res, r.raw = res, raw
}

// rawRequest is one upstream request whose raw result is wanted.
type rawRequest struct {
	mu  sync.Mutex
	raw json.RawMessage
	// where the task tap registered it (taskTap), for finish to forget
	// a registration whose answer never came (a cancelled request)
	st *sessionTasks
	id jsonrpc.ID
}

type rawRequestKey struct{}

// startRaw returns ctx with a rawRequest for one upstream request when
// the caller asked for raw results (nil otherwise).
func startRaw(ctx context.Context) (context.Context, *rawRequest) {
	if _, ok := ctx.Value(rawResultsKey{}).(*RawResults); !ok {
		return ctx, nil
	}
	rq := &rawRequest{}
	return context.WithValue(ctx, rawRequestKey{}, rq), rq
}

// rawRequestOf is the rawRequest of the request being written with ctx.
func rawRequestOf(ctx context.Context) *rawRequest {
	rq, _ := ctx.Value(rawRequestKey{}).(*rawRequest)
	return rq
}

// registered notes where the connection registered the request.
func (rq *rawRequest) registered(st *sessionTasks, id jsonrpc.ID) {
	rq.mu.Lock()
	defer rq.mu.Unlock()
	rq.st, rq.id = st, id
}

func (rq *rawRequest) record(raw json.RawMessage) {
	rq.mu.Lock()
	defer rq.mu.Unlock()
	rq.raw = raw
}

// finish binds the recorded bytes to res, the value go-sdk decoded them
// into (nothing on error, or when nothing was recorded).
func (rq *rawRequest) finish(ctx context.Context, res any, err error) {
	if rq == nil {
		return
	}
	rq.mu.Lock()
	raw, st, id := rq.raw, rq.st, rq.id
	rq.mu.Unlock()
	if st != nil {
		st.take(id) // a no-op once its answer was read
	}
	if err != nil || res == nil || len(raw) == 0 {
		return
	}
	if r, ok := ctx.Value(rawResultsKey{}).(*RawResults); ok {
		r.bind(res, raw)
	}
}

// rawRecorded reports the methods whose results may be recorded raw.
func rawRecorded(req *jsonrpc.Request) bool {
	return req.Method == "tools/call" || req.Method == "resources/read"
}
