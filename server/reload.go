package server

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/toolsvc/toolsvc/config"
	"github.com/toolsvc/toolsvc/console"
	"github.com/toolsvc/toolsvc/kubediscovery"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service"
	"github.com/toolsvc/toolsvc/service/core"
)

// configManager owns the configuration file of a running toolsvc: it
// reloads it on SIGHUP, on file changes and on AdminService.ReloadConfig,
// and reports its status. An invalid file never replaces a running
// configuration, and neither does one whose auth section cannot be applied
// (prepareAuth): a reload applies the servers and the auth section, or
// neither.
type configManager struct {
	path   string
	bridge *mcpbridge.Bridge
	core   *core.Core // a reload's auth goes to it (SetAuth); nil in tests without one
	auth   *authLoader
	authOn bool // the running configuration has an auth section
	log    *slog.Logger

	// secrets are redaction values the configuration file itself does not
	// carry to the servers (the auth section's tokens at start): every
	// reload adds them, so servers compare equal and stay untouched. Tokens
	// a reload adds are not added: that would restart every upstream.
	secrets []string

	// kube is Kubernetes discovery (nil without a kubernetes section):
	// every reload merges its latest snapshot with the file's servers, and
	// each of its snapshots is merged with the file's last applied servers
	// (fileCfg), one configuration through the bridge's Reconfigure.
	kube        *kubeDiscovery
	kubeSection *config.Kubernetes
	// storeSection is the tokenStore section toolsvc started with: the
	// store is opened once (its file lock, its Redis client, the key), so
	// a reload does not switch it.
	storeSection *config.TokenStore
	fileCfg      mcpbridge.Config // guarded by reloadMu
	refusedLog   map[string]string

	// base is serve's Config: the settings before the file's serve
	// section, and the keys a flag overrides (their file value is never
	// used). running is the file the running configuration came from, to
	// tell which settings a reload changes; level is the logger's
	// (serve.logLevel, a setting a reload applies). Guarded by reloadMu.
	base    Config
	running *config.Config
	level   *slog.LevelVar

	reloadMu sync.Mutex // serialises reloads and discovery's applies
	mu       sync.Mutex // guards status and lastHash
	status   service.ConfigStatus
	lastHash [32]byte
	// objects names the Kubernetes object of each discovered upstream the
	// bridge runs (discoveredObjects), for the console.
	objects map[string]string
}

func newConfigManager(path string, data []byte, c *config.Config, b *mcpbridge.Bridge, log *slog.Logger) *configManager {
	return &configManager{
		path: path, bridge: b, log: log, authOn: c.Auth != nil,
		status:   service.ConfigStatus{Path: path, Loaded: time.Now(), LastReloadOK: true, Warnings: c.Warnings},
		lastHash: sha256.Sum256(data),
	}
}

// Status implements service.ConfigSource.
func (m *configManager) Status() service.ConfigStatus {
	m.mu.Lock()
	st := m.status
	m.mu.Unlock()
	if m.kube != nil {
		st.Discovery = m.kube.sources()
	}
	return st
}

// Kubernetes is discovery's objects and sources, for the console's
// Upstreams page (the sources as ListServers' discovery_sources).
func (m *configManager) Kubernetes() console.Kubernetes {
	m.mu.Lock()
	out := console.Kubernetes{Objects: maps.Clone(m.objects)}
	m.mu.Unlock()
	if m.kube != nil {
		for _, d := range m.kube.sources() {
			out.Sources = append(out.Sources, console.DiscoverySource{Name: d.Name, State: d.State, Since: d.Since, Err: d.Err, Synced: d.Synced, Objects: d.Objects})
		}
	}
	return out
}

// Effective is the running configuration with every secret redacted
// (config.Config.Redacted, with the auth tokens toolsvc started with):
// the console's Config page. m.running is written under mu too.
func (m *configManager) Effective() any {
	m.mu.Lock()
	c := m.running
	m.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.Redacted(m.secrets)
}

// Reload implements service.ConfigSource.
func (m *configManager) Reload(context.Context) service.ConfigStatus {
	return m.reload("request", false)
}

