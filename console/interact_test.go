package console

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
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
	got, e = answers(dec(`{"roots": {"roots": [{"uri": "file:///srv/a", "name": "a"}, {"uri": "file:///b"}]}, "login": {"elicitation": {"action": "accept"}}}`))
	if e != nil {
		t.Fatal(e)
	}
	if rr, ok := got["roots"].(*mcp.ListRootsResult); !ok || len(rr.Roots) != 2 || rr.Roots[0].URI != "file:///srv/a" || rr.Roots[0].Name != "a" {
		t.Errorf("roots = %#v", got["roots"])
	}
	if er, ok := got["login"].(*mcp.ElicitResult); !ok || er.Action != "accept" || er.Content != nil {
		t.Errorf("login (a URL elicitation's answer) = %#v", got["login"])
	}
	deep := strings.Repeat(`{"a":`, core.MaxAnswerDepth+1) + "1" + strings.Repeat("}", core.MaxAnswerDepth+1)
	for _, c := range []struct{ in, field string }{
		{`{"q": {"elicitation": {"action": "maybe"}}}`, `responses["q"].elicitation.action`},
		{`{"q": {"elicitation": {"action": "accept", "content": [1]}}}`, `responses["q"].elicitation.content`},
		{`{"q": {"elicitation": {"action": "accept", "content": ` + deep + `}}}`, `responses["q"].elicitation.content`},
		{`{"q": {"sampling": {"content": [{"type": "text", "text": "hi"}]}}}`, `responses["q"].sampling`},
		{`{"q": {}}`, `responses["q"]`},
		{`{"q": {"elicitation": {"action": "accept"}, "roots": []}}`, `responses["q"]`},
		{`{"q": {"roots": [{"uri": "file:///a"}, {"uri": "https://x.example/"}]}}`, `responses["q"].roots[1].uri`},
		{`{"q": {"roots": [{"uri": "file:///` + strings.Repeat("a", MaxRootURIBytes) + `"}]}}`, `responses["q"].roots[0].uri`},
		{`{"q": {"roots": [{"uri": "file:///a", "name": "` + strings.Repeat("n", MaxRootName+1) + `"}]}}`, `responses["q"].roots[0].name`},
		{`{"q": {"roots": [` + strings.Repeat(`{"uri": "file:///a"},`, MaxRoots) + `{"uri": "file:///a"}]}}`, `responses["q"].roots`},
	} {
		_, e := answers(dec(c.in))
		if e == nil || len(e.Violations) == 0 || e.Violations[0].Field != c.field {
			t.Errorf("answers(%.60s) = %v, want a refusal naming %s", c.in, e, c.field)
		}
	}
}

// TestNewActionsRefusals: the Playground's streamed round and a logout are
// actions (the CSRF token, or CSRF_REFUSED); a bad round or logout is
// refused naming its field before anything runs; a principal may not
// revoke or read another's logins, nor read the configuration.
func TestNewActionsRefusals(t *testing.T) {
	authn := core.NewAuthenticator(map[string]string{"tok-ops": "ops", "tok-bob": "bob"}, nil, false)
	h := newConsole(t, core.AuthConfig{Authenticator: authn, Authorizer: core.NewAuthorizer(nil, []string{"ops"})}).Handler()
	req := func(method, path, tok, csrf, body string) *http.Request {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+tok)
		if csrf != "" {
			r.Header.Set("X-Toolsvc-CSRF", csrf)
		}
		return r
	}
	w, _ := do(t, h, req("GET", "/ui/api/me", "tok-bob", "", ""))
	var me meBody
	if err := json.Unmarshal(w.Body.Bytes(), &me); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/ui/api/call/stream", "/ui/api/logins/logout", "/ui/api/logins/login", "/ui/api/tasks/answer"} {
		if w, e := do(t, h, req("POST", path, "tok-bob", "", `{}`)); w.Code != http.StatusForbidden || e.Reason != ReasonCSRF {
			t.Errorf("%s without the CSRF token: %d %+v", path, w.Code, e)
		}
	}
	for _, c := range []struct{ path, body, field string }{
		{"/ui/api/call/stream", `{"arguments": {}}`, "name"},
		{"/ui/api/call/stream", `{"name": "x", "logLevel": "loud"}`, "logLevel"},
		{"/ui/api/call/stream", `[1]`, "body"},
		{"/ui/api/logins/logout", `{"server": "` + strings.Repeat("s", MaxQueryBytes+1) + `"}`, "server"},
		{"/ui/api/logins/logout", `nope`, "body"},
		{"/ui/api/logins/login", `{"server": "` + strings.Repeat("s", MaxQueryBytes+1) + `"}`, "server"},
		{"/ui/api/logins/login", `{"server": "x", "principal": "` + strings.Repeat("p", MaxQueryBytes+1) + `"}`, "principal"},
		{"/ui/api/logins/login", `[1]`, "body"},
		{"/ui/api/tasks/answer", `{"responses": {"q": {"elicitation": {"action": "accept"}}}}`, "handle"},
		{"/ui/api/tasks/answer", `{"handle": "h"}`, "responses"},
		{"/ui/api/tasks/answer", `nope`, "body"},
	} {
		w, e := do(t, h, req("POST", c.path, "tok-bob", me.CSRF, c.body))
		if w.Code != http.StatusBadRequest || len(e.Fields) != 1 || e.Fields[0].Field != c.field {
			t.Errorf("%s %.40s: %d %+v, want 400 naming %s", c.path, c.body, w.Code, e, c.field)
		}
	}
	w, e := do(t, h, req("POST", "/ui/api/logins/logout", "tok-bob", me.CSRF, `{"server": "x", "principal": "alice"}`))
	if w.Code != http.StatusForbidden || e.Reason != core.ReasonPermissionDenied {
		t.Errorf("bob revoking alice's login: %d %+v", w.Code, e)
	}
	// A login link logs in the principal it names as whoever follows it:
	// an operator's page may not ask for another principal's either.
	w, _ = do(t, h, req("GET", "/ui/api/me", "tok-ops", "", ""))
	var ops meBody
	if err := json.Unmarshal(w.Body.Bytes(), &ops); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tok, csrf string }{{"tok-bob", me.CSRF}, {"tok-ops", ops.CSRF}} {
		w, e = do(t, h, req("POST", "/ui/api/logins/login", c.tok, c.csrf, `{"server": "x", "principal": "alice"}`))
		if w.Code != http.StatusForbidden || e.Reason != core.ReasonPermissionDenied {
			t.Errorf("%s asking for alice's login link: %d %+v", c.tok, w.Code, e)
		}
	}
	for _, path := range []string{"/ui/api/logins?principal=alice", "/ui/api/config/effective"} {
		if w, e := do(t, h, req("GET", path, "tok-bob", "", "")); w.Code != http.StatusForbidden || e.Reason != core.ReasonPermissionDenied {
			t.Errorf("bob reading %s: %d %+v", path, w.Code, e)
		}
	}
}
