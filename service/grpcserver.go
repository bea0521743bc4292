package service

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"github.com/prometheus/client_golang/prometheus"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/stats"
)

// Health service names. Readiness: "" (the whole server) and
// "toolsvc.v1.ToolService" are NOT_SERVING until the first discovery round
// finished and again from the first moment of shutdown. Liveness:
// "liveness" is SERVING for as long as the process serves at all.
const (
	HealthReadiness = "toolsvc.v1.ToolService"
	HealthLiveness  = "liveness"
)

// DefaultStreamWorkers is GRPCOptions.StreamWorkers' default: enough for
// the concurrent calls of a busy replica; each idle worker costs a parked
// goroutine.
const DefaultStreamWorkers = 64

// GRPCOptions configure the gRPC server NewGRPCServer builds.
type GRPCOptions struct {
	Logger *slog.Logger
	// Registry receives the gRPC server metrics (nil: none).
	Registry prometheus.Registerer
	// TLS, if set, serves TLS (mTLS when it requires client certificates).
	TLS *tls.Config
	// Auth, if set, authenticates every call except health and reflection.
	// When the core has auth configured (core.Options.Auth: an Authenticator
	// or an Authorizer) the interceptor uses the core's current
	// authenticator instead, so that core.SetAuth switches the
	// interceptor and the service together.
	Auth *core.Authenticator
	// MaxConnectionAge bounds a connection's life so load spreads over
	// replicas (clients resume watches elsewhere); 0 means 5 minutes.
	MaxConnectionAge      time.Duration
	MaxConnectionAgeGrace time.Duration // 0 means 30 s
	MaxRecvMsgSize        int           // 0 means 16 MiB
	MaxSendMsgSize        int           // 0 means 64 MiB
	// MaxHeaderListSize bounds a request's metadata (its HTTP/2 header
	// list, as the peer encodes it: names, values and 32 bytes each);
	// 0 means DefaultMaxHeaderListSize.
	MaxHeaderListSize int
	// StreamWorkers is grpc-go's NumStreamWorkers: RPC handlers run on this
	// many long-lived goroutines, whose stacks stay grown, instead of on a
	// fresh 8 KiB goroutine each (a fresh one is still used when every
	// worker is busy, e.g. holding a watch stream). Without them nearly every
	// CallTool grew and copied its stack under the interceptor chain, first
	// in jsonschema-go's validator, then in go-sdk's request encoding (see
	// docs/benchmarks.md). 0 means DefaultStreamWorkers; negative: none.
	StreamWorkers int
	// StatsHandler, if set, is installed (OpenTelemetry's otelgrpc).
	StatsHandler stats.Handler
	// ExtraUnary and ExtraStream run innermost, after authentication. The
	// messages a long-lived stream sends (directSendMethods) do not pass
	// through ExtraStream's stream wrappers.
	ExtraUnary  []grpc.UnaryServerInterceptor
	ExtraStream []grpc.StreamServerInterceptor
	// Services are more wires of the core served beside ToolService
	// (service/mcpgrpc's model_context_protocol.Mcp): behind the same
	// chain, listed by reflection, and in health with the readiness of
	// the whole server.
	Services []Wire
}

// Wire is one more gRPC service of the core: its health name and how it
// registers.
type Wire struct {
	Name     string
	Register func(grpc.ServiceRegistrar)
}

// readiness is, by health server, the service names SetReady flips beside
// "" and HealthReadiness (GRPCOptions.Services).
var readiness sync.Map // *health.Server → []string

// NewGRPCServer builds the gRPC server for svc: keepalive, message limits,
// reflection, health (readiness and liveness), and the interceptor chain:
// metrics (grpcmetrics.go) → the finished-call log (calllog.go) →
// go-grpc-middleware's recovery (a panic below it
// becomes INTERNAL, still logged and counted) → auth (health and
// reflection exempt) → the extra (call) interceptors → requests the codec
// could not decode answered INVALID_ARGUMENT (ServerOptions). Outermost,
// directSends lets the long-lived server streams send their messages past
// the chain's per-message wrappers; the call itself still passes through
// all of it.
func NewGRPCServer(svc *Server, o GRPCOptions) (*grpc.Server, *health.Server) {
	o = o.withDefaults()
	unary, stream := o.interceptors(svc)
	gs := grpc.NewServer(o.serverOptions(svc, unary, stream)...)
	svc.Register(gs)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)
	names := []string{"", HealthReadiness}
	for _, w := range o.Services {
		w.Register(gs)
		names = append(names, w.Name)
	}
	readiness.Store(hs, names)
	for _, n := range names {
		hs.SetServingStatus(n, healthpb.HealthCheckResponse_NOT_SERVING)
	}
	hs.SetServingStatus(HealthLiveness, healthpb.HealthCheckResponse_SERVING)
	if svc.grpcMetrics != nil {
		svc.grpcMetrics.InitializeMetrics(gs)
	}
	return gs, hs
}

