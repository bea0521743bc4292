package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioDecodeCases are lines that stdioConn must read as go-sdk does: each
// either decodes to what jsonrpc.DecodeMessage makes of it, or fails
// there too.
var stdioDecodeCases = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	`{"jsonrpc":"2.0","id":"abc","method":"ping"}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x\n\u2028\"y\""}]}}`,
	`{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"bad","data":{"k":[1,2]}}}`,
	`{"jsonrpc":"2.0","id":9,"method":""}`,                                                             // an empty method is still a request
	`{"id":10,"result":{},"jsonrpc":"2.0"}`,                                                            // any key order
	`{"jsonrpc":"2.0","id":1.0,"result":{}}`,                                                           // a float id
	`{"jsonrpc":"2.0","ID":11,"result":{}}`,                                                            // keys match exactly: no id
	`{"jsonrpc":"2.0","id":12,"Method":"x","result":{}}`,                                               // ... and no method
	`{"jsonrpc":"1.0","id":13,"result":{}}`,                                                            // the version tag
	`{"jsonrpc":"2.0","result":{}}`,                                                                    // a response without an id
	`{"jsonrpc":"2.0","id":{"a":1},"result":{}}`,                                                       // an id of the wrong type
	`{"jsonrpc":"2.0","id":14,"method":3}`,                                                             // a method of the wrong type
	`{"jsonrpc":"2.0","id":15,"result":{}`,                                                             // truncated
	`not json`,                                                                                         // a stray line
	`{"jsonrpc":"2.0","id":16,"result":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`, // too deep
}

func TestStdioDecodeMatchesGoSDK(t *testing.T) {
	t.Parallel()
	for _, line := range stdioDecodeCases {
		want, wantErr := jsonrpc.DecodeMessage([]byte(line))
		got, gotErr := decodeLine([]byte(line))
		if (wantErr != nil) != (gotErr != nil) {
			t.Errorf("%.70s: error %v, go-sdk's %v", line, gotErr, wantErr)
			continue
		}
		if wantErr != nil {
			continue
		}
		if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
			t.Errorf("%.70s:\n got %#v\nwant %#v", line, got, want)
		}
	}
}

// TestStdioDecodesBatchesAndRejectsTrailingData: an array is a batch of
// messages in order (an empty one is an error), and a line holds one
// value: anything after it fails the read, as go-sdk's read loop does.
func TestStdioDecodesBatchesAndRejectsTrailingData(t *testing.T) {
	t.Parallel()
	msgs, err := decodeLine([]byte(`[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":2,"result":{}}]`))
	if err != nil || len(msgs) != 2 {
		t.Fatalf("batch: %v, %v", msgs, err)
	}
	if r, ok := msgs[0].(*jsonrpc.Request); !ok || r.Method != "a" {
		t.Errorf("batch[0] = %#v", msgs[0])
	}
	if _, ok := msgs[1].(*jsonrpc.Response); !ok {
		t.Errorf("batch[1] = %#v", msgs[1])
	}
	for _, line := range []string{`[]`, `{"jsonrpc":"2.0","id":1,"result":{}} {"jsonrpc":"2.0","id":2,"result":{}}`, `{"jsonrpc":"2.0","id":1,"result":{}}x`} {
		if msgs, err := decodeLine([]byte(line)); err == nil {
			t.Errorf("%s: decoded %v, want an error", line, msgs)
		}
	}
}

