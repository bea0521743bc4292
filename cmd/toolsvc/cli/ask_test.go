package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

const formSchema = `{"type":"object","properties":{
	"name":{"type":"string","title":"Name","description":"Your name","minLength":2},
	"age":{"type":"integer","minimum":0,"maximum":150},
	"ratio":{"type":"number"},
	"subscribe":{"type":"boolean","default":false},
	"color":{"type":"string","enum":["red","green","blue"],"enumNames":["Red","Green","Blue"],"default":"green"},
	"size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]},
	"tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]},"maxItems":2},
	"email":{"type":"string","format":"email"},
	"nick":{"type":"string"}},
	"required":["name","age","email"]}`

func elicit(id, schema string) *toolsvcv1.InputRequest {
	return &toolsvcv1.InputRequest{Id: id, Request: &toolsvcv1.InputRequest_Elicitation{Elicitation: &toolsvcv1.ElicitationRequest{
		Message: "Tell me\x1b[2J about you", RequestedSchemaJson: schema}}}
}

func askWith(t *testing.T, input string, reqs ...*toolsvcv1.InputRequest) ([]*toolsvcv1.InputResponse, string, error) {
	t.Helper()
	var out strings.Builder
	a := newAsker(strings.NewReader(input), &out)
	a.cwd = func() (string, error) { return "/home/ada/my project", nil }
	got, err := a.answer(t.Context(), &toolsvcv1.InputRequired{Requests: reqs})
	return got, out.String(), err
}

func TestAskForm(t *testing.T) {
	t.Parallel()
	// Fields come in the order the schema sent them; each bad answer is
	// refused with the reason and asked again.
	input := strings.Join([]string{
		"",             // accept (the default)
		"", "A", "Ada", // name: required, too short, ok
		"old", "-1", "36", // age: not an integer, below minimum, ok
		"NaN", "0.5", // ratio
		"maybe", "", // subscribe: not yes/no, default
		"purple", "3", // color: not a choice, by number
		"large",          // size: by title
		"a, c, b", "a,c", // tags: too many, ok
		"ada", "ada@example.org", // email
		"", // nick: optional, left out
	}, "\n") + "\n"
	got, out, err := askWith(t, input, elicit("q1", formSchema))
	if err != nil {
		t.Fatalf("answer: %v\n%s", err, out)
	}
	if len(got) != 1 || got[0].GetId() != "q1" || got[0].GetElicitation().GetAction() != "accept" {
		t.Fatalf("answer = %v", got)
	}
	var content map[string]any
	if err := json.Unmarshal([]byte(got[0].GetElicitation().GetContentJson()), &content); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"name": "Ada", "age": 36.0, "ratio": 0.5, "subscribe": false, "color": "blue",
		"size": "l", "tags": []any{"a", "c"}, "email": "ada@example.org"}
	if !reflect.DeepEqual(content, want) {
		t.Errorf("content = %v, want %v", content, want)
	}
	for _, w := range []string{
		`Tell me\x1b[2J about you`, "Name (name): Your name", "at least 2 characters", `not an integer: "old"`,
		"at least 0, please", `not a number: "NaN"`, `answer yes or no`, "  3) Blue", `not one of the choices: "purple"`,
		"choose at most 2", `not an email address: "ada"`, "[string, required]", "[a number or a value above, default green]",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("the prompts lack %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("the prompts hold a raw escape:\n%q", out)
	}
	if n := strings.Index(out, "(name)"); n < 0 || n > strings.Index(out, "age") || strings.Index(out, "age") > strings.Index(out, "nick") {
		t.Errorf("fields are not asked in the schema's order:\n%s", out)
	}
}

