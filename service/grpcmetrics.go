package service

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
)

// grpcMetrics are the gRPC server's metrics: the five families
// go-grpc-middleware's providers/prometheus ServerMetrics exposes, with
// its names, help texts, labels and toolsvc's buckets, and the same
// series created at start (InitializeMetrics: every registered method,
// every code), counted at the same points of a call.
//
// It is toolsvc's own because go-grpc-middleware's interceptor looks
// every child up by its label values on every call: five lookups (each
// hashing the labels and taking the vector's lock) and their label slices
// per unary call, about 4 µs of the handler's goroutine on every wire
// (docs/benchmarks.md, "CPU per call: toolsvc's own interceptors"). Its
// vectors are unexported, so its children cannot be cached from outside.
// Here each registered method's children are looked up once, when the
// server is built, and a call reaches them with one map read on its full
// method name. A method not registered (none reaches the interceptors
// unless an unknown-service handler is installed) and a code beyond the
// 17 gRPC defines are looked up by their labels as before, so that only
// the series a call produces appear.
//
// No exemplars and no context labels (go-grpc-middleware's options for
// them were never used): AddWithExemplar and ObserveWithExemplar with no
// exemplar are Inc and Observe.
type grpcMetrics struct {
	started, handled, received, sent *prometheus.CounterVec
	handling                         *prometheus.HistogramVec
	// methods maps a full method name ("/pkg.Service/Method") to its
	// children; written once by InitializeMetrics before the server
	// serves, read by every call.
	methods atomic.Pointer[map[string]*methodMetrics]
}

// grpcHandlingBuckets are grpc_server_handling_seconds' buckets.
var grpcHandlingBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

func newGRPCMetrics() *grpcMetrics {
	labels := []string{"grpc_type", "grpc_service", "grpc_method"}
	return &grpcMetrics{
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grpc_server_started_total",
			Help: "Total number of RPCs started on the server.",
		}, labels),
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grpc_server_handled_total",
			Help: "Total number of RPCs completed on the server, regardless of success or failure.",
		}, append(labels[:3:3], "grpc_code")),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grpc_server_msg_received_total",
			Help: "Total number of RPC stream messages received on the server.",
		}, labels),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grpc_server_msg_sent_total",
			Help: "Total number of gRPC stream messages sent by the server.",
		}, labels),
		handling: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "grpc_server_handling_seconds",
			Help:    "Histogram of response latency (seconds) of gRPC that had been application-level handled by the server.",
			Buckets: grpcHandlingBuckets,
		}, labels),
	}
}

// Describe and Collect make grpcMetrics one prometheus.Collector, in
// go-grpc-middleware's order.
func (m *grpcMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.started.Describe(ch)
	m.handled.Describe(ch)
	m.received.Describe(ch)
	m.sent.Describe(ch)
	m.handling.Describe(ch)
}

func (m *grpcMetrics) Collect(ch chan<- prometheus.Metric) {
	m.started.Collect(ch)
	m.handled.Collect(ch)
	m.received.Collect(ch)
	m.sent.Collect(ch)
	m.handling.Collect(ch)
}

// methodMetrics are one method's children; handled is indexed by code.
// For a method InitializeMetrics did not see, only the label values are
// set and every child is looked up when it is counted.
type methodMetrics struct {
	typ, service, method string
	started, received    prometheus.Counter
	sent                 prometheus.Counter
	handling             prometheus.Observer
	handled              [codes.Unauthenticated + 1]prometheus.Counter
	cached               bool
}

// InitializeMetrics creates every registered method's series with its
// zero value (started, received, sent, handling, and handled for each of
// the 17 codes), as go-grpc-middleware's InitializeMetrics does, and keeps
// the children for the calls.
func (m *grpcMetrics) InitializeMetrics(server reflection.ServiceInfoProvider) {
	methods := map[string]*methodMetrics{}
	for service, info := range server.GetServiceInfo() {
		for _, mi := range info.Methods {
			typ := string(methodType(mi.IsClientStream, mi.IsServerStream))
			mm := &methodMetrics{typ: typ, service: service, method: mi.Name, cached: true}
			mm.started = m.started.WithLabelValues(typ, service, mi.Name)
			mm.received = m.received.WithLabelValues(typ, service, mi.Name)
			mm.sent = m.sent.WithLabelValues(typ, service, mi.Name)
			mm.handling = m.handling.WithLabelValues(typ, service, mi.Name)
			for _, c := range interceptors.AllCodes {
				mm.handled[c] = m.handled.WithLabelValues(typ, service, mi.Name, c.String())
			}
			methods["/"+service+"/"+mi.Name] = mm
		}
	}
	m.methods.Store(&methods)
}

