package kubediscovery

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/toolsvc/toolsvc/config"
)

// AnnotationPrefix starts every annotation toolsvc reads (docs/kubernetes.md
// has the table).
const AnnotationPrefix = "toolsvc.dev/"

// The annotations toolsvc reads on a Service or an MCPServer.
const (
	AnnEnabled         = AnnotationPrefix + "enabled"          // "true" opts a Service in; "false" leaves an MCPServer out
	AnnPort            = AnnotationPrefix + "port"             // Service: port name or number (default: the appProtocol "mcp" port, else the only one)
	AnnPath            = AnnotationPrefix + "path"             // Service: HTTP path (default /mcp)
	AnnScheme          = AnnotationPrefix + "scheme"           // Service: http (default) or https
	AnnTransport       = AnnotationPrefix + "transport"        // http (streamable HTTP, default) or sse
	AnnServerName      = AnnotationPrefix + "server-name"      // the server name (default <namespace>.<name>)
	AnnNamePrefix      = AnnotationPrefix + "name-prefix"      // replaces the server name in exposed tool names
	AnnURL             = AnnotationPrefix + "url"              // explicit URL (out-of-cluster use); wins over the derived one
	AnnConnectTimeout  = AnnotationPrefix + "connect-timeout"  // duration
	AnnCallTimeout     = AnnotationPrefix + "call-timeout"     // duration
	AnnRefreshTimeout  = AnnotationPrefix + "refresh-timeout"  // duration
	AnnRefreshInterval = AnnotationPrefix + "refresh-interval" // duration
	AnnProtocolVersion = AnnotationPrefix + "protocol-version" // MCP protocol version pinned
	AnnToolsAllow      = AnnotationPrefix + "tools-allow"      // comma-separated globs over the upstream's tool names
	AnnToolsDeny       = AnnotationPrefix + "tools-deny"       // comma-separated globs
	AnnMaxConcurrent   = AnnotationPrefix + "max-concurrent-calls"
)

// settingOf maps each per-server annotation to the configuration file's
// key it sets (config.ParseDiscovered checks them by the file's rules).
var settingOf = map[string]string{
	AnnTransport: "type", AnnNamePrefix: "namePrefix", AnnURL: "url",
	AnnConnectTimeout: "connectTimeout", AnnCallTimeout: "callTimeout", AnnRefreshTimeout: "refreshTimeout",
	AnnRefreshInterval: "refreshInterval", AnnProtocolVersion: "protocolVersion",
	AnnToolsAllow: "tools", AnnToolsDeny: "tools", AnnMaxConcurrent: "maxConcurrentCalls",
}

// known are every annotation toolsvc reads; another under the prefix is a
// typo and refuses the object.
var known = map[string]bool{AnnEnabled: true, AnnPort: true, AnnPath: true, AnnScheme: true, AnnServerName: true}

func init() {
	for k := range settingOf {
		known[k] = true
	}
}

// MCPServerAppProtocol is the Service port appProtocol that marks the MCP
// port when toolsvc.dev/port is absent.
const MCPServerAppProtocol = "mcp"

// refusal is why an object is not an upstream, naming it and the field.
func refusal(source, field, format string, args ...any) *Found {
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = fmt.Sprintf("%s: %s", field, msg)
	}
	return &Found{Source: source, Problem: source + ": " + msg}
}

// settings turns an object's annotations into configuration-file settings
// (without "url"), or says which annotation is wrong.
func settings(source string, ann map[string]string) (map[string]any, *Found) {
	out := map[string]any{}
	for _, k := range sortedKeys(ann) {
		if !strings.HasPrefix(k, AnnotationPrefix) {
			continue
		}
		if !known[k] {
			return nil, refusal(source, "annotation "+strconv.Quote(k), "not a toolsvc annotation (see docs/kubernetes.md)")
		}
		v := ann[k]
		switch key := settingOf[k]; {
		case key == "":
		case k == AnnTransport:
			if v != "http" && v != "sse" {
				return nil, refusal(source, "annotation "+strconv.Quote(k), "%q is not a transport: want \"http\" (streamable HTTP) or \"sse\"", v)
			}
			out[key] = v
		case k == AnnToolsAllow || k == AnnToolsDeny:
			tools, _ := out["tools"].(map[string]any)
			if tools == nil {
				tools = map[string]any{}
				out["tools"] = tools
			}
			tools[strings.TrimPrefix(k, AnnotationPrefix+"tools-")] = splitList(v)
		case k == AnnMaxConcurrent:
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return nil, refusal(source, "annotation "+strconv.Quote(k), "%q is not a count of calls", v)
			}
			out[key] = n
		default:
			out[key] = v
		}
	}
	return out, nil
}

// annotationOf names the annotation behind a configuration key in a
// problem, so the object's author reads the key they wrote.
func annotationOf(field string) string {
	key, _, _ := strings.Cut(field, ".")
	var anns []string
	for a, k := range settingOf {
		if k == key {
			anns = append(anns, a)
		}
	}
	if len(anns) == 0 {
		return "field " + strconv.Quote(field)
	}
	slices.Sort(anns)
	return "annotation " + strings.Join(anns, " or ")
}

