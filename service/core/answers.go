package core

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a caller answers an upstream (input_responses on gRPC, a front-door
// client's inputResponses or its answer to toolsvc's elicitation/create,
// sampling/createMessage or roots/list, UpdateTask's answers) is sent on
// like its arguments, so it is bounded like them before anything is sent
// (docs/security.md "What a caller answers"). Size is the request's
// (--max-request-bytes, checked at each edge); nesting and count are
// checked here, in the core, where every wire passes.

// MaxAnswerDepth bounds how deeply one answer nests (the answer object —
// an elicitation result, a sampling result, a roots list — is level 1;
// an elicitation's content is level 2). It is the arguments' rule
// (MaxArgumentsDepth) applied to the deepest place an answer is sent: a
// 2026-07-28 retry carries it three levels inside the JSON-RPC message
// ({"params": {"inputResponses": {"ID": answer}}}), one deeper than
// arguments, and go-sdk refuses a message nested deeper than 1000 levels
// by ending the session: an upstream's process exits, and a few such
// answers opened its breaker for every principal. A 2025-11-25 answer
// (a JSON-RPC result) sits shallower and gets the same bound.
const MaxAnswerDepth = 1000 - 3

// MaxAnswers bounds the answers one request carries before they are
// matched to what was asked (every answer must answer a request, so a
// request carries at most as many as were asked): 10,000 unasked ids made
// 10,000 violations before.
const MaxAnswers = 256

// Metadata "limit" values of answer refusals.
const (
	limitAnswerDepth = "max_answer_depth"
	limitAnswers     = "max_answers"
)

// checkAnswerBounds refuses answers past MaxAnswers or nested deeper than
// MaxAnswerDepth, naming field and the answer's id. An answer that does
// not encode is refused too: it could not be sent.
func checkAnswerBounds(field string, rs map[string]mcp.InputResponse) *Error {
	if len(rs) > MaxAnswers {
		e := InvalidArguments(Violation(field, fmt.Sprintf("%d answers, more than the %d one request may carry (at most one per request asked)", len(rs), MaxAnswers)))
		e.Reason = ReasonInputResponsesInvalid
		e.Meta = map[string]string{"limit": limitAnswers, "max_answers": strconv.Itoa(MaxAnswers)}
		return e
	}
	ids := make([]string, 0, len(rs))
	for id := range rs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		raw, err := json.Marshal(rs[id])
		if err != nil {
			e := InvalidArguments(Violation(field, fmt.Sprintf("the answer to request %q does not encode as JSON", Clip(id))))
			e.Reason = ReasonInputResponsesInvalid
			return e
		}
		if JSONNestsDeeper(raw, MaxAnswerDepth) {
			return answerDepthError(field, fmt.Sprintf("the answer to request %q", Clip(id)), MaxAnswerDepth)
		}
	}
	return nil
}

// answerDepthError refuses an answer (what: the part that is too deep)
// nested deeper than max levels; it does not echo it.
func answerDepthError(field, what string, max int) *Error {
	e := InvalidArguments(Violation(field, fmt.Sprintf("%s nests deeper than %d levels of objects and arrays, the limit for answers sent to an upstream", what, max)))
	e.Reason = ReasonInputResponsesInvalid
	e.Meta = map[string]string{"limit": limitAnswerDepth, "max_depth": strconv.Itoa(max)}
	return e
}

// CheckAnswerJSON is the wires' early check of one answer's JSON text
// before they decode it (gRPC's content_json and result_json): level is
// how deep the text's top value sits in its answer (1: the answer itself,
// 2: an elicitation's content). It scans bytes only; the core checks the
// decoded answers again (checkAnswerBounds).
func CheckAnswerJSON(field, text string, level int) *Error {
	max := MaxAnswerDepth - (level - 1)
	if JSONNestsDeeper(text, max) {
		return answerDepthError(field, "the value", max)
	}
	return nil
}

// answerKinds are what each request asked accepts as an answer, by id
// (inputKindName of the request).
type answerKinds map[string]string

func kindsOf(reqs mcp.InputRequestMap) answerKinds {
	out := make(answerKinds, len(reqs))
	for id, r := range reqs {
		out[id] = inputKindName(r)
	}
	return out
}

// answersKind reports whether r is an answer to a request of kind.
func answersKind(kind string, r mcp.InputResponse) bool {
	switch kind {
	case "elicitation", "elicitation_url":
		_, ok := r.(*mcp.ElicitResult)
		return ok
	case "sampling":
		_, ok := r.(*mcp.CreateMessageWithToolsResult)
		return ok
	case "roots":
		_, ok := r.(*mcp.ListRootsResult)
		return ok
	}
	return false
}

// checkAnswerIDs checks that responses answer exactly the requests asked
// (partial: some of them), each with an answer of its kind.
func checkAnswerIDs(field string, asked answerKinds, responses map[string]mcp.InputResponse, partial bool) *Error {
	var vs []FieldViolation
	ids := make([]string, 0, len(asked))
	for id := range asked {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r, ok := responses[id]
		switch {
		case !ok && partial:
		case !ok:
			vs = append(vs, Violation(field, fmt.Sprintf("no answer for request %q", Clip(id))))
		case !answersKind(asked[id], r):
			vs = append(vs, Violation(field, fmt.Sprintf("the answer to request %q is not of its kind (%s)", Clip(id), asked[id])))
		}
	}
	var unasked []string
	for id := range responses {
		if _, ok := asked[id]; !ok {
			unasked = append(unasked, id)
		}
	}
	sort.Strings(unasked)
	for _, id := range unasked {
		vs = append(vs, Violation(field, fmt.Sprintf("answers request %s, which was not asked", strconv.QuoteToASCII(Clip(id)))))
	}
	if len(vs) == 0 {
		return nil
	}
	e := InvalidArguments(vs...)
	e.Reason = ReasonInputResponsesInvalid
	return e
}
