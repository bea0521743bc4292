package mcpbridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Reaching a 2025-11-25 task on a session this bridge does not hold.
//
// A 2025-11-25 task is bound to the upstream session that created it. On
// streamable HTTP that session is named by its Mcp-Session-Id alone, and it
// outlives the client that opened it until it is deleted (DELETE) or the
// upstream drops it: another replica, or this one after a reconnect or a
// restart, can still ask about the task by sending the request with that
// session id. So a TaskRef names the upstream's session id, and a tasks/*
// request whose session is not the bridge's current one goes as one plain
// JSON-RPC POST on that session (no initialize: the session is initialized
// already), decoded with go-sdk's jsonrpc codec; a 404 means the upstream
// no longer has the session (or 400, as the TypeScript SDK's transports
// answer a session they do not know). For the same reason a bridge never deletes an
// HTTP session that owns tasks not seen finished (its connection sends no
// DELETE: sessionTasks.keepSession): the upstream reclaims it on its own
// terms.
//
// stdio sessions cannot be reached this way: their tasks live and die with
// the child process of the replica that created them.

// foreignSession reports whether a request about ref must go on the
// upstream session ref names rather than on the bridge's current one.
func (u *upstream) foreignSession(ctx context.Context, ref TaskRef) bool {
	if ref.Era != TaskEra2025 || u.cfg.Transport != TransportStreamableHTTP || ref.Session == "" ||
		strings.HasPrefix(ref.Session, localOwnerPrefix) {
		return false
	}
	// The session the caller's request goes on: on a per-user upstream the
	// task's owner is the caller (the handle is sealed to its principal).
	s := u.source.current(ctx)
	if s == nil {
		return true
	}
	era, owner := s.tasks.current()
	return era != TaskEra2025 || owner != ref.Session
}

// foreignTaskRequest sends one tasks/* request about ref on ref's upstream
// session, bounded by the server's callTimeout, and returns the raw result.
func (b *Bridge) foreignTaskRequest(ctx context.Context, u *upstream, ref TaskRef, method string, p *taskParams) (json.RawMessage, error) {
	ctx, cancel, _ := u.withCallTimeout(ctx)
	defer cancel()
	params, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	id, _ := jsonrpc.MakeID(float64(1))
	body, err := jsonrpc.EncodeMessage(&jsonrpc.Request{ID: id, Method: method, Params: params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", ref.Session)
	req.Header.Set("Mcp-Protocol-Version", string(TaskEra2025))
	if u.oauth != nil {
		tok, err := u.oauth.Token()
		if err != nil || tok == nil {
			return nil, &UnavailableError{Server: u.cfg.Name, Reason: ReasonNoSession}
		}
		tok.SetAuthHeader(req)
	}
	// The caller's credentials, as on the caller's own session.
	base := u.source.authorize(callerOf(ctx).principal, u.http.Transport)
	hc := &http.Client{Transport: &limitRoundTripper{base: base, limit: u.maxMessage(), log: u.log}, CheckRedirect: u.checkRedirect}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ce *CredentialsError
		var ue *UnavailableError
		if errors.As(err, &ce) {
			return nil, ce
		}
		if errors.As(err, &ue) {
			return nil, ue
		}
		u.log.Debug("task request on another session failed", "request", method, "error", u.redact(err.Error()))
		return nil, &UnavailableError{Server: u.cfg.Name, Reason: ReasonNoSession}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusBadRequest:
		// The spec's answer to an unknown session id is 404; a server
		// built like the TypeScript SDK's example hands the request to a
		// fresh transport, which answers 400 "Server not initialized"
		// (docs/upstream-behaviour.md §7).
		return nil, &TaskNotFoundError{Server: ref.Server, TaskID: ref.ID, SessionEnded: true}
	case resp.StatusCode != http.StatusOK:
		u.log.Debug("task request on another session refused", "request", method, "status", resp.StatusCode)
		return nil, &UnavailableError{Server: u.cfg.Name, Reason: ReasonNoSession}
	}
	msg, err := readResponse(resp, id)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var tooBig *ResponseTooLargeError
		if errors.As(err, &tooBig) {
			return nil, err
		}
		return nil, &MalformedAnswerError{Server: u.cfg.Name, Detail: u.redact(method + ": " + err.Error())}
	}
	if msg.Error != nil {
		var werr *jsonrpc.Error
		if errors.As(msg.Error, &werr) {
			return nil, &UpstreamError{Server: u.cfg.Name, Code: werr.Code, Message: u.redact(werr.Message)}
		}
		return nil, &MalformedAnswerError{Server: u.cfg.Name, Detail: u.redact(method + ": " + msg.Error.Error())}
	}
	return msg.Result, nil
}

// readResponse reads the response to request id from a streamable-HTTP
// answer: one JSON message, or an event stream whose events carry it
// (requests the upstream sends meanwhile are not answered: nothing on a
// foreign session asks for input).
func readResponse(resp *http.Response, id jsonrpc.ID) (*jsonrpc.Response, error) {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	match := func(data []byte) (*jsonrpc.Response, error) {
		m, err := jsonrpc.DecodeMessage(data)
		if err != nil {
			return nil, err
		}
		if r, ok := m.(*jsonrpc.Response); ok && r.ID == id {
			return r, nil
		}
		return nil, nil
	}
	if ct != "text/event-stream" {
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		r, err := match(data)
		if err == nil && r == nil {
			err = errors.New("the answer is not the request's response")
		}
		return r, err
	}
	rd := bufio.NewReader(resp.Body)
	var data bytes.Buffer
	for {
		line, err := rd.ReadBytes('\n')
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0 && data.Len() > 0: // the event ends
			r, derr := match(data.Bytes())
			if derr != nil {
				return nil, derr
			}
			if r != nil {
				return r, nil
			}
			data.Reset()
		case bytes.HasPrefix(line, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" ")))
		}
		if err != nil {
			if err == io.EOF && data.Len() > 0 {
				if r, derr := match(data.Bytes()); derr != nil || r != nil {
					return r, derr
				}
			}
			if err == io.EOF {
				return nil, fmt.Errorf("the event stream ended without the response")
			}
			return nil, err
		}
	}
}
