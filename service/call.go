package service

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
)

// callRequest is what CallToolRequest and CallToolStreamRequest share.
type callRequest interface {
	proto.Message
	GetName() string
	GetArguments() *structpb.Struct
	GetArgumentsJson() string
}

// preparedCall is a request that passed the edge's checks.
type preparedCall struct {
	target callTarget
	args   any // map[string]any, json.RawMessage (forwarded verbatim), or nil
}

// prepare checks a call at the edge, before anything is sent upstream: the
// request size, the name, that the arguments are one JSON object, and that
// they satisfy the tool's inputSchema (unless the tool's server has
// validation turned off, or its schema cannot be compiled).
func (s *Server) prepare(req callRequest) (*preparedCall, error) {
	t := callTarget{tool: req.GetName()}
	if size := proto.Size(req); size > s.opts.MaxRequestBytes {
		return nil, tooLarge(t, ReasonRequestTooLarge, "request", "max-request-bytes", size, s.opts.MaxRequestBytes)
	}
	if req.GetName() == "" {
		return nil, invalidArgument("name", "required: the exposed tool name from ListTools")
	}
	tool, ok := s.bridge.Catalog().Current().Lookup(req.GetName())
	if !ok {
		select {
		case <-s.bridge.Ready():
		default:
			// Still discovering: the tool may exist in a moment (or on
			// another replica), so this is retryable, not NOT_FOUND.
			return nil, callStatus(&mcpbridge.UnavailableError{Reason: mcpbridge.ReasonStarting, RetryAfter: time.Second}, t, false)
		}
		return nil, callStatus(fmt.Errorf("%w: %q", mcpbridge.ErrToolNotFound, req.GetName()), t, false)
	}
	t.server = tool.Server
	validate := s.bridge.ValidatesArguments(tool.Server)
	field := "arguments"
	p := &preparedCall{target: t}
	var obj map[string]any
	switch {
	case req.GetArguments() != nil && req.GetArgumentsJson() != "":
		return nil, invalidFields(t, "arguments_json", violation("arguments_json", "set at most one of arguments and arguments_json"))
	case req.GetArgumentsJson() != "":
		field = "arguments_json"
		text := req.GetArgumentsJson()
		if validate {
			m, err := decodeArgumentsJSON(text)
			if err != nil {
				return nil, invalidFields(t, field, violation(field, "must be a JSON object: "+err.Error()))
			}
			obj = m
		} else if !isJSONObject(text) {
			return nil, invalidFields(t, field, violation(field, "must be a JSON object"))
		}
		// Forwarded as the caller wrote it: numbers keep every digit.
		p.args = json.RawMessage(text)
	case req.GetArguments() != nil:
		obj = req.GetArguments().AsMap()
		p.args = obj
	default:
		obj = map[string]any{}
	}
	if validate {
		cs := s.schemas.get(tool.SchemaHash, tool.InputSchema)
		if cs.resolved == nil {
			s.log.Debug("arguments not validated", "tool", tool.Name, "why", cs.problem)
		} else if vs := cs.validate(field, obj); len(vs) > 0 {
			return nil, invalidFields(t, field, vs...)
		}
	}
	return p, nil
}

func isJSONObject(text string) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal([]byte(text), &m) == nil && m != nil
}

// finish maps the bridge's answer: errors once, here; results checked
// against the response size limit.
func (s *Server) finish(ctx context.Context, p *preparedCall, res *toolsvcv1.CallToolResponse, err error) (*toolsvcv1.CallToolResponse, error) {
	if err != nil {
		_, callerDeadline := ctx.Deadline()
		st := callStatus(err, p.target, callerDeadline)
		if ctx.Err() != nil {
			s.log.Debug("call ended by the caller", "tool", p.target.tool, "error", ctx.Err())
		}
		return nil, st
	}
	if size := proto.Size(res); size > s.opts.MaxResponseBytes {
		s.log.Info("result over the response limit", "tool", p.target.tool, "size", size, "limit", s.opts.MaxResponseBytes)
		return nil, tooLarge(p.target, ReasonResponseTooLarge, "response", "max-response-bytes", size, s.opts.MaxResponseBytes)
	}
	return res, nil
}

