package core

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayering keeps the arrows of docs/architecture.md: the core is
// transport-neutral (no gRPC, no generated API, no wire package), and the
// MCP front door is built on the core alone (no gRPC status, metadata or
// peer, no generated gRPC code, not the gRPC edge), so that neither wire
// reaches into the other.
func TestLayering(t *testing.T) {
	t.Parallel()
	for pkg, forbidden := range map[string][]string{
		".": {"google.golang.org/grpc", "google.golang.org/genproto", "github.com/toolsvc/toolsvc/gen/",
			"github.com/toolsvc/toolsvc/service/mcpfront", "github.com/prometheus/"},
		"../mcpfront": {"google.golang.org/grpc", "google.golang.org/genproto", "github.com/toolsvc/toolsvc/gen/"},
	} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == "github.com/toolsvc/toolsvc/service" {
				t.Errorf("%s depends on the gRPC edge (service)", pkg)
			}
			for _, f := range forbidden {
				if strings.HasPrefix(dep, f) {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}

// TestWiresImportTheCoreOnly keeps the bridge behind the core: a wire
// (service, service/mcpfront, any package under service/ but the core,
// and the operator console, console/)
// imports neither mcpbridge nor its subpackages, except the catalog's
// value types (mcpbridge/catalog); it reaches the upstreams through the
// core's operations. The bridge, for its part, depends on no part of
// service/. Only a wire's own code counts: its tests build real bridges
// to test it against, and the composition root (server) imports
// everything.
func TestWiresImportTheCoreOnly(t *testing.T) {
	t.Parallel()
	const mod = "github.com/toolsvc/toolsvc/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "../...", "../../console").Output()
	if err != nil {
		t.Fatalf("go list ../...: %v", err)
	}
	wires := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := fields[0]
		if pkg == mod+"service/core" || strings.HasPrefix(pkg, mod+"service/core/") {
			continue
		}
		wires++
		for _, imp := range fields[1:] {
			if (imp == mod+"mcpbridge" || strings.HasPrefix(imp, mod+"mcpbridge/")) && imp != mod+"mcpbridge/catalog" {
				t.Errorf("wire %s imports %s: reach the upstreams through service/core", pkg, imp)
			}
		}
	}
	if wires < 2 { // service and service/mcpfront at least: the listing itself is broken
		t.Fatalf("go list ../... found %d wire packages:\n%s", wires, out)
	}
	out, err = exec.Command("go", "list", "-deps", "../../mcpbridge/...").Output()
	if err != nil {
		t.Fatalf("go list -deps mcpbridge/...: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == mod+"service" || strings.HasPrefix(dep, mod+"service/") {
			t.Errorf("mcpbridge depends on %s: the bridge sits below every part of service/", dep)
		}
	}
}
