package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/stats"

	"github.com/toolsvc/toolsvc/config"
	"github.com/toolsvc/toolsvc/console"
	"github.com/toolsvc/toolsvc/internal/loopback"
	"github.com/toolsvc/toolsvc/internal/mcpgrpcup"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service"
	"github.com/toolsvc/toolsvc/service/core"
	"github.com/toolsvc/toolsvc/service/mcpfront"
	"github.com/toolsvc/toolsvc/service/mcpgrpc"
)

// loadServeConfig reads the configuration file (or, without one, sets up
// the built-in demo upstream): the bridge's configuration, the parsed file
// (nil for the demo) and its bytes.
func loadServeConfig(path string) (mcpbridge.Config, *config.Config, []byte, error) {
	var bcfg mcpbridge.Config
	if path == "" {
		self, err := os.Executable()
		if err != nil {
			return bcfg, nil, nil, fmt.Errorf("demo upstream: %w", err)
		}
		bcfg.Servers = []mcpbridge.ServerConfig{{Name: "demo", Transport: mcpbridge.TransportStdio, Command: self, Args: []string{"demo-server"}}}
		return bcfg, nil, nil, nil
	}
	data, err := config.ReadFile(path)
	if err != nil {
		return bcfg, nil, nil, fmt.Errorf("read config: %w", err)
	}
	c, err := config.Parse(path, data)
	if err != nil {
		return bcfg, nil, nil, fmt.Errorf("invalid config:\n%w", err)
	}
	return c.Bridge, c, data, nil
}

// startTracing exports traces over OTLP when endpoint is set: the gRPC
// stats handler that makes spans (nil: tracing off) and the function that
// flushes and stops the exporter.
func startTracing(ctx context.Context, endpoint string, log *slog.Logger) (stats.Handler, func(), error) {
	if endpoint == "" {
		return nil, func() {}, nil
	}
	stop, err := setupTracing(ctx, endpoint, log)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: %w", err)
	}
	return otelgrpc.NewServerHandler(), stop, nil
}

// security is the listeners' TLS and the auth configuration of the
// config's auth section, with the loader reloads use.
type security struct {
	tls  *tls.Config
	auth core.AuthConfig
	load *authLoader
}

// setupSecurity builds the TLS configuration of the --tls flags and the
// auth configuration of the config's auth section.
func setupSecurity(ctx context.Context, f *config.Serve, loaded *config.Config, log *slog.Logger) (*security, error) {
	sec := &security{load: &authLoader{ctx: ctx, mtls: f.TLSClientCA != "", log: log, calls: console.NewCalls()}}
	if f.TLSCert != "" {
		// --tls-client-ca without an auth section: nothing else would check
		// who the caller is, so the handshake itself requires a certificate
		// from the CA. With auth, the authenticator requires a credential
		// (certificate, token or JWT) on every call.
		requireCert := f.TLSClientCA != "" && (loaded == nil || loaded.Auth == nil)
		var err error
		if sec.tls, err = service.NewReloadingTLS(f.TLSCert, f.TLSKey, f.TLSClientCA, requireCert); err != nil {
			return nil, err
		}
		if requireCert {
			log.Info("--tls-client-ca without an auth section: every connection must present a client certificate signed by the CA")
		}
	}
	if loaded != nil && loaded.Auth != nil {
		auth, done, err := sec.load.load(loaded.Auth)
		if err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
		done(true)
		sec.auth = auth
	}
	return sec, nil
}

