package tests

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolsvc/toolsvc/internal/kubetest"
	"github.com/toolsvc/toolsvc/kubediscovery"
)

// TestConsoleKubernetes: toolsvc discovers from a real API server
// (kube-apiserver and etcd, as the Kubernetes e2e tests; skipped like them
// without the binaries). An operator's Upstreams page shows the object each
// discovered upstream came from (an MCPServer, an annotated Service), the
// object discovery refused (a Service asking for the file's server name)
// marked refused with why, and each source's list/watch; a principal who is
// not an operator is given neither objects nor sources.
func TestConsoleKubernetes(t *testing.T) {
	t.Parallel()
	env := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tools"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.Grant(t, "toolsvc", "mcp.x-k8s.io", "mcpservers")
	env.Grant(t, "toolsvc", "", "services")
	_, kubeconfig := env.User(t, "toolsvc")
	upURL := startHTTPUpstream(t)
	const opsTok, bobTok = "ops-kube-console-token", "bob-kube-console-token"
	p := startToolsvc(t, cfg{
		Auth: &authCfg{Tokens: map[string]string{"ops": opsTok, "bob": bobTok}, Admins: []string{"ops"},
			Rules: []rule{{Principal: "ops", Allow: []string{"*"}}, {Principal: "bob", Allow: []string{"*"}}}},
		Kubernetes: &kubeCfg{Sources: []string{"mcpservers", "services"}, Namespaces: []string{"tools"}, Debounce: "50ms"},
		Servers:    servers{"tools.clash": goHTTP(upURL, upstream{})},
	}, "--kubeconfig", kubeconfig)

	kubeMCPServer(t, env, "tools", "files", upURL)
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "search", Namespace: "tools",
			Annotations: map[string]string{kubediscovery.AnnEnabled: "true", kubediscovery.AnnURL: upURL}},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8080}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "clash", Namespace: "tools",
			Annotations: map[string]string{kubediscovery.AnnEnabled: "true", kubediscovery.AnnURL: upURL, kubediscovery.AnnServerName: "tools.clash"}},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8080}}}},
	} {
		if _, err := env.Kube.CoreV1().Services("tools").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	b := newBrowser(t)
	base := "http://" + p.adminAddr + "/ui/"
	b.run(t, "signing in as ops", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.ID("#token")),
		chromedp.SendKeys(chromedp.ID("#token"), opsTok), chromedp.Click(chromedp.ID("#signin")))
	row := func(name string) string {
		return `document.querySelector('#upstreams tr[data-upstream="` + name + `"]')`
	}
	cell := func(name, class string) string {
		return `((` + row(name) + ` || {querySelector: () => null}).querySelector('.` + class + `') || {}).textContent`
	}
	b.waitJS(t, "the MCPServer's object", cell("tools.files", "kube-object")+` === 'MCPServer tools/files'`)
	b.waitJS(t, "the Service's object", cell("tools.search", "kube-object")+` === 'Service tools/search'`)
	b.waitJS(t, "the refused Service", cell("kubernetes:services/tools/clash", "kube-object")+` === 'Service tools/clash refused'`)
	var reason, fileObject string
	evalInto(t, b, cell("kubernetes:services/tools/clash", "last-error"), &reason)
	if !strings.Contains(reason, `server name "tools.clash" is taken by the configuration file`) {
		t.Errorf("the refused Service's reason: %q", reason)
	}
	evalInto(t, b, cell("tools.clash", "kube-object"), &fileObject)
	if fileObject != "" {
		t.Errorf("the file's server tools.clash shows a Kubernetes object %q", fileObject)
	}
	if n := evalJS[int](t, b, `(`+row("kubernetes:services/tools/clash")+`).querySelectorAll('button').length`); n != 0 {
		t.Errorf("the refused object is offered %d actions", n)
	}
	// The sources, one per namespace listed: watching, listed, with the
	// objects they hold.
	b.waitJS(t, "both sources watching", `Object.entries({'mcpservers/tools': '1', 'services/tools': '2'}).every(([s, n]) => {
		const r = document.querySelector('#discovery tr[data-source="' + s + '"]');
		return r && r.dataset.state === 'watching' && r.children[3].textContent === 'yes' && r.children[4].textContent === n })`)
	b.screenshot(t, "upstreams-kubernetes")

	// bob (not an operator): the upstreams, without objects or refusals.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"api/upstreams", nil)
	req.Header.Set("Authorization", "Bearer "+bobTok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var ups []map[string]any
	if err := json.Unmarshal(body, &ups); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("bob's upstreams: %d %s (%v)", resp.StatusCode, body, err)
	}
	seen := map[string]bool{}
	for _, u := range ups {
		name, _ := u["name"].(string)
		seen[name] = true
		if u["object"] != nil || u["refused"] != nil || strings.HasPrefix(name, kubediscovery.RefusedPrefix) {
			t.Errorf("bob (not an operator) is shown %v", u)
		}
	}
	if !seen["tools.files"] || !seen["tools.search"] {
		t.Errorf("bob's upstreams %s: want tools.files and tools.search", body)
	}
	b.noProblems(t)
}
