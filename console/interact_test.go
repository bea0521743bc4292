package console

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/service/core"
)

// TestAnswers: a round's answers are decoded into the core's input
// responses, and a bad one is refused naming its field.
func TestAnswers(t *testing.T) {
	dec := func(s string) map[string]streamAnswer {
		var m map[string]streamAnswer
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	got, e := answers(dec(`{"order": {"elicitation": {"action": "accept", "content": {"item": "tea", "count": 2}}},
		"model": {"sampling": {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "model": "op"}}}`))
	if e != nil {
		t.Fatal(e)
	}
	if er, ok := got["order"].(*mcp.ElicitResult); !ok || er.Action != "accept" || er.Content["item"] != "tea" {
		t.Errorf("order = %#v", got["order"])
	}
	if sr, ok := got["model"].(*mcp.CreateMessageWithToolsResult); !ok || sr.Role != "assistant" || len(sr.Content) != 1 {
		t.Errorf("model = %#v", got["model"])
	}
	deep := strings.Repeat(`{"a":`, core.MaxAnswerDepth+1) + "1" + strings.Repeat("}", core.MaxAnswerDepth+1)
	for _, c := range []struct{ in, field string }{
		{`{"q": {"elicitation": {"action": "maybe"}}}`, `responses["q"].elicitation.action`},
		{`{"q": {"elicitation": {"action": "accept", "content": [1]}}}`, `responses["q"].elicitation.content`},
		{`{"q": {"elicitation": {"action": "accept", "content": ` + deep + `}}}`, `responses["q"].elicitation.content`},
		{`{"q": {"sampling": {"content": [{"type": "text", "text": "hi"}]}}}`, `responses["q"].sampling`},
		{`{"q": {}}`, `responses["q"]`},
	} {
		_, e := answers(dec(c.in))
		if e == nil || len(e.Violations) == 0 || e.Violations[0].Field != c.field {
			t.Errorf("answers(%.60s) = %v, want a refusal naming %s", c.in, e, c.field)
		}
	}
}
