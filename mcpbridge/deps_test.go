package mcpbridge

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayering enforces the dependency direction (docs/upstream-behaviour.md
// §5): mcpbridge never
// imports gRPC or the generated API.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "google.golang.org/grpc") || strings.Contains(dep, "/toolsvc/gen/") ||
			strings.HasSuffix(dep, "/toolsvc/service") {
			t.Errorf("mcpbridge depends on %s; it must not import gRPC, gen/ or service", dep)
		}
	}
}
