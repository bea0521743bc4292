package service

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/types/known/timestamppb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/loopback"
	"github.com/toolsvc/toolsvc/service/core"
)

// ConfigStatus describes the running configuration and the last reload.
type ConfigStatus struct {
	Path            string
	Loaded          time.Time
	Reloads         int64
	LastReload      time.Time
	LastReloadOK    bool
	LastReloadError string // every problem, without secret values
	Warnings        []string
	Added           []string
	Removed         []string
	Restarted       []string
	// AppliedSettings and RestartSettings are the settings the last
	// successful reload changed, by their key in the file: applied to the
	// running process, or taking effect on the next restart.
	AppliedSettings []string
	RestartSettings []string
	// Discovery is Kubernetes discovery's sources (nil without it).
	Discovery []DiscoverySource
}

// DiscoverySource is the state of one Kubernetes discovery source
// (package server fills it from kubediscovery; the service edge does not see
// client-go).
type DiscoverySource struct {
	Name    string
	State   string // "listing", "watching" or "failing"
	Since   time.Time
	Err     string // while failing, bounded by kubediscovery.MaxErrBytes
	Synced  bool
	Objects int
}

func discoveryToProto(ds []DiscoverySource) []*toolsvcv1.DiscoverySource {
	out := make([]*toolsvcv1.DiscoverySource, 0, len(ds))
	for _, d := range ds {
		p := &toolsvcv1.DiscoverySource{Name: d.Name, LastError: d.Err, Synced: d.Synced, ObjectCount: int32(min(d.Objects, math.MaxInt32))}
		switch d.State {
		case "listing":
			p.State = toolsvcv1.DiscoverySourceState_DISCOVERY_SOURCE_STATE_LISTING
		case "watching":
			p.State = toolsvcv1.DiscoverySourceState_DISCOVERY_SOURCE_STATE_WATCHING
		case "failing":
			p.State = toolsvcv1.DiscoverySourceState_DISCOVERY_SOURCE_STATE_FAILING
		}
		if !d.Since.IsZero() {
			p.StateTime = timestamppb.New(d.Since)
		}
		out = append(out, p)
	}
	return out
}

// ConfigSource reports and reloads the configuration file (package server
// provides it; the service edge does not read files).
type ConfigSource interface {
	Status() ConfigStatus
	// Reload re-reads the file and applies it. An invalid file keeps the
	// running configuration; the returned status says why.
	Reload(ctx context.Context) ConfigStatus
}

func configToProto(c ConfigStatus) *toolsvcv1.ConfigStatus {
	p := &toolsvcv1.ConfigStatus{
		Path:            c.Path,
		ReloadCount:     c.Reloads,
		LastReloadOk:    c.LastReloadOK,
		LastReloadError: c.LastReloadError,
		Warnings:        c.Warnings,
		Added:           c.Added,
		Removed:         c.Removed,
		Restarted:       c.Restarted,
		AppliedSettings: c.AppliedSettings,
		RestartSettings: c.RestartSettings,
	}
	if !c.Loaded.IsZero() {
		p.LoadedTime = timestamppb.New(c.Loaded)
	}
	if !c.LastReload.IsZero() {
		p.LastReloadTime = timestamppb.New(c.LastReload)
	}
	return p
}

// admin implements toolsvc.v1.AdminService.
type admin struct {
	toolsvcv1.UnimplementedAdminServiceServer
	s *Server
}

func (a *admin) authorize(ctx context.Context) error {
	ctx, p, err := a.s.authenticateRPC(ctx) // ctx: pinned to the state p was authenticated under
	if err != nil {
		return err
	}
	if !a.s.authConfigured() {
		// No auth: nobody is authenticated, so AdminService (and the
		// operator details of ListServers) answer only callers on this
		// machine. Checked here, on the handler's own path, so no way of
		// registering the service can skip it.
		if LocalPeer(ctx) {
			return nil
		}
		return plainError(core.PermissionDenied, ReasonAdminLoopbackOnly,
			"without an auth section AdminService answers only loopback connections; "+
				"configure auth (tokens, jwt or mtls) and list the operators in auth.admins to use it remotely",
			map[string]string{"peer": peerAddr(ctx)})
	}
	if a.s.authOf(ctx).Authorizer().AllowAdmin(p) {
		return nil
	}
	return plainError(core.PermissionDenied, ReasonPermissionDenied,
		fmt.Sprintf("principal %q may not use AdminService (auth.admins)", p.Name), map[string]string{"principal": p.Name})
}

// RefreshServer implements toolsvc.v1.AdminService.
func (a *admin) RefreshServer(ctx context.Context, req *toolsvcv1.RefreshServerRequest) (*toolsvcv1.RefreshServerResponse, error) {
	if err := a.authorize(ctx); err != nil {
		return nil, err
	}
	if req.GetName() == "" {
		return nil, invalidArgument("name", "required: a configured server name")
	}
	st, err := a.s.core.Refresh(ctx, req.GetName())
	if err != nil {
		return nil, toStatus(err)
	}
	return &toolsvcv1.RefreshServerResponse{Server: serverToProto(st)}, nil
}

// ReconnectServer implements toolsvc.v1.AdminService.
func (a *admin) ReconnectServer(ctx context.Context, req *toolsvcv1.ReconnectServerRequest) (*toolsvcv1.ReconnectServerResponse, error) {
	if err := a.authorize(ctx); err != nil {
		return nil, err
	}
	if req.GetName() == "" {
		return nil, invalidArgument("name", "required: a configured server name")
	}
	st, err := a.s.core.Reconnect(ctx, req.GetName())
	if err != nil {
		return nil, toStatus(err)
	}
	return &toolsvcv1.ReconnectServerResponse{Server: serverToProto(st)}, nil
}

