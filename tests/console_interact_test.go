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