func TestAskActions(t *testing.T) {
	t.Parallel()
	url := &toolsvcv1.InputRequest{Id: "login", Request: &toolsvcv1.InputRequest_ElicitationUrl{ElicitationUrl: &toolsvcv1.ElicitationURLRequest{
		Message: "Log in", Url: "https://login.example/authorize?x=1\u202e", ElicitationId: "el"}}}
	roots := &toolsvcv1.InputRequest{Id: "r", Request: &toolsvcv1.InputRequest_Roots{Roots: &toolsvcv1.RootsRequest{}}}
	for _, tc := range []struct {
		name, input string
		reqs        []*toolsvcv1.InputRequest
		want        []*toolsvcv1.InputResponse
		wantOut     []string
	}{
		{"decline form", "what\nd\n", []*toolsvcv1.InputRequest{elicit("q", formSchema)},
			[]*toolsvcv1.InputResponse{{Id: "q", Response: &toolsvcv1.InputResponse_Elicitation{Elicitation: &toolsvcv1.ElicitationResponse{Action: "decline"}}}},
			[]string{"please answer a (accept), d (decline) or c (cancel)"}},
		{"cancel form", "c\n", []*toolsvcv1.InputRequest{elicit("q", formSchema)},
			[]*toolsvcv1.InputResponse{{Id: "q", Response: &toolsvcv1.InputResponse_Elicitation{Elicitation: &toolsvcv1.ElicitationResponse{Action: "cancel"}}}}, nil},
		{"url then roots", "\n", []*toolsvcv1.InputRequest{url, roots},
			[]*toolsvcv1.InputResponse{
				{Id: "login", Response: &toolsvcv1.InputResponse_Elicitation{Elicitation: &toolsvcv1.ElicitationResponse{Action: "accept"}}},
				{Id: "r", Response: &toolsvcv1.InputResponse_Roots{Roots: &toolsvcv1.RootsResponse{Roots: []*toolsvcv1.Root{{Uri: "file:///home/ada/my%20project", Name: "my project"}}}}}},
			[]string{"site: https://login.example", "URL:  https://login.example/authorize?x=1%E2%80%AE", "sharing the current directory, file:///home/ada/my%20project"}},
		{"decline url", "d\n", []*toolsvcv1.InputRequest{url},
			[]*toolsvcv1.InputResponse{{Id: "login", Response: &toolsvcv1.InputResponse_Elicitation{Elicitation: &toolsvcv1.ElicitationResponse{Action: "decline"}}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, out, err := askWith(t, tc.input, tc.reqs...)
			if err != nil {
				t.Fatalf("answer: %v", err)
			}
			if !equalResponses(got, tc.want) {
				t.Errorf("answers = %s, want %s", show(got), show(tc.want))
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestAskEnds(t *testing.T) {
	t.Parallel()
	// stdin ends mid-form: no answer, the caller cancels.
	if _, _, err := askWith(t, "a\nAda\n", elicit("q", formSchema)); !errors.Is(err, errNoAnswer) {
		t.Errorf("stdin ending mid-form: %v, want errNoAnswer", err)
	}
	// Sampling is never offered.
	sampling := &toolsvcv1.InputRequest{Id: "m", Request: &toolsvcv1.InputRequest_Sampling{Sampling: &toolsvcv1.SamplingRequest{ParamsJson: "{}"}}}
	if _, _, err := askWith(t, "", sampling); err == nil || !strings.Contains(err.Error(), "sampling") {
		t.Errorf("sampling: %v", err)
	}
	// Ctrl-C while a question waits.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out strings.Builder
	block, unblock := io.Pipe()
	defer unblock.Close()
	a := newAsker(block, &out)
	if _, err := a.answer(ctx, &toolsvcv1.InputRequired{Requests: []*toolsvcv1.InputRequest{elicit("q", formSchema)}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled while asking: %v", err)
	}
	got := cancelAll(&toolsvcv1.InputRequired{Requests: []*toolsvcv1.InputRequest{elicit("q", formSchema), sampling,
		{Id: "r", Request: &toolsvcv1.InputRequest_Roots{Roots: &toolsvcv1.RootsRequest{}}}}})
	want := []*toolsvcv1.InputResponse{
		{Id: "q", Response: &toolsvcv1.InputResponse_Elicitation{Elicitation: &toolsvcv1.ElicitationResponse{Action: "cancel"}}},
		{Id: "r", Response: &toolsvcv1.InputResponse_Roots{Roots: &toolsvcv1.RootsResponse{}}},
	}
	if !equalResponses(got, want) {
		t.Errorf("cancelAll = %s, want %s", show(got), show(want))
	}
}

func equalResponses(a, b []*toolsvcv1.InputResponse) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func show(rs []*toolsvcv1.InputResponse) string {
	var parts []string
	for _, r := range rs {
		b, _ := protojson.Marshal(r)
		parts = append(parts, string(b))
	}
	return fmt.Sprint(parts)
}