// methodType is go-grpc-middleware's grpc_type of a method.
func methodType(clientStream, serverStream bool) interceptors.GRPCType {
	switch {
	case !clientStream && !serverStream:
		return interceptors.Unary
	case clientStream && !serverStream:
		return interceptors.ClientStream
	case !clientStream && serverStream:
		return interceptors.ServerStream
	}
	return interceptors.BidiStream
}

// method is fullMethod's children, or its label values alone when
// InitializeMetrics did not create them (or created them for a different
// type: a method is counted under the type its call has).
func (m *grpcMetrics) method(fullMethod string, typ interceptors.GRPCType) *methodMetrics {
	if p := m.methods.Load(); p != nil {
		if mm := (*p)[fullMethod]; mm != nil && mm.typ == string(typ) {
			return mm
		}
	}
	service, method := "unknown", "unknown" // go-grpc-middleware's split of a malformed name
	if s, meth, ok := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/"); ok {
		service, method = s, meth
	}
	return &methodMetrics{typ: string(typ), service: service, method: method}
}

func (mm *methodMetrics) incStarted(m *grpcMetrics) {
	if mm.cached {
		mm.started.Inc()
		return
	}
	m.started.WithLabelValues(mm.typ, mm.service, mm.method).Inc()
}

func (mm *methodMetrics) incReceived(m *grpcMetrics) {
	if mm.cached {
		mm.received.Inc()
		return
	}
	m.received.WithLabelValues(mm.typ, mm.service, mm.method).Inc()
}

func (mm *methodMetrics) incSent(m *grpcMetrics) {
	if mm.cached {
		mm.sent.Inc()
		return
	}
	m.sent.WithLabelValues(mm.typ, mm.service, mm.method).Inc()
}

// finish counts a call's end: handled with its code, and its handling
// time. The code is go-grpc-middleware's: the error's status, or a
// context error's (as grpc-go itself converts them).
func (mm *methodMetrics) finish(m *grpcMetrics, err error, took time.Duration) {
	s, ok := status.FromError(err)
	if !ok {
		s = status.FromContextError(err)
	}
	code := s.Code()
	if mm.cached && code <= codes.Unauthenticated {
		mm.handled[code].Inc()
		mm.handling.Observe(took.Seconds())
		return
	}
	m.handled.WithLabelValues(mm.typ, mm.service, mm.method, code.String()).Inc()
	m.handling.WithLabelValues(mm.typ, mm.service, mm.method).Observe(took.Seconds())
}

// UnaryServerInterceptor counts a unary call as go-grpc-middleware's
// does: started and its request received before the handler, its
// response sent when the handler succeeded, then handled and the time
// since the call began.
func (m *grpcMetrics) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		mm := m.method(info.FullMethod, interceptors.Unary)
		mm.incStarted(m)
		mm.incReceived(m)
		resp, err := handler(ctx, req)
		if err == nil {
			mm.incSent(m)
		}
		mm.finish(m, err, time.Since(start))
		return resp, err
	}
}

// StreamServerInterceptor counts a stream's start, each message received
// and sent without error (through the stream it hands the handler), and
// its end.
func (m *grpcMetrics) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		mm := m.method(info.FullMethod, methodType(info.IsClientStream, info.IsServerStream))
		mm.incStarted(m)
		err := handler(srv, &countedStream{ServerStream: ss, m: m, mm: mm})
		mm.finish(m, err, time.Since(start))
		return err
	}
}

// countedStream counts the messages a stream's handler sends and
// receives without error.
type countedStream struct {
	grpc.ServerStream
	m  *grpcMetrics
	mm *methodMetrics
}

func (s *countedStream) SendMsg(msg any) error {
	err := s.ServerStream.SendMsg(msg)
	if err == nil {
		s.mm.incSent(s.m)
	}
	return err
}

func (s *countedStream) RecvMsg(msg any) error {
	err := s.ServerStream.RecvMsg(msg)
	if err == nil {
		s.mm.incReceived(s.m)
	}
	return err
}
