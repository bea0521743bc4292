package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/service/core"
)

// The Playground's streamed, interactive call: one round of a tool call
// through the core's interactive call path (core/interact.go, the path
// CallToolStream and the MCP wires take), its progress and log messages
// relayed by core.Relay, answered as a stream of Server-Sent Events in
// the POST's response. A round ends with the result, or with "input": what
// the upstream asks (a form elicitation, a sampling request) and the
// request state the core signed; the page renders the request and posts
// the next round with the operator's answers and that state, with the
// page's CSRF token, as every action.

// streamRequest is one round of a Playground call.
type streamRequest struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	// State is the previous round's request state, verbatim.
	State string `json:"state"`
	// Responses answer the previous round's requests, by id.
	Responses map[string]streamAnswer `json:"responses"`
	// LogLevel is the least level of the upstream's log messages shown
	// ("" : all).
	LogLevel string `json:"logLevel"`
	// Task asks for the call to run as an MCP task: the stream then ends
	// with a "task" event, the task the page follows (GET
	// /ui/api/tasks/watch).
	Task bool `json:"task"`
	// TTLMs is the task's lifetime in milliseconds, as MCP's ttl (absent:
	// the upstream's default), under the one task.ttl rule of every wire
	// (core.TaskTTL).
	TTLMs *float64 `json:"ttlMs"`
}

// streamAnswer answers one request: an elicitation's action and content
// (a URL elicitation's action only), a sampling result (MCP's
// CreateMessageResult), or the roots the operator gives.
type streamAnswer struct {
	Elicitation *struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	} `json:"elicitation"`
	Sampling json.RawMessage `json:"sampling"`
	Roots    *[]rootAnswer   `json:"roots"`
}

// rootAnswer is one root the operator gives a roots/list request.
type rootAnswer struct {
	URI  string `json:"uri"`
	Name string `json:"name"`
}

// Bounds of the roots an operator gives one request (docs/security.md,
// "The console's answers"): a roots/list answer goes to the upstream as
// arguments do, so it is bounded like them.
const (
	MaxRoots        = 32
	MaxRootURIBytes = 2048
	MaxRootName     = 256
)

// inputEvent is what a round ends with when the upstream asks.
type inputEvent struct {
	State    string         `json:"state"`
	Expires  time.Time      `json:"expires,omitzero"`
	Requests []inputRequest `json:"requests"`
}

// inputRequest is one request, for the page to render as text: an
// elicitation's message and requested schema, a URL elicitation's message
// and URL (shown as text, opened only by the operator's explicit action), a
// sampling request's parameters (messages, system prompt, max tokens), or
// a roots request.
type inputRequest struct {
	ID            string          `json:"id"`
	Kind          string          `json:"kind"` // elicitation, url, sampling, roots, other
	Message       string          `json:"message,omitempty"`
	Schema        json.RawMessage `json:"schema,omitempty"`
	URL           string          `json:"url,omitempty"`
	ElicitationID string          `json:"elicitationId,omitempty"`
	Params        json.RawMessage `json:"params,omitempty"`
}

type progressEvent struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

type logEvent struct {
	Server string          `json:"server"`
	Level  string          `json:"level"`
	Logger string          `json:"logger,omitempty"`
	Data   json.RawMessage `json:"data"`
}

