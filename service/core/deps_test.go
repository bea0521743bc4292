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
