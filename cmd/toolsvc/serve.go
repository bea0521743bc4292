package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"

	"github.com/toolsvc/toolsvc/config"
	"github.com/toolsvc/toolsvc/internal/loopback"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service"
	"github.com/toolsvc/toolsvc/service/core"
	"github.com/toolsvc/toolsvc/service/mcpfront"
)

func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "config file (JSON or YAML); empty runs the built-in demo upstream")
	listen := fs.String("listen", ":50051", "gRPC listen address")
	adminListen := fs.String("admin-listen", ":9090", "admin HTTP address serving /metrics (empty: off)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "text or json")
	shutdownTimeout := fs.Duration("shutdown-timeout", 15*time.Second, "bound on graceful shutdown: in-flight calls get two thirds of it to finish, the rest closes upstream sessions")
	fs.DurationVar(shutdownTimeout, "drain-timeout", 15*time.Second, "alias of --shutdown-timeout")
	maxReq := fs.Int("max-request-bytes", service.DefaultMaxRequestBytes, "largest CallTool request accepted (RESOURCE_EXHAUSTED above)")
	maxResp := fs.Int("max-response-bytes", service.DefaultMaxResponseBytes, "largest tool result returned (RESOURCE_EXHAUSTED above); clients must accept messages this large")
	maxAge := fs.Duration("max-connection-age", 5*time.Minute, "connections are closed (GOAWAY) after this long, so load spreads over replicas")
	maxAgeGrace := fs.Duration("max-connection-age-grace", 30*time.Second, "time given to RPCs on a connection past its age")
	tlsCert := fs.String("tls-cert", "", "serve TLS with this certificate (PEM; re-read when it changes)")
	tlsKey := fs.String("tls-key", "", "private key of --tls-cert")
	tlsClientCA := fs.String("tls-client-ca", "", "verify client certificates against this CA (mTLS)")
	mcpListen := fs.String("mcp-listen", "", "serve the MCP front door (streamable HTTP at /mcp, legacy SSE at /sse) on this address (empty: off); TLS and auth as for gRPC")
	mcpHosts := fs.String("mcp-allowed-hosts", "", "comma-separated Host header values the MCP front door accepts (\"*\": any; empty: loopback names when --mcp-listen is loopback, else any)")
	mcpOrigins := fs.String("mcp-allowed-origins", "", "comma-separated browser Origins the MCP front door accepts (empty: only an Origin naming the request's own Host)")
	mcpKeyFile := fs.String("mcp-session-key-file", "", "file whose contents sign MCP session IDs; replicas behind one load balancer share it (empty: a built-in key, IDs still bound to their principal)")
	mcpPageSize := fs.Int("mcp-page-size", mcpfront.DefaultPageSize, "tools per MCP tools/list page")
	mcpMaxSessions := fs.Int("mcp-max-sessions", mcpfront.DefaultMaxSessions, "MCP sessions (/mcp, 2025-11-25 and older) this replica holds; a new one evicts the oldest idle, or is refused with HTTP 503 when all are busy")
	mcpMaxPerPrincipal := fs.Int("mcp-max-sessions-per-principal", mcpfront.DefaultMaxSessionsPerPrincipal, "MCP sessions one principal holds (without auth every caller is one principal); a new one evicts that principal's oldest idle, or is refused with HTTP 503 when all are busy")
	mcpSessionTimeout := fs.Duration("mcp-session-timeout", mcpfront.DefaultSessionTimeout, "an MCP session idle this long is closed (its client is adopted again if it comes back)")
	mcpBodyTimeout := fs.Duration("mcp-body-timeout", mcpfront.DefaultBodyTimeout, "time an MCP front-door request body may take to arrive (HTTP 408 and the connection closed past it); headers: 10s")
	addrFile := fs.String("addr-file", "", "once listening, write the bound addresses to this file as JSON {\"grpc\", \"admin\", \"mcp\"} (written whole, by rename; for callers that pass port 0)")
	otlp := fs.String("otlp-endpoint", os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "export traces over OTLP/gRPC to this host:port (default $OTEL_EXPORTER_OTLP_ENDPOINT; empty: tracing off)")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2, err: err}
	}
	if *maxReq <= 0 || *maxResp <= 0 {
		return &exitError{code: 2, err: errors.New("--max-request-bytes and --max-response-bytes must be positive")}
	}
	if *mcpMaxSessions <= 0 || *mcpMaxPerPrincipal <= 0 || *mcpSessionTimeout <= 0 || *mcpBodyTimeout <= 0 {
		return &exitError{code: 2, err: errors.New("--mcp-max-sessions, --mcp-max-sessions-per-principal, --mcp-session-timeout and --mcp-body-timeout must be positive")}
	}
	if (*tlsCert == "") != (*tlsKey == "") || (*tlsClientCA != "" && *tlsCert == "") {
		return &exitError{code: 2, err: errors.New("--tls-cert and --tls-key go together, and --tls-client-ca needs them")}
	}
	log, err := newLogger(*logLevel, *logFormat)
	if err != nil {
		return &exitError{code: 2, err: err}
	}

	var bcfg mcpbridge.Config
	var loaded *config.Config
	var cfgData []byte
	if *cfgPath == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("demo upstream: %w", err)
		}
		log.Info("no --config: serving the built-in demo upstream (tools demo__echo, demo__add, demo__sleep)")
		bcfg.Servers = []mcpbridge.ServerConfig{{Name: "demo", Transport: mcpbridge.TransportStdio, Command: self, Args: []string{"demo-server"}}}
	} else {
		data, err := config.ReadFile(*cfgPath)
		if err != nil {
			return fmt.Errorf("read config: %w", err)
		}
		c, err := config.Parse(*cfgPath, data)
		if err != nil {
			return fmt.Errorf("invalid config:\n%w", err)
		}
		for _, w := range c.Warnings {
			log.Warn(w)
		}
		bcfg, loaded, cfgData = c.Bridge, c, data
	}
	bcfg.Logger = log

	// Tracing: off unless an OTLP endpoint is configured.
	var statsHandler stats.Handler
	if *otlp != "" {
		shutdownTracing, err := setupTracing(ctx, *otlp)
		if err != nil {
			return fmt.Errorf("tracing: %w", err)
		}
		defer shutdownTracing()
		statsHandler = otelgrpc.NewServerHandler()
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	// Authentication and authorization come from the config's auth section.
	var authConf core.AuthConfig
	authLoad := &authLoader{ctx: ctx, mtls: *tlsClientCA != "", log: log}
	var tlsConf *tls.Config
	if *tlsCert != "" {
		// --tls-client-ca without an auth section: nothing else would check
		// who the caller is, so the handshake itself requires a certificate
		// from the CA. With auth, the authenticator requires a credential
		// (certificate, token or JWT) on every call.
		requireCert := *tlsClientCA != "" && (loaded == nil || loaded.Auth == nil)
		if tlsConf, err = service.NewReloadingTLS(*tlsCert, *tlsKey, *tlsClientCA, requireCert); err != nil {
			return err
		}
		if requireCert {
			log.Info("--tls-client-ca without an auth section: every connection must present a client certificate signed by the CA")
		}
	}
	if loaded != nil && loaded.Auth != nil {
		var done func(bool)
		if authConf, done, err = authLoad.load(loaded.Auth); err != nil {
			return fmt.Errorf("auth: %w", err)
		}
		done(true)
		bcfg.Servers = withSecrets(bcfg.Servers, loaded.Auth.Secrets)
	}
	authn := authConf.Authenticator

	metrics := service.NewMetrics(reg)
	bcfg.Observer = metrics
	// An upstream message is read through this limit (mcpbridge/msglimit.go).
	// Six times the response limit: a JSON string escape (\u0001) is six
	// bytes for one of the result, so nothing the response limit accepts
	// is refused by the read; go-sdk's 16 MiB frame limit is the floor.
	bcfg.MaxMessageBytes = max(mcpbridge.DefaultMaxMessageBytes, 6*(*maxResp))
	// One tool must fit, with room to spare, in a watch event part and a
	// ListTools page (both at most the response limit).
	bcfg.MaxToolBytes = max(1, min(mcpbridge.DefaultMaxToolBytes, *maxResp/4))
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	bridge, err := mcpbridge.New(bcfg)
	if err != nil {
		lis.Close()
		return fmt.Errorf("invalid config: %w", err)
	}
	defer bridge.Close()
	metrics.Attach(bridge)

	opts := &service.Options{Logger: log, MaxRequestBytes: *maxReq, MaxResponseBytes: *maxResp,
		Authenticator: authn, Authorizer: authConf.Authorizer, RateLimits: authConf.RateLimits,
		Metrics: metrics, AuditLog: authConf.AuditLog, AuditArguments: authConf.AuditArguments}
	var cfgMgr *configManager
	if loaded != nil {
		cfgMgr = newConfigManager(*cfgPath, cfgData, loaded, bridge, log)
		cfgMgr.auth = authLoad
		if loaded.Auth != nil {
			cfgMgr.secrets = loaded.Auth.Secrets
		}
		opts.Config = cfgMgr
	}
	svc := service.New(bridge, opts)
	if cfgMgr != nil {
		cfgMgr.svc = svc // reloads start once serving, below
	}
	var front *mcpFront
	if *mcpListen != "" {
		var key []byte
		if *mcpKeyFile != "" {
			if key, err = os.ReadFile(*mcpKeyFile); err != nil {
				return fmt.Errorf("--mcp-session-key-file: %w", err)
			}
		}
		front, err = startMCPFront(ctx, svc, *mcpListen, tlsConf, mcpfront.Options{Logger: log,
			AllowedHosts: splitList(*mcpHosts), AllowedOrigins: splitList(*mcpOrigins),
			SessionKey: key, PageSize: *mcpPageSize, MaxSessions: *mcpMaxSessions, MaxSessionsPerPrincipal: *mcpMaxPerPrincipal,
			SessionTimeout: *mcpSessionTimeout, BodyTimeout: *mcpBodyTimeout, Registry: reg})
		if err != nil {
			return err
		}
		defer front.close()
		if authn == nil && !loopback.Addr(front.addr) {
			log.Warn("the MCP front door listens beyond loopback without authentication: anyone who can reach "+front.addr.String()+
				" may list and call every tool; add an auth section to the config", "addr", front.addr.String())
		}
	}
	// gRPC's own receive limit sits above the service's request limit, so
	// an over-size call gets the service's RESOURCE_EXHAUSTED naming the
	// limit (gRPC's generic one only past the slack).
	gs, hs := service.NewGRPCServer(svc, service.GRPCOptions{
		Logger: log, Registry: reg, TLS: tlsConf, Auth: authn,
		MaxConnectionAge: *maxAge, MaxConnectionAgeGrace: *maxAgeGrace,
		MaxRecvMsgSize: *maxReq + 1<<20, MaxSendMsgSize: *maxResp + 1<<20,
		StatsHandler: statsHandler,
	})

	serveErr := make(chan error, 1)
	go func() { serveErr <- gs.Serve(lis) }()
	log.Info("serving", "addr", lis.Addr().String(), "tls", tlsConf != nil, "auth", authn != nil)
	if authn == nil && !loopback.Addr(lis.Addr()) {
		log.Warn("listening beyond loopback without authentication: anyone who can reach "+lis.Addr().String()+
			" may list and call every tool (AdminService and server errors stay loopback-only); add an auth section to the config",
			"addr", lis.Addr().String())
	}

	var admin *http.Server
	var adminAddr string
	adminErr := make(chan error, 1)
	if *adminListen != "" {
		alis, err := net.Listen("tcp", *adminListen)
		if err != nil {
			gs.Stop()
			<-serveErr
			return fmt.Errorf("admin listen: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		admin = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { adminErr <- admin.Serve(alis) }()
		adminAddr = alis.Addr().String()
		log.Info("admin serving", "addr", alis.Addr().String(), "metrics", "/metrics")
	}
	if *addrFile != "" {
		a := boundAddrs{GRPC: lis.Addr().String()}
		if admin != nil {
			a.Admin = adminAddr
		}
		if front != nil {
			a.MCP = front.addr.String()
		}
		if err := writeAddrFile(*addrFile, a); err != nil {
			gs.Stop()
			<-serveErr
			if admin != nil {
				_ = admin.Close()
				<-adminErr
			}
			return fmt.Errorf("--addr-file: %w", err)
		}
	}

	reloadCtx, stopReload := context.WithCancel(ctx)
	reloadDone := make(chan struct{})
	go func() {
		defer close(reloadDone)
		if cfgMgr != nil {
			cfgMgr.run(reloadCtx)
		}
	}()
	defer func() {
		stopReload()
		<-reloadDone
	}()

	select {
	case <-bridge.Ready():
		service.SetReady(hs, true)
		log.Info("ready", "tools", len(bridge.Catalog().Current().Tools))
	case <-ctx.Done():
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	}

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	}

	// Shutdown, in the order of docs/upstream-behaviour.md §5: readiness off first, watches
	// ended (clients resume elsewhere), in-flight calls drained within the
	// bound, then upstream sessions closed.
	log.Info("shutting down", "timeout", *shutdownTimeout)
	deadline := time.Now().Add(*shutdownTimeout)
	service.SetReady(hs, false)
	stopReload()
	<-reloadDone
	svc.Shutdown()
	// The MCP front door drains alongside gRPC: idle sessions close at once,
	// calls in flight get the same two thirds of the bound.
	frontDrained := make(chan struct{})
	if front != nil {
		go func() {
			defer close(frontDrained)
			front.drain(time.Until(deadline) * 2 / 3)
		}()
	} else {
		close(frontDrained)
	}
	stopped := make(chan struct{})
	go func() {
		gs.GracefulStop()
		close(stopped)
	}()
	t := time.NewTimer(time.Until(deadline) * 2 / 3)
	select {
	case <-stopped:
		t.Stop()
	case <-t.C:
		log.Warn("drain bound reached: cancelling remaining calls")
		gs.Stop()
		<-stopped
	}
	svc.Wait() // every watch stream is done: a message a client held fails (service/watch_send.go)
	if err := <-serveErr; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		log.Warn("serve ended", "error", err)
	}
	<-frontDrained
	hs.Shutdown()
	if front != nil {
		front.close()
	}
	closed := make(chan struct{})
	go func() {
		bridge.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(max(time.Until(deadline), time.Second)):
		log.Warn("upstream sessions did not close within the shutdown bound")
	}
	if admin != nil {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = admin.Shutdown(sctx)
		cancel()
		<-adminErr
	}
	log.Info("stopped")
	return nil
}

// withSecrets adds values to every server's redaction list.
func withSecrets(servers []mcpbridge.ServerConfig, secrets []string) []mcpbridge.ServerConfig {
	for i := range servers {
		servers[i].Secrets = append(servers[i].Secrets, secrets...)
	}
	return servers
}

func newLogger(level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not text or json", format)
}

func runConfig(args []string) error {
	if len(args) != 2 || args[0] != "check" {
		return &exitError{code: 2, err: errors.New("usage: toolsvc config check FILE")}
	}
	c, err := config.Load(args[1])
	if err != nil {
		return err
	}
	for _, w := range c.Warnings {
		fmt.Println("warning:", w)
	}
	fmt.Printf("%s: ok (%d servers)\n", args[1], len(c.Bridge.Servers))
	return nil
}

// boundAddrs is the --addr-file content: the addresses serve listens on
// (empty when that listener is off).
type boundAddrs struct {
	GRPC  string `json:"grpc"`
	Admin string `json:"admin,omitempty"`
	MCP   string `json:"mcp,omitempty"`
}

// writeAddrFile writes a as JSON to path, whole: a temporary file in the
// same directory renamed over it, so a reader polling for path never sees a
// partial file.
func writeAddrFile(path string, a boundAddrs) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".addr-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
