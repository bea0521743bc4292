package service

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

type fakeAddr struct{ network, s string }

func (a fakeAddr) Network() string { return a.network }
func (a fakeAddr) String() string  { return a.s }

func TestLocalPeer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addr net.Addr
		want bool
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 1}, true},
		{&net.TCPAddr{IP: net.ParseIP("127.3.4.5"), Port: 1}, true},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 1}, true},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 1}, true},
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.2"), Port: 1}, false},
		{&net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 1}, false},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.1"), Port: 1}, false},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 1}, false},
		{&net.TCPAddr{IP: net.ParseIP("0.0.0.0"), Port: 1}, false},
		{&net.UnixAddr{Name: "/run/toolsvc.sock", Net: "unix"}, true},
		{fakeAddr{"tcp", "127.0.0.1:9"}, true},
		{fakeAddr{"tcp", "[::ffff:127.0.0.1]:9"}, true},
		{fakeAddr{"tcp", "192.0.2.2:9"}, false},
		{fakeAddr{"tcp", "garbage"}, false},
		{fakeAddr{"bufconn", "bufconn"}, true},
	} {
		ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: c.addr})
		if got := LocalPeer(ctx); got != c.want {
			t.Errorf("LocalPeer(%s %s) = %v, want %v", c.addr.Network(), c.addr, got, c.want)
		}
	}
	if LocalPeer(context.Background()) {
		t.Error("a call without peer information counted as local")
	}
}

// TestAdminLoopbackOnlyWithoutAuth calls the AdminService handler as any
// embedding would reach it (no interceptor involved): without an
// core.Authorizer, a non-loopback peer is refused with ADMIN_LOOPBACK_ONLY, and
// ListServers hides last errors and the configuration from it.
func TestAdminLoopbackOnlyWithoutAuth(t *testing.T) {
	t.Parallel()
	f := newWatchFixture(t, nil, map[string][]string{"up": {"a"}})
	a := &admin{s: f.svc}
	remote := peer.NewContext(t.Context(), &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 4000}})
	_, err := a.RefreshServer(remote, &toolsvcv1.RefreshServerRequest{Name: "up"})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("RefreshServer from a remote peer = %v, want PERMISSION_DENIED", err)
	}
	var info *errdetails.ErrorInfo
	for _, d := range status.Convert(err).Details() {
		if e, ok := d.(*errdetails.ErrorInfo); ok {
			info = e
		}
	}
	if info == nil || info.Reason != ReasonAdminLoopbackOnly || info.Metadata["peer"] != "192.0.2.7:4000" {
		t.Fatalf("ErrorInfo = %v, want reason %s naming the peer", info, ReasonAdminLoopbackOnly)
	}
	local := peer.NewContext(t.Context(), &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 4000}})
	if _, err := a.RefreshServer(local, &toolsvcv1.RefreshServerRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("RefreshServer from loopback with no name = %v, want INVALID_ARGUMENT (past the peer check)", err)
	}
	if f.svc.core.Operator(rpcContext(remote), core.Principal{}) || !f.svc.core.Operator(rpcContext(local), core.Principal{}) {
		t.Fatal("core.Operator disagrees with the peer check")
	}
}

// TestListServersByPrincipal calls the handler directly (no interceptor):
// with rules, a principal sees only the servers of tools it may see and no
// last errors; an admin sees all.
func TestListServersByPrincipal(t *testing.T) {
	t.Parallel()
	authz := core.NewAuthorizer([]core.Rule{{Principal: "alice", Allow: []string{"a__*"}}, {Principal: "ops"}}, []string{"ops"})
	f := newWatchFixture(t, &serverOpts{Authorizer: authz}, map[string][]string{"a": {"x"}, "b": {"y"}})
	as := func(name string) context.Context {
		return core.WithPrincipal(t.Context(), core.Principal{Name: name, Method: "token"})
	}
	names := func(ctx context.Context) string {
		r, err := f.svc.ListServers(ctx, &toolsvcv1.ListServersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range r.GetServers() {
			out = append(out, s.GetName())
		}
		return fmt.Sprint(out)
	}
	for who, want := range map[string]string{"alice": "[a]", "ops": "[a b]", "mallory": "[]"} {
		if got := names(as(who)); got != want {
			t.Errorf("%s sees servers %s, want %s", who, got, want)
		}
	}
}

// staticConfig is a ConfigSource whose status is fixed.
type staticConfig ConfigStatus

func (c staticConfig) Status() ConfigStatus                { return ConfigStatus(c) }
func (c staticConfig) Reload(context.Context) ConfigStatus { return ConfigStatus(c) }

// TestListServersDiscoverySources: Kubernetes discovery's sources (their
// errors name users and URLs) are operator information: an admin sees
// them with state, time and error; another principal does not.
func TestListServersDiscoverySources(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 12, 7, 5, 41, 7, 0, time.UTC)
	cfg := staticConfig{Path: "/etc/toolsvc.yaml", Discovery: []DiscoverySource{
		{Name: "mcpservers/tools", State: "failing", Since: since, Err: "dial tcp 10.0.0.1:443: connect: connection refused", Synced: true, Objects: 3},
		{Name: "services/tools", State: "watching", Since: since, Synced: true},
	}}
	authz := core.NewAuthorizer([]core.Rule{{Principal: "alice"}, {Principal: "ops"}}, []string{"ops"})
	f := newWatchFixture(t, &serverOpts{Authorizer: authz, Config: cfg}, map[string][]string{"a": {"x"}})
	list := func(who string) *toolsvcv1.ListServersResponse {
		r, err := f.svc.ListServers(core.WithPrincipal(t.Context(), core.Principal{Name: who, Method: "token"}), &toolsvcv1.ListServersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	ds := list("ops").GetDiscoverySources()
	if len(ds) != 2 || ds[0].GetName() != "mcpservers/tools" || ds[0].GetState() != toolsvcv1.DiscoverySourceState_DISCOVERY_SOURCE_STATE_FAILING ||
		!ds[0].GetStateTime().AsTime().Equal(since) || !strings.Contains(ds[0].GetLastError(), "connection refused") || !ds[0].GetSynced() || ds[0].GetObjectCount() != 3 ||
		ds[1].GetState() != toolsvcv1.DiscoverySourceState_DISCOVERY_SOURCE_STATE_WATCHING || ds[1].GetLastError() != "" {
		t.Errorf("admin's discovery_sources = %v", ds)
	}
	if ds := list("alice").GetDiscoverySources(); len(ds) != 0 {
		t.Errorf("a non-admin sees discovery_sources %v", ds)
	}
}