// serving is a running serve: what start builds and shutdown stops, in
// order.
type serving struct {
	cfg     Config
	set     config.Serve   // the settings in force
	level   *slog.LevelVar // the logger's level (serve.logLevel, applied by reloads)
	log     *slog.Logger
	reg     *prometheus.Registry
	sec     *security
	metrics *service.Metrics
	stats   stats.Handler

	bridge    *mcpbridge.Bridge
	kube      *kubeDiscovery   // nil without a kubernetes section
	fileCfg   mcpbridge.Config // the file's servers, before discovery's are merged
	core      *core.Core
	svc       *service.Server
	cfgMgr    *configManager
	front     *mcpFront
	gs        *grpc.Server
	hs        *health.Server
	serveErr  chan error
	admin     *http.Server
	adminAddr string
	adminErr  chan error
	adminLis  net.Listener           // listened before the bridge starts (its address is the login callback's)
	logins    *mcpbridge.LoginConfig // the tokenStore of userOAuth upstreams (nil: none)

	stopReload func()
	reloadDone chan struct{}

	stateKey []byte // --state-key-file's contents

	traffic *console.Traffic // the console's ring of recent calls (docs/console.md)
}

// replicaID names this process in parked interactive calls' states: the
// host name (a pod's name) and a random suffix, so that two processes on
// one host differ.
func replicaID() string {
	host, err := os.Hostname()
	if err != nil {
		host = "toolsvc"
	}
	b := make([]byte, 3)
	rand.Read(b) // crypto/rand.Read never fails (it crashes the program instead)
	return host + "-" + hex.EncodeToString(b)
}