// validate checks one discovered server by the file's rules, naming the
// object and the annotation of each problem.
func validate(source, name string, s map[string]any) *Found {
	sc, probs := config.ParseDiscovered(source, name, s)
	if len(probs) > 0 {
		msgs := make([]string, 0, len(probs))
		for _, p := range probs {
			msgs = append(msgs, annotationOf(p.Field)+": "+p.Msg)
		}
		return &Found{Source: source, Name: name, Problem: source + ": " + strings.Join(msgs, "; ")}
	}
	return &Found{Source: source, Name: name, Server: sc}
}

// serverName is the annotation's name, else <namespace>.<name> (a
// namespace has no dot, so the form is unambiguous).
func serverName(ns, name string, ann map[string]string) string {
	if n := ann[AnnServerName]; n != "" {
		return n
	}
	return ns + "." + name
}

// fromService returns the upstream a Service describes, a refusal, or nil
// when the Service is not opted in.
func fromService(svc *corev1.Service, clusterDomain string) *Found {
	source := "services/" + svc.Namespace + "/" + svc.Name
	ann := svc.Annotations
	switch ann[AnnEnabled] {
	case "true":
	case "", "false":
		return nil
	default:
		return refusal(source, "annotation "+strconv.Quote(AnnEnabled), "%q is not \"true\" or \"false\"", ann[AnnEnabled])
	}
	s, bad := settings(source, ann)
	if bad != nil {
		return bad
	}
	if _, ok := s["url"]; !ok {
		u, bad := serviceURL(source, svc, clusterDomain)
		if bad != nil {
			return bad
		}
		s["url"] = u
	}
	return validate(source, serverName(svc.Namespace, svc.Name, ann), s)
}

// serviceURL is the Service's cluster DNS address: scheme, port and path
// from its annotations and ports.
func serviceURL(source string, svc *corev1.Service, clusterDomain string) (string, *Found) {
	ann := svc.Annotations
	scheme := ann[AnnScheme]
	switch scheme {
	case "":
		scheme = "http"
	case "http", "https":
	default:
		return "", refusal(source, "annotation "+strconv.Quote(AnnScheme), "%q is not \"http\" or \"https\"", scheme)
	}
	var port int32
	if p := ann[AnnPort]; p != "" {
		for _, sp := range svc.Spec.Ports {
			if sp.Name == p || strconv.Itoa(int(sp.Port)) == p {
				port = sp.Port
			}
		}
		if port == 0 {
			return "", refusal(source, "annotation "+strconv.Quote(AnnPort), "%q names no port of the Service", p)
		}
	} else {
		for _, sp := range svc.Spec.Ports {
			if sp.AppProtocol != nil && *sp.AppProtocol == MCPServerAppProtocol {
				port = sp.Port
			}
		}
		if port == 0 && len(svc.Spec.Ports) == 1 {
			port = svc.Spec.Ports[0].Port
		}
		if port == 0 {
			return "", refusal(source, "annotation "+strconv.Quote(AnnPort), "required: the Service has %d ports and none with appProtocol %q", len(svc.Spec.Ports), MCPServerAppProtocol)
		}
	}
	path := ann[AnnPath]
	if path == "" {
		path = "/mcp"
	}
	if !strings.HasPrefix(path, "/") {
		return "", refusal(source, "annotation "+strconv.Quote(AnnPath), "%q does not start with /", path)
	}
	host := svc.Name + "." + svc.Namespace + ".svc"
	if clusterDomain != "" {
		host += "." + clusterDomain
	}
	u := url.URL{Scheme: scheme, Host: host + ":" + strconv.Itoa(int(port)), Path: path}
	return u.String(), nil
}

// fromMCPServer returns the upstream an MCPServer describes: one that is
// Available (and Verified when that condition is set), at its
// status.address.url (or the url annotation). One that is not ready yet is
// reported as such, so ListServers says what it waits for.
func fromMCPServer(obj *unstructured.Unstructured) *Found {
	source := "mcpservers/" + obj.GetNamespace() + "/" + obj.GetName()
	ann := obj.GetAnnotations()
	switch ann[AnnEnabled] {
	case "", "true":
	case "false":
		return nil
	default:
		return refusal(source, "annotation "+strconv.Quote(AnnEnabled), "%q is not \"true\" or \"false\"", ann[AnnEnabled])
	}
	conds := conditions(obj)
	if c, ok := conds["Available"]; !ok || c.status != "True" {
		return refusal(source, "", "not an upstream until its Available condition is True (%s)", c.describe())
	}
	if c, ok := conds["Verified"]; ok && c.status != "True" {
		return refusal(source, "", "not an upstream until its Verified condition is True (%s)", c.describe())
	}
	s, bad := settings(source, ann)
	if bad != nil {
		return bad
	}
	if _, ok := s["url"]; !ok {
		u, _, _ := unstructured.NestedString(obj.Object, "status", "address", "url")
		if u == "" {
			return refusal(source, "status.address.url", "empty: the operator has not published an address")
		}
		s["url"] = u
	}
	return validate(source, serverName(obj.GetNamespace(), obj.GetName(), ann), s)
}

// condition is one status condition's state.
type condition struct{ status, reason, message string }

func (c condition) describe() string {
	if c.status == "" {
		return "not set"
	}
	d := c.status
	if c.reason != "" {
		d += ", " + c.reason
	}
	if c.message != "" {
		d += ": " + c.message
	}
	return d
}

// conditions reads status.conditions by type.
func conditions(obj *unstructured.Unstructured) map[string]condition {
	out := map[string]condition{}
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range list {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		out[str("type")] = condition{status: str("status"), reason: str("reason"), message: str("message")}
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