// withDefaults is o with its zero fields set to their defaults.
func (o GRPCOptions) withDefaults() GRPCOptions {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxConnectionAge == 0 {
		o.MaxConnectionAge = 5 * time.Minute
	}
	if o.MaxConnectionAgeGrace == 0 {
		o.MaxConnectionAgeGrace = 30 * time.Second
	}
	if o.MaxRecvMsgSize == 0 {
		o.MaxRecvMsgSize = 16 << 20
	}
	if o.MaxSendMsgSize == 0 {
		o.MaxSendMsgSize = 64 << 20
	}
	if o.MaxHeaderListSize == 0 {
		o.MaxHeaderListSize = DefaultMaxHeaderListSize
	}
	if o.StreamWorkers == 0 {
		o.StreamWorkers = DefaultStreamWorkers
	}
	return o
}

// interceptors is the chain, outermost first: directSends, metrics (with
// a Registry), logging, recovery, authentication (every service but health
// and reflection), then the embedder's.
func (o GRPCOptions) interceptors(svc *Server) ([]grpc.UnaryServerInterceptor, []grpc.StreamServerInterceptor) {
	log := o.Logger
	var unary []grpc.UnaryServerInterceptor
	stream := []grpc.StreamServerInterceptor{directSends}
	if o.Registry != nil {
		m := newGRPCMetrics() // go-grpc-middleware's families, children cached (grpcmetrics.go)
		o.Registry.MustRegister(m)
		unary = append(unary, m.UnaryServerInterceptor())
		stream = append(stream, m.StreamServerInterceptor())
		svc.grpcMetrics = m
	}
	unary = append(unary, finishedCallLog(log))
	stream = append(stream, finishedStreamLog(log))
	// Recovery right inside logging: a panic anywhere below (auth, the call
	// observer, a handler) becomes INTERNAL, is logged with its stack, and
	// is still counted and logged as a finished call.
	rec := recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		log.ErrorContext(ctx, "panic in handler", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		return grpcStatus(core.InternalFailure()).Err() // the one error value, with its ErrorInfo
	})
	unary = append(unary, recovery.UnaryServerInterceptor(rec))
	stream = append(stream, recovery.StreamServerInterceptor(rec))
	if authFn := o.interceptorAuth(svc); authFn != nil {
		needsAuth := selector.MatchFunc(func(_ context.Context, c interceptors.CallMeta) bool {
			return !strings.HasPrefix(c.Service, "grpc.health.") && !strings.HasPrefix(c.Service, "grpc.reflection.")
		})
		unary = append(unary, selector.UnaryServerInterceptor(auth.UnaryServerInterceptor(authFn), needsAuth))
		stream = append(stream, selector.StreamServerInterceptor(auth.StreamServerInterceptor(authFn), needsAuth))
	}
	return append(unary, o.ExtraUnary...), append(stream, o.ExtraStream...)
}

// Long-lived server streams and the per-message interceptors. The metrics
// interceptor wraps every stream so that each SendMsg is counted (it was
// go-grpc-middleware's monitoredServerStream, twice, for metrics and for
// logging: two clock reads per wrapper, a Prometheus counter looked up by
// its labels and incremented, the logging reporter's check; now one
// wrapper and a cached counter). For a WatchCatalog stream that was paid
// once per watcher for every revision: about 1 µs per message, 10 ms of CPU
// for one change to 10,000 watchers (docs/benchmarks.md, "Watch"), for a
// per-message counter nobody reads per watch. So the chain
// stays around the call — authentication and authorization (the handler
// runs only after them, so nothing here can skip them), the started and
// handled counters and the handling time, the finished-call log line,
// panic recovery, the stats handler's span of the stream (below SendMsg,
// in the transport) — and the handlers of the methods below send on the
// transport's stream, which directSends, outermost, hands them through
// the context. Their messages are counted by the service's own counters
// (toolsvc_watch_messages_sent_total) instead of
// grpc_server_msg_sent_total.

// directSendMethods are the long-lived server streams whose handlers send
// past the per-message interceptors. The other long-lived streams stay
// wrapped: a SubscribeResource message follows an upstream read made for
// that stream, a WatchTask message an upstream poll, so the wrappers'
// microsecond is nothing to them.
var directSendMethods = map[string]bool{
	toolsvcv1.ToolService_WatchCatalog_FullMethodName: true,
}

type directStreamKey struct{}