// CallTool implements toolsvc.v1.ToolService.
func (s *Server) CallTool(ctx context.Context, req *toolsvcv1.CallToolRequest) (*toolsvcv1.CallToolResponse, error) {
	p, err := s.prepare(req)
	if err != nil {
		return nil, err
	}
	res, err := s.bridge.CallTool(ctx, req.GetName(), p.args, &mcpbridge.CallOptions{Principal: principalName(ctx)})
	var out *toolsvcv1.CallToolResponse
	if err == nil {
		out = resultToProto(res, s.log)
	}
	return s.finish(ctx, p, out, err)
}

// CallToolStream implements toolsvc.v1.ToolService. Progress goes to the
// stream in order, then the result. The bridge's progress callback runs on
// the upstream session's notification path, so it only appends to a
// bounded queue and signals; this stream's sender goroutine takes it from
// there. A reader that keeps up sees every notification; a slow one sees
// merged progress (the latest replaces the newest waiting once
// progressBacklog are waiting), and never holds up the session. Progress
// that arrives after the result is dropped by the bridge.
func (s *Server) CallToolStream(req *toolsvcv1.CallToolStreamRequest, stream grpc.ServerStreamingServer[toolsvcv1.CallToolStreamResponse]) error {
	p, err := s.prepare(req)
	if err != nil {
		return err
	}
	ctx := stream.Context()
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	queue := newProgressQueue()
	var (
		wg      sync.WaitGroup
		sendErr error // written by the sender, read after wg.Wait
	)
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-queue.ready:
				for _, pr := range queue.take() {
					if err := stream.Send(progressMessage(pr)); err != nil {
						sendErr = err
						cancel() // nobody is reading: stop the call
						return
					}
				}
			}
		}
	}()
	res, callErr := s.bridge.CallTool(callCtx, req.GetName(), p.args, &mcpbridge.CallOptions{OnProgress: queue.put, Principal: principalName(ctx)})
	close(done)
	wg.Wait()
	if sendErr != nil {
		return sendErr
	}
	// Progress that arrived before the result but was not sent yet.
	for _, pr := range queue.take() {
		if err := stream.Send(progressMessage(pr)); err != nil {
			return err
		}
	}
	var out *toolsvcv1.CallToolResponse
	if callErr == nil {
		out = resultToProto(res, s.log)
	}
	out, err = s.finish(ctx, p, out, callErr)
	if err != nil {
		return err
	}
	return stream.Send(&toolsvcv1.CallToolStreamResponse{Event: &toolsvcv1.CallToolStreamResponse_Result{Result: out}})
}

func progressMessage(pr mcpbridge.Progress) *toolsvcv1.CallToolStreamResponse {
	m := &toolsvcv1.CallToolProgress{Progress: pr.Progress, Message: pr.Message}
	if pr.Total > 0 {
		total := pr.Total
		m.Total = &total
	}
	return &toolsvcv1.CallToolStreamResponse{Event: &toolsvcv1.CallToolStreamResponse_Progress{Progress: m}}
}

// progressBacklog bounds the undelivered progress of one call. A reader
// that keeps up sees every notification; one that falls this far behind
// sees the oldest ones and then the latest.
const progressBacklog = 32

// progressQueue holds the undelivered progress of one call. put never
// blocks: it appends, or when progressBacklog are waiting it overwrites the
// newest (latest wins), and does a non-blocking send on a capacity-1
// signal.
type progressQueue struct {
	mu    sync.Mutex
	items []mcpbridge.Progress
	ready chan struct{}
}

func newProgressQueue() *progressQueue { return &progressQueue{ready: make(chan struct{}, 1)} }

func (q *progressQueue) put(pr mcpbridge.Progress) {
	q.mu.Lock()
	if len(q.items) < progressBacklog {
		q.items = append(q.items, pr)
	} else {
		q.items[len(q.items)-1] = pr
	}
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take removes and returns everything waiting, oldest first.
func (q *progressQueue) take() []mcpbridge.Progress {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}
