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

// authorize is AdminService's authorization of the caller of ctx
// (authenticated): an auth.admins principal; without an auth section,
// nobody is authenticated, so AdminService (and the operator details of
// ListServers) answer only callers on this machine. Every handler asks it
// on its own path (AdminOp.Admit), so no way of registering the service
// can skip it.
func (a *admin) authorize(ctx context.Context, p core.Principal) *core.Error {
	if !a.s.authConfigured() {
		if LocalPeer(ctx) {
			return nil
		}
		return core.NewError(core.PermissionDenied, ReasonAdminLoopbackOnly,
			"without an auth section AdminService answers only loopback connections; "+
				"configure auth (tokens, jwt or mtls) and list the operators in auth.admins to use it remotely",
			map[string]string{"peer": peerAddr(ctx)})
	}
	if a.s.authOf(ctx).Authorizer().AllowAdmin(p) {
		return nil
	}
	return core.NewError(core.PermissionDenied, ReasonPermissionDenied,
		fmt.Sprintf("principal %q may not use AdminService (auth.admins)", p.Name), map[string]string{"principal": p.Name})
}

// run runs one AdminService action as an operation of the core's engine
// (core/admin.go): authenticated, admitted by admit (nil: by authorize),
// done by do, classified once, ended with its audit line.
func (a *admin) run(ctx context.Context, kind core.OpKind, target string, admit func(*core.AdminOp) *core.Error, do func(*core.AdminOp) error) error {
	op, err := a.s.core.BeginAdmin(rpcContext(ctx), kind, target)
	if err == nil {
		if admit == nil {
			admit = func(op *core.AdminOp) *core.Error { return a.authorize(op.Context(), op.Principal()) }
		}
		err = op.Admit(admit(op))
	}
	if err == nil {
		err = do(op)
	}
	fail := op.Fail(err)
	op.End(fail)
	if fail != nil {
		return grpcStatus(fail).Err()
	}
	return nil
}

// RefreshServer implements toolsvc.v1.AdminService.
func (a *admin) RefreshServer(ctx context.Context, req *toolsvcv1.RefreshServerRequest) (*toolsvcv1.RefreshServerResponse, error) {
	var out *toolsvcv1.RefreshServerResponse
	err := a.run(ctx, core.OpAdminRefresh, req.GetName(), nil, func(op *core.AdminOp) error {
		if req.GetName() == "" {
			return core.InvalidField("name", "required: a configured server name")
		}
		st, err := a.s.core.Refresh(op.Context(), req.GetName())
		if err != nil {
			return err
		}
		out = &toolsvcv1.RefreshServerResponse{Server: serverToProto(st)}
		return nil
	})
	return out, err
}

// ReconnectServer implements toolsvc.v1.AdminService.
func (a *admin) ReconnectServer(ctx context.Context, req *toolsvcv1.ReconnectServerRequest) (*toolsvcv1.ReconnectServerResponse, error) {
	var out *toolsvcv1.ReconnectServerResponse
	err := a.run(ctx, core.OpAdminReconnect, req.GetName(), nil, func(op *core.AdminOp) error {
		if req.GetName() == "" {
			return core.InvalidField("name", "required: a configured server name")
		}
		st, err := a.s.core.Reconnect(op.Context(), req.GetName())
		if err != nil {
			return err
		}
		out = &toolsvcv1.ReconnectServerResponse{Server: serverToProto(st)}
		return nil
	})
	return out, err
}

// ReloadConfig implements toolsvc.v1.AdminService.
func (a *admin) ReloadConfig(ctx context.Context, _ *toolsvcv1.ReloadConfigRequest) (*toolsvcv1.ReloadConfigResponse, error) {
	var out *toolsvcv1.ReloadConfigResponse
	err := a.run(ctx, core.OpAdminReload, "", nil, func(op *core.AdminOp) error {
		if a.s.opts.Config == nil {
			return core.NewError(core.FailedPrecondition, ReasonNoConfigFile, "toolsvc runs without a configuration file (built-in demo); nothing to reload", nil)
		}
		out = &toolsvcv1.ReloadConfigResponse{Config: configToProto(a.s.opts.Config.Reload(op.Context()))}
		return nil
	})
	return out, err
}

