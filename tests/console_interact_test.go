package tests

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsolePlaygroundInteractive: the Playground streams a call through
// the core's interactive call path (POST /ui/api/call/stream): a real
// upstream's progress shows as a bar, its log line as text, and the form
// it asks (text, number, boolean, choice) is rendered from the requested
// schema, checked before it is sent, answered in the browser, and the
// result appears. Both eras: relayed (2026-07-28, the state travels with
// the page) and parked (2025-11-25, the upstream waits mid-call). A
// sampling request is shown with its messages and answered by the
// operator. Every string the upstream sent (the message, the log line)
// renders as text.
func TestConsolePlaygroundInteractive(t *testing.T) {
	t.Parallel()
	p := startToolsvc(t, cfg{Servers: servers{
		"r": upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}, ProtocolVersion: "2026-07-28"},
		"k": upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}},
	}})
	b := newBrowser(t)
	base := "http://" + p.adminAddr + "/ui/"
	b.run(t, "loading the console", chromedp.Navigate(base))
	b.waitJS(t, "the console", `!!document.getElementById('nav-playground')`)

	for _, server := range []string{"r", "k"} {
		tool := server + "__ask_order"
		// Through another page, so the Playground mounts afresh.
		evalJS[bool](t, b, `(location.hash = '#/upstreams', true)`)
		b.waitJS(t, "the Upstreams page", `!!document.getElementById('page-upstreams')`)
		evalJS[bool](t, b, fmt.Sprintf(`(location.hash = '#/playground?tool=%s', true)`, tool))
		b.waitJS(t, tool+"'s form", `!!document.getElementById('play-call') && document.querySelector('#play-form b').textContent === '`+tool+`'`)
		b.run(t, "calling "+tool, chromedp.Click(chromedp.ID("#play-call")))
		b.waitJS(t, tool+": the elicitation form", `!!document.getElementById('elicit-form')`)
		var msg string
		evalInto(t, b, `document.querySelector('#elicit-form .elicit-message').textContent`, &msg)
		if want := "What would you like? <i>(not markup)</i>"; msg != want {
			t.Errorf("%s: the elicitation's message shown as %q, want %q", tool, msg, want)
		}
		// The log line and the progress came before the question (the
		// tool lets its last progress settle before it asks: one the
		// bridge handled after the round's result would be dropped).
		b.waitJS(t, tool+": the log line", `[...document.querySelectorAll('#play-log .log-line')].some(e =>
			e.querySelector('.log-data').textContent === 'stock checked: <b>all</b> in store' && e.querySelector('.log-level').textContent === 'info')`)
		if server == "r" {
			b.waitJS(t, tool+": progress 2 of 3", `(() => { const p = document.querySelector('#play-progress progress');
				return p && Math.round(p.value) === 67 && document.querySelector('#play-progress .progress-message').textContent.trim() === 'waiting for the order' })()`)
		}
		var markup int
		evalInto(t, b, `document.querySelectorAll('#play-log b, #elicit-form i, .elicit-message *').length`, &markup)
		if markup != 0 {
			t.Errorf("%s: the upstream's text became markup (%d elements)", tool, markup)
		}
		// Labels come from the schema's titles; every kind has its input.
		var kinds map[string]string
		evalInto(t, b, `({item: document.getElementById('elicit-item').type, count: document.getElementById('elicit-count').getAttribute('inputmode'),
			gift: document.getElementById('elicit-gift').type, size: document.getElementById('elicit-size').tagName})`, &kinds)
		if kinds["item"] != "text" || kinds["count"] != "decimal" || kinds["gift"] != "checkbox" || kinds["size"] != "SELECT" {
			t.Errorf("%s: the form's inputs = %v", tool, kinds)
		}
		// A required field left empty is named before anything is sent.
		b.run(t, tool+": sending without a count", chromedp.SendKeys(chromedp.ID("#elicit-item"), "tea"), chromedp.Click(chromedp.ID("#elicit-accept")))
		b.waitJS(t, tool+": count named", `(document.querySelector('#elicit-form .field-problem[data-field="count"]') || {}).textContent === 'required'`)
		b.run(t, tool+": answering", chromedp.SendKeys(chromedp.ID("#elicit-count"), "2"), chromedp.Click(chromedp.ID("#elicit-gift")))
		evalJS[bool](t, b, `(() => { const s = document.getElementById('elicit-size'); s.value = 'large';
			s.dispatchEvent(new Event('change', {bubbles: true})); return true })()`)
		b.run(t, tool+": sending the answer", chromedp.Click(chromedp.ID("#elicit-accept")))
		b.waitJS(t, tool+": the result", `(document.querySelector('#play-result .result-text') || {}).textContent === 'ordered 2 tea (gift=true, size=large)'`)
		if server == "r" {
			b.screenshot(t, "playground-interactive")
		}
		if gone := evalJS[bool](t, b, `!document.getElementById('elicit-form')`); !gone {
			t.Errorf("%s: the elicitation form is still shown after the result", tool)
		}
	}

	// Sampling: the request's messages shown, the operator's reply sent.
	evalJS[bool](t, b, `(location.hash = '#/upstreams', true)`)
	b.waitJS(t, "the Upstreams page", `!!document.getElementById('page-upstreams')`)
	evalJS[bool](t, b, `(location.hash = '#/playground?tool=r__ask_model', true)`)
	b.waitJS(t, "ask_model's form", `!!document.getElementById('play-call') && document.querySelector('#play-form b').textContent === 'r__ask_model'`)
	b.run(t, "calling ask_model", chromedp.Click(chromedp.ID("#play-call")))
	b.waitJS(t, "the sampling request", `(document.getElementById('sampling-messages') || {}).textContent === 'user: Say hi\n(at most 20 tokens)'`)
	b.run(t, "answering as the model", chromedp.SendKeys(chromedp.ID("#sampling-reply"), "hi there"), chromedp.Click(chromedp.ID("#sampling-answer")))
	b.waitJS(t, "the sampled result", `(document.querySelector('#play-result .result-text') || {}).textContent === 'model=hi there'`)
	b.noProblems(t)
}

