package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/toolsvc/toolsvc/service/core"
)

// The Logins page: who is logged in to which userOAuth upstream (the
// tokens toolsvc stores per principal and server), and logout. A principal
// sees and revokes its own logins; an operator (auth.admins, or a loopback
// operator without auth) sees and revokes every principal's. The token
// itself never leaves the store: a row says whose it is, for which server,
// when its access token expires and whether it can be refreshed.

// MaxLogins bounds the logins one answer (or event) carries; past it the
// answer says there are more (the file store lists its keys sorted, so the
// first MaxLogins are always the same ones).
const MaxLogins = 500

// ReasonLoginsNotListable: every principal's logins were asked of a
// token store that cannot list them (Redis: each token is keyed by a
// sealed name); name the principal.
const ReasonLoginsNotListable = "LOGINS_NOT_LISTABLE"

type loginRow struct {
	Principal   string    `json:"principal"`
	Server      string    `json:"server"`
	Expiry      time.Time `json:"expiry,omitzero"`
	Refreshable bool      `json:"refreshable"`
}

type loginsBody struct {
	Logins []loginRow `json:"logins"`
	More   bool       `json:"more"`
	// Principal is whose logins these are ("": every principal's).
	Principal string `json:"principal"`
}

// loginsOf is the logins the caller may see: its own, or for an operator
// principal's ("": everyone's).
func (cs *Console) loginsOf(c *caller, principal string) (loginsBody, *core.Error) {
	if !c.admin {
		if principal != "" && principal != c.p.Name {
			return loginsBody{}, core.NewError(core.PermissionDenied, core.ReasonPermissionDenied,
				fmt.Sprintf("principal %q may see only its own logins; another principal's needs auth.admins", c.p.Name), map[string]string{"principal": c.p.Name})
		}
		principal = c.p.Name
		if principal == "" {
			return loginsBody{Logins: []loginRow{}}, nil // anonymous: nothing stored
		}
	}
	ls, more, err := cs.c.Logins(c.ctx, principal, MaxLogins)
	if errors.Is(err, core.ErrLoginsNotListable) {
		return loginsBody{}, core.NewError(core.FailedPrecondition, ReasonLoginsNotListable,
			"this token store (Redis) cannot list every principal's logins: name the principal", nil)
	}
	if err != nil {
		return loginsBody{}, core.Classify(err, core.ClassifyOptions{})
	}
	out := loginsBody{Logins: make([]loginRow, 0, len(ls)), More: more, Principal: principal}
	for _, l := range ls {
		out.Logins = append(out.Logins, loginRow{Principal: l.Principal, Server: l.Server, Expiry: l.Expiry, Refreshable: l.Refreshable})
	}
	return out, nil
}

func (cs *Console) logins(c *caller, r *http.Request) (any, *core.Error) {
	principal, e := query(r, "principal")
	if e != nil {
		return nil, e
	}
	return cs.loginsOf(c, principal)
}

// logoutRequest names the login to revoke: the server, and the principal
// (default: the caller).
type logoutRequest struct {
	Server    string `json:"server"`
	Principal string `json:"principal"`
}

// loginLogout revokes a login as AdminService's Logout does: the core's
// admin operation OpAdminLogout (the core's admin rule: a principal its
// own, an operator anyone's; the principal's rate limit, one "admin
// action" audit line with "for" when it is another principal's); POST
// with the CSRF token.
func (cs *Console) loginLogout(c *caller, r *http.Request) (any, *core.Error) {
	if e := cs.checkCSRF(c, r); e != nil {
		return nil, e
	}
	var in logoutRequest
	if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, MaxFormBytes)).Decode(&in); err != nil {
		return nil, fieldError("body", "a JSON object {server, principal} of at most 16 KiB")
	}
	if len(in.Server) > MaxQueryBytes {
		return nil, fieldError("server", "longer than 512 bytes")
	}
	if len(in.Principal) > MaxQueryBytes {
		return nil, fieldError("principal", "longer than 512 bytes")
	}
	op, err := cs.c.BeginAdmin(c.ctx, core.OpAdminLogout, in.Server, in.Principal)
	if err == nil {
		err = op.Logout()
	}
	fail := op.Fail(err)
	op.End(fail)
	if fail != nil {
		return nil, fail
	}
	return map[string]string{"server": in.Server, "principal": op.Who()}, nil
}

// loginRequest asks for a login link: the server, and the principal
// (default: the caller; without an auth section, required).
type loginRequest struct {
	Server    string `json:"server"`
	Principal string `json:"principal"`
	Force     bool   `json:"force"`
}

type loginBody struct {
	Server    string `json:"server"`
	Principal string `json:"principal"`
	LoggedIn  bool   `json:"loggedIn"`
	LoginURL  string `json:"loginUrl,omitempty"`
}

// loginStart is AdminService's Login, the flow `toolsvc login` starts: the
// core's admin operation OpAdminLogin (the principal's rate limit, one
// "admin action" audit line), the caller's own login link to a userOAuth
// server, or that it is logged in already. Only the caller's own: a link
// logs in the principal it names as whoever follows it, so an operator's
// for another principal would put the operator's upstream account under
// that principal's name. Without an auth section (a loopback operator)
// the principal is named, as with AdminService. POST with the CSRF token.
func (cs *Console) loginStart(c *caller, r *http.Request) (any, *core.Error) {
	if e := cs.checkCSRF(c, r); e != nil {
		return nil, e
	}
	var in loginRequest
	if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, MaxFormBytes)).Decode(&in); err != nil {
		return nil, fieldError("body", "a JSON object {server, principal, force} of at most 16 KiB")
	}
	if len(in.Server) > MaxQueryBytes {
		return nil, fieldError("server", "longer than 512 bytes")
	}
	if len(in.Principal) > MaxQueryBytes {
		return nil, fieldError("principal", "longer than 512 bytes")
	}
	// The core's admin rule (core.BeginAdmin) refuses a link for another
	// principal when auth is configured, admins included.
	op, err := cs.c.BeginAdmin(c.ctx, core.OpAdminLogin, in.Server, in.Principal)
	var out loginBody
	if err == nil {
		var link string
		link, err = op.Login(in.Force)
		out = loginBody{Server: in.Server, Principal: op.Who(), LoggedIn: link == "", LoginURL: link}
	}
	fail := op.Fail(err)
	op.End(fail)
	if fail != nil {
		return nil, fail
	}
	return out, nil
}
