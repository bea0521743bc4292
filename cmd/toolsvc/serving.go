package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/stats"

	"github.com/toolsvc/toolsvc/config"
	"github.com/toolsvc/toolsvc/internal/loopback"
	"github.com/toolsvc/toolsvc/internal/mcpgrpcup"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service"
	"github.com/toolsvc/toolsvc/service/core"
	"github.com/toolsvc/toolsvc/service/mcpfront"
	"github.com/toolsvc/toolsvc/service/mcpgrpc"
)

// The stages of serve (runServe): flags → logger → configuration →
// tracing → TLS and auth → the bridge, the service, the MCP front door and
// the listeners (serving.start) → ready, then the signal to stop →
// shutdown in order (serving.shutdown).

// serveFlags is serve's command line.
type serveFlags struct {
	memoryLimit                                        uint64
	cfgPath, listen, adminListen, logLevel, logFormat  string
	shutdownTimeout, maxAge, maxAgeGrace               time.Duration
	maxReq, maxResp                                    int
	tlsCert, tlsKey, tlsClientCA                       string
	mcpListen, mcpHosts, mcpOrigins, mcpKeyFile        string
	mcpPageSize, mcpMaxSessions, mcpMaxPerPrincipal    int
	mcpDiscovery, mcpCoreTools, mcpDiscoveryPrincipals string
	mcpSessionTimeout, mcpBodyTimeout                  time.Duration
	addrFile, otlp                                     string
	kubeconfig                                         string
	stateKeyFile                                       string
	publicURL                                          string
	inputTimeout                                       time.Duration
	maxWaitingPerPrincipal, maxWaiting                 int
	maxTaskWatchesPerPrincipal                         int
	maxParkedPerCall, maxInputRequestBytes             int
	maxParkedBytes, maxParkedBytesPerPrincipal         int64
	taskPollInterval                                   time.Duration
}

