package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/toolsvc/toolsvc/service"
	"github.com/toolsvc/toolsvc/service/mcpfront"
)

// mcpFront is the MCP front door's HTTP server (serve --mcp-listen).
type mcpFront struct {
	f       *mcpfront.Front
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

func startMCPFront(ctx context.Context, svc *service.Server, addr string, tlsConf *tls.Config, o mcpfront.Options) (*mcpFront, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--mcp-listen: %w", err)
	}
	o.ListenAddr = lis.Addr().String()
	m := &mcpFront{f: mcpfront.New(svc.Core(), o), addr: lis.Addr(), served: make(chan error, 1), runDone: make(chan struct{})}
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
// taking connections and idle sessions close.
func (m *mcpFront) drain(bound time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	go m.f.Drain(ctx)
	_ = m.srv.Shutdown(ctx)
}

// close ends everything at once; idempotent.
func (m *mcpFront) close() {
	m.once.Do(func() {
		m.f.Close()
		_ = m.srv.Close()
		if err := <-m.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err
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
