package core

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// nested is a JSON value depth levels deep: an object whose "d" holds
// arrays.
func nested(depth int) string {
	return `{"d":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
}

// TestAnswerDepthBound: an answer nests at most MaxAnswerDepth levels,
// counted from the answer object, whether it comes as text (gRPC's
// content_json, one level inside the answer) or decoded (every wire).
func TestAnswerDepthBound(t *testing.T) {
	for _, tc := range []struct {
		contentDepth int
		refused      bool
	}{{MaxAnswerDepth - 1, false}, {MaxAnswerDepth, true}} {
		text := nested(tc.contentDepth)
		if e := CheckAnswerJSON("input_responses[0].elicitation.content_json", text, 2); (e != nil) != tc.refused {
			t.Errorf("content %d levels as text: %v, want refused %v", tc.contentDepth, e, tc.refused)
		} else if e != nil && (e.Reason != ReasonInputResponsesInvalid || e.Meta["max_depth"] != "996" || e.Violations[0].Field != "input_responses[0].elicitation.content_json") {
			t.Errorf("refusal = %+v", e)
		}
		var content map[string]any
		if err := json.Unmarshal([]byte(text), &content); err != nil {
			t.Fatal(err)
		}
		rs := map[string]mcp.InputResponse{"q1": &mcp.ElicitResult{Action: "accept", Content: content}}
		if e := checkAnswerBounds("input_responses", rs); (e != nil) != tc.refused {
			t.Errorf("content %d levels decoded: %v, want refused %v", tc.contentDepth, e, tc.refused)
		}
	}
	many := map[string]mcp.InputResponse{}
	for i := range MaxAnswers + 1 {
		many[strings.Repeat("x", i+1)] = &mcp.ElicitResult{Action: "decline"}
	}
	if e := checkAnswerBounds("input_responses", many); e == nil || e.Meta["limit"] != limitAnswers {
		t.Errorf("%d answers: %v, want refused by %s", len(many), e, limitAnswers)
	}
}

// TestCheckAnswerIDs: answers must answer exactly what was asked, each
// with its kind; an unasked id is quoted with its control characters
// escaped.
func TestCheckAnswerIDs(t *testing.T) {
	asked := answerKinds{"name": "elicitation", "model": "sampling"}
	ok := map[string]mcp.InputResponse{"name": &mcp.ElicitResult{Action: "decline"}, "model": &mcp.CreateMessageWithToolsResult{Role: "assistant"}}
	if e := checkAnswerIDs("input_responses", asked, ok, false); e != nil {
		t.Errorf("right answers refused: %v", e)
	}
	for name, rs := range map[string]map[string]mcp.InputResponse{
		"missing":    {"name": ok["name"]},
		"wrong kind": {"name": ok["model"], "model": ok["model"]},
		"unasked":    {"name": ok["name"], "model": ok["model"], "\x1bx": ok["name"]},
	} {
		e := checkAnswerIDs("input_responses", asked, rs, false)
		if e == nil || e.Reason != ReasonInputResponsesInvalid {
			t.Errorf("%s: %v, want INPUT_RESPONSES_INVALID", name, e)
			continue
		}
		if strings.Contains(e.Message, "\x1b") {
			t.Errorf("%s: the refusal echoes a control character: %q", name, e.Message)
		}
	}
}
