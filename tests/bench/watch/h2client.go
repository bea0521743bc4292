package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// A lean WatchCatalog client for -client h2: one goroutine per connection
// reads every stream's HTTP/2 frames and splits them into gRPC messages,
// with no goroutine, buffer pool or decode per stream, so that 100,000
// watchers cost the benchmark's process a fraction of what grpc-go's
// client costs (one goroutine and one wake-up per stream and message). It
// speaks only what a server-streaming call with one request needs: the
// request in one DATA frame, response messages in DATA frames, the
// trailers as a HEADERS frame that ends the stream (its status is not
// decoded: any end of a stream the benchmark did not cancel is fatal). Flow
// control: windows of 1 GiB per stream, the connection's topped up as data
// arrives. It is a measuring instrument, not a gRPC client.

const h2Window = 1 << 30

// h2Conn is one HTTP/2 connection carrying many watch streams.
type h2Conn struct {
	conn    net.Conn
	fr      *http2.Framer
	wmu     sync.Mutex // writes
	hbuf    bytes.Buffer
	henc    *hpack.Encoder
	addr    string
	nextID  uint32
	mu      sync.Mutex
	streams map[uint32]*h2Stream
	unacked uint32 // connection-window bytes received and not yet returned (reader only)
	onEnd   func(error)
}

// h2Stream is one watch stream's unfinished message.
type h2Stream struct {
	buf []byte
	msg func(b []byte) // one whole message (the bytes after the 5-byte prefix)
}

func dialH2(ctx context.Context, addr string, onEnd func(error)) (*h2Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &h2Conn{conn: conn, addr: addr, nextID: 1, streams: map[uint32]*h2Stream{}, onEnd: onEnd}
	c.fr = http2.NewFramer(conn, conn)
	c.fr.SetMaxReadFrameSize(1 << 24)
	c.fr.SetReuseFrames() // a DATA frame is used up before the next is read
	c.henc = hpack.NewEncoder(&c.hbuf)
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		return nil, err
	}
	if err := c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2Window},
		http2.Setting{ID: http2.SettingMaxFrameSize, Val: 1 << 24}); err != nil {
		return nil, err
	}
	if err := c.fr.WriteWindowUpdate(0, h2Window); err != nil {
		return nil, err
	}
	go c.read()
	return c, nil
}

// watch opens a WatchCatalog stream; msg gets each response message's
// bytes (valid during the call).
func (c *h2Conn) watch(req *toolsvcv1.WatchCatalogRequest, msg func([]byte)) error {
	body, err := proto.Marshal(req)
	if err != nil {
		return err
	}
	frame := make([]byte, 5+len(body))
	binary.BigEndian.PutUint32(frame[1:5], uint32(len(body)))
	copy(frame[5:], body)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	id := c.nextID
	c.nextID += 2
	c.mu.Lock()
	c.streams[id] = &h2Stream{msg: msg}
	c.mu.Unlock()
	c.hbuf.Reset()
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/toolsvc.v1.ToolService/WatchCatalog"},
		{":authority", c.addr}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		if err := c.henc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			return err
		}
	}
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.hbuf.Bytes(), EndHeaders: true}); err != nil {
		return err
	}
	return c.fr.WriteData(id, true, frame)
}

func (c *h2Conn) close() { c.conn.Close() }

// read is the connection's only reader.
func (c *h2Conn) read() {
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.onEnd(err)
			return
		}
		switch f := f.(type) {
		case *http2.DataFrame:
			c.data(f)
		case *http2.HeadersFrame:
			if f.StreamEnded() {
				c.onEnd(fmt.Errorf("stream %d ended by the server", f.StreamID))
				return
			}
		case *http2.RSTStreamFrame:
			c.onEnd(fmt.Errorf("stream %d reset: %v", f.StreamID, f.ErrCode))
			return
		case *http2.GoAwayFrame:
			c.onEnd(fmt.Errorf("GOAWAY: %v", f.ErrCode))
			return
		case *http2.SettingsFrame:
			if !f.IsAck() {
				c.write(func() error { return c.fr.WriteSettingsAck() })
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				c.write(func() error { return c.fr.WritePing(true, f.Data) })
			}
		}
	}
}

func (c *h2Conn) write(fn func() error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := fn(); err != nil {
		c.onEnd(err)
	}
}

// data splits a DATA frame's payload into the stream's messages and
// returns the connection window once half of it was used.
func (c *h2Conn) data(f *http2.DataFrame) {
	p := f.Data()
	if c.unacked += f.Length; c.unacked >= h2Window/2 {
		n := c.unacked
		c.unacked = 0
		c.write(func() error { return c.fr.WriteWindowUpdate(0, n) })
	}
	c.mu.Lock()
	st := c.streams[f.StreamID]
	c.mu.Unlock()
	if st == nil {
		return
	}
	if len(st.buf) == 0 { // whole messages straight from the frame, the common case
		for len(p) >= 5 {
			n := int(binary.BigEndian.Uint32(p[1:5]))
			if len(p) < 5+n {
				break
			}
			st.msg(p[5 : 5+n])
			p = p[5+n:]
		}
		if len(p) > 0 {
			st.buf = append(st.buf, p...)
		}
		return
	}
	st.buf = append(st.buf, p...)
	for len(st.buf) >= 5 {
		n := int(binary.BigEndian.Uint32(st.buf[1:5]))
		if len(st.buf) < 5+n {
			return
		}
		st.msg(st.buf[5 : 5+n])
		st.buf = st.buf[5+n:]
	}
	st.buf = append([]byte(nil), st.buf...) // nil when empty
}