// start builds the bridge, the service and the MCP front door, and starts
// the gRPC and admin listeners, the --addr-file and config reloads. On an
// error, what it started is stopped.
func (sv *serving) start(ctx context.Context, bcfg mcpbridge.Config, loaded *config.Config, cfgData []byte) error {
	if sv.set.StateKeyFile != "" {
		key, err := os.ReadFile(sv.set.StateKeyFile)
		if err != nil {
			return fmt.Errorf("serve.stateKeyFile (--state-key-file): %w", err)
		}
		if len(bytes.TrimSpace(key)) < 16 {
			return fmt.Errorf("serve.stateKeyFile (--state-key-file): %s holds %d bytes; want at least 16 (random bytes, the same on every replica)", sv.set.StateKeyFile, len(bytes.TrimSpace(key)))
		}
		sv.stateKey = key
	}
	lis, err := net.Listen("tcp", sv.set.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if sv.set.AdminListen != "" {
		if sv.adminLis, err = net.Listen("tcp", sv.set.AdminListen); err != nil {
			lis.Close()
			return fmt.Errorf("admin listen: %w", err)
		}
	}
	var adminAddr net.Addr
	if sv.adminLis != nil {
		adminAddr = sv.adminLis.Addr()
	}
	if sv.logins, err = openLogins(loaded, sv.set.PublicURL, adminAddr, sv.log); err != nil {
		sv.closeEarlyListeners(lis)
		return err
	}
	bcfg.Logins = sv.logins
	// The bridge imports no gRPC: upstreams that serve the MCP gRPC
	// binding are reached through the transport registered here.
	bcfg.Transports = map[mcpbridge.Transport]mcpbridge.TransportFactory{mcpbridge.TransportGRPC: mcpgrpcup.Factory}
	if sv.bridge, err = mcpbridge.New(bcfg); err != nil {
		sv.closeEarlyListeners(lis)
		sv.closeStore()
		return fmt.Errorf("invalid config: %w", err)
	}
	sv.metrics.Attach(sv.bridge)
	sv.newCore()
	sv.newService(loaded, cfgData)
	if err := sv.startFront(ctx); err != nil {
		sv.bridge.Close()
		sv.closeEarlyListeners(lis)
		sv.closeStore()
		return err
	}
	sv.serveGRPC(lis)
	if err := sv.startAdmin(); err != nil {
		sv.stopEarly()
		return err
	}
	if err := sv.writeAddrs(lis.Addr()); err != nil {
		sv.stopEarly()
		return err
	}
	reloadCtx, stop := context.WithCancel(ctx)
	sv.stopReload, sv.reloadDone = stop, make(chan struct{})
	go func() {
		defer close(sv.reloadDone)
		if sv.cfgMgr != nil {
			sv.cfgMgr.run(reloadCtx)
		}
	}()
	return nil
}

// newCore builds the core over the bridge: what every wire shares (auth,
// limits, interactive calls, tasks), with the metrics as its observer.
func (sv *serving) newCore() {
	set := &sv.set
	sv.traffic = console.NewTraffic()
	sv.core = core.New(sv.bridge, core.Options{Logger: sv.log, Auth: sv.sec.auth, Observer: observers{sv.metrics, sv.traffic},
		MaxRequestBytes: set.MaxRequestBytes, MaxResponseBytes: set.MaxResponseBytes,
		StateKey: sv.stateKey, ReplicaID: replicaID(), InputTimeout: set.InputTimeout,
		MaxWaitingPerPrincipal: set.MaxWaitingPerPrincipal, MaxWaiting: set.MaxWaiting, TaskPollInterval: set.TaskPollInterval,
		MaxTaskWatchesPerPrincipal: set.MaxTaskWatchesPerPrincipal,
		MaxParkedPerCall:           set.MaxParkedPerCall, MaxInputRequestBytes: set.MaxInputRequestBytes,
		MaxParkedBytes: set.MaxParkedBytes, MaxParkedBytesPerPrincipal: set.MaxParkedBytesPerPrincipal,
		SearchRanker: set.SearchRanker})
}

// newService builds the gRPC service from the core, with the config
// manager that reloads the file (none for the demo).
func (sv *serving) newService(loaded *config.Config, cfgData []byte) {
	opts := &service.Options{Logger: sv.log, Metrics: sv.metrics}
	if loaded != nil {
		m := newConfigManager(sv.cfg.File, cfgData, loaded, sv.bridge, sv.log)
		m.auth, m.core = sv.sec.load, sv.core
		m.base, m.running, m.level = sv.cfg, loaded, sv.level
		if loaded.Auth != nil {
			m.secrets = loaded.Auth.Secrets
		}
		m.kube, m.kubeSection, m.fileCfg = sv.kube, loaded.Kubernetes, sv.fileCfg
		m.storeSection = loaded.TokenStore
		sv.cfgMgr, opts.Config = m, m
	}
	sv.svc = service.New(sv.core, opts)
	if sv.cfgMgr != nil && sv.kube != nil { // reloads start once serving (start)
		sv.kube.attach(sv.cfgMgr.applyDiscovered)
	}
}

// startFront starts the MCP front door, from the core, when serve.mcpListen
// is set.
func (sv *serving) startFront(ctx context.Context) error {
	f := &sv.set
	if f.MCPListen == "" {
		return nil
	}
	var key []byte
	if f.MCPSessionKeyFile != "" {
		var err error
		if key, err = os.ReadFile(f.MCPSessionKeyFile); err != nil {
			return fmt.Errorf("serve.mcpSessionKeyFile (--mcp-session-key-file): %w", err)
		}
	}
	front, err := startMCPFront(ctx, sv.core, f.MCPListen, sv.sec.tls, mcpfront.Options{Logger: sv.log,
		AllowedHosts: f.MCPAllowedHosts, AllowedOrigins: f.MCPAllowedOrigins,
		SessionKey: key, PageSize: f.MCPPageSize, MaxSessions: f.MCPMaxSessions, MaxSessionsPerPrincipal: f.MCPMaxSessionsPerPrincipal,
		SessionTimeout: f.MCPSessionTimeout, BodyTimeout: f.MCPBodyTimeout, Registry: sv.reg,
		Discovery: mcpfront.Discovery{Progressive: f.MCPDiscovery == "progressive", CoreTools: f.MCPCoreTools,
			Principals: f.MCPDiscoveryPrincipals}})
	if err != nil {
		return err
	}
	sv.front = front
	if sv.sec.auth.Authenticator == nil && !loopback.Addr(front.addr) {
		sv.log.Warn("the MCP front door listens beyond loopback without authentication: anyone who can reach "+front.addr.String()+
			" may list and call every tool; add an auth section to the config", "addr", front.addr.String())
	}
	return nil
}

// serveGRPC builds the gRPC server and serves it on lis. gRPC's own
// receive limit sits above the service's request limit, so an over-size
// call gets the service's RESOURCE_EXHAUSTED naming the limit (gRPC's
// generic one only past the slack).
func (sv *serving) serveGRPC(lis net.Listener) {
	authn := sv.sec.auth.Authenticator
	sv.gs, sv.hs = service.NewGRPCServer(sv.svc, service.GRPCOptions{
		Logger: sv.log, Registry: sv.reg, TLS: sv.sec.tls, Auth: authn,
		MaxConnectionAge: sv.set.MaxConnectionAge, MaxConnectionAgeGrace: sv.set.MaxConnectionAgeGrace,
		MaxRecvMsgSize: sv.set.MaxRequestBytes + 1<<20, MaxSendMsgSize: sv.set.MaxResponseBytes + 1<<20,
		StatsHandler: sv.stats,
		Services:     []service.Wire{{Name: mcpgrpc.ServiceName, Register: mcpgrpc.New(sv.core, sv.log).Register}},
	})
	sv.serveErr = make(chan error, 1)
	go func() { sv.serveErr <- sv.gs.Serve(lis) }()
	sv.log.Info("serving", "addr", lis.Addr().String(), "tls", sv.sec.tls != nil, "auth", authn != nil)
	if authn == nil && !loopback.Addr(lis.Addr()) {
		sv.log.Warn("listening beyond loopback without authentication: anyone who can reach "+lis.Addr().String()+
			" may list and call every tool (AdminService and server errors stay loopback-only); add an auth section to the config",
			"addr", lis.Addr().String())
	}
}

// startAdmin serves /metrics on --admin-listen (empty: off).
func (sv *serving) startAdmin() error {
	sv.adminErr = make(chan error, 1)
	if sv.adminLis == nil {
		return nil
	}
	alis := sv.adminLis
	mux := http.NewServeMux()
	mux.Handle("/metrics", sv.metrics.Handler(sv.reg))
	co := console.Options{Logger: sv.log, Traffic: sv.traffic, Calls: sv.sec.load.calls}
	if sv.cfgMgr != nil {
		co.Config = func() any { return sv.cfgMgr.Status() }
		co.Effective = sv.cfgMgr.Effective
		if sv.kube != nil {
			co.Kubernetes = sv.cfgMgr.Kubernetes
		}
	}
	mux.Handle(console.Prefix, console.New(sv.core, co).Handler()) // docs/console.md
	if sv.logins != nil {
		mux.Handle(mcpbridge.LoginCallbackPath, loginCallback(func() *mcpbridge.Bridge { return sv.bridge }, sv.log))
		sv.log.Info("userOAuth login callback", "redirect_uri", sv.logins.RedirectURL)
	}
	sv.admin, sv.adminAddr = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, alis.Addr().String()
	go func() { sv.adminErr <- sv.admin.Serve(alis) }()
	sv.log.Info("admin serving", "addr", alis.Addr().String(), "metrics", "/metrics", "console", console.Prefix)
	return nil
}

// closeEarlyListeners closes the listeners start opened before a step of
// it failed.
func (sv *serving) closeEarlyListeners(lis net.Listener) {
	lis.Close()
	if sv.adminLis != nil {
		sv.adminLis.Close()
	}
}

// closeStore closes the token store, once the bridge no longer uses it.
func (sv *serving) closeStore() {
	if sv.logins != nil && sv.logins.Store != nil {
		if err := sv.logins.Store.Close(); err != nil {
			sv.log.Warn("closing the token store", "error", err)
		}
	}
}

// writeAddrs writes --addr-file (when set) with the bound addresses.
func (sv *serving) writeAddrs(grpcAddr net.Addr) error {
	if sv.set.AddrFile == "" {
		return nil
	}
	a := boundAddrs{GRPC: grpcAddr.String()}
	if sv.admin != nil {
		a.Admin = sv.adminAddr
	}
	if sv.front != nil {
		a.MCP = sv.front.addr.String()
	}
	if err := writeAddrFile(sv.set.AddrFile, a); err != nil {
		return fmt.Errorf("serve.addrFile (--addr-file): %w", err)
	}
	return nil
}

// stopEarly stops what start started when a later step of it fails: the
// gRPC server, the admin server, the front door and the bridge.
func (sv *serving) stopEarly() {
	sv.gs.Stop()
	<-sv.serveErr
	if sv.admin != nil {
		if err := sv.admin.Close(); err != nil {
			sv.log.Warn("closing the admin listener", "error", err)
		}
		<-sv.adminErr
	}
	if sv.front != nil {
		sv.front.close()
	}
	sv.bridge.Close()
	sv.closeStore()
}

// run reports ready once the bridge's first discovery is done, waits for
// ctx to end (a signal), then shuts down. A gRPC server that stops
// serving on its own is an error.
func (sv *serving) run(ctx context.Context) error {
	defer func() {
		sv.stopReload()
		<-sv.reloadDone
	}()
	select {
	case <-sv.bridge.Ready():
		service.SetReady(sv.hs, true)
		sv.log.Info("ready", "tools", len(sv.bridge.Catalog().Current().Tools))
	case <-ctx.Done():
	case err := <-sv.serveErr:
		return fmt.Errorf("serve: %w", err)
	}
	select {
	case <-ctx.Done():
	case err := <-sv.serveErr:
		return fmt.Errorf("serve: %w", err)
	}
	sv.shutdown()
	return nil
}

// shutdown stops in the order of docs/upstream-behaviour.md §5: readiness
// off first, watches ended (clients resume elsewhere), in-flight calls
// drained within two thirds of --shutdown-timeout (the MCP front door
// alongside gRPC), then upstream sessions closed within the rest, then the
// admin server.
func (sv *serving) shutdown() {
	sv.log.Info("shutting down", "timeout", sv.set.ShutdownTimeout)
	deadline := time.Now().Add(sv.set.ShutdownTimeout)
	service.SetReady(sv.hs, false)
	sv.stopReload()
	<-sv.reloadDone
	sv.svc.Shutdown()
	frontDrained := make(chan struct{})
	go func() {
		defer close(frontDrained)
		if sv.front != nil { // idle sessions close at once, calls get the same bound
			sv.front.drain(time.Until(deadline) * 2 / 3)
		}
	}()
	sv.drainGRPC(time.Until(deadline) * 2 / 3)
	<-frontDrained
	sv.hs.Shutdown()
	if sv.front != nil {
		sv.front.close()
	}
	closed := make(chan struct{})
	go func() {
		sv.bridge.Close()
		close(closed)
	}()
	select {
	case <-closed:
		sv.closeStore()
	case <-time.After(max(time.Until(deadline), time.Second)):
		sv.log.Warn("upstream sessions did not close within the shutdown bound")
	}
	if sv.admin != nil {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := sv.admin.Shutdown(sctx); err != nil {
			sv.log.Warn("admin listener: requests still running at its shutdown bound are cut off", "error", err)
		}
		cancel()
		<-sv.adminErr
	}
	sv.log.Info("stopped")
}

// drainGRPC stops the gRPC server gracefully, cancelling the calls still
// running after bound, then waits for every watch message in flight.
func (sv *serving) drainGRPC(bound time.Duration) {
	stopped := make(chan struct{})
	go func() {
		sv.gs.GracefulStop()
		close(stopped)
	}()
	t := time.NewTimer(bound)
	select {
	case <-stopped:
		t.Stop()
	case <-t.C:
		sv.log.Warn("drain bound reached: cancelling remaining calls")
		go sv.gs.Stop() // returns once every handler has (service.ServerOptions)
		t.Reset(max(bound/2, time.Second))
		select {
		case <-stopped:
		case <-t.C:
			// A handler that does not return on its cancelled context
			// would hold the process past its shutdown bound: go on
			// without waiting for the watch sends (they need the
			// handlers gone, service.Server.Wait).
			sv.log.Error("handlers still running after their calls were cancelled; stopping without them")
			return
		}
	}
	sv.svc.Wait() // every watch stream is done: a message a client held fails (service/watch_send.go)
	if err := <-sv.serveErr; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		sv.log.Warn("serve ended", "error", err)
	}
}