// callStream runs one round. Refusals before the call runs (the caller,
// the CSRF token, the body, the core's checks) are answered as JSON with
// their HTTP status, as every console action; once the stream has started,
// a failure is its "error" event. The stream holds one of the caller's
// console streams (MaxStreamsPerPrincipal) while it runs.
func (cs *Console) callStream(w http.ResponseWriter, r *http.Request) {
	c, e := cs.authenticate(r)
	if e == nil {
		e = cs.checkCSRF(c, r)
	}
	if e != nil {
		writeError(w, e)
		return
	}
	limit := cs.c.MaxRequestBytes()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(limit)+1))
	if err != nil || len(body) > limit {
		writeError(w, core.NewError(core.ResourceExhausted, core.ReasonRequestTooLarge,
			"the call is larger than the request limit (--max-request-bytes)", nil))
		return
	}
	var in streamRequest
	if err := json.Unmarshal(body, &in); err != nil {
		writeError(w, fieldError("body", "a JSON object {name, arguments, state, responses}"))
		return
	}
	if in.Name == "" {
		writeError(w, fieldError("name", "required: a tool's exposed name"))
		return
	}
	if in.LogLevel != "" && !core.ValidLogLevel(in.LogLevel) {
		writeError(w, fieldError("logLevel", fmt.Sprintf("want an MCP logging level (%s)", core.LogLevelsText)))
		return
	}
	release, e := cs.acquireStream(c.p.Name)
	if e != nil {
		writeError(w, e)
		return
	}
	defer release()
	// The Playground answers every kind: form and URL elicitations,
	// sampling, and roots (the operator's, bounded: MaxRoots).
	input := &core.InputOptions{Kinds: core.InputKinds{Form: true, URL: true, Sampling: true, Roots: true}, State: in.State}
	ci := core.CallInput{Name: in.Name, ArgumentsJSON: string(in.Arguments), Size: len(body),
		Fields: core.Fields{ArgumentsJSON: "arguments"}, Input: input}
	input.Responses, ci.Invalid = answers(in.Responses)
	if in.TTLMs != nil && !in.Task {
		writeError(w, fieldError("ttlMs", "a task's lifetime: only with task"))
		return
	}
	if in.Task {
		// A task's questions are the task's (its status input_required),
		// not this round's: the server's input policy answers them.
		ci.Input, ci.Task = nil, &core.TaskOptions{}
		if in.TTLMs != nil {
			// The one rule (a refusal names task.ttl), which BeginCall
			// reports as the round's refusal, with its audit line.
			ci.Task, ci.Invalid = taskTTL(*in.TTLMs)
		}
	}
	call, err := cs.c.BeginCall(c.ctx, ci)
	if err != nil {
		fail := call.Fail(err)
		call.End(fail, false, 0)
		writeError(w, fail)
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	sent := 0
	send := func(event string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if !cs.write(w, rc, event, b) {
			return errGone
		}
		sent += len(b)
		return nil
	}
	callCtx, cancel := context.WithCancel(call.Context())
	defer cancel()
	relay := core.Relay{
		Progress: func(p core.Progress) error {
			return send("progress", progressEvent{Progress: p.Progress, Total: p.Total, Message: p.Message})
		},
		Log: func(l core.Log) error {
			return send("log", logEvent{Server: l.Server, Level: string(l.Level), Logger: l.Logger, Data: l.Data})
		},
		LogLevel: mcp.LoggingLevel(in.LogLevel),
		Stop:     cancel,
	}
	res, callErr, sendErr := relay.Run(func(opts *core.CallOptions) (*mcp.CallToolResult, error) {
		return call.Dispatch(callCtx, opts)
	})
	isError := false
	err = callErr
	if sendErr != nil {
		err = sendErr
	}
	if err == nil {
		var ev string
		var v any = res
		if t := call.Task(); t != nil {
			ev, v = "task", rowOf(t)
		} else if core.NeedsInput(res) {
			ev, v = "input", cs.inputEvent(res)
		} else {
			ev, isError = "result", res.IsError
		}
		var b []byte
		if b, err = json.Marshal(v); err == nil {
			if err = call.CheckResult(len(b)); err == nil && !cs.write(w, rc, ev, b) {
				err = errGone
			}
			sent += len(b)
		}
	}
	fail := call.Fail(err)
	call.End(fail, isError, sent)
	if fail != nil && err != errGone {
		_ = send("error", errorOf(fail))
	}
}

// errGone: the page stopped reading (a write failed or timed out).
var errGone = core.NewError(core.Canceled, core.ReasonCancelled, "the console page stopped reading the call's stream", nil)

func errorOf(e *core.Error) errorBody {
	b := errorBody{Code: codeName(e.Code), Reason: e.Reason, Message: e.Message, Meta: e.Meta}
	for _, v := range e.Violations {
		b.Fields = append(b.Fields, fieldBody(v))
	}
	return b
}

// inputEvent is an input_required for the page, its requests by id.
func (cs *Console) inputEvent(res *mcp.CallToolResult) inputEvent {
	exp, _, _ := cs.c.InputExpiry(res.RequestState)
	return inputEvent{State: res.RequestState, Expires: exp, Requests: inputRequestsOf(res.InputRequests)}
}

// inputRequestsOf is what an input_required asks (a call's, or a
// 2026-07-28 task's), by id, for the page to render.
func inputRequestsOf(m mcp.InputRequestMap) []inputRequest {
	out := []inputRequest{}
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r := inputRequest{ID: id}
		switch p := m[id].(type) {
		case *mcp.ElicitParams:
			if p.Mode == "url" || (p.Mode == "" && p.URL != "") {
				r.Kind, r.Message, r.URL, r.ElicitationID = "url", p.Message, p.URL, p.ElicitationID
				break
			}
			r.Kind, r.Message = "elicitation", p.Message
			r.Schema, _ = json.Marshal(p.RequestedSchema)
		case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
			r.Kind = "sampling"
			r.Params, _ = json.Marshal(p)
		case *mcp.ListRootsParams:
			r.Kind = "roots"
		default:
			r.Kind = "other"
		}
		out = append(out, r)
	}
	return out
}