// reload re-reads and applies the file. With ifChanged, a file whose bytes
// are those last read is skipped (file-system events are noisy).
func (m *configManager) reload(trigger string, ifChanged bool) service.ConfigStatus {
	m.reloadMu.Lock()
	defer m.reloadMu.Unlock()
	data, err := config.ReadFile(m.path)
	if err == nil && ifChanged {
		m.mu.Lock()
		same := sha256.Sum256(data) == m.lastHash
		m.mu.Unlock()
		if same {
			return m.Status()
		}
	}
	var c *config.Config
	if err == nil {
		c, err = config.Parse(m.path, data)
	}
	// The settings in force after the reload must be valid before
	// anything is applied.
	var next config.Serve
	if err == nil {
		next = effective(m.base, c)
		err = validate(&next)
	}
	// The auth section is built first (it may read files and fetch a JWKS):
	// what cannot be applied refuses the whole reload before anything
	// changes. Applying it cannot fail once built.
	var authConf core.AuthConfig
	authDone := func(bool) {}
	if err == nil {
		authConf, authDone, err = m.prepareAuth(c)
	}
	var res mcpbridge.ReconfigureResult
	var refused []mcpbridge.RefusedServer
	if err == nil {
		next := c.Bridge
		next.Servers = withSecrets(next.Servers, m.secrets)
		file := next
		var objects map[string]string
		if m.kube != nil {
			snap := m.kube.snapshot()
			next = mergeDiscovered(next, snap, m.secrets)
			objects = discoveredObjects(len(file.Servers), next.Servers, snap)
		}
		if res, err = m.bridge.Reconfigure(next); err == nil {
			m.fileCfg, refused = file, next.Refused
			m.mu.Lock()
			m.objects = objects
			m.mu.Unlock()
		}
	}
	if err == nil && c.Auth != nil && m.core != nil {
		err = m.core.SetAuth(authConf)
	}
	authDone(err == nil)
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if data != nil {
		m.lastHash = sha256.Sum256(data)
	}
	m.status.Reloads++
	m.status.LastReload = now
	if err != nil {
		m.status.LastReloadOK = false
		m.status.LastReloadError = err.Error()
		var probs config.Problems
		if errors.As(err, &probs) {
			for _, p := range probs {
				m.log.Error("config reload failed; keeping the running configuration", "trigger", trigger, "problem", p.Error())
			}
		} else {
			m.log.Error("config reload failed; keeping the running configuration", "trigger", trigger, "error", err)
		}
		return m.status
	}
	m.status.LastReloadOK = true
	m.status.LastReloadError = ""
	m.status.Loaded = now
	m.status.Warnings = c.Warnings
	ch := m.changed(c)
	if slices.Contains(ch.applied, "serve.logLevel") {
		if err := m.level.UnmarshalText([]byte(next.LogLevel)); err != nil { // validate checked it: not expected
			m.log.Error("serve.logLevel not applied", "error", err)
		}
	}
	m.running = c
	m.status.AppliedSettings, m.status.RestartSettings = ch.applied, ch.restart
	for _, key := range ch.overridden {
		m.status.Warnings = append(slices.Clone(m.status.Warnings), fmt.Sprintf("%s: serve.%s changed, but %s overrides it; the flag's value stays", m.path, key, m.base.Overrides[key]))
	}
	if !reflect.DeepEqual(c.Kubernetes, m.kubeSection) {
		m.status.Warnings = append(slices.Clone(m.status.Warnings), m.path+": the kubernetes section changed; it takes effect on restart")
	}
	if !reflect.DeepEqual(c.TokenStore, m.storeSection) {
		m.status.Warnings = append(slices.Clone(m.status.Warnings), m.path+": the tokenStore section changed; it takes effect on restart (the running store and its key stay in use)")
	}
	m.status.Added, m.status.Removed, m.status.Restarted = res.Added, res.Removed, res.Restarted
	m.logRefused(refused)
	for _, w := range m.status.Warnings {
		m.log.Warn(w)
	}
	if c.Auth != nil {
		m.log.Info("auth reloaded", "trigger", trigger, "tokens", len(c.Auth.Tokens), "tokens_file", c.Auth.TokensFile != "",
			"jwt", c.Auth.JWT != nil, "mtls", c.Auth.MTLS, "rules", len(c.Auth.Rules), "admins", len(c.Auth.Admins),
			"rate_limits", len(c.Auth.RateLimits))
	}
	m.log.Info("config reloaded", "trigger", trigger, "added", res.Added, "removed", res.Removed, "restarted", res.Restarted,
		"applied", ch.applied, "needs_restart", ch.restart)
	return m.status
}

// changes are the settings a reload changed: applied to the running
// process, taking effect on restart, and overridden by a flag (so left
// as they are), each by its key in the file.
type changes struct {
	applied, restart, overridden []string
}

// changed compares the file c with the running one, key by key: each
// top-level key (FileSettings) by its value, each serve key (Settings) by
// the value the file gives it, set or not.
func (m *configManager) changed(c *config.Config) changes {
	var ch changes
	add := func(key string, a Applies) {
		if a == OnReload {
			ch.applied = append(ch.applied, key)
		} else {
			ch.restart = append(ch.restart, key)
		}
	}
	for _, s := range FileSettings {
		if !sameJSON(m.running.Top[s.Key], c.Top[s.Key]) {
			add(s.Key, s.Applies)
		}
	}
	for _, s := range Settings {
		was, is := slices.Contains(m.running.ServeSet, s.Key), slices.Contains(c.ServeSet, s.Key)
		if was == is && (!was || reflect.DeepEqual(config.ServeField(&m.running.Serve, s.Key), config.ServeField(&c.Serve, s.Key))) {
			continue
		}
		if _, over := m.base.Overrides[s.Key]; over {
			ch.overridden = append(ch.overridden, s.Key)
			continue
		}
		add("serve."+s.Key, s.Applies)
	}
	return ch
}

