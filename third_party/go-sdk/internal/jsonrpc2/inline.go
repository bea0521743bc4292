// This file is a toolsvc patch (third_party/go-sdk.patch), under the
// module's license.

package jsonrpc2

import (
	"context"
	"errors"
	"fmt"
)

type inlineKeyType struct{}

// Inline reports whether ctx is (or descends from) the context of a
// request handled by [Connection.HandleInline] on its caller's goroutine.
func Inline(ctx context.Context) bool {
	v, _ := ctx.Value(inlineKeyType{}).(bool)
	return v
}

// HandleInline handles req, a request the caller read itself rather than
// through the connection's Reader, on the calling goroutine. It is
// accepted exactly as readIncoming accepts a request: registered by ID
// (so that a cancellation by ID reaches it, and a duplicate ID is
// refused), refused once the connection is shutting down, offered to the
// Preempter. Then, if no earlier request waits in the handler queue or
// is being handled synchronously (nothing it must stay behind), the
// Handler runs here and the response is written before HandleInline
// returns; otherwise the request joins the queue as readIncoming would
// queue it, and is answered by handleAsync.
//
// It saves what the Reader's path costs a request that its caller
// already holds: the hand-off to the reader goroutine, the queue, and a
// new goroutine (whose stack grows from its minimum) per request.
//
// On a connection already completely done (closed, its reader ended: the
// session closed between its caller's check and this call) it does
// nothing: counting the request in flight there would break the
// connection's state (updateInFlight panics, and every later Wait or
// Close with it); its caller treats the request as one arriving after the
// session closed.
func (c *Connection) HandleInline(msg *Request) {
	reqCtx, cancel := context.WithCancelCause(c.readCtx)
	req := &incomingRequest{
		Request: msg,
		ctx:     reqCtx,
		cancel:  cancel,
	}

	// As acceptRequest.
	var err error
	gone := false
	c.updateInFlight(func(s *inFlightState) {
		// c.done is closed only here, under the same lock: checked in f,
		// the connection cannot become done before the request counts.
		select {
		case <-c.done:
			gone = true
			return
		default:
		}
		s.incoming++
		if req.IsCall() {
			if s.incomingByID[req.ID] != nil {
				err = fmt.Errorf("%w: request ID %v already in use", ErrInvalidRequest, req.ID)
				req.ID = ID{} // Don't misattribute this error to the existing request.
				return
			}
			if s.incomingByID == nil {
				s.incomingByID = make(map[ID]*incomingRequest)
			}
			s.incomingByID[req.ID] = req
			err = s.shuttingDown(ErrServerClosing)
		}
	})
	if gone {
		cancel(ErrServerClosing)
		return
	}
	if err != nil {
		c.processResult("HandleInline", req, nil, err)
		return
	}
	if c.preempter != nil {
		result, err := c.preempter.Preempt(req.ctx, req.Request)
		if !errors.Is(err, ErrNotHandled) {
			c.processResult("Preempt", req, result, err)
			return
		}
	}

	inline := false
	c.updateInFlight(func(s *inFlightState) {
		err = s.shuttingDown(ErrServerClosing)
		if err != nil {
			return
		}
		if s.handlerRunning || len(s.handlerQueue) > 0 {
			// Something read before it is still to be handled, or is
			// being handled and has not let later requests go (Async):
			// after it, as readIncoming would have queued this one. The
			// running handleAsync takes it.
			s.handlerQueue = append(s.handlerQueue, req)
			if !s.handlerRunning {
				s.handlerRunning = true
				go c.handleAsync()
			}
			return
		}
		inline = true
	})
	if err != nil {
		c.processResult("HandleInline", req, nil, err)
		return
	}
	if !inline {
		return
	}
	// As handleAsync, without its goroutine: Async is a no-op on this
	// context (no releaser), since nothing waits for this request to let
	// others go.
	if err := req.ctx.Err(); err != nil {
		if cause := context.Cause(req.ctx); cause != nil {
			err = cause
		}
		c.processResult("HandleInline", req, nil, err)
		return
	}
	// A panic in the handler is the process's business, as on
	// handleAsync's goroutine; but here net/http recovers it and the
	// connection lives on, so the request is answered and counted out
	// first: otherwise its ID would stay in use and the connection never
	// idle (its Close would never return).
	defer func() {
		if r := recover(); r != nil {
			c.processResult("HandleInline", req, nil, fmt.Errorf("%w: panic in handler: %v", ErrInternal, r))
			panic(r)
		}
	}()
	// Only a handler running here is marked Inline (one queued above runs
	// on handleAsync's goroutine).
	result, err := c.handler.Handle(context.WithValue(req.ctx, inlineKeyType{}, true), req.Request)
	c.processResult(c.handler, req, result, err)
}
