package mcpbridge

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestStreamOwnConnHeaderBound: a long-lived stream's response on its own
// connection (ownConnStreams, streamdial.go) is read with http.ReadResponse,
// which bounds no header line; an upstream that answers the standalone GET
// with a header that never ends is cut off at maxStreamHeaderBytes, as
// net/http's transport did, with an error that says so. A real listener
// writing a real (hostile) response.
func TestStreamOwnConnHeaderBound(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		c, err := lis.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = http.ReadRequest(bufio.NewReader(c)) // the GET
		_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Endless: "))
		chunk := []byte(strings.Repeat("a", 64<<10))
		for {
			if _, err := c.Write(chunk); err != nil {
				return // toolsvc hung up
			}
		}
	}()
	url := "http://" + lis.Addr().String() + "/mcp"
	hc := newHTTPClient(nil, url)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("a response with an endless header was accepted")
	}
	if !errors.Is(err, errStreamHeaderTooLarge) {
		t.Fatalf("err = %v, want the header bound (%v)", err, errStreamHeaderTooLarge)
	}
}

// TestStreamOwnConnCloseEndsRead: closing a stream's body on its own
// connection while its reader waits for an event ends that read at once
// (the connection is closed before net/http's body, whose Close would
// otherwise read to an end a stream never reaches). A real go-sdk server's
// standalone stream, which sends nothing while idle.
func TestStreamOwnConnCloseEndsRead(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // an idle stream: nothing until the client leaves
	})}
	go func() { _ = srv.Serve(lis) }()
	defer srv.Close()
	url := "http://" + lis.Addr().String() + "/mcp"
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := newHTTPClient(nil, url).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := resp.Body.(*connBody); !ok {
		t.Fatalf("the stream's body is a %T, not on a connection of its own", resp.Body)
	}
	read := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(make([]byte, 16))
		read <- err
	}()
	_ = resp.Body.Close()
	if err := <-read; err == nil {
		t.Fatal("a read of the closed stream returned no error")
	}
}

// TestStreamOwnConn1xxFlood: an upstream that answers a stream's request
// with informational (1xx) responses without end is refused after
// maxStream1xx of them, with an error that says so, instead of parsing
// them until the 10 MiB header bound (some 300,000 responses). A real
// listener writing a real (hostile) answer.
func TestStreamOwnConn1xxFlood(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		c, err := lis.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = http.ReadRequest(bufio.NewReader(c)) // the GET
		hint := []byte("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n")
		for {
			if _, err := c.Write(hint); err != nil {
				return // toolsvc hung up
			}
		}
	}()
	url := "http://" + lis.Addr().String() + "/mcp"
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := newHTTPClient(nil, url).Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("an endless run of 1xx answers was accepted")
	}
	if !errors.Is(err, errStreamTooMany1xx) {
		t.Fatalf("err = %v, want the 1xx bound (%v)", err, errStreamTooMany1xx)
	}
}
