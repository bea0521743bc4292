package config

import (
	"strings"
	"testing"
	"time"
)

func TestKubernetesSection(t *testing.T) {
	c, err := Parse("c.yaml", []byte("kubernetes:\n  sources: [mcpservers, services]\n  namespaces: [tools]\n  labelSelector: team=search\n"))
	if err != nil {
		t.Fatalf("Parse = %v, want a configuration (mcpServers is optional with a kubernetes section)", err)
	}
	k := c.Kubernetes
	if k == nil || !k.Has(SourceMCPServers) || !k.Has(SourceServices) || k.Namespaces[0] != "tools" || k.LabelSelector != "team=search" {
		t.Fatalf("Kubernetes = %+v", k)
	}
	if k.Resync.D != DefaultKubernetesResync || k.Debounce.D != DefaultKubernetesDebounce {
		t.Errorf("defaults: resync %v debounce %v", k.Resync.D, k.Debounce.D)
	}
}

func TestKubernetesSectionProblems(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"kubernetes": {"sources": []}}`, `field "kubernetes.sources": required`},
		{`{"kubernetes": {"sources": ["pods"]}}`, `field "kubernetes.sources[0]": "pods" is not a source`},
		{`{"kubernetes": {"sources": ["services", "services"]}}`, `field "kubernetes.sources[1]": "services" is listed twice`},
		{`{"kubernetes": {"sources": ["services"], "namespaces": ["Tools"]}}`, `field "kubernetes.namespaces[0]": "Tools" is not a namespace name`},
		{`{"kubernetes": {"sources": ["services"], "labelSelector": "a=(b"}}`, `field "kubernetes.labelSelector"`},
		{`{"kubernetes": {"sources": ["services"], "debounce": "5s"}}`, `field "kubernetes.debounce": 5s is longer than 1s`},
		{`{"kubernetes": {"sources": ["services"], "nope": 1}}`, `field "kubernetes": unknown field "nope"`},
		{`{"kubernetes": {"sources": ["services"], "clusterDomain": "-x"}}`, `field "kubernetes.clusterDomain"`},
		{`{}`, `field "mcpServers": required`},
	} {
		_, err := Parse("c.json", []byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s) = %v, want a problem containing %q", tc.doc, err, tc.want)
		}
	}
}

func TestParseDiscovered(t *testing.T) {
	sc, probs := ParseDiscovered("services/tools/search", "tools.search", map[string]any{
		"url": "http://search.tools.svc:8080/mcp", "callTimeout": "20s", "tools": map[string]any{"deny": []string{"drop_*"}},
	})
	if len(probs) > 0 {
		t.Fatalf("ParseDiscovered = %v", probs)
	}
	if sc.Name != "tools.search" || sc.URL != "http://search.tools.svc:8080/mcp" || sc.CallTimeout != 20*time.Second || sc.ToolsDeny[0] != "drop_*" {
		t.Errorf("ServerConfig = %+v", sc)
	}
	t.Setenv("TOOLSVC_TEST_SECRET", "s3cret-value")
	sc, probs = ParseDiscovered("services/tools/x", "tools.x", map[string]any{"url": "http://x/${TOOLSVC_TEST_SECRET}"})
	if len(probs) > 0 || strings.Contains(sc.URL, "s3cret") {
		t.Errorf("a reference in a discovered server: URL %q, problems %v; want it left unresolved", sc.URL, probs)
	}
	for _, tc := range []struct {
		settings map[string]any
		want     string
	}{
		{map[string]any{"url": "http://x/mcp", "callTimeout": "soon"}, `services/tools/x: server "tools.x": field "callTimeout": "soon" is not a duration`},
		{map[string]any{"command": "sh"}, `field "command": not accepted for a discovered server`},
		{map[string]any{"url": "http://x/mcp", "type": "carrier-pigeon"}, `field "type": "carrier-pigeon" is not supported`},
		{map[string]any{"url": "http://x/mcp", "bogus": true}, `unknown key "bogus"`},
		{map[string]any{}, `field "command": required`},
	} {
		_, probs := ParseDiscovered("services/tools/x", "tools.x", tc.settings)
		if probs == nil || !strings.Contains(probs.Error(), tc.want) {
			t.Errorf("ParseDiscovered(%v) = %v, want a problem containing %q", tc.settings, probs, tc.want)
		}
	}
}