// TestStdioEncodesLikeGoSDK: a request's hand-written envelope is what
// jsonrpc.EncodeMessage writes; params that are not one compact line go
// through EncodeMessage, so no message spans two lines.
func TestStdioEncodesLikeGoSDK(t *testing.T) {
	t.Parallel()
	id := func(v any) jsonrpc.ID {
		id, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	for _, msg := range []jsonrpc.Message{
		&jsonrpc.Request{ID: id(float64(3)), Method: "tools/call", Params: json.RawMessage(`{"name":"echo","arguments":{"text":"a<b>&\u2028"}}`)},
		&jsonrpc.Request{ID: id("s-1"), Method: "ping"},
		&jsonrpc.Request{ID: id(`q"uote`), Method: "ping"},
		&jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":3}`)},
		&jsonrpc.Request{ID: id(float64(4)), Method: "tools/call", Params: json.RawMessage("{\n  \"name\": \"echo\"\n}")},
		&jsonrpc.Response{ID: id(float64(5)), Result: json.RawMessage(`{}`)},
		&jsonrpc.Response{ID: id(float64(6)), Error: &jsonrpc.Error{Code: -1, Message: "no"}},
	} {
		want, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendMessage([]byte("prefix"), msg)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "prefix"+string(want) {
			t.Errorf("appendMessage(%#v)\n got %s\nwant prefix%s", msg, got, want)
		}
	}
}

// TestStdioConnWithGoSDKServer: a go-sdk client on stdioConn and a go-sdk
// server on its own IOTransport, over pipes: calls with results far
// longer than the line reader's buffer, a request from the server (a
// ping, answered through EncodeMessage), and Close ending the session.
func TestStdioConnWithGoSDKServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	srv := goSDKServer()
	mcp.AddTool(srv, &mcp.Tool{Name: "ping_client"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if err := req.Session.Ping(ctx, nil); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
	})
	ss, err := srv.Connect(ctx, &mcp.IOTransport{Reader: c2sR, Writer: s2cW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := limitedStdio(s2cR, c2sW, DefaultMaxMessageBytes, slog.New(slog.DiscardHandler))
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, tr, sessionOptions("2025-11-25"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 5, 200 << 10, 3 << 20} {
		text := strings.Repeat("é", n/2)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
		if err != nil {
			t.Fatalf("echo of %d bytes: %v", n, err)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != text {
			t.Fatalf("echo of %d bytes came back as %d bytes", n, len(got))
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ping_client"})
	if err != nil || res.IsError {
		t.Fatalf("a call that pings the client: %v %v", res, err)
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := ss.Wait(); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
		t.Logf("server session: %v", err)
	}
}

// TestStdioConnCloseUnblocksRead: Close ends a Read waiting on an upstream
// that never writes, and later Reads say EOF.
func TestStdioConnCloseUnblocksRead(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	defer w.Close()
	conn, err := limitedStdio(r, nopWriteCloser{io.Discard}, 1<<20, slog.New(slog.DiscardHandler)).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := conn.Read(context.Background())
		done <- err
	}()
	time.Sleep(10 * time.Millisecond) // let it block (not a timing assertion: either order must pass)
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Read returned a message after Close")
		}
	case <-time.After(defaultTestTimeout):
		t.Fatal("Close did not unblock Read")
	}
	if _, err := conn.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("Read after Close: %v, want EOF", err)
	}
}

// FuzzStdioDecodeMatchesGoSDK: on any line holding one JSON object (what
// the stdio framing delivers), stdioConn's decoding agrees with
// jsonrpc.DecodeMessage: both fail, or both give the same message.
//
//	go test -run XXX -fuzz FuzzStdioDecodeMatchesGoSDK -fuzztime 30s ./mcpbridge
func FuzzStdioDecodeMatchesGoSDK(f *testing.F) {
	for _, line := range stdioDecodeCases {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		b := []byte(strings.TrimSpace(line))
		if len(b) == 0 || b[0] != '{' || strings.ContainsAny(line, "\n") || !json.Valid(b) {
			return // not one object on one line: the framing or the batch path decides
		}
		want, wantErr := jsonrpc.DecodeMessage(b)
		got, gotErr := decodeLine(append([]byte(nil), b...))
		if (wantErr != nil) != (gotErr != nil) {
			t.Fatalf("%q: error %v, go-sdk's %v", line, gotErr, wantErr)
		}
		if wantErr == nil && (len(got) != 1 || !reflect.DeepEqual(got[0], want)) {
			t.Fatalf("%q:\n got %#v\nwant %#v", line, got, want)
		}
	})
}
