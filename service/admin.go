package service

import (
	"context"
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

// run runs one AdminService action as an admin operation of the core
// (core/admin.go): authenticated, authorized by the core's admin rule and
// rate limited in BeginAdmin (server: the server acted on, principal:
// whose login), done by do, classified once, ended with its audit line.
func (a *admin) run(ctx context.Context, kind core.OpKind, server, principal string, do func(*core.AdminOp) error) error {
	op, err := a.s.core.BeginAdmin(rpcContext(ctx), kind, server, principal)
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
	err := a.run(ctx, core.OpAdminRefresh, req.GetName(), "", func(op *core.AdminOp) error {
		st, err := op.Refresh()
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
	err := a.run(ctx, core.OpAdminReconnect, req.GetName(), "", func(op *core.AdminOp) error {
		st, err := op.Reconnect()
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
	err := a.run(ctx, core.OpAdminReload, "", "", func(op *core.AdminOp) error {
		if a.s.opts.Config == nil {
			return core.NewError(core.FailedPrecondition, ReasonNoConfigFile, "toolsvc runs without a configuration file (built-in demo); nothing to reload", nil)
		}
		return op.Reload(func(ctx context.Context) {
			out = &toolsvcv1.ReloadConfigResponse{Config: configToProto(a.s.opts.Config.Reload(ctx))}
		})
	})
	return out, err
}

// Logout implements toolsvc.v1.AdminService: a principal revokes its own
// login to a userOAuth server; another principal's needs auth.admins (the
// core's admin rule).
func (a *admin) Logout(ctx context.Context, req *toolsvcv1.LogoutRequest) (*toolsvcv1.LogoutResponse, error) {
	var out *toolsvcv1.LogoutResponse
	err := a.run(ctx, core.OpAdminLogout, req.GetServer(), req.GetPrincipal(), func(op *core.AdminOp) error {
		if err := op.Logout(); err != nil {
			return err
		}
		out = &toolsvcv1.LogoutResponse{Server: req.GetServer(), Principal: op.Who()}
		return nil
	})
	return out, err
}

// Login implements toolsvc.v1.AdminService: the caller's own login link
// to a userOAuth server, or that it is logged in already.
func (a *admin) Login(ctx context.Context, req *toolsvcv1.LoginRequest) (*toolsvcv1.LoginResponse, error) {
	var out *toolsvcv1.LoginResponse
	err := a.run(ctx, core.OpAdminLogin, req.GetServer(), req.GetPrincipal(), func(op *core.AdminOp) error {
		link, err := op.Login(req.GetForce())
		if err != nil {
			return err
		}
		out = &toolsvcv1.LoginResponse{Server: req.GetServer(), Principal: op.Who(), LoggedIn: link == "", LoginUrl: link}
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