// Logout implements toolsvc.v1.AdminService: a principal revokes its own
// login to a userOAuth server; another principal's needs auth.admins.
func (a *admin) Logout(ctx context.Context, req *toolsvcv1.LogoutRequest) (*toolsvcv1.LogoutResponse, error) {
	var out *toolsvcv1.LogoutResponse
	var who string
	admit := func(op *core.AdminOp) *core.Error {
		p := op.Principal()
		if who = req.GetPrincipal(); who == "" {
			who = p.Name
		}
		op.For(who)
		switch {
		case !a.s.authConfigured():
			// Nobody is authenticated: as for the other methods, loopback
			// callers only, and they must name the principal.
			if e := a.authorize(op.Context(), p); e != nil {
				return e
			}
		case who != p.Name && !a.s.authOf(op.Context()).Authorizer().AllowAdmin(p):
			return core.NewError(core.PermissionDenied, ReasonPermissionDenied,
				fmt.Sprintf("principal %q may revoke only its own logins; another principal's needs auth.admins", p.Name), map[string]string{"principal": p.Name})
		}
		return nil
	}
	err := a.run(ctx, core.OpAdminLogout, req.GetServer(), admit, func(op *core.AdminOp) error {
		if req.GetServer() == "" {
			return core.InvalidField("server", "required: a configured server in credentials mode userOAuth")
		}
		if !a.s.authConfigured() && req.GetPrincipal() == "" {
			return core.InvalidField("principal", "required without an auth section: nobody is authenticated, so name whose login to revoke")
		}
		if err := a.s.core.Logout(op.Context(), who, req.GetServer()); err != nil {
			if errors.Is(err, core.ErrNotUserOAuth) {
				return core.InvalidField("server", fmt.Sprintf("server %q is not in credentials mode userOAuth: it stores no logins", req.GetServer()))
			}
			return err
		}
		out = &toolsvcv1.LogoutResponse{Server: req.GetServer(), Principal: who}
		return nil
	})
	return out, err
}

// Login implements toolsvc.v1.AdminService: the caller's own login link
// to a userOAuth server, or that it is logged in already.
func (a *admin) Login(ctx context.Context, req *toolsvcv1.LoginRequest) (*toolsvcv1.LoginResponse, error) {
	var out *toolsvcv1.LoginResponse
	var who string
	admit := func(op *core.AdminOp) *core.Error {
		p := op.Principal()
		who = req.GetPrincipal()
		op.For(who)
		switch {
		case !a.s.authConfigured():
			// Nobody is authenticated: loopback callers only, naming the
			// principal (as Logout).
			return a.authorize(op.Context(), p)
		case who == "":
			who = p.Name
		case who != p.Name:
			// A link logs in the principal it names as whoever follows it: an
			// operator's for another principal would put the operator's
			// upstream account under that principal's name.
			return core.NewError(core.PermissionDenied, ReasonPermissionDenied,
				fmt.Sprintf("principal %q may ask only for its own login link (a link logs in the principal it names as whoever follows it)", p.Name),
				map[string]string{"principal": p.Name})
		}
		return nil
	}
	err := a.run(ctx, core.OpAdminLogin, req.GetServer(), admit, func(op *core.AdminOp) error {
		if req.GetServer() == "" {
			return core.InvalidField("server", "required: a configured server in credentials mode userOAuth")
		}
		if who == "" {
			return core.InvalidField("principal", "required without an auth section: nobody is authenticated, so name whose login this is")
		}
		link, err := a.s.core.Login(op.Context(), who, req.GetServer(), req.GetForce())
		if err != nil {
			if errors.Is(err, core.ErrNotUserOAuth) {
				return core.InvalidField("server", fmt.Sprintf("server %q is not in credentials mode userOAuth: it has no logins", req.GetServer()))
			}
			return err
		}
		out = &toolsvcv1.LoginResponse{Server: req.GetServer(), Principal: who, LoggedIn: link == "", LoginUrl: link}
		return nil
	})
	return out, err
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