// TestConsolePlaygroundURLAndRoots: what the Playground did not answer
// before, against the Go test upstream in both eras (relayed 2026-07-28,
// parked 2025-11-25). A URL elicitation shows its message and URL as text
// with the host it goes to — no link element, markup inert — and Open only
// for an http(s) URL; the operator's Accept or Decline reaches the tool. A
// roots request takes the operator's roots, one file: URI a line, checked
// before they are sent, and the tool lists them.
func TestConsolePlaygroundURLAndRoots(t *testing.T) {
	t.Parallel()
	p := startToolsvc(t, cfg{Servers: servers{
		"r": upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}, ProtocolVersion: "2026-07-28"},
		"k": upstream{Command: bin.testserver, Args: []string{"-mode", "stdio", "-interactive"}},
	}})
	b := newBrowser(t)
	b.run(t, "loading the console", chromedp.Navigate("http://"+p.adminAddr+"/ui/"))
	b.waitJS(t, "the console", `!!document.getElementById('nav-playground')`)
	open := func(tool string) {
		t.Helper()
		// Through another page, so the Playground mounts afresh.
		evalJS[bool](t, b, `(location.hash = '#/upstreams', true)`)
		b.waitJS(t, "the Upstreams page", `!!document.getElementById('page-upstreams')`)
		evalJS[bool](t, b, fmt.Sprintf(`(location.hash = '#/playground?tool=%s', true)`, tool))
		b.waitJS(t, tool+"'s form", `!!document.getElementById('play-call') && document.querySelector('#play-form b').textContent === '`+tool+`'`)
	}
	result := func(tool, want string) {
		t.Helper()
		b.waitJS(t, tool+": the result "+want, fmt.Sprintf(`(document.querySelector('#play-result .result-text') || {}).textContent === %q`, want))
	}
	const msg = `<img src=x onerror="window.__pwned=1">Log in at <a href="https://evil.example/">the bank</a>`
	for _, server := range []string{"r", "k"} {
		tool := server + "__ask_url_given"
		for _, c := range []struct{ url, host, action string }{
			{"https://login.example/authorize?x=1&next=<b>y</b>", "login.example", "accept"},
			{"javascript:window.__pwned=1", "", "decline"},
		} {
			open(tool)
			b.run(t, tool+": calling with "+c.url, chromedp.SendKeys(chromedp.ID("#arg-url"), c.url),
				chromedp.SendKeys(chromedp.ID("#arg-message"), msg), chromedp.Click(chromedp.ID("#play-call")))
			b.waitJS(t, tool+": the URL request", `!!document.getElementById('url-request')`)
			var shown struct {
				Message, URL, Host string
				Open               bool
				Markup             int
			}
			evalInto(t, b, `({message: document.querySelector('#url-request .elicit-message').textContent, url: document.getElementById('url-text').textContent,
				host: document.getElementById('url-host').textContent, open: !!document.getElementById('url-open'),
				markup: document.querySelectorAll('#url-request a, #url-request img, #url-request b:not(#url-host)').length})`, &shown)
			if shown.Message != msg || shown.URL != c.url || shown.Markup != 0 {
				t.Errorf("%s: the request shows message %q, URL %q, %d elements from its text; want both as text", tool, shown.Message, shown.URL, shown.Markup)
			}
			if wantOpen := c.host != ""; shown.Open != wantOpen || (wantOpen && shown.Host != c.host) {
				t.Errorf("%s %s: Open offered %v, host %q; want %v, %q", tool, c.url, shown.Open, shown.Host, wantOpen, c.host)
			}
			if server == "r" && c.action == "accept" {
				b.screenshot(t, "playground-url")
			}
			b.run(t, tool+": "+c.action, chromedp.Click(chromedp.ID("#url-"+c.action)))
			result(tool, "url "+c.action)
		}

		tool = server + "__ask_roots"
		open(tool)
		b.run(t, tool+": calling", chromedp.Click(chromedp.ID("#play-call")))
		b.waitJS(t, tool+": the roots form", `!!document.getElementById('roots-form')`)
		b.run(t, tool+": a root that is not a file: URI", chromedp.SendKeys(chromedp.ID("#roots-list"), "file:///srv/data\nhttps://x.example/"),
			chromedp.Click(chromedp.ID("#roots-answer")))
		b.waitJS(t, tool+": line 2 named", `(document.querySelector('#roots-form .field-problem[data-field="roots"]') || {}).textContent.startsWith('line 2:')`)
		evalJS[bool](t, b, `(() => { const e = document.getElementById('roots-list'); e.value = 'file:///srv/data\nfile:///home/op';
			e.dispatchEvent(new Event('input', {bubbles: true})); return true })()`)
		b.run(t, tool+": sending the roots", chromedp.Click(chromedp.ID("#roots-answer")))
		result(tool, "roots=file:///srv/data,file:///home/op")
	}
	if pwned := evalJS[bool](t, b, `!!window.__pwned`); pwned {
		t.Error("the upstream's text ran script in the console")
	}
	b.noProblems(t)
}