// directSends is the outermost stream interceptor: for directSendMethods
// it puts the transport's stream in the context every wrapper below
// derives its own from.
func directSends(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if !directSendMethods[info.FullMethod] {
		return handler(srv, ss)
	}
	return handler(srv, &contextStream{ServerStream: ss, ctx: context.WithValue(ss.Context(), directStreamKey{}, ss)})
}

type contextStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (c *contextStream) Context() context.Context { return c.ctx }

// directStream is the stream a long-lived stream's handler sends on: the
// transport's when directSends installed it, else stream itself (a server
// built without NewGRPCServer's chain).
func directStream(stream grpc.ServerStream) grpc.ServerStream {
	if ss, ok := stream.Context().Value(directStreamKey{}).(grpc.ServerStream); ok {
		return ss
	}
	return stream
}

// DefaultMaxHeaderListSize bounds a request's metadata. grpc-go's own
// default is 16 MiB, read before authentication and held for the RPC's
// life: four times the request bound (--max-request-bytes, 4 MiB), from
// any caller. What a caller needs there is a bearer credential (at most 8
// KiB, core's bound), routing headers (mcp_tool: a name of at most 64
// bytes), trace context and a proxy's few headers: 64 KiB leaves room for
// all of them eight times over. grpc-go tells its clients the bound (HTTP/2
// SETTINGS_MAX_HEADER_LIST_SIZE), and they refuse to send a larger list;
// a client that sends one all the same has its stream reset unread.
const DefaultMaxHeaderListSize = 64 << 10

// serverOptions are the gRPC server's options: the interceptor chain,
// keepalive, message limits, the service's own options (its codec, and
// innermost the undecodable-request check), TLS, stats, stream workers.
func (o GRPCOptions) serverOptions(svc *Server, unary []grpc.UnaryServerInterceptor, stream []grpc.StreamServerInterceptor) []grpc.ServerOption {
	opts := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(stream...),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionAge:      o.MaxConnectionAge,
			MaxConnectionAgeGrace: o.MaxConnectionAgeGrace,
			Time:                  time.Minute,
			Timeout:               20 * time.Second,
		}),
		grpc.MaxRecvMsgSize(o.MaxRecvMsgSize),
		grpc.MaxSendMsgSize(o.MaxSendMsgSize),
		grpc.MaxHeaderListSize(uint32(o.MaxHeaderListSize)),
	}
	// The codec of pre-encoded events and pages, and innermost, after the
	// chain above (grpc-go appends chained interceptors in option order),
	// requests the codec could not decode answered INVALID_ARGUMENT.
	opts = append(opts, svc.ServerOptions()...)
	if o.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(o.TLS)))
	}
	if o.StatsHandler != nil {
		opts = append(opts, grpc.StatsHandler(o.StatsHandler))
	}
	if o.StreamWorkers > 0 {
		opts = append(opts, grpc.NumStreamWorkers(uint32(o.StreamWorkers)))
	}
	return opts
}

// interceptorAuth is the interceptor's authentication: the service's
// own, read per call (service/core authstate.go), when it has auth
// configured; else Auth's; nil when neither authenticates.
func (o GRPCOptions) interceptorAuth(svc *Server) auth.AuthFunc {
	if svc.authConfigured() {
		return func(ctx context.Context) (context.Context, error) {
			st := svc.core.CurrentAuth()
			ctx = core.WithAuthState(ctx, st)
			a := st.Authenticator()
			if a == nil {
				a = o.Auth
			}
			if a == nil {
				return ctx, nil // core.Authenticate fails closed (an Authorizer without an Authenticator)
			}
			return authFunc(a)(ctx)
		}
	}
	if o.Auth != nil {
		return authFunc(o.Auth)
	}
	return nil
}

// SetReady flips readiness (not liveness).
func SetReady(hs *health.Server, ready bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ready {
		st = healthpb.HealthCheckResponse_SERVING
	}
	names, ok := readiness.Load(hs)
	if !ok {
		names = []string{"", HealthReadiness}
	}
	for _, n := range names.([]string) {
		hs.SetServingStatus(n, st)
	}
}

// codeToLevel logs client-caused outcomes quietly and server faults loudly.
func codeToLevel(c codes.Code) logging.Level {
	switch c {
	case codes.OK, codes.Canceled, codes.NotFound, codes.InvalidArgument, codes.AlreadyExists,
		codes.DeadlineExceeded, codes.Unauthenticated, codes.PermissionDenied, codes.FailedPrecondition, codes.OutOfRange:
		return logging.LevelDebug
	case codes.Unavailable, codes.ResourceExhausted, codes.Aborted, codes.Unimplemented:
		return logging.LevelWarn
	}
	return logging.LevelError
}
