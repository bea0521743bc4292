package tests

import (
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
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

// TestConsoleLoginLink: the Logins page starts a login for its own
// principal (the core's OpAdminLogin, as AdminService's Login and `toolsvc
// login`). carol's page offers "up", gets her link and shows it as text
// (no link element: it opens only with the Open button); her login
// through the real authorization server then appears on her page, and her
// call runs as her. Her page cannot ask for dave's link (a link logs in the
// principal it names as whoever follows it) nor ask without the CSRF
// token; dave stays logged out.
func TestConsoleLoginLink(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Second)
	defer cancel()
	defer http.DefaultClient.CloseIdleConnections()
	asProc := startProcWith(t, exec.Command(helperBinary(t, "authserver"), "-access-ttl", "5m", "-clients", userOAuthClients),
		procOpts{checkExit: true})
	issuer := asProc.log.waitFor(t, urlLineRE, 30*time.Second)
	up := startBearerUpstream(t, issuer, "urn:test:upstream")
	dir := t.TempDir()
	toks := map[string]string{"carol": "static-carol-0123456789", "dave": "static-dave-0123456789"}
	p := startToolsvc(t, cfg{
		Auth:       &authCfg{Tokens: toks},
		TokenStore: &tokenStoreCfg{File: filepath.Join(dir, "tokens"), KeyFile: storeKeyFile(t, dir)},
		Servers:    servers{"up": userOAuthUp(issuer, up)}})

	b := newBrowser(t)
	b.run(t, "signing in as carol", chromedp.Navigate("http://"+p.adminAddr+"/ui/"), chromedp.WaitVisible(chromedp.ID("#token")),
		chromedp.SendKeys(chromedp.ID("#token"), toks["carol"]), chromedp.Click(chromedp.ID("#signin")))
	b.waitJS(t, "carol's console", `!!document.getElementById('nav-logins')`)
	b.waitJS(t, "carol's Logins page", `(document.getElementById('logins-none') || document.getElementById('nav-logins')?.click(), !!document.getElementById('logins-none'))`)
	b.waitJS(t, "up offered for a login", `[...document.querySelectorAll('#login-server option')].some(o => o.value === 'up')`)

	refused := evalJS[string](t, b, `(async () => {
		const me = await (await fetch('/ui/api/me')).json();
		const post = (h, body) => fetch('/ui/api/logins/login', {method: 'POST', headers: {'Content-Type': 'application/json', ...h}, body: JSON.stringify(body)})
			.then(async r => r.status + ' ' + (await r.json()).reason);
		return [await post({'X-Toolsvc-CSRF': me.csrf}, {server: 'up', principal: 'dave'}), await post({}, {server: 'up'}),
			await post({'X-Toolsvc-CSRF': me.csrf}, {server: ''})].join(', ') })()`)
	if refused != "403 PERMISSION_DENIED, 403 CSRF_REFUSED, 400 REQUEST_INVALID" {
		t.Errorf("carol asking for dave's link, without the CSRF token, without a server: %s; want 403 PERMISSION_DENIED, 403 CSRF_REFUSED, 400 REQUEST_INVALID", refused)
	}

	b.run(t, "asking for a login link", chromedp.SetValue(chromedp.ID("#login-server"), "up"), chromedp.Click(chromedp.ID("#login-start")))
	b.waitJS(t, "the link shown", `!!document.getElementById('login-link') && !!document.getElementById('login-open')`)
	link := evalJS[string](t, b, `document.getElementById('login-link').textContent`)
	if !strings.HasPrefix(link, issuer+"/") {
		t.Fatalf("the page's login link %q is not the authorization server's (%s)", link, issuer)
	}
	if n := evalJS[int](t, b, `document.querySelectorAll('#login-section a').length`); n != 0 {
		t.Errorf("the login section has %d link elements; the link must be text, opened by the button only", n)
	}
	b.screenshot(t, "logins-link")
	browserLogin(t, ctx, link, "carol")
	b.waitJS(t, "carol's login listed", `!!document.querySelector('#logins tr[data-login="carol@up"]')`)
	if got, err := whoamiOn(ctx, p.client, toks["carol"]); err != nil || got["sub"] != "carol" {
		t.Errorf("carol's call after logging in from the console: %v, %v", got, err)
	}
	_, err := whoamiOn(ctx, p.client, toks["dave"])
	loginLink(t, err, issuer) // dave: LOGIN_REQUIRED still
	b.noProblems(t)
}
