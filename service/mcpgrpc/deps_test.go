package mcpgrpc

import (
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestLayering keeps this wire on the core alone (docs/architecture.md):
// it imports the core and the generated code, never the bridge (the
// catalog's values come through the core), the gRPC edge or the front door.
func TestLayering(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		switch imp {
		case "github.com/toolsvc/toolsvc/mcpbridge", "github.com/toolsvc/toolsvc/service", "github.com/toolsvc/toolsvc/service/mcpfront":
			t.Errorf("service/mcpgrpc imports %s", imp)
		}
	}
}
