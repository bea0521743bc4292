package tests

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleEffectiveConfig: the Config page shows the running
// configuration with every secret as "[redacted]". The file holds an auth
// token, an upstream's environment value and header value given
// literally, and both again through a secret reference (${VAR}); none of
// them appears in the page's HTML, in its data endpoint or in the status
// endpoint, while what runs (the servers, the header and variable names)
// does. A principal who is not an operator is refused the data.
func TestConsoleEffectiveConfig(t *testing.T) {
	t.Parallel()
	const opsTok, aliceTok = "ops-config-token-0001", "alice-config-token-0006"
	secrets := []string{opsTok, aliceTok, "env-literal-secret-0002", "header-literal-secret-0003", "ref-secret-0005"}
	h := newHTTPUpstream(t)
	p := startToolsvcEnv(t, cfg{
		Auth: &authCfg{Tokens: map[string]string{"ops": opsTok, "alice": aliceTok}, Admins: []string{"ops"}},
		Servers: servers{
			"s": goStdio(upstream{Env: map[string]string{"API_KEY": "env-literal-secret-0002", "REF_KEY": "${TEST_CONSOLE_REF}"}}),
			"h": goHTTP(h.url(), upstream{Headers: map[string]string{"X-Api-Key": "header-literal-secret-0003", "X-Ref": "v=${TEST_CONSOLE_REF}"}}),
		}}, []string{"TEST_CONSOLE_REF=ref-secret-0005"})
	base := "http://" + p.adminAddr + "/ui/"

	b := newBrowser(t)
	b.run(t, "signing in as ops", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.ID("#token")),
		chromedp.SendKeys(chromedp.ID("#token"), opsTok), chromedp.Click(chromedp.ID("#signin")))
	b.waitJS(t, "the console", `!!document.getElementById('nav-config')`)
	b.run(t, "opening Config", chromedp.Click(chromedp.ID("#nav-config")))
	b.waitJS(t, "the effective configuration", `(document.getElementById('config-effective') || {textContent: ''}).textContent.includes('X-Api-Key')`)
	b.screenshot(t, "config-effective")
	page := evalJS[string](t, b, `document.documentElement.outerHTML`)
	data := evalJS[string](t, b, `fetch('/ui/api/config/effective').then(r => r.text())`)
	status := evalJS[string](t, b, `fetch('/ui/api/config').then(r => r.text())`)
	for what, text := range map[string]string{"the page's HTML": page, "/ui/api/config/effective": data, "/ui/api/config": status} {
		for _, sec := range secrets {
			if strings.Contains(text, sec) {
				t.Errorf("%s holds the secret %q", what, sec)
			}
		}
	}
	for _, want := range []string{`"API_KEY":"[redacted]"`, `"REF_KEY":"[redacted]"`, `"X-Api-Key":"[redacted]"`, `"X-Ref":"[redacted]"`,
		`"ops":"[redacted]"`, `"Admins":["ops"]`, `"Name":"s"`, `"URL":"` + h.url() + `"`} {
		if !strings.Contains(data, want) {
			t.Errorf("/ui/api/config/effective lacks %s:\n%s", want, data)
		}
	}
	b.noProblems(t)

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"api/config/effective", nil)
	req.Header.Set("Authorization", "Bearer "+aliceTok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "PERMISSION_DENIED") {
		t.Errorf("alice reading the configuration: %s %s, want 403 PERMISSION_DENIED", resp.Status, body)
	}
}
