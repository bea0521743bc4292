package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

func dialAdmin(f clientFlags) (toolsvcv1.AdminServiceClient, func(), error) {
	conn, err := f.connect()
	if err != nil {
		return nil, nil, err
	}
	return toolsvcv1.NewAdminServiceClient(conn), func() { conn.Close() }, nil
}

// runAdminServer runs `toolsvc refresh NAME` and `toolsvc reconnect NAME`.
func runAdminServer(ctx context.Context, cmd string, args []string) error {
	f := newClientFlags(cmd)
	if err := f.fs.Parse(args); err != nil {
		return &exitError{code: 2, err: err}
	}
	if f.fs.NArg() != 1 {
		return &exitError{code: 2, err: fmt.Errorf("usage: toolsvc %s [--addr ADDR] [--json] NAME", cmd)}
	}
	c, closeConn, err := dialAdmin(f)
	if err != nil {
		return err
	}
	defer closeConn()
	var srv *toolsvcv1.Server
	switch cmd {
	case "refresh":
		resp, err := c.RefreshServer(ctx, &toolsvcv1.RefreshServerRequest{Name: f.fs.Arg(0)})
		if err != nil {
			return err
		}
		srv = resp.GetServer()
	case "reconnect":
		resp, err := c.ReconnectServer(ctx, &toolsvcv1.ReconnectServerRequest{Name: f.fs.Arg(0)})
		if err != nil {
			return err
		}
		srv = resp.GetServer()
	}
	if *f.json {
		printJSON(srv)
		return nil
	}
	fmt.Printf("%s: %s, %d tools, %d connects\n", termSafe(srv.GetName()),
		strings.ToLower(strings.TrimPrefix(srv.GetState().String(), "SERVER_STATE_")), srv.GetToolCount(), srv.GetConnectCount())
	return nil
}

// runReload runs `toolsvc reload`.
func runReload(ctx context.Context, args []string) error {
	f := newClientFlags("reload")
	if err := f.fs.Parse(args); err != nil {
		return &exitError{code: 2, err: err}
	}
	c, closeConn, err := dialAdmin(f)
	if err != nil {
		return err
	}
	defer closeConn()
	resp, err := c.ReloadConfig(ctx, &toolsvcv1.ReloadConfigRequest{})
	if err != nil {
		return err
	}
	cs := resp.GetConfig()
	if *f.json {
		printJSON(cs)
	} else if cs.GetLastReloadOk() {
		fmt.Printf("reloaded %s: added %v, removed %v, restarted %v\n", cs.GetPath(), cs.GetAdded(), cs.GetRemoved(), cs.GetRestarted())
		if a := cs.GetAppliedSettings(); len(a) > 0 {
			fmt.Printf("applied: %s\n", strings.Join(a, ", "))
		}
		if r := cs.GetRestartSettings(); len(r) > 0 {
			fmt.Printf("needs a restart (the running value stays): %s\n", strings.Join(r, ", "))
		}
		for _, w := range cs.GetWarnings() {
			fmt.Println("warning:", termText(w))
		}
	}
	if !cs.GetLastReloadOk() {
		return fmt.Errorf("reload failed; the previous configuration keeps running:\n%s", cs.GetLastReloadError())
	}
	return nil
}

// runLogout runs `toolsvc logout --server S [--principal P]`: revoke a
// userOAuth login (the caller's own; another principal's as an admin).
func runLogout(ctx context.Context, args []string) error {
	f := newClientFlags("logout")
	server := f.fs.String("server", "", "the server in credentials mode userOAuth (required)")
	principal := f.fs.String("principal", "", "whose login to revoke (default: yours; another principal's needs auth.admins)")
	if err := f.fs.Parse(args); err != nil {
		return &exitError{code: 2, err: err}
	}
	if *server == "" || f.fs.NArg() != 0 {
		return &exitError{code: 2, err: errors.New("usage: toolsvc logout [--addr ADDR] [--json] --server S [--principal P]")}
	}
	c, closeConn, err := dialAdmin(f)
	if err != nil {
		return err
	}
	defer closeConn()
	resp, err := c.Logout(ctx, &toolsvcv1.LogoutRequest{Server: *server, Principal: *principal})
	if err != nil {
		return err
	}
	if *f.json {
		printJSON(resp)
		return nil
	}
	fmt.Printf("logged out %s from %s\n", termSafe(resp.GetPrincipal()), termSafe(resp.GetServer()))
	return nil
}

func runLogin(ctx context.Context, args []string) error {
	f := newClientFlags("login")
	server := f.fs.String("server", "", "the server in credentials mode userOAuth (required)")
	principal := f.fs.String("principal", "", "whose login (default: yours; required when toolsvc has no auth section)")
	force := f.fs.Bool("force", false, "a new link even when you are logged in (to log in again, e.g. as another account)")
	wait := f.fs.Duration("wait", 0, "after printing the link, wait this long for the login to complete (0: do not wait)")
	if err := f.fs.Parse(args); err != nil {
		return &exitError{code: 2, err: err}
	}
	if *server == "" || f.fs.NArg() != 0 {
		return &exitError{code: 2, err: errors.New("usage: toolsvc login [--addr ADDR] [--json] --server S [--principal P] [--force] [--wait D]")}
	}
	if *force && *wait > 0 {
		// Waiting means polling until a usable token is stored, which the
		// login being replaced already is.
		return &exitError{code: 2, err: errors.New("toolsvc login: --wait cannot tell a forced new login from the one it replaces; use one or the other")}
	}
	c, closeConn, err := dialAdmin(f)
	if err != nil {
		return err
	}
	defer closeConn()
	req := &toolsvcv1.LoginRequest{Server: *server, Principal: *principal, Force: *force}
	resp, err := c.Login(ctx, req)
	if err != nil {
		return err
	}
	if *f.json {
		printJSON(resp)
	} else if resp.GetLoggedIn() {
		fmt.Printf("%s is logged in to %s\n", termSafe(resp.GetPrincipal()), termSafe(resp.GetServer()))
	} else {
		fmt.Printf("to log %s in to %s, open:\n%s\n", termSafe(resp.GetPrincipal()), termSafe(resp.GetServer()), showURL(resp.GetLoginUrl()).Text)
	}
	if resp.GetLoggedIn() || *wait <= 0 {
		return nil
	}
	// Wait for the login: the same question without force, until a token
	// is stored.
	ctx, cancel := context.WithTimeout(ctx, *wait)
	defer cancel()
	req.Force = false
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return &exitError{code: 1, err: fmt.Errorf("the login to %s did not complete within %v", resp.GetServer(), *wait)}
		case <-t.C:
		}
		r, err := c.Login(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			return err
		}
		if r.GetLoggedIn() {
			if *f.json {
				printJSON(r)
			} else {
				fmt.Printf("%s is logged in to %s\n", termSafe(r.GetPrincipal()), termSafe(r.GetServer()))
			}
			return nil
		}
	}
}

// describeRPCError turns a client-side gRPC error into one clear line.
func describeRPCError(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	switch st.Code() {
	case codes.Unavailable:
		if strings.Contains(st.Message(), "connection refused") || strings.Contains(st.Message(), "dial") ||
			strings.Contains(st.Message(), "name resolver") || strings.Contains(st.Message(), "no such host") {
			return fmt.Errorf("cannot reach toolsvc (is `toolsvc serve` running at that address?): %s", st.Message())
		}
	case codes.Unauthenticated, codes.PermissionDenied:
		return fmt.Errorf("toolsvc refused the request (%s): %s", st.Code(), st.Message())
	}
	return fmt.Errorf("%s: %s", st.Code(), st.Message())
}
