package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/toolsvc/toolsvc/config"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service"
)

func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "config file (mcpServers JSON); empty runs the built-in demo upstream")
	listen := fs.String("listen", ":50051", "gRPC listen address")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "text or json")
	drain := fs.Duration("drain-timeout", 10*time.Second, "how long shutdown waits for in-flight calls")
	maxReq := fs.Int("max-request-bytes", service.DefaultMaxRequestBytes, "largest CallTool request accepted (RESOURCE_EXHAUSTED above)")
	maxResp := fs.Int("max-response-bytes", service.DefaultMaxResponseBytes, "largest tool result returned (RESOURCE_EXHAUSTED above); clients must accept messages this large")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2, err: err}
	}
	if *maxReq <= 0 || *maxResp <= 0 {
		return &exitError{code: 2, err: errors.New("--max-request-bytes and --max-response-bytes must be positive")}
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
		data, err := os.ReadFile(*cfgPath)
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

	opts := &service.Options{Logger: log, MaxRequestBytes: *maxReq, MaxResponseBytes: *maxResp}
	var cfgMgr *configManager
	if loaded != nil {
		cfgMgr = newConfigManager(*cfgPath, cfgData, loaded, bridge, log)
		opts.Config = cfgMgr
	}
	svc := service.New(bridge, opts)
	// gRPC's own receive limit sits above the service's request limit, so
	// an over-size call gets the service's RESOURCE_EXHAUSTED naming the
	// limit (gRPC's generic one only past the slack).
	gs := grpc.NewServer(
		grpc.MaxRecvMsgSize(*maxReq+1<<20),
		grpc.MaxSendMsgSize(*maxResp+1<<20),
	)
	svc.Register(gs)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)
	const svcName = "toolsvc.v1.ToolService"
	_ = toolsvcv1.ToolService_ServiceDesc // the name above is its ServiceName
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	hs.SetServingStatus(svcName, healthpb.HealthCheckResponse_NOT_SERVING)

	serveErr := make(chan error, 1)
	go func() { serveErr <- gs.Serve(lis) }()
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
	log.Info("serving", "addr", lis.Addr().String())

	select {
	case <-bridge.Ready():
		hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
		hs.SetServingStatus(svcName, healthpb.HealthCheckResponse_SERVING)
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
	log.Info("shutting down")
	stopReload()
	<-reloadDone
	hs.Shutdown()
	svc.Shutdown()
	stopped := make(chan struct{})
	go func() {
		gs.GracefulStop()
		close(stopped)
	}()
	t := time.NewTimer(*drain)
	select {
	case <-stopped:
		t.Stop()
	case <-t.C:
		log.Warn("drain timeout: cancelling remaining calls", "timeout", *drain)
		gs.Stop()
		<-stopped
	}
	if err := <-serveErr; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		log.Warn("serve ended", "error", err)
	}
	bridge.Close()
	log.Info("stopped")
	return nil
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
