package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/toolsvc/toolsvc/config"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service"
)

func runServe(ctx context.Context, args []string) error {
	f, err := parseServeFlags(args)
	if err != nil {
		return err
	}
	log, err := newLogger(f.logLevel, f.logFormat)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if _, err := setMemoryLimit(log, f.memoryLimit); err != nil {
		return &exitError{code: 2, err: err}
	}
	bcfg, loaded, cfgData, err := loadServeConfig(f.cfgPath, log)
	if err != nil {
		return err
	}
	bcfg.Logger = log
	statsHandler, stopTracing, err := startTracing(ctx, f.otlp)
	if err != nil {
		return err
	}
	defer stopTracing()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	sec, err := setupSecurity(ctx, f, loaded, log)
	if err != nil {
		return err
	}
	if loaded != nil && loaded.Auth != nil {
		bcfg.Servers = withSecrets(bcfg.Servers, loaded.Auth.Secrets)
	}
	metrics := service.NewMetrics(reg)
	bcfg.Observer = metrics
	// An upstream message is read through this limit (mcpbridge/msglimit.go).
	// Six times the response limit: a JSON string escape (\u0001) is six
	// bytes for one of the result, so nothing the response limit accepts
	// is refused by the read; go-sdk's 16 MiB frame limit is the floor.
	bcfg.MaxMessageBytes = max(mcpbridge.DefaultMaxMessageBytes, 6*f.maxResp)
	// One tool must fit, with room to spare, in a watch event part and a
	// ListTools page (both at most the response limit).
	bcfg.MaxToolBytes = max(1, min(mcpbridge.DefaultMaxToolBytes, f.maxResp/4))
	sv := &serving{f: f, log: log, reg: reg, sec: sec, metrics: metrics, stats: statsHandler, fileCfg: bcfg}
	if loaded != nil && loaded.Kubernetes != nil {
		if sv.kube, err = startKubeDiscovery(ctx, f.kubeconfig, loaded.Kubernetes, log); err != nil {
			return err
		}
		defer sv.kube.stop()
		bcfg = mergeDiscovered(bcfg, sv.kube.snapshot(), authSecrets(loaded))
	}
	if err := sv.start(ctx, bcfg, loaded, cfgData); err != nil {
		return err
	}
	defer sv.bridge.Close()
	if sv.front != nil {
		defer sv.front.close()
	}
	if sv.kube != nil {
		defer sv.kube.stop() // before the bridge closes
	}
	return sv.run(ctx)
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
	if c.TokenStore != nil {
		if probs := c.TokenStore.CheckFiles(args[1]); len(probs) > 0 {
			return probs
		}
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
