package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// The discovery sources a "kubernetes" section may enable.
const (
	// SourceMCPServers is the SIG mcp-lifecycle-operator's MCPServer
	// resources (mcp.x-k8s.io/v1beta1).
	SourceMCPServers = "mcpservers"
	// SourceServices is Services carrying toolsvc's annotations.
	SourceServices = "services"
)

// Defaults of the "kubernetes" section.
const (
	DefaultKubernetesResync   = 10 * time.Minute
	DefaultKubernetesDebounce = 100 * time.Millisecond
	// MaxKubernetesDebounce bounds "debounce": one object change must reach
	// every watcher within about a second.
	MaxKubernetesDebounce = time.Second
)

// Kubernetes is the "kubernetes" section: upstreams discovered from the
// Kubernetes API server through client-go reflectors (kubediscovery,
// docs/kubernetes.md). They join the file's servers in one configuration.
type Kubernetes struct {
	// Sources are the kinds of object read: "mcpservers", "services" or
	// both (required).
	Sources []string `json:"sources"`
	// Namespaces are the namespaces watched (empty: all, which needs a
	// ClusterRole).
	Namespaces []string `json:"namespaces"`
	// LabelSelector narrows the objects read (Kubernetes selector syntax,
	// e.g. "team=search,tier!=dev"; empty: every object).
	LabelSelector string `json:"labelSelector"`
	// Kubeconfig is the kubeconfig file to use (empty: the in-cluster
	// service account; serve's --kubeconfig wins over it).
	Kubeconfig string `json:"kubeconfig"`
	// Resync is the reflectors' resync period (absent: 10m).
	Resync Duration `json:"resync"`
	// Debounce is how long a burst of object changes settles before the
	// configuration is rebuilt (absent: 100ms, at most 1s).
	Debounce Duration `json:"debounce"`
	// ClusterDomain is appended to "<service>.<namespace>.svc" for a
	// Service's URL (absent: none, resolved by the pod's DNS search path).
	ClusterDomain string `json:"clusterDomain"`
}

// Has reports whether source is enabled.
func (k *Kubernetes) Has(source string) bool { return k != nil && slices.Contains(k.Sources, source) }

// dnsLabel is an RFC 1123 label, the form of a namespace name.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// dnsSubdomain is an RFC 1123 subdomain (a cluster domain).
var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// parseKubernetes decodes and checks the "kubernetes" section; add reports
// a problem with field ("" for the section, ".sources[1]" for an element).
func parseKubernetes(raw json.RawMessage, add func(field, format string, args ...any)) *Kubernetes {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var k Kubernetes
	if err := dec.Decode(&k); err != nil {
		add("", "%s", cleanJSONError(err))
		return nil
	}
	if len(k.Sources) == 0 {
		add(".sources", "required: %q, %q or both", SourceMCPServers, SourceServices)
	}
	for i, s := range k.Sources {
		switch {
		case s != SourceMCPServers && s != SourceServices:
			add(fmt.Sprintf(".sources[%d]", i), "%q is not a source: want %q or %q", s, SourceMCPServers, SourceServices)
		case slices.Index(k.Sources, s) != i:
			add(fmt.Sprintf(".sources[%d]", i), "%q is listed twice", s)
		}
	}
	for i, ns := range k.Namespaces {
		switch {
		case len(ns) > 63 || !dnsLabel.MatchString(ns):
			add(fmt.Sprintf(".namespaces[%d]", i), "%q is not a namespace name (lower-case letters, digits and '-', at most 63)", ns)
		case slices.Index(k.Namespaces, ns) != i:
			add(fmt.Sprintf(".namespaces[%d]", i), "%q is listed twice", ns)
		}
	}
	if _, err := labels.Parse(k.LabelSelector); err != nil {
		add(".labelSelector", "%q is not a label selector: %v", k.LabelSelector, err)
	}
	if k.Debounce.D > MaxKubernetesDebounce {
		add(".debounce", "%s is longer than %s (a change must reach watchers within about a second)", k.Debounce.D, MaxKubernetesDebounce)
	}
	if k.ClusterDomain != "" && (len(k.ClusterDomain) > 253 || !dnsSubdomain.MatchString(k.ClusterDomain)) {
		add(".clusterDomain", "%q is not a DNS domain (e.g. \"cluster.local\")", k.ClusterDomain)
	}
	if !k.Resync.Set {
		k.Resync.D = DefaultKubernetesResync
	}
	if !k.Debounce.Set {
		k.Debounce.D = DefaultKubernetesDebounce
	}
	return &k
}

// ParseDiscovered checks the settings of one server found outside the file
// (a Kubernetes object, named by source in every problem, e.g.
// "mcpservers/tools/search") by the rules of the file's servers: the same
// keys, types, transport rules and mcpbridge's own checks. Unlike the file,
// no ${ENV} or ${file:} reference is resolved (an object's author must not
// read toolsvc's environment or files), and "oauth", "command" (stdio) and
// "env" are not accepted: a discovered server is an HTTP server.
func ParseDiscovered(source, name string, settings map[string]any) (mcpbridge.ServerConfig, Problems) {
	p := &parser{file: source, cfg: &Config{}, refs: newResolved(), lines: map[string]int{}}
	raw, err := json.Marshal(settings)
	if err != nil {
		return mcpbridge.ServerConfig{}, Problems{{File: source, Server: name, Msg: err.Error()}}
	}
	keys := map[string]json.RawMessage{}
	_ = json.Unmarshal(raw, &keys)
	for _, k := range []string{"oauth", "command", "args", "env", "cwd", "envPassthrough"} {
		if _, ok := keys[k]; ok {
			p.add(name, k, "not accepted for a discovered server (HTTP only, no process, no references)")
			delete(keys, k)
		}
	}
	sj, ok := p.decodeServer(name, keys)
	for _, w := range p.cfg.Warnings { // an unknown key is a problem here: discovery writes the keys
		p.probs = append(p.probs, Problem{File: source, Server: name, Msg: w})
	}
	sc := serverConfig(name, &sj, nil)
	if ok {
		p.serverTransport(name, &sj, &sc)
	}
	if len(p.probs) == 0 {
		p.serverRules(name, &sc)
	}
	if len(p.probs) > 0 {
		return mcpbridge.ServerConfig{}, p.probs
	}
	return sc, nil
}
