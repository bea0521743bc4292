package mcpbridge

import (
	"encoding/json"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioAbsorbsPlainListChanged: while absorb says yes, a tools,
// resources or prompts list_changed without params (absent, null, {}) is
// taken off the connection, batches included; one with params, one with
// an id, and any other message are delivered. While it says no, every
// message is delivered.
func TestStdioAbsorbsPlainListChanged(t *testing.T) {
	t.Parallel()
	lines := []string{
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"method":"notifications/resources/list_changed","jsonrpc":"2.0","params":{ }}`,
		`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":null}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"k":1}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`,
		`[{"jsonrpc":"2.0","method":"notifications/tools/list_changed"},{"jsonrpc":"2.0","id":1,"result":{}}]`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`,
	}
	read := func(absorb bool) (delivered []string, asked int) {
		tr := limitedStdio(io.NopCloser(strings.NewReader(strings.Join(lines, "\n")+"\n")), nopWriteCloser{io.Discard}, 1<<20, slog.New(slog.DiscardHandler)).(*stdioTransport)
		tr.absorb = func() bool { asked++; return absorb }
		conn, err := tr.Connect(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for {
			m, err := conn.Read(t.Context())
			if err != nil {
				return delivered, asked
			}
			b, _ := jsonrpc.EncodeMessage(m)
			delivered = append(delivered, string(b))
		}
	}
	got, asked := read(true)
	want := []string{
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"k":1}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
	}
	if !slices.Equal(got, want) || asked != 5 {
		t.Errorf("absorbing: asked %d times (want 5), delivered\n%s\nwant\n%s", asked, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got, asked := read(false); len(got) != 9 || asked != 5 {
		t.Errorf("not absorbing: asked %d times (want 5), delivered %d messages (want 9):\n%s", asked, len(got), strings.Join(got, "\n"))
	}
}

// TestRawSchemasReuseChecked: a listing that sends a tool's schema text
// again shares the object attach decoded for it (not a new decode); a
// changed text is decoded; a schema not listed as text is left as it is;
// keep forgets tools no longer listed.
func TestRawSchemasReuseChecked(t *testing.T) {
	t.Parallel()
	result := []byte(`{"tools":[{"name":"a","inputSchema":{"type":"object","properties":{"n":{"type":"integer"}}}},{"name":"b","inputSchema":{"type":"object"}}]}`)
	var r rawSchemas
	r.record(result)
	first := r.attach(toolsAsText(t, result))
	r.record(result)
	second := r.attach(toolsAsText(t, result))
	for i := range first {
		d1, ok1 := first[i].InputSchema.(decodedSchema)
		d2, ok2 := second[i].InputSchema.(decodedSchema)
		if !ok1 || !ok2 {
			t.Fatalf("tool %d: schemas not attached: %T, %T", i, first[i].InputSchema, second[i].InputSchema)
		}
		if reflect.ValueOf(d1.obj).Pointer() != reflect.ValueOf(d2.obj).Pointer() || string(d1.text) != string(d2.text) {
			t.Errorf("tool %d: the second listing decoded its schema again", i)
		}
	}
	// Another text for a: decoded anew.
	other := r.attach(toolsAsText(t, []byte(`{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}`)))
	if d, ok := other[0].InputSchema.(decodedSchema); !ok || string(d.text) != `{"type":"object"}` || !reflect.DeepEqual(d.obj, map[string]any{"type": "object"}) {
		t.Errorf("a changed schema attached as %#v", other[0].InputSchema)
	}
	// A schema go-sdk decoded (a listing without mcp.WithRawToolSchemas)
	// is not taken for text.
	decoded := []*mcp.Tool{{Name: "a", InputSchema: map[string]any{"type": "object"}}}
	if got := r.attach(decoded); got[0] != decoded[0] {
		t.Errorf("a decoded schema was replaced: %#v", got[0].InputSchema)
	}
	r.keep(other)
	if len(r.verified) != 0 {
		t.Errorf("keep left %v", r.verified)
	}
}

// toolsAsText is result's tools as go-sdk's client hands them over under
// mcp.WithRawToolSchemas (TestGoSDKPatchedRawToolSchemas pins the two
// together): each schema the text that was sent.
func toolsAsText(t testing.TB, result []byte) []*mcp.Tool {
	var lr struct {
		Tools []struct {
			Name, Description string
			InputSchema       json.RawMessage `json:"inputSchema"`
			OutputSchema      json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(result, &lr); err != nil {
		t.Fatal(err)
	}
	tools := make([]*mcp.Tool, len(lr.Tools))
	for i, x := range lr.Tools {
		tools[i] = &mcp.Tool{Name: x.Name, Description: x.Description}
		if x.InputSchema != nil {
			tools[i].InputSchema = x.InputSchema
		}
		if x.OutputSchema != nil {
			tools[i].OutputSchema = x.OutputSchema
		}
	}
	return tools
}
