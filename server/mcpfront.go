package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/toolsvc/toolsvc/service/core"
	"github.com/toolsvc/toolsvc/service/mcpfront"
)

// mcpFront is the MCP front door's HTTP server (serve.mcpListen).
type mcpFront struct {
	f       *mcpfront.Front
	log     *slog.Logger
	addr    net.Addr
	srv     *http.Server
	served  chan error
	runDone chan struct{}
	once    sync.Once
}

const (
	mcpHeaderTimeout = 10 * time.Second
	mcpIdleTimeout   = 2 * time.Minute
)

func startMCPFront(ctx context.Context, c *core.Core, addr string, tlsConf *tls.Config, o mcpfront.Options) (*mcpFront, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve.mcpListen (--mcp-listen): %w", err)
	}
	o.ListenAddr = lis.Addr().String()
	m := &mcpFront{f: mcpfront.New(c, o), log: o.Logger, addr: lis.Addr(), served: make(chan error, 1), runDone: make(chan struct{})}
	// Headers must arrive within mcpHeaderTimeout (the body within
	// --mcp-body-timeout, set per request by the front door), and a
	// kept-alive connection with no request goes after mcpIdleTimeout.
	m.srv = &http.Server{Handler: m.f.Handler(), ReadHeaderTimeout: mcpHeaderTimeout, IdleTimeout: mcpIdleTimeout}
	if tlsConf != nil {
		// The gRPC config offers only h2; HTTP clients also speak 1.1.
		c := tlsConf.Clone()
		c.NextProtos = []string{"h2", "http/1.1"}
		if get := tlsConf.GetConfigForClient; get != nil {
			c.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
				cc, err := get(hello)
				if err != nil || cc == nil {
					return cc, err
				}
				cc = cc.Clone()
				cc.NextProtos = []string{"h2", "http/1.1"}
				return cc, nil
			}
		}
		lis = tls.NewListener(lis, c)
	}
	go func() {
		defer close(m.runDone)
		m.f.Run(ctx)
	}()
	go func() { m.served <- m.srv.Serve(lis) }()
	o.Logger.Info("MCP front door serving", "addr", lis.Addr().String(), "streamable", "/mcp", "sse", "/sse", "tls", tlsConf != nil)
	return m, nil
}

// drain lets calls in flight finish within bound while the listener stops
// taking connections and idle sessions close. It returns once both the
// HTTP server's shutdown and the front door's drain have returned.
func (m *mcpFront) drain(bound time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		m.f.Drain(ctx)
	}()
	if err := m.srv.Shutdown(ctx); err != nil {
		m.log.Warn("MCP front door: calls still running at the drain bound are cut off", "bound", bound, "error", err)
	}
	<-drained
}

// close ends everything at once; idempotent.
func (m *mcpFront) close() {
	m.once.Do(func() {
		m.f.Close()
		if err := m.srv.Close(); err != nil {
			m.log.Warn("MCP front door: closing its listener", "error", err)
		}
		if err := <-m.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Warn("MCP front door: serving ended", "error", err)
		}
		<-m.runDone
	})
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