// ReloadConfig implements toolsvc.v1.AdminService.
func (a *admin) ReloadConfig(ctx context.Context, _ *toolsvcv1.ReloadConfigRequest) (*toolsvcv1.ReloadConfigResponse, error) {
	if err := a.authorize(ctx); err != nil {
		return nil, err
	}
	if a.s.opts.Config == nil {
		return nil, plainError(core.FailedPrecondition, ReasonNoConfigFile, "toolsvc runs without a configuration file (built-in demo); nothing to reload", nil)
	}
	return &toolsvcv1.ReloadConfigResponse{Config: configToProto(a.s.opts.Config.Reload(ctx))}, nil
}

// Logout implements toolsvc.v1.AdminService: a principal revokes its own
// login to a userOAuth server; another principal's needs auth.admins.
func (a *admin) Logout(ctx context.Context, req *toolsvcv1.LogoutRequest) (*toolsvcv1.LogoutResponse, error) {
	ctx, p, err := a.s.authenticateRPC(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetServer() == "" {
		return nil, invalidArgument("server", "required: a configured server in credentials mode userOAuth")
	}
	who := req.GetPrincipal()
	if who == "" {
		who = p.Name
	}
	switch {
	case !a.s.authConfigured():
		// Nobody is authenticated: as for the other methods, loopback
		// callers only, and they must name the principal.
		if err := a.authorize(ctx); err != nil {
			return nil, err
		}
		if req.GetPrincipal() == "" {
			return nil, invalidArgument("principal", "required without an auth section: nobody is authenticated, so name whose login to revoke")
		}
	case who != p.Name && !a.s.authOf(ctx).Authorizer().AllowAdmin(p):
		return nil, plainError(core.PermissionDenied, ReasonPermissionDenied,
			fmt.Sprintf("principal %q may revoke only its own logins; another principal's needs auth.admins", p.Name), map[string]string{"principal": p.Name})
	}
	if err := a.s.core.Logout(ctx, who, req.GetServer()); err != nil {
		if errors.Is(err, core.ErrNotUserOAuth) {
			return nil, invalidArgument("server", fmt.Sprintf("server %q is not in credentials mode userOAuth: it stores no logins", req.GetServer()))
		}
		return nil, toStatus(err)
	}
	return &toolsvcv1.LogoutResponse{Server: req.GetServer(), Principal: who}, nil
}

// Login implements toolsvc.v1.AdminService: the caller's own login link
// to a userOAuth server, or that it is logged in already.
func (a *admin) Login(ctx context.Context, req *toolsvcv1.LoginRequest) (*toolsvcv1.LoginResponse, error) {
	ctx, p, err := a.s.authenticateRPC(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetServer() == "" {
		return nil, invalidArgument("server", "required: a configured server in credentials mode userOAuth")
	}
	who := req.GetPrincipal()
	switch {
	case !a.s.authConfigured():
		// Nobody is authenticated: loopback callers only, naming the
		// principal (as Logout).
		if err := a.authorize(ctx); err != nil {
			return nil, err
		}
		if who == "" {
			return nil, invalidArgument("principal", "required without an auth section: nobody is authenticated, so name whose login this is")
		}
	case who == "":
		who = p.Name
	case who != p.Name:
		// A link logs in the principal it names as whoever follows it: an
		// operator's for another principal would put the operator's
		// upstream account under that principal's name.
		return nil, plainError(core.PermissionDenied, ReasonPermissionDenied,
			fmt.Sprintf("principal %q may ask only for its own login link (a link logs in the principal it names as whoever follows it)", p.Name),
			map[string]string{"principal": p.Name})
	}
	link, err := a.s.core.Login(ctx, who, req.GetServer(), req.GetForce())
	if err != nil {
		if errors.Is(err, core.ErrNotUserOAuth) {
			return nil, invalidArgument("server", fmt.Sprintf("server %q is not in credentials mode userOAuth: it has no logins", req.GetServer()))
		}
		return nil, toStatus(err)
	}
	return &toolsvcv1.LoginResponse{Server: req.GetServer(), Principal: who, LoggedIn: link == "", LoginUrl: link}, nil
}

// authConfigured reports whether the service authenticates its callers
// (an Authenticator or an Authorizer in Options, as core.Core.Authenticate
// decides).
func (s *Server) authConfigured() bool {
	return s.core.CurrentAuth().Configured() // SetAuth never changes it
}

// operatorView reports whether the caller (principal p, authenticated for
// ctx) may see operator details (server errors, the configuration status):
// an auth.admins principal, or without auth a caller on this machine.
func (s *Server) operatorView(ctx context.Context, p core.Principal) bool {
	if !s.authConfigured() {
		return LocalPeer(ctx)
	}
	return s.authOf(ctx).Authorizer().AllowAdmin(p)
}

// LocalPeer reports whether the caller of ctx is on this machine: a TCP
// peer from a loopback address (127.0.0.0/8, ::1, or ::ffff:127.x), or a
// peer without an IP address (a Unix socket or an in-process pipe, which
// only local processes can open). A call without peer information is not
// local.
func LocalPeer(ctx context.Context) bool {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return false
	}
	return loopback.Addr(p.Addr)
}

func peerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return "unknown"
}
