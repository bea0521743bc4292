package mcpbridge

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLayering enforces the dependency direction (docs/upstream-behaviour.md
// §5): mcpbridge never imports gRPC or the generated API, nor client-go
// (Kubernetes discovery is kubediscovery's, which hands the bridge plain
// ServerConfigs).
func TestLayering(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "./...").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "google.golang.org/grpc") || strings.Contains(dep, "/toolsvc/gen/") ||
			strings.HasSuffix(dep, "/toolsvc/service") || strings.HasPrefix(dep, "k8s.io/") || strings.Contains(dep, "/toolsvc/kubediscovery") {
			t.Errorf("mcpbridge depends on %s; it must not import gRPC, gen/, service, client-go or kubediscovery", dep)
		}
	}
}

// oauthDeps are OAuth's own dependencies: only mcpbridge/oauth imports them.
var oauthDeps = []string{
	"golang.org/x/oauth2",
	"github.com/golang-jwt/jwt",
	"github.com/modelcontextprotocol/go-sdk/auth",
	"github.com/modelcontextprotocol/go-sdk/oauthex",
	"github.com/zitadel/oidc",
}

// directImports lists what the non-test files of pkg import themselves.
func directImports(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// TestOAuthStaysInItsPackage: the bridge core reaches OAuth only through
// mcpbridge/oauth (auth.go holds the small surface it uses), never its
// dependencies directly; and mcpbridge/oauth knows nothing of the bridge.
func TestOAuthStaysInItsPackage(t *testing.T) {
	t.Parallel()
	core := directImports(t, ".")
	if !slices.Contains(core, "github.com/toolsvc/toolsvc/mcpbridge/oauth") {
		t.Error("the bridge does not import mcpbridge/oauth: has OAuth moved again? Update this test")
	}
	for _, imp := range core {
		for _, dep := range oauthDeps {
			if imp == dep || strings.HasPrefix(imp, dep+"/") {
				t.Errorf("the bridge core imports %s; only mcpbridge/oauth may", imp)
			}
		}
	}
	for _, imp := range directImports(t, "./oauth") {
		if strings.HasPrefix(imp, "github.com/toolsvc/toolsvc/") && imp != "github.com/toolsvc/toolsvc/mcpbridge/internal/origin" &&
			imp != "github.com/toolsvc/toolsvc/internal/loopback" && imp != "github.com/toolsvc/toolsvc/tokenstore" {
			t.Errorf("mcpbridge/oauth imports %s; it stands alone (but for the shared origin and loopback rules and the token store)", imp)
		}
	}
}

// TestCatalogKnowsNoSession: package catalog holds the merged catalogs and
// nothing of sessions, transports or the bridge: it imports no other
// toolsvc package (of go-sdk it uses the mcp types it converts), so the
// wires can use its types without reaching the bridge.
func TestCatalogKnowsNoSession(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "./catalog").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/toolsvc/toolsvc/") && dep != "github.com/toolsvc/toolsvc/mcpbridge/catalog" ||
			strings.HasPrefix(dep, "google.golang.org/grpc") {
			t.Errorf("mcpbridge/catalog depends on %s; it must know nothing of the bridge, gRPC or another toolsvc package", dep)
		}
	}
}
