package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestConsoleTaskSupportAndTTL: the Playground and the task support of a
// 2026-07-28 tasks-extension tool, and a task's lifetime. fastmcp-tasks'
// py__ask (mode "required", listed with no task support) is offered "run
// as task"; called plainly from the Playground, the upstream refuses
// (-32021): the page shows TASK_REQUIRED with its hint and checks the box;
// from then on it is required (the box checked and fixed), and the
// Playground runs it as a task (followed to its question). On the TypeScript SDK's task server, which
// keeps the ttl asked: a bad ttl is refused on the page naming task.ttl
// before anything is sent, and by the core's rule when posted anyway
// (REQUEST_INVALID, task.ttl), a ttl without a task is refused naming
// ttlMs; 30 s runs tsh__slow as a task the upstream keeps 30 s (the
// followed task says so, and GetTask over gRPC).
func TestConsoleTaskSupportAndTTL(t *testing.T) {
	t.Parallel()
	all := taskServers(t)
	p := startToolsvc(t, cfg{Auth: taskAuth(), Servers: servers{"tsh": all["tsh"], "py": all["py"]}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	ann := as(ctx, annTasks)

	b := newBrowser(t)
	b.run(t, "signing in as ann", chromedp.Navigate("http://"+p.adminAddr+"/ui/#/upstreams"), chromedp.WaitVisible(chromedp.ID("#token")),
		chromedp.SendKeys(chromedp.ID("#token"), annTasks), chromedp.Click(chromedp.ID("#signin")))
	b.waitJS(t, "the console", `!!document.getElementById('nav-tasks')`)
	openTool := func(tool string) {
		t.Helper()
		evalJS[bool](t, b, `(location.hash = '#/upstreams', true)`)
		b.waitJS(t, "the Upstreams page", `!!document.getElementById('page-upstreams')`)
		evalJS[bool](t, b, fmt.Sprintf(`(location.hash = '#/playground?tool=%s', true)`, tool))
		b.waitJS(t, tool+"'s form", `!!document.getElementById('play-call') && document.querySelector('#play-form b').textContent === '`+tool+`'`)
	}
	box := func() string {
		return evalJS[string](t, b, `(() => { const c = document.getElementById('play-as-task');
			return c ? (c.checked ? 'checked' : 'unchecked') + (c.disabled ? ' fixed' : '') : 'none'; })()`)
	}

	// Listed with no word on tasks: offered, not forced.
	openTool("py__ask")
	if got := box(); got != "unchecked" {
		t.Errorf("py__ask's run as task before any refusal: %s, want unchecked (optional)", got)
	}
	// Called plainly from the Playground, the upstream refuses: the page
	// shows TASK_REQUIRED with its hint, and checks "run as task". Then
	// the tool requires a task.
	b.run(t, "calling py__ask plainly", chromedp.Click(chromedp.ID("#play-call")))
	b.waitJS(t, "TASK_REQUIRED and its hint", `(document.getElementById('play-error') || {}).textContent?.includes('TASK_REQUIRED') &&
		(document.getElementById('play-hint') || {}).textContent?.includes('runs only as a task')`)
	if got := box(); got != "checked" {
		t.Errorf("py__ask's run as task after TASK_REQUIRED: %s, want checked", got)
	}
	eventually(t, 30*time.Second, "py__ask listed as requiring a task", func() bool {
		return taskSupportOf(t, ann, p.client)["py__ask"] == "required"
	})
	openTool("py__ask")
	if got := box(); got != "checked fixed" {
		t.Errorf("py__ask's run as task after the refusal: %s, want checked fixed (required)", got)
	}
	b.run(t, "calling py__ask", chromedp.Click(chromedp.ID("#play-call")))
	b.waitJS(t, "py__ask run as a task, asking", `(document.getElementById('task-follow') || {dataset: {}}).dataset.status === 'input_required' &&
		(document.querySelector('#task-input .elicit-message') || {}).textContent === 'Your name?'`)

	// A task's lifetime.
	openTool("tsh__slow")
	b.run(t, "asking a task", chromedp.Click(chromedp.ID("#play-as-task")))
	b.waitJS(t, "the ttl field", `!!document.getElementById('play-task-ttl')`)
	// setTTL types v into the ttl field (as one input event: the page's
	// state follows it).
	setTTL := func(v string) {
		t.Helper()
		evalJS[bool](t, b, fmt.Sprintf(`(() => { const el = document.getElementById('play-task-ttl');
			el.value = %q; el.dispatchEvent(new Event('input', {bubbles: true})); return true; })()`, v))
	}
	for _, bad := range []string{"0", "-5", "soon", "31536001"} {
		setTTL(bad)
		b.run(t, "a bad ttl "+bad, chromedp.Click(chromedp.ID("#play-call")))
		b.waitJS(t, "ttl "+bad+" refused on the page", `document.getElementById('play-task-ttl').value === `+fmt.Sprintf("%q", bad)+` &&
			/^task\.ttl: must be from/.test((document.getElementById('play-task-ttl-problem') || {}).textContent || '')`)
		if evalJS[bool](t, b, `!!document.getElementById('task-follow')`) {
			t.Errorf("ttl %s: a task was started", bad)
		}
	}
	if n := len(listTasks(t, ann, p.client)); n != 1 {
		t.Errorf("tasks after the refused ttls: %d, want 1 (py__ask's)", n)
	}
	var refusals map[string]string
	evalInto(t, b, `(async () => {
		const csrf = (await (await fetch('/ui/api/me')).json()).csrf;
		const post = (body) => fetch('/ui/api/call/stream', {method: 'POST',
			headers: {'Content-Type': 'application/json', 'X-Toolsvc-CSRF': csrf}, body: JSON.stringify(body)});
		const reason = async (r) => { const b = await r.json(); return r.status + ' ' + b.reason + (b.fields ? ' ' + b.fields[0].field : '') };
		return {
			zero: await reason(await post({name: 'tsh__slow', arguments: {ms: 10}, task: true, ttlMs: 0})),
			tooLong: await reason(await post({name: 'tsh__slow', arguments: {ms: 10}, task: true, ttlMs: 1e300})),
			noTask: await reason(await post({name: 'tsh__slow', arguments: {ms: 10}, ttlMs: 30000})),
		};
	})()`, &refusals)
	want := map[string]string{"zero": "400 REQUEST_INVALID task.ttl", "tooLong": "400 REQUEST_INVALID task.ttl", "noTask": "400 REQUEST_INVALID ttlMs"}
	for k, w := range want {
		if refusals[k] != w {
			t.Errorf("%s: %q, want %q", k, refusals[k], w)
		}
	}

	setTTL("30")
	b.run(t, "a 30 s task", chromedp.SendKeys(chromedp.ID("#arg-ms"), "60000"), chromedp.Click(chromedp.ID("#play-call")))
	b.waitJS(t, "the task followed, kept 30 s", `(document.getElementById('task-follow') || {dataset: {}}).dataset.status === 'working' &&
		(document.getElementById('task-ttl') || {}).textContent === ' · kept 30 s'`)
	b.screenshot(t, "playground-task-ttl")
	var id string
	evalInto(t, b, `document.querySelector('#task-follow h3 .muted').textContent.split(' · ')[1]`, &id)
	var got *toolsvcv1.Task
	for _, tk := range listTasks(t, ann, p.client) {
		if tk.GetTaskId() == id {
			got = tk
		}
	}
	if got == nil || got.GetTtl().AsDuration() != 30*time.Second {
		t.Errorf("the Playground's task %s over gRPC: %v; want ttl 30s", id, got)
	}
	b.run(t, "cancelling it", chromedp.Click(chromedp.ID("#task-cancel")))
	b.waitJS(t, "the task cancelled", `(document.getElementById('task-follow') || {dataset: {}}).dataset.status === 'cancelled'`)
}

// listTasks is the caller's tasks over gRPC.
func listTasks(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient) []*toolsvcv1.Task {
	t.Helper()
	res, err := c.ListTasks(ctx, &toolsvcv1.ListTasksRequest{})
	if err != nil {
		t.Fatalf("ListTasks: %v", err)
	}
	return res.GetTasks()
}