// sameJSON says whether two JSON values are equal as values (absent and
// null alike), whatever their spacing and key order.
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	if len(a) > 0 && json.Unmarshal(a, &va) != nil {
		return false
	}
	if len(b) > 0 && json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// applyDiscovered merges a discovery snapshot with the file's servers last
// applied and reconfigures the bridge (the same validation and Reconfigure
// as a file reload). A merged configuration the bridge refuses leaves the
// running one.
func (m *configManager) applyDiscovered(snap kubediscovery.Snapshot) {
	m.reloadMu.Lock()
	defer m.reloadMu.Unlock()
	next := mergeDiscovered(m.fileCfg, snap, m.secrets)
	res, err := m.bridge.Reconfigure(next)
	if err != nil {
		m.log.Error("kubernetes discovery: the merged configuration was refused; keeping the running one", "error", err)
		return
	}
	m.mu.Lock()
	m.logRefused(next.Refused)
	m.objects = discoveredObjects(len(m.fileCfg.Servers), next.Servers, snap)
	m.mu.Unlock()
	if len(res.Added)+len(res.Removed)+len(res.Restarted) > 0 {
		m.log.Info("kubernetes discovery applied", "added", res.Added, "removed", res.Removed, "restarted", res.Restarted, "unchanged", len(res.Unchanged))
	}
}

// logRefused logs each refused server whose reason is new, once (m.mu
// held).
func (m *configManager) logRefused(refused []mcpbridge.RefusedServer) {
	seen := make(map[string]string, len(refused))
	for _, r := range refused {
		seen[r.Name] = r.Reason
		if m.refusedLog[r.Name] != r.Reason {
			m.log.Warn("kubernetes discovery: not an upstream", "object", r.Name, "reason", r.Reason)
		}
	}
	m.refusedLog = seen
}

// prepareAuth builds the auth configuration of c, or says why it cannot
// replace the running one: adding or removing the auth section (the
// listeners' TLS and the loopback-only AdminService were set up for the
// running choice) needs a restart; an unreadable tokensFile or jwksFile,
// a JWKS URL that cannot be fetched, or auth.mtls without --tls-client-ca
// refuse the reload. The returned done(applied) must be called.
func (m *configManager) prepareAuth(c *config.Config) (core.AuthConfig, func(bool), error) {
	noop := func(bool) {}
	switch on := c.Auth != nil; {
	case on && !m.authOn:
		return core.AuthConfig{}, noop, errors.New("auth: the file adds an auth section, but turning authentication on needs a restart " +
			"(the listeners were set up without it); nothing was applied")
	case !on && m.authOn:
		return core.AuthConfig{}, noop, errors.New("auth: the file has no auth section, but turning authentication off needs a restart; " +
			"nothing was applied, the running auth stays")
	case !on || m.auth == nil:
		return core.AuthConfig{}, noop, nil
	}
	ac, done, err := m.auth.load(c.Auth)
	if err != nil {
		return core.AuthConfig{}, noop, fmt.Errorf("auth: %w; nothing was applied, the running auth stays", err)
	}
	return ac, done, nil
}

// run reloads on SIGHUP and on changes in the file's directory until ctx
// ends. It watches the directory, not the file, so editors' rename-writes
// and Kubernetes ConfigMap symlink swaps are seen.
func (m *configManager) run(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	var events chan fsnotify.Event
	var errs chan error
	w, err := fsnotify.NewWatcher()
	if err == nil {
		if err = w.Add(filepath.Dir(m.path)); err == nil {
			events, errs = w.Events, w.Errors
		}
		defer w.Close()
	}
	if err != nil {
		m.log.Warn("config file watching unavailable; reload with SIGHUP", "error", err)
	}
	// Changes arrive as bursts of events: settle for a moment first.
	const settle = 200 * time.Millisecond
	var timer *time.Timer
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-hup:
			m.reload("SIGHUP", false)
		case ev := <-events:
			if ev.Op == fsnotify.Chmod {
				continue
			}
			if timer == nil {
				timer = time.NewTimer(settle)
			} else {
				timer.Reset(settle)
			}
			fire = timer.C
		case err := <-errs:
			m.log.Warn("config file watch error", "error", err)
		case <-fire:
			fire = nil
			m.reload("file change", true)
		}
	}
}
