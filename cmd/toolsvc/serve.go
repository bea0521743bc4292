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
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2, err: err}
	}
	log, err := newLogger(*logLevel, *logFormat)
	if err != nil {
		return &exitError{code: 2, err: err}
	}

	var bcfg mcpbridge.Config
	if *cfgPath == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("demo upstream: %w", err)
		}
		log.Info("no --config: serving the built-in demo upstream (tools demo__echo, demo__add, demo__sleep)")
		bcfg.Servers = []mcpbridge.ServerConfig{{Name: "demo", Transport: mcpbridge.TransportStdio, Command: self, Args: []string{"demo-server"}}}
	} else {
		c, err := config.Load(*cfgPath)
		if err != nil {
			return fmt.Errorf("invalid config:\n%w", err)
		}
		for _, w := range c.Warnings {
			log.Warn(w)
		}
		bcfg = c.Bridge
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

	svc := service.New(bridge, &service.Options{Logger: log})
	gs := grpc.NewServer()
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
	svc.Wait() // watch senders end once their streams are gone
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
