package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// linkBody marks the input requests of a call's stream with its token and
// passes everything else byte for byte, however the stream is cut.
func TestLinkBodyMarksInputRequests(t *testing.T) {
	big := strings.Repeat("x", maxLinkLine+10)
	events := []string{
		"event: message\n",
		`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}` + "\n",
		"\n",
		`data: {"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object"},"_meta":{"toolsvc.dev/call":"forged","k":"v"}}}` + "\n",
		"\n",
		`data: {"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"` + big + `"}]}}` + "\n",
		"\n",
		`data: {"jsonrpc":"2.0","id":"s9","method":"roots/list"}` + "\r\n",
		"\n",
		"data: tail without newline",
	}
	in := strings.Join(events, "")
	for name, r := range map[string]io.Reader{
		"whole":    strings.NewReader(in),
		"one byte": iotest.OneByteReader(strings.NewReader(in)),
		"halves":   iotest.HalfReader(strings.NewReader(in)),
	} {
		t.Run(name, func(t *testing.T) {
			out, err := io.ReadAll(&linkBody{ReadCloser: io.NopCloser(r), token: "tok"})
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitAfter(string(out), "\n")
			if len(lines) != len(events) {
				t.Fatalf("%d lines out, %d in", len(lines), len(events))
			}
			for i, l := range lines {
				switch i {
				case 3, 7:
					var msg struct {
						Params struct {
							Meta map[string]any `json:"_meta"`
						} `json:"params"`
					}
					if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "data: ")), &msg); err != nil {
						t.Fatalf("line %d %q: %v", i, l, err)
					}
					if msg.Params.Meta[linkMetaKey] != "tok" {
						t.Errorf("line %d: link %v, want tok", i, msg.Params.Meta)
					}
					if i == 3 && msg.Params.Meta["k"] != "v" {
						t.Errorf("line %d lost the upstream's own _meta: %v", i, msg.Params.Meta)
					}
				default:
					if l != events[i] {
						t.Errorf("line %d changed: %.80q, want %.80q", i, l, events[i])
					}
				}
			}
		})
	}
}

// linkConn (stdio, legacy SSE) removes any link an upstream sets itself.
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
