package mcpfront

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/toolsvc/toolsvc/internal/memupstream"
	"github.com/toolsvc/toolsvc/mcpbridge"
	"github.com/toolsvc/toolsvc/service/core"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const defaultTestTimeout = 20 * time.Second

// fixture is the core of a server over a real go-sdk upstream ("mem":
// n numbered tools and echo, over in-memory transports).
type fixture struct {
	upstream *mcp.Server
	bridge   *mcpbridge.Bridge
	core     *core.Core
}

func newFixture(t testing.TB, n int, auth core.AuthConfig) *fixture {
	t.Helper()
	u := memupstream.New(t, n)
	return &fixture{upstream: u.Server, bridge: u.Bridge, core: core.New(u.Bridge, core.Options{Auth: auth})}
}

// ctxT is a context that ends with the test, or after defaultTestTimeout.
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	t.Cleanup(cancel)
	return ctx
}
