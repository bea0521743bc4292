package tests

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// TestConsoleTaskFollow: the Playground runs a task-capable tool of a real
// TypeScript SDK task server as a task and follows it (its status live,
// the result rendered like a call's), cancels a long one (the upstream's
// task is cancelled: GetTask over gRPC says so); the Tasks page opens a
// task to its result and cancels another; the page's task operations go
// through the core's (a handle of another principal's task is refused,
// a cancel without the CSRF token too, a missing or over-long handle named).
func TestConsoleTaskFollow(t *testing.T) {
	t.Parallel()
	all := taskServers(t)
	p := startToolsvc(t, cfg{Auth: taskAuth(), Servers: servers{"tsh": all["tsh"]}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	bobTask := startTask(t, as(ctx, bobTasks), p.client, "tsh__slow", `{"ms": 60000}`)

	b := newBrowser(t)
	b.run(t, "signing in as ann", chromedp.Navigate("http://"+p.adminAddr+"/ui/#/tasks"), chromedp.WaitVisible(chromedp.ID("#token")),
		chromedp.SendKeys(chromedp.ID("#token"), annTasks), chromedp.Click(chromedp.ID("#signin")))
	b.waitJS(t, "the console", `!!document.getElementById('nav-tasks')`)

	openTool := func(tool string) {
		t.Helper()
		evalJS[bool](t, b, `(location.hash = '#/upstreams', true)`)
		b.waitJS(t, "the Upstreams page", `!!document.getElementById('page-upstreams')`)
		evalJS[bool](t, b, fmt.Sprintf(`(location.hash = '#/playground?tool=%s', true)`, tool))
		b.waitJS(t, tool+"'s form", `!!document.getElementById('play-call') && document.querySelector('#play-form b').textContent === '`+tool+`'`)
	}
	// A tool without task support offers no task.
	openTool("tsh__echo")
	if has := evalJS[bool](t, b, `!!document.getElementById('play-as-task')`); has {
		t.Errorf("tsh__echo (no task support) offers to run as a task")
	}

	// Run as a task: followed to its result.
	openTool("tsh__slow")
	b.run(t, "calling slow as a task", chromedp.SendKeys(chromedp.ID("#arg-ms"), "300"),
		chromedp.Click(chromedp.ID("#play-as-task")), chromedp.Click(chromedp.ID("#play-call")))
	b.waitJS(t, "the task followed to completed", `(document.getElementById('task-follow') || {dataset: {}}).dataset.status === 'completed'`)
	b.waitJS(t, "the task's result", `(document.querySelector('#task-result .result-text') || {}).textContent === 'slept 300'`)
	if shown := evalJS[bool](t, b, `!!document.getElementById('play-result')`); shown {
		t.Errorf("a task call showed a call result besides the task's")
	}
	var firstID string
	evalInto(t, b, `document.querySelector('#task-follow h3 .muted').textContent.split(' · ')[1]`, &firstID)

	// A long one, cancelled from the Playground.
	openTool("tsh__slow")
	b.run(t, "calling slow (60 s) as a task", chromedp.SendKeys(chromedp.ID("#arg-ms"), "60000"),
		chromedp.Click(chromedp.ID("#play-as-task")), chromedp.Click(chromedp.ID("#play-call")))
	b.waitJS(t, "the task working", `(document.getElementById('task-follow') || {dataset: {}}).dataset.status === 'working'`)
	b.screenshot(t, "playground-task")
	var longID string
	evalInto(t, b, `document.querySelector('#task-follow h3 .muted').textContent.split(' · ')[1]`, &longID)
	b.run(t, "cancelling it", chromedp.Click(chromedp.ID("#task-cancel")))
	b.waitJS(t, "the task cancelled", `(document.getElementById('task-follow') || {dataset: {}}).dataset.status === 'cancelled'`)
	if has := evalJS[bool](t, b, `!!document.getElementById('task-cancel')`); has {
		t.Errorf("a cancelled task still offers Cancel")
	}

	// The Tasks page: the first task opened to its result; another
	// (started over gRPC) cancelled from there.
	third := startTask(t, as(ctx, annTasks), p.client, "tsh__slow", `{"ms": 60000}`)
	b.run(t, "opening Tasks", chromedp.Click(chromedp.ID("#nav-tasks")))
	row := func(id string) string { return fmt.Sprintf(`document.querySelector('#tasks tr[data-task=%q]')`, id) }
	b.waitJS(t, "the three tasks listed", row(firstID)+` && `+row(longID)+` && `+row(third.GetTaskId()))
	evalJS[bool](t, b, `(`+row(firstID)+`.querySelector('.task-open').click(), true)`)
	b.waitJS(t, "the first task's result", `(document.querySelector('#task-follow #task-result .result-text') || {}).textContent === 'slept 300'`)
	evalJS[bool](t, b, `(`+row(third.GetTaskId())+`.querySelector('.task-open').click(), true)`)
	b.waitJS(t, "the third task working", `(document.getElementById('task-follow') || {dataset: {}}).dataset.status === 'working' && !!document.getElementById('task-cancel')`)
	b.screenshot(t, "tasks-follow")
	b.run(t, "cancelling the third", chromedp.Click(chromedp.ID("#task-cancel")))
	b.waitJS(t, "the third cancelled", `(document.getElementById('task-follow') || {dataset: {}}).dataset.status === 'cancelled'`)
	b.waitJS(t, "the list says cancelled", `(`+row(third.GetTaskId())+` || {dataset: {}}).dataset.status === 'cancelled'`)
	// The upstream's task is cancelled, not only the page's view of it.
	for _, h := range []string{third.GetHandle()} {
		got, err := p.client.GetTask(as(ctx, annTasks), &toolsvcv1.GetTaskRequest{Handle: h})
		if err != nil || got.GetTask().GetStatus() != toolsvcv1.TaskStatus_TASK_STATUS_CANCELLED {
			t.Errorf("GetTask after the console's cancel = %v, %v; want cancelled", got.GetTask().GetStatus(), err)
		}
	}

	// Refusals, from the page's own session: another principal's handle,
	// no handle, a cancel without the CSRF token.
	var refusals map[string]string
	evalInto(t, b, fmt.Sprintf(`(async () => {
		const csrf = (await (await fetch('/ui/api/me')).json()).csrf;
		const post = (body, withCSRF) => fetch('/ui/api/tasks/cancel', {method: 'POST',
			headers: withCSRF ? {'Content-Type': 'application/json', 'X-Toolsvc-CSRF': csrf} : {'Content-Type': 'application/json'},
			body: JSON.stringify(body)});
		const reason = async (r) => r.status + ' ' + (await r.json()).reason;
		return {
			watchBob: await reason(await fetch('/ui/api/tasks/watch?handle=' + encodeURIComponent(%[1]q))),
			cancelBob: await reason(await post({handle: %[1]q}, true)),
			noHandle: await reason(await fetch('/ui/api/tasks/watch')),
			longHandle: await reason(await post({handle: 'x'.repeat(5000)}, true)),
			noCSRF: await reason(await post({handle: %[1]q}, false)),
		};
	})()`, bobTask.GetHandle()), &refusals)
	want := map[string]string{"watchBob": "403 TASK_NOT_YOURS", "cancelBob": "403 TASK_NOT_YOURS",
		"noHandle": "400 REQUEST_INVALID", "longHandle": "400 REQUEST_INVALID", "noCSRF": "403 CSRF_REFUSED"}
	for k, w := range want {
		if refusals[k] != w {
			t.Errorf("%s: %q, want %q", k, refusals[k], w)
		}
	}
	bob, err := p.client.GetTask(as(ctx, bobTasks), &toolsvcv1.GetTaskRequest{Handle: bobTask.GetHandle()})
	if err != nil || bob.GetTask().GetStatus() != toolsvcv1.TaskStatus_TASK_STATUS_WORKING {
		t.Errorf("bob's task after ann's refused cancel = %v, %v; want working", bob.GetTask().GetStatus(), err)
	}
	b.noProblems(t)
}

// TestConsoleTaskInput: a 2026-07-28 task that asks (the Python SDK's task
// server, fastmcp-tasks: py__ask, input_required with one form
// elicitation) is answered from the console: ann's task, opened on her
// Tasks page, shows its question as a form in the follow view; her answer
// goes through the core's UpdateTask and the task completes with it. Her
// page cannot answer bob's task (TASK_NOT_YOURS: his still waits), nor
// answer without the CSRF token; a bad answer is refused naming its field.
func TestConsoleTaskInput(t *testing.T) {
	t.Parallel()
	all := taskServers(t)
	p := startToolsvc(t, cfg{Auth: taskAuth(), Servers: servers{"py": all["py"]}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	bobTask := startTask(t, as(ctx, bobTasks), p.client, "py__ask", `{}`)
	annTask := startTask(t, as(ctx, annTasks), p.client, "py__ask", `{}`)

	b := newBrowser(t)
	b.run(t, "signing in as ann", chromedp.Navigate("http://"+p.adminAddr+"/ui/#/tasks"), chromedp.WaitVisible(chromedp.ID("#token")),
		chromedp.SendKeys(chromedp.ID("#token"), annTasks), chromedp.Click(chromedp.ID("#signin")))
	b.waitJS(t, "the console", `!!document.getElementById('nav-tasks')`)
	row := fmt.Sprintf(`document.querySelector('#tasks tr[data-task=%q]')`, annTask.GetTaskId())
	// Click until the Tasks page is there (the navigation re-renders once
	// the caller's rights are known).
	b.waitJS(t, "ann's task listed", `(`+row+` || document.getElementById('nav-tasks')?.click(), !!`+row+`)`)
	evalJS[bool](t, b, `(`+row+`.querySelector('.task-open').click(), true)`)
	b.waitJS(t, "the task asking", `(document.getElementById('task-follow') || {dataset: {}}).dataset.status === 'input_required' &&
		!!document.querySelector('#task-input #elicit-form')`)
	if msg := evalJS[string](t, b, `document.querySelector('#task-input .elicit-message').textContent`); msg != "Your name?" {
		t.Errorf("the task's question shown as %q, want %q", msg, "Your name?")
	}

	var refusals map[string]string
	evalInto(t, b, fmt.Sprintf(`(async () => {
		const csrf = (await (await fetch('/ui/api/me')).json()).csrf;
		const post = (body, withCSRF) => fetch('/ui/api/tasks/answer', {method: 'POST',
			headers: withCSRF ? {'Content-Type': 'application/json', 'X-Toolsvc-CSRF': csrf} : {'Content-Type': 'application/json'},
			body: JSON.stringify(body)});
		const reason = async (r) => { const b = await r.json(); return r.status + ' ' + b.reason + (b.fields ? ' ' + b.fields[0].field : '') };
		const mallory = {name: {elicitation: {action: 'accept', content: {name: 'Mallory'}}}};
		return {
			bob: await reason(await post({handle: %q, responses: mallory}, true)),
			noCSRF: await reason(await post({handle: %[2]q, responses: mallory}, false)),
			badAction: await reason(await post({handle: %[2]q, responses: {name: {elicitation: {action: 'maybe'}}}}, true)),
			none: await reason(await post({handle: %[2]q, responses: {}}, true)),
		};
	})()`, bobTask.GetHandle(), annTask.GetHandle()), &refusals)
	want := map[string]string{"bob": "403 TASK_NOT_YOURS", "noCSRF": "403 CSRF_REFUSED",
		"badAction": `400 REQUEST_INVALID responses["name"].elicitation.action`, "none": "400 REQUEST_INVALID responses"}
	for k, w := range want {
		if refusals[k] != w {
			t.Errorf("%s: %q, want %q", k, refusals[k], w)
		}
	}

	b.screenshot(t, "task-input")
	b.run(t, "answering", chromedp.SendKeys(chromedp.ID("#elicit-name"), "Ada"), chromedp.Click(chromedp.ID("#elicit-accept")))
	b.waitJS(t, "the task completed with the answer", `(document.getElementById('task-follow') || {dataset: {}}).dataset.status === 'completed' &&
		(document.querySelector('#task-result .result-text') || {}).textContent === 'hello Ada'`)
	bob, err := p.client.GetTask(as(ctx, bobTasks), &toolsvcv1.GetTaskRequest{Handle: bobTask.GetHandle()})
	if err != nil || bob.GetTask().GetStatus() != toolsvcv1.TaskStatus_TASK_STATUS_INPUT_REQUIRED {
		t.Errorf("bob's task after ann's answers = %v, %v; want still input_required", bob.GetTask().GetStatus(), err)
	}
	b.noProblems(t)
}
