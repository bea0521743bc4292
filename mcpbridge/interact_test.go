package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The link tap marks an input request or a log message read on a call's
// response stream with that call's token (replacing any link the upstream
// forged, keeping its own _meta), gives a log message read on the
// standalone stream to the only call in flight, and leaves everything
// else as it was read.
func TestLinkTapMarksByStream(t *testing.T) {
	s := &session{}
	lt := newLinkTap(s, true)
	it := &Interaction{Kinds: InputKinds{Form: true}, logs: &logSink{}}
	end := s.interact.begin(it)
	defer end()
	call := &msgOrigin{ctx: withInteraction(context.Background(), it)}
	list := &msgOrigin{ctx: context.Background()}
	decode := func(raw string) *jsonrpc.Request {
		m, err := jsonrpc.DecodeMessage([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		return m.(*jsonrpc.Request)
	}
	link := func(req *jsonrpc.Request) (any, mcp.Meta) {
		var p struct {
			Meta mcp.Meta `json:"_meta"`
		}
		_ = json.Unmarshal(req.Params, &p)
		return p.Meta[linkMetaKey], p.Meta
	}
	for _, tc := range []struct {
		name string
		msg  string
		from *msgOrigin
		want any
	}{
		{"input request on the call's stream", `{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"message":"name?","_meta":{"toolsvc.dev/call":"forged","k":"v"}}}`, call, it.token},
		{"log message on the call's stream", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`, call, it.token},
		{"log message on the standalone stream", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`, standaloneOrigin, it.token},
		{"log message on a list's stream", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x","_meta":{"toolsvc.dev/call":"forged"}}}`, list, nil},
		{"input request on the standalone stream", `{"jsonrpc":"2.0","id":"s9","method":"roots/list","params":{"_meta":{"toolsvc.dev/call":"forged"}}}`, standaloneOrigin, nil},
	} {
		req := decode(tc.msg)
		lt.read(req, tc.from)
		if got, meta := link(req); got != tc.want {
			t.Errorf("%s: link %v, want %v", tc.name, got, tc.want)
		} else if strings.Contains(tc.msg, `"k":"v"`) && meta["k"] != "v" {
			t.Errorf("%s: the upstream's own _meta was lost: %v", tc.name, meta)
		}
	}
	for _, raw := range []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
		`{"jsonrpc":"2.0","id":3,"method":"notifications/message","params":{"level":"info","data":"hi"}}`, // a request, not a log message
	} {
		m := decode(raw)
		before := string(m.Params)
		lt.read(m, call)
		if string(m.Params) != before {
			t.Errorf("%s was rewritten: %s", raw, m.Params)
		}
	}
	if n := s.logs.read.Load(); n != 3 {
		t.Errorf("%d log messages counted, want 3", n)
	}
}

// setLink removes any link an upstream sets itself.
func TestSetLinkRemovesForgedLink(t *testing.T) {
	out, ok := setLink(json.RawMessage(`{"message":"m","_meta":{"toolsvc.dev/call":"someone-elses"}}`), "")
	if !ok || bytes.Contains(out, []byte(linkMetaKey)) || !bytes.Contains(out, []byte(`"message":"m"`)) {
		t.Fatalf("setLink = %s, %v", out, ok)
	}
	if _, ok := setLink(json.RawMessage(`[1]`), ""); ok {
		t.Error("params that are not an object were rewritten")
	}
}

// owner attributes a request to the call it is linked to, else to the only
// request in flight, never to a call that cannot answer its kind.
func TestInteractionOwner(t *testing.T) {
	var x interactions
	answer := func(context.Context, mcp.InputRequest) (mcp.InputResponse, error) { return nil, nil }
	form := &Interaction{Kinds: InputKinds{Form: true}, Ask: answer}
	sampling := &Interaction{Kinds: InputKinds{Sampling: true}, Ask: answer}
	endForm := x.begin(form)
	elicit := &mcp.ElicitParams{Message: "?"}
	if x.owner(nil, elicit) != form {
		t.Error("the only call in flight was not the owner")
	}
	if x.owner(nil, &mcp.ListRootsParams{}) != nil {
		t.Error("a call that cannot answer roots owns a roots request")
	}
	endSampling := x.begin(sampling)
	endOther := x.begin(nil)
	if x.owner(nil, elicit) != nil {
		t.Error("an unlinked request was attributed with three requests in flight")
	}
	if x.owner(mcp.Meta{linkMetaKey: form.token}, elicit) != form {
		t.Error("a linked request did not reach its call")
	}
	if x.owner(mcp.Meta{linkMetaKey: form.token}, &mcp.CreateMessageParams{}) != nil {
		t.Error("a linked sampling request reached a call that offered forms only")
	}
	if x.owner(mcp.Meta{linkMetaKey: "unknown"}, elicit) != nil {
		t.Error("an unknown link was attributed")
	}
	endOther()
	endSampling()
	endForm()
	if x.owner(mcp.Meta{linkMetaKey: form.token}, elicit) != nil {
		t.Error("a link outlived its call")
	}
}
