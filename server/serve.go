// Package server is toolsvc's composition root (toolsvc serve), modelled
// on etcd's embed: Run builds, from a Config, the bridge (mcpbridge), then
// the core (service/core, with the metrics as its observer), then each
// wire from the core — the gRPC service (service.New) and the MCP front
// door (mcpfront.New) — and the admin listener (metrics, health, the
// userOAuth login callback), Kubernetes discovery and the config reloads.
// A reload swaps state in the core and the bridge, never through a wire.
// It owns serve's settings too (settings.go): each has one key in the
// config file's serve section, a flag that only overrides it, and a rule
// for when a change takes effect, which a reload reports.
package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/toolsvc/toolsvc/config"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service"
)

// Config is what Run serves: the configuration file and the settings in
// force before the file's serve section applies.
type Config struct {
	// File is the configuration file (JSON or YAML; empty: the built-in
	// demo upstream). It is read at start and on every reload.
	File string
	// Serve holds the settings: DefaultServe, with the ones Overrides
	// names set by the caller. The file's serve section applies to every
	// other key.
	Serve config.Serve
	// Overrides are the serve keys whose Serve value wins over the file's,
	// each with what set it ("--listen" for a flag).
	Overrides map[string]string
}

// usageError is a bad command line or setting: exit code 2.
type usageErr struct{ err error }

func (e *usageErr) Error() string { return e.err.Error() }
func (e *usageErr) Unwrap() error { return e.err }

// ExitCode is the process exit code of a usage error.
func (e *usageErr) ExitCode() int { return 2 }

func usageError(err error) error { return &usageErr{err} }

// Command runs toolsvc serve with its command line: the flags override
// the file's serve settings.
func Command(ctx context.Context, args []string) error {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	return Run(ctx, c)
}

// effective is the settings in force: c.Serve, with each key the file sets
// and c.Overrides does not name taken from the file.
func effective(c Config, loaded *config.Config) config.Serve {
	s := c.Serve
	if loaded == nil {
		return s
	}
	for _, key := range loaded.ServeSet {
		if _, over := c.Overrides[key]; over {
			continue
		}
		setField(&s, &loaded.Serve, key)
	}
	return s
}

// setField copies key's value from src to dst.
func setField(dst, src *config.Serve, key string) {
	reflect.ValueOf(config.ServeField(dst, key)).Elem().Set(reflect.ValueOf(config.ServeField(src, key)).Elem())
}

// Run serves until ctx ends, then shuts down in order (serving.shutdown).
// The stages: configuration → settings → logger → tracing → TLS and auth
// → the bridge, the core, the wires and the listeners (serving.start) →
// ready → the signal to stop → shutdown.
func Run(ctx context.Context, c Config) error {
	bcfg, loaded, cfgData, err := loadServeConfig(c.File)
	if err != nil {
		return err
	}
	set := effective(c, loaded)
	if err := validate(&set); err != nil {
		return err
	}
	level := new(slog.LevelVar)
	if err := level.UnmarshalText([]byte(set.LogLevel)); err != nil {
		return usageError(err)
	}
	log := newLogger(level, set.LogFormat)
	if loaded == nil {
		log.Info("no config file: serving the built-in demo upstream (tools demo__echo, demo__add, demo__sleep)")
	} else {
		for _, w := range loaded.Warnings {
			log.Warn(w)
		}
	}
	setGCPercent()
	memLimit, err := parseMemoryLimit(set.MemoryLimit)
	if err != nil {
		return usageError(err)
	}
	if _, err := setMemoryLimit(log, memLimit); err != nil {
		return usageError(err)
	}
	bcfg.Logger = log
	statsHandler, stopTracing, err := startTracing(ctx, set.OTLPEndpoint, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	sec, err := setupSecurity(ctx, &set, loaded, log)
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
	bcfg.MaxMessageBytes = max(mcpbridge.DefaultMaxMessageBytes, 6*set.MaxResponseBytes)
	// One tool must fit, with room to spare, in a watch event part and a
	// ListTools page (both at most the response limit).
	bcfg.MaxToolBytes = max(1, min(mcpbridge.DefaultMaxToolBytes, set.MaxResponseBytes/4))
	sv := &serving{cfg: c, set: set, level: level, log: log, reg: reg, sec: sec, metrics: metrics, stats: statsHandler, fileCfg: bcfg}
	if loaded != nil && loaded.Kubernetes != nil {
		if sv.kube, err = startKubeDiscovery(ctx, set.Kubeconfig, loaded.Kubernetes, log); err != nil {
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

// newLogger logs to stderr at level (a reload may change it) in format,
// text or json (validated).
func newLogger(level *slog.LevelVar, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if strings.ToLower(format) == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
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