// parseServeFlags parses and checks serve's flags; a bad command line is
// an exitError with code 2.
func parseServeFlags(args []string) (*serveFlags, error) {
	f := &serveFlags{}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&f.cfgPath, "config", "", "config file (JSON or YAML); empty runs the built-in demo upstream")
	fs.StringVar(&f.listen, "listen", ":50051", "gRPC listen address")
	fs.StringVar(&f.adminListen, "admin-listen", ":9090", "admin HTTP address serving /metrics (empty: off)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "text or json")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 15*time.Second, "bound on graceful shutdown: in-flight calls get two thirds of it to finish, the rest closes upstream sessions")
	fs.DurationVar(&f.shutdownTimeout, "drain-timeout", 15*time.Second, "alias of --shutdown-timeout")
	fs.IntVar(&f.maxReq, "max-request-bytes", service.DefaultMaxRequestBytes, "largest CallTool request accepted (RESOURCE_EXHAUSTED above)")
	fs.IntVar(&f.maxResp, "max-response-bytes", service.DefaultMaxResponseBytes, "largest tool result returned (RESOURCE_EXHAUSTED above); clients must accept messages this large")
	fs.DurationVar(&f.maxAge, "max-connection-age", 5*time.Minute, "connections are closed (GOAWAY) after this long, so load spreads over replicas")
	fs.DurationVar(&f.maxAgeGrace, "max-connection-age-grace", 30*time.Second, "time given to RPCs on a connection past its age")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "serve TLS with this certificate (PEM; re-read when it changes)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "private key of --tls-cert")
	fs.StringVar(&f.tlsClientCA, "tls-client-ca", "", "verify client certificates against this CA (mTLS)")
	fs.StringVar(&f.mcpListen, "mcp-listen", "", "serve the MCP front door (streamable HTTP at /mcp, legacy SSE at /sse) on this address (empty: off); TLS and auth as for gRPC")
	fs.StringVar(&f.mcpHosts, "mcp-allowed-hosts", "", "comma-separated Host header values the MCP front door accepts (\"*\": any; empty: loopback names when --mcp-listen is loopback, else any)")
	fs.StringVar(&f.mcpOrigins, "mcp-allowed-origins", "", "comma-separated browser Origins the MCP front door accepts (empty: only an Origin naming the request's own Host)")
	fs.StringVar(&f.mcpKeyFile, "mcp-session-key-file", "", "file whose contents sign MCP session IDs; replicas behind one load balancer share it (empty: a built-in key, IDs still bound to their principal)")
	fs.StringVar(&f.publicURL, "public-url", "", "the URL browsers reach --admin-listen at, for the userOAuth login callback (its redirect URI is this + "+mcpbridge.LoginCallbackPath+"; default: http:// and the admin listener's address)")
	fs.StringVar(&f.stateKeyFile, "state-key-file", "", "file whose contents sign interactive calls' request states and seal task handles; replicas behind one load balancer share it (empty: a random key, so only this process continues its calls and opens its task handles)")
	fs.DurationVar(&f.taskPollInterval, "task-poll-interval", core.DefaultTaskPollInterval, "how often a watched task's upstream is polled (one poll per task and replica, however many watchers; the upstream's suggested pollInterval is reported, not followed)")
	fs.DurationVar(&f.inputTimeout, "input-timeout", core.DefaultInputTimeout, "how long a call's input_required waits for the caller's answer before the upstream's request is declined and the call cancelled")
	fs.IntVar(&f.maxWaitingPerPrincipal, "max-waiting-per-principal", core.DefaultMaxWaitingPerPrincipal, "interactive calls one principal may have waiting for input, counted from a call's first request to its caller (RESOURCE_EXHAUSTED TOO_MANY_WAITING above)")
	fs.IntVar(&f.maxTaskWatchesPerPrincipal, "max-task-watches-per-principal", core.DefaultMaxTaskWatchesPerPrincipal, "tasks one principal may watch at once on this replica (WatchTask streams and front-door task watches; RESOURCE_EXHAUSTED TOO_MANY_TASK_WATCHES above)")
	fs.IntVar(&f.maxWaiting, "max-waiting", core.DefaultMaxWaiting, "interactive calls this replica holds waiting for input, counted like --max-waiting-per-principal (a call that only offers input is not counted)")
	fs.IntVar(&f.maxParkedPerCall, "max-parked-per-call", core.DefaultMaxParkedPerCall, "upstream requests for input (elicitation, sampling, roots) one call may have waiting at once; one more is declined and the call ends (RESOURCE_EXHAUSTED TOO_MANY_WAITING)")
	fs.IntVar(&f.maxInputRequestBytes, "max-input-request-bytes", core.DefaultMaxInputRequestBytes, "encoded size of one upstream request for input; a larger one is declined and its call ends (RESOURCE_EXHAUSTED INPUT_REQUEST_TOO_LARGE)")
	fs.Int64Var(&f.maxParkedBytesPerPrincipal, "max-parked-bytes-per-principal", core.DefaultMaxParkedBytesPerPrincipal, "encoded size of the upstream requests for input waiting in one principal's calls")
	fs.Int64Var(&f.maxParkedBytes, "max-parked-bytes", core.DefaultMaxParkedBytes, "encoded size of the upstream requests for input waiting on this replica")
	fs.IntVar(&f.mcpPageSize, "mcp-page-size", mcpfront.DefaultPageSize, "tools per MCP tools/list page")
	fs.StringVar(&f.mcpDiscovery, "mcp-discovery", "full", "MCP tools/list: full (every tool) or progressive (the --mcp-core-tools, search_tools and call_tool, and on a 2025-11-25 session what its searches found; any tool stays callable)")
	fs.StringVar(&f.mcpCoreTools, "mcp-core-tools", "", "with --mcp-discovery progressive: comma-separated globs of exposed tool names listed besides search_tools and call_tool")
	fs.StringVar(&f.mcpDiscoveryPrincipals, "mcp-discovery-principals", "", "with --mcp-discovery progressive: comma-separated principals it applies to (empty: all)")
	fs.IntVar(&f.mcpMaxSessions, "mcp-max-sessions", mcpfront.DefaultMaxSessions, "MCP sessions (/mcp, 2025-11-25 and older) this replica holds; a new one evicts the oldest idle, or is refused with HTTP 503 when all are busy")
	fs.IntVar(&f.mcpMaxPerPrincipal, "mcp-max-sessions-per-principal", mcpfront.DefaultMaxSessionsPerPrincipal, "MCP sessions one principal holds (without auth every caller is one principal); a new one evicts that principal's oldest idle, or is refused with HTTP 503 when all are busy")
	fs.DurationVar(&f.mcpSessionTimeout, "mcp-session-timeout", mcpfront.DefaultSessionTimeout, "an MCP session idle this long is closed (its client is adopted again if it comes back)")
	fs.DurationVar(&f.mcpBodyTimeout, "mcp-body-timeout", mcpfront.DefaultBodyTimeout, "time an MCP front-door request body may take to arrive (HTTP 408 and the connection closed past it); headers: 10s")
	fs.StringVar(&f.addrFile, "addr-file", "", "once listening, write the bound addresses to this file as JSON {\"grpc\", \"admin\", \"mcp\"} (written whole, by rename; for callers that pass port 0)")
	fs.StringVar(&f.otlp, "otlp-endpoint", os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "export traces over OTLP/gRPC to this host:port (default $OTEL_EXPORTER_OTLP_ENDPOINT; empty: tracing off)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file for the config's kubernetes section, outside a cluster (default: the section's kubeconfig, else in-cluster credentials)")
	memLimit := fs.String("memory-limit", os.Getenv(memoryLimitEnv), "the container's memory limit, in bytes or as a quantity such as 512Mi, when its cgroup does not show it (default $"+memoryLimitEnv+"; the lower of this and the cgroup's counts; 90% of it becomes the Go runtime's soft limit unless GOMEMLIMIT is set)")
	if err := fs.Parse(args); err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	var err error
	if f.memoryLimit, err = parseMemoryLimit(*memLimit); err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	switch {
	case f.maxReq <= 0 || f.maxResp <= 0:
		return nil, &exitError{code: 2, err: errors.New("--max-request-bytes and --max-response-bytes must be positive")}
	case f.mcpMaxSessions <= 0 || f.mcpMaxPerPrincipal <= 0 || f.mcpSessionTimeout <= 0 || f.mcpBodyTimeout <= 0:
		return nil, &exitError{code: 2, err: errors.New("--mcp-max-sessions, --mcp-max-sessions-per-principal, --mcp-session-timeout and --mcp-body-timeout must be positive")}
	case f.mcpDiscovery != "full" && f.mcpDiscovery != "progressive":
		return nil, &exitError{code: 2, err: fmt.Errorf("--mcp-discovery: %q is neither full nor progressive", f.mcpDiscovery)}
	case badGlob(splitList(f.mcpCoreTools)) != "":
		return nil, &exitError{code: 2, err: fmt.Errorf("--mcp-core-tools: %q is not a glob", badGlob(splitList(f.mcpCoreTools)))}
	case f.maxWaitingPerPrincipal <= 0 || f.maxWaiting <= 0 || f.maxParkedPerCall <= 0 || f.maxInputRequestBytes <= 0 ||
		f.maxParkedBytesPerPrincipal <= 0 || f.maxParkedBytes <= 0:
		return nil, &exitError{code: 2, err: errors.New("--max-waiting, --max-waiting-per-principal, --max-parked-per-call, --max-input-request-bytes, --max-parked-bytes and --max-parked-bytes-per-principal must be positive")}
	case f.maxWaitingPerPrincipal > f.maxWaiting || f.maxParkedBytesPerPrincipal > f.maxParkedBytes:
		// A principal's share of a replica's pool is below the pool, so
		// no principal takes it alone.
		return nil, &exitError{code: 2, err: errors.New("--max-waiting-per-principal must not exceed --max-waiting, nor --max-parked-bytes-per-principal --max-parked-bytes")}
	case (f.tlsCert == "") != (f.tlsKey == "") || (f.tlsClientCA != "" && f.tlsCert == ""):
		return nil, &exitError{code: 2, err: errors.New("--tls-cert and --tls-key go together, and --tls-client-ca needs them")}
	}
	return f, nil
}