// answers decodes a round's answers (nil: none), bounded like arguments
// before they are decoded (core.CheckAnswerJSON; the core checks the
// decoded answers again), or the error of the answer at fault.
func answers(rs map[string]streamAnswer) (map[string]mcp.InputResponse, *core.Error) {
	if len(rs) == 0 {
		return nil, nil
	}
	if len(rs) > core.MaxAnswers {
		return nil, fieldError("responses", fmt.Sprintf("%d answers, more than the %d a round may carry", len(rs), core.MaxAnswers))
	}
	ids := make([]string, 0, len(rs))
	for id := range rs {
		ids = append(ids, id)
	}
	sort.Strings(ids) // the first bad answer is the same on every try
	out := make(map[string]mcp.InputResponse, len(rs))
	for _, id := range ids {
		a := rs[id]
		field := fmt.Sprintf("responses[%q]", core.Clip(id))
		set := 0
		for _, b := range []bool{a.Elicitation != nil, a.Sampling != nil, a.Roots != nil} {
			if b {
				set++
			}
		}
		switch {
		case set != 1:
			return nil, core.InvalidField(field, "set one of elicitation, sampling, roots")
		case a.Roots != nil:
			res, e := rootsOf(field+".roots", *a.Roots)
			if e != nil {
				return nil, e
			}
			out[id] = res
		case a.Elicitation != nil:
			el := a.Elicitation
			switch el.Action {
			case "accept", "decline", "cancel":
			default:
				return nil, core.InvalidField(field+".elicitation.action", fmt.Sprintf("want accept, decline or cancel, got %q", core.Clip(el.Action)))
			}
			res := &mcp.ElicitResult{Action: el.Action}
			if len(el.Content) > 0 && string(el.Content) != "null" {
				if e := core.CheckAnswerJSON(field+".elicitation.content", string(el.Content), 2); e != nil {
					return nil, e
				}
				if err := json.Unmarshal(el.Content, &res.Content); err != nil || res.Content == nil {
					return nil, core.InvalidField(field+".elicitation.content", "must be a JSON object")
				}
			}
			out[id] = res
		default: // a.Sampling
			if e := core.CheckAnswerJSON(field+".sampling", string(a.Sampling), 1); e != nil {
				return nil, e
			}
			res := new(mcp.CreateMessageWithToolsResult)
			if err := json.Unmarshal(a.Sampling, res); err != nil || res.Role == "" || len(res.Content) == 0 {
				return nil, core.InvalidField(field+".sampling", "must be an MCP sampling result with role, content and model")
			}
			out[id] = res
		}
	}
	return out, nil
}

// rootsOf is the operator's roots as a roots/list result, each checked:
// at most MaxRoots, each a file: URI (what MCP's roots are) of at most
// MaxRootURIBytes, its name at most MaxRootName bytes; the field named
// is the root at fault.
func rootsOf(field string, rs []rootAnswer) (*mcp.ListRootsResult, *core.Error) {
	if len(rs) > MaxRoots {
		return nil, core.InvalidField(field, fmt.Sprintf("%d roots, more than %d", len(rs), MaxRoots))
	}
	res := &mcp.ListRootsResult{Roots: make([]*mcp.Root, 0, len(rs))}
	for i, r := range rs {
		f := fmt.Sprintf("%s[%d]", field, i)
		switch u, err := url.Parse(r.URI); {
		case len(r.URI) > MaxRootURIBytes:
			return nil, core.InvalidField(f+".uri", fmt.Sprintf("longer than %d bytes", MaxRootURIBytes))
		case err != nil || u.Scheme != "file" || u.Path == "":
			return nil, core.InvalidField(f+".uri", fmt.Sprintf("want a file: URI (file:///path), got %q", core.Clip(r.URI)))
		case len(r.Name) > MaxRootName:
			return nil, core.InvalidField(f+".name", fmt.Sprintf("longer than %d bytes", MaxRootName))
		}
		res.Roots = append(res.Roots, &mcp.Root{URI: r.URI, Name: r.Name})
	}
	return res, nil
}

// taskTTL is the core's task options for a lifetime asked in milliseconds
// (a value past any duration saturates, so it stays over the bound).
func taskTTL(ms float64) (*core.TaskOptions, *core.Error) {
	ttl := time.Duration(math.MaxInt64)
	if ms < float64(math.MaxInt64/int64(time.Millisecond)) {
		ttl = time.Duration(ms * float64(time.Millisecond))
	}
	return core.TaskTTL(ttl)
}
