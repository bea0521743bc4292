package tests

import (
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleLogins: the Logins page against real processes (the
// authorization server, a bearer upstream in mode userOAuth, toolsvc with a
// file token store). alice and bob log in to "up"; alice's page lists her
// login only, and her attempt to log bob out is PERMISSION_DENIED; the
// operator's page lists both, and its Log out button revokes bob's login
// (the core's admin logout): the row goes, and bob's next call asks him to
// log in again while alice's still runs.
func TestConsoleLogins(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Second)
	defer cancel()
	defer http.DefaultClient.CloseIdleConnections()
	asProc := startProcWith(t, exec.Command(helperBinary(t, "authserver"), "-access-ttl", "5m", "-clients", userOAuthClients),
		procOpts{checkExit: true})
	issuer := asProc.log.waitFor(t, urlLineRE, 30*time.Second)
	up := startBearerUpstream(t, issuer, "urn:test:upstream")
	dir := t.TempDir()
	toks := map[string]string{"alice": "static-alice-0123456789", "bob": "static-bob-0123456789", "root": "static-root-0123456789"}
	p := startToolsvc(t, cfg{
		Auth:       &authCfg{Tokens: toks, Admins: []string{"root"}},
		TokenStore: &tokenStoreCfg{File: filepath.Join(dir, "tokens"), KeyFile: storeKeyFile(t, dir)},
		Servers:    servers{"up": userOAuthUp(issuer, up)}})
	for _, who := range []string{"alice", "bob"} {
		_, err := whoamiOn(ctx, p.client, toks[who])
		browserLogin(t, ctx, loginLink(t, err, issuer), who)
		if got, err := whoamiOn(ctx, p.client, toks[who]); err != nil || got["sub"] != who {
			t.Fatalf("%s's call after logging in: %v, %v", who, got, err)
		}
	}
	base := "http://" + p.adminAddr + "/ui/"
	signIn := func(b *browser, who string) {
		b.run(t, "signing in as "+who, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.ID("#token")),
			chromedp.SendKeys(chromedp.ID("#token"), toks[who]), chromedp.Click(chromedp.ID("#signin")))
		b.waitJS(t, who+"'s console", `!!document.getElementById('nav-logins')`)
		// The navigation re-renders once the caller's rights are known (an
		// operator gets more pages): a click on the link it replaced is
		// lost, so click until the Logins page is there.
		b.waitJS(t, who+"'s Logins page", `(document.getElementById('logins') || document.getElementById('nav-logins')?.click(), !!document.getElementById('logins'))`)
	}
	rows := `[...document.querySelectorAll('#logins tbody tr')].map(r => r.dataset.login).join(',')`

	alice := newBrowser(t)
	signIn(alice, "alice")
	alice.waitJS(t, "alice's login listed", `!!document.querySelector('#logins tr[data-login="alice@up"]')`)
	if got := evalJS[string](t, alice, rows); got != "alice@up" {
		t.Errorf("alice's Logins page lists %q, want her own login only", got)
	}
	// Her page's own token cannot revoke bob's login, nor read his.
	refused := evalJS[string](t, alice, `(async () => {
		const me = await (await fetch('/ui/api/me')).json();
		const r = await fetch('/ui/api/logins/logout', {method: 'POST', headers: {'Content-Type': 'application/json', 'X-Toolsvc-CSRF': me.csrf},
			body: JSON.stringify({server: 'up', principal: 'bob'})});
		const l = await fetch('/ui/api/logins?principal=bob');
		return r.status + ' ' + (await r.json()).reason + ', ' + l.status })()`)
	if refused != "403 PERMISSION_DENIED, 403" {
		t.Errorf("alice logging bob out and reading his logins: %s, want 403 PERMISSION_DENIED both", refused)
	}
	alice.noProblems(t)

	root := newBrowser(t)
	signIn(root, "root")
	root.waitJS(t, "both logins listed", `!!document.querySelector('#logins tr[data-login="alice@up"]') && !!document.querySelector('#logins tr[data-login="bob@up"]')`)
	if got := evalJS[string](t, root, rows); got != "alice@up,bob@up" {
		t.Errorf("the operator's Logins page lists %q, want alice@up,bob@up", got)
	}
	root.screenshot(t, "logins")
	root.run(t, "logging bob out", chromedp.Click(chromedp.CSS(`#logins tr[data-login="bob@up"] .logout`)))
	root.waitJS(t, "the logout confirmed", `(document.getElementById('logins-done') || {}).textContent === 'bob is logged out of up'`)
	root.waitJS(t, "bob's row gone", `!document.querySelector('#logins tr[data-login="bob@up"]') && !!document.querySelector('#logins tr[data-login="alice@up"]')`)
	_, err := whoamiOn(ctx, p.client, toks["bob"])
	loginLink(t, err, issuer) // LOGIN_REQUIRED again
	if got, err := whoamiOn(ctx, p.client, toks["alice"]); err != nil || got["sub"] != "alice" {
		t.Errorf("alice's call after bob's logout: %v, %v", got, err)
	}
	alice.waitJS(t, "alice's page still lists her login", `!!document.querySelector('#logins tr[data-login="alice@up"]')`)
	root.noProblems(t)
}