// loadServeConfig reads the configuration file (or, without one, sets up
// the built-in demo upstream): the bridge's configuration, the parsed file
// (nil for the demo) and its bytes.
func loadServeConfig(path string, log *slog.Logger) (mcpbridge.Config, *config.Config, []byte, error) {
	var bcfg mcpbridge.Config
	if path == "" {
		self, err := os.Executable()
		if err != nil {
			return bcfg, nil, nil, fmt.Errorf("demo upstream: %w", err)
		}
		log.Info("no --config: serving the built-in demo upstream (tools demo__echo, demo__add, demo__sleep)")
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
	for _, w := range c.Warnings {
		log.Warn(w)
	}
	return c.Bridge, c, data, nil
}

// startTracing exports traces over OTLP when endpoint is set: the gRPC
// stats handler that makes spans (nil: tracing off) and the function that
// flushes and stops the exporter.
func startTracing(ctx context.Context, endpoint string) (stats.Handler, func(), error) {
	if endpoint == "" {
		return nil, func() {}, nil
	}
	stop, err := setupTracing(ctx, endpoint)
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
func setupSecurity(ctx context.Context, f *serveFlags, loaded *config.Config, log *slog.Logger) (*security, error) {
	sec := &security{load: &authLoader{ctx: ctx, mtls: f.tlsClientCA != "", log: log}}
	if f.tlsCert != "" {
		// --tls-client-ca without an auth section: nothing else would check
		// who the caller is, so the handshake itself requires a certificate
		// from the CA. With auth, the authenticator requires a credential
		// (certificate, token or JWT) on every call.
		requireCert := f.tlsClientCA != "" && (loaded == nil || loaded.Auth == nil)
		var err error
		if sec.tls, err = service.NewReloadingTLS(f.tlsCert, f.tlsKey, f.tlsClientCA, requireCert); err != nil {
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
	f       *serveFlags
	log     *slog.Logger
	reg     *prometheus.Registry
	sec     *security
	metrics *service.Metrics
	stats   stats.Handler

	bridge    *mcpbridge.Bridge
	kube      *kubeDiscovery   // nil without a kubernetes section
	fileCfg   mcpbridge.Config // the file's servers, before discovery's are merged
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
}

// replicaID names this process in parked interactive calls' states: the
// host name (a pod's name) and a random suffix, so that two processes on
// one host differ.
func replicaID() string {
	host, _ := os.Hostname()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return host + "-" + hex.EncodeToString(b)
}

// start builds the bridge, the service and the MCP front door, and starts
// the gRPC and admin listeners, the --addr-file and config reloads. On an
// error, what it started is stopped.
func (sv *serving) start(ctx context.Context, bcfg mcpbridge.Config, loaded *config.Config, cfgData []byte) error {
	if sv.f.stateKeyFile != "" {
		key, err := os.ReadFile(sv.f.stateKeyFile)
		if err != nil {
			return fmt.Errorf("--state-key-file: %w", err)
		}
		if len(bytes.TrimSpace(key)) < 16 {
			return fmt.Errorf("--state-key-file: %s holds %d bytes; want at least 16 (random bytes, the same on every replica)", sv.f.stateKeyFile, len(bytes.TrimSpace(key)))
		}
		sv.stateKey = key
	}
	lis, err := net.Listen("tcp", sv.f.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if sv.f.adminListen != "" {
		if sv.adminLis, err = net.Listen("tcp", sv.f.adminListen); err != nil {
			lis.Close()
			return fmt.Errorf("admin listen: %w", err)
		}
	}
	var adminAddr net.Addr
	if sv.adminLis != nil {
		adminAddr = sv.adminLis.Addr()
	}
	if sv.logins, err = openLogins(loaded, sv.f.publicURL, adminAddr, sv.log); err != nil {
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

// newService builds the gRPC service over the bridge, with the config
// manager that reloads the file (none for the demo).
func (sv *serving) newService(loaded *config.Config, cfgData []byte) {
	auth := sv.sec.auth
	opts := &service.Options{Logger: sv.log, MaxRequestBytes: sv.f.maxReq, MaxResponseBytes: sv.f.maxResp,
		Authenticator: auth.Authenticator, Authorizer: auth.Authorizer, RateLimits: auth.RateLimits,
		Metrics: sv.metrics, AuditLog: auth.AuditLog, AuditArguments: auth.AuditArguments,
		StateKey: sv.stateKey, ReplicaID: replicaID(), InputTimeout: sv.f.inputTimeout,
		MaxWaitingPerPrincipal: sv.f.maxWaitingPerPrincipal, MaxWaiting: sv.f.maxWaiting, TaskPollInterval: sv.f.taskPollInterval,
		MaxTaskWatchesPerPrincipal: sv.f.maxTaskWatchesPerPrincipal,
		MaxParkedPerCall:           sv.f.maxParkedPerCall, MaxInputRequestBytes: sv.f.maxInputRequestBytes,
		MaxParkedBytes: sv.f.maxParkedBytes, MaxParkedBytesPerPrincipal: sv.f.maxParkedBytesPerPrincipal}
	if loaded != nil {
		sv.cfgMgr = newConfigManager(sv.f.cfgPath, cfgData, loaded, sv.bridge, sv.log)
		sv.cfgMgr.auth = sv.sec.load
		if loaded.Auth != nil {
			sv.cfgMgr.secrets = loaded.Auth.Secrets
		}
		opts.Config = sv.cfgMgr
	}
	sv.svc = service.New(sv.bridge, opts)
	if sv.cfgMgr != nil {
		sv.cfgMgr.svc = sv.svc // reloads start once serving (start)
		sv.cfgMgr.kube, sv.cfgMgr.kubeSection, sv.cfgMgr.fileCfg = sv.kube, loaded.Kubernetes, sv.fileCfg
		sv.cfgMgr.storeSection = loaded.TokenStore
		if sv.kube != nil {
			sv.kube.attach(sv.cfgMgr.applyDiscovered)
		}
	}
}

// startFront starts the MCP front door when --mcp-listen is set.
func (sv *serving) startFront(ctx context.Context) error {
	f := sv.f
	if f.mcpListen == "" {
		return nil
	}
	var key []byte
	if f.mcpKeyFile != "" {
		var err error
		if key, err = os.ReadFile(f.mcpKeyFile); err != nil {
			return fmt.Errorf("--mcp-session-key-file: %w", err)
		}
	}
	front, err := startMCPFront(ctx, sv.svc, f.mcpListen, sv.sec.tls, mcpfront.Options{Logger: sv.log,
		AllowedHosts: splitList(f.mcpHosts), AllowedOrigins: splitList(f.mcpOrigins),
		SessionKey: key, PageSize: f.mcpPageSize, MaxSessions: f.mcpMaxSessions, MaxSessionsPerPrincipal: f.mcpMaxPerPrincipal,
		SessionTimeout: f.mcpSessionTimeout, BodyTimeout: f.mcpBodyTimeout, Registry: sv.reg,
		Discovery: mcpfront.Discovery{Progressive: f.mcpDiscovery == "progressive", CoreTools: splitList(f.mcpCoreTools),
			Principals: splitList(f.mcpDiscoveryPrincipals)}})
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
		MaxConnectionAge: sv.f.maxAge, MaxConnectionAgeGrace: sv.f.maxAgeGrace,
		MaxRecvMsgSize: sv.f.maxReq + 1<<20, MaxSendMsgSize: sv.f.maxResp + 1<<20,
		StatsHandler: sv.stats,
		Services:     []service.Wire{{Name: mcpgrpc.ServiceName, Register: mcpgrpc.New(sv.svc.Core(), sv.log).Register}},
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
	mux.Handle("/metrics", promhttp.HandlerFor(sv.reg, promhttp.HandlerOpts{Registry: sv.reg}))
	if sv.logins != nil {
		mux.Handle(mcpbridge.LoginCallbackPath, loginCallback(func() *mcpbridge.Bridge { return sv.bridge }, sv.log))
		sv.log.Info("userOAuth login callback", "redirect_uri", sv.logins.RedirectURL)
	}
	sv.admin, sv.adminAddr = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, alis.Addr().String()
	go func() { sv.adminErr <- sv.admin.Serve(alis) }()
	sv.log.Info("admin serving", "addr", alis.Addr().String(), "metrics", "/metrics")
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
	if sv.f.addrFile == "" {
		return nil
	}
	a := boundAddrs{GRPC: grpcAddr.String()}
	if sv.admin != nil {
		a.Admin = sv.adminAddr
	}
	if sv.front != nil {
		a.MCP = sv.front.addr.String()
	}
	if err := writeAddrFile(sv.f.addrFile, a); err != nil {
		return fmt.Errorf("--addr-file: %w", err)
	}
	return nil
}

// stopEarly stops what start started when a later step of it fails: the
// gRPC server, the admin server, the front door and the bridge.
func (sv *serving) stopEarly() {
	sv.gs.Stop()
	<-sv.serveErr
	if sv.admin != nil {
		_ = sv.admin.Close()
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
	sv.log.Info("shutting down", "timeout", sv.f.shutdownTimeout)
	deadline := time.Now().Add(sv.f.shutdownTimeout)
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
		_ = sv.admin.Shutdown(sctx)
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
		sv.gs.Stop()
		<-stopped
	}
	sv.svc.Wait() // every watch stream is done: a message a client held fails (service/watch_send.go)
	if err := <-sv.serveErr; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		sv.log.Warn("serve ended", "error", err)
	}
}

// badGlob is the first of globs that is not a path.Match pattern ("": none).
func badGlob(globs []string) string {
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			return g
		}
	}
	return ""
}
