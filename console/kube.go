package console

import (
	"strings"
	"time"
)

// Kubernetes is what Kubernetes discovery says, for the Upstreams page
// (package server fills it; the console does not see client-go).
type Kubernetes struct {
	// Objects names the object each running discovered upstream came
	// from, by server name: "mcpservers/<ns>/<name>" or
	// "services/<ns>/<name>" (kubediscovery.Found.Source).
	Objects map[string]string
	// Sources is the state of each source's list/watch (as ListServers'
	// discovery_sources).
	Sources []DiscoverySource
}

// DiscoverySource is one discovery source's list/watch, as ListServers
// reports it.
type DiscoverySource struct {
	Name    string    `json:"name"`
	State   string    `json:"state"` // listing, watching or failing
	Since   time.Time `json:"since,omitzero"`
	Err     string    `json:"error,omitempty"`
	Synced  bool      `json:"synced"`
	Objects int       `json:"objects"`
}

// kubeObject is a Kubernetes object an upstream came from, or that was
// refused: its kind, namespace and name (a source's refusal, that it
// cannot list, names the kind and the namespace if any).
type kubeObject struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

// refusedPrefix starts the name the bridge reports a refused object or
// source under (kubediscovery.RefusedPrefix: never a server's name).
const refusedPrefix = "kubernetes:"

// kinds are the resources discovery watches, by the kind an operator
// knows them as.
var kinds = map[string]string{"mcpservers": "MCPServer", "services": "Service"}

// objectOf parses a source ("mcpservers/tools/files"; for a source,
// "services", or "services/tools" when namespaces are listed) into the
// object; ok is false for anything else.
func objectOf(source string) (kubeObject, bool) {
	parts := strings.Split(source, "/")
	kind, ok := kinds[parts[0]]
	if !ok {
		return kubeObject{}, false
	}
	switch len(parts) {
	case 1:
		return kubeObject{Kind: kind}, true
	case 2: // a source in one namespace
		return kubeObject{Kind: kind, Namespace: parts[1]}, true
	case 3:
		return kubeObject{Kind: kind, Namespace: parts[1], Name: parts[2]}, true
	}
	return kubeObject{}, false
}
