package console

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/service/core"
)

// taskRow is one of the caller's tasks as the Tasks page shows it.
type taskRow struct {
	Tool   string `json:"tool"`
	Server string `json:"server"`
	TaskID string `json:"taskId"`
	// Handle names the task to the core's task operations (sealed and
	// bound to the principal: another principal's handle is refused).
	Handle   string    `json:"handle"`
	Era      string    `json:"era"`
	Status   string    `json:"status"`
	Message  string    `json:"message,omitempty"`
	Created  time.Time `json:"created,omitzero"`
	Updated  time.Time `json:"updated,omitzero"`
	TTLSecs  float64   `json:"ttlSeconds,omitempty"`
	Waiting  int       `json:"waiting,omitempty"` // a 2026-07-28 task's input requests
	Terminal bool      `json:"terminal"`
}

func rowOf(t *core.Task) taskRow {
	return taskRow{Tool: t.Tool, Server: t.Server, TaskID: clip(t.ID, MaxCallValueBytes), Handle: t.Handle, Era: string(t.Era),
		Status: string(t.Status), Message: clip(t.StatusMessage, 1024), Created: t.Created, Updated: t.Updated,
		TTLSecs: t.TTL.Seconds(), Waiting: len(t.InputRequests), Terminal: t.Status.Terminal()}
}

// taskRows is ListTasks, the operation every wire's task listing is: the
// caller's own tasks on this replica (a principal never sees another's),
// newest first, the stale ones asked again within its bounds.
func (cs *Console) taskRows(c *caller) ([]taskRow, *core.Error) {
	ts, e := cs.c.ListTasks(c.ctx, "")
	if e != nil {
		return nil, e
	}
	out := make([]taskRow, 0, len(ts))
	for _, t := range ts {
		out = append(out, rowOf(t))
	}
	return out, nil
}

func (cs *Console) tasks(c *caller, _ *http.Request) (any, *core.Error) {
	return cs.taskRows(c)
}

// taskEvent is one state of a followed task: the task, and once it has
// ended its result (rendered like a call's) or the upstream's failure.
type taskEvent struct {
	Task    taskRow             `json:"task"`
	Result  *mcp.CallToolResult `json:"result,omitempty"`
	Failure *errorBody          `json:"error,omitempty"`
	// Requests are what a 2026-07-28 task in input_required asks: the page
	// renders them as the Playground does and answers them with
	// POST /ui/api/tasks/answer (the core's UpdateTask).
	Requests []inputRequest `json:"requests,omitempty"`
}

// taskHandle is the handle a task request names, bounded like a query.
func taskHandle(h string) *core.Error {
	if h == "" {
		return fieldError("handle", "required: a task's handle, as the Tasks page or a task call gave it")
	}
	if len(h) > MaxTaskHandleBytes {
		return fieldError("handle", "longer than 4096 bytes")
	}
	return nil
}

// MaxTaskHandleBytes bounds a task handle the page sends (a sealed handle
// is a few hundred bytes).
const MaxTaskHandleBytes = 4096

// taskWatch is WatchTask as an event stream (GET, so EventSource reads
// it): the core's watch operation (BeginTask, OpTaskWatch: the handle
// opened for the caller, the tool authorized, the audit line), a "state"
// event per change of status, the last with the result or failure, or an
// "error" event with the refusal.
func (cs *Console) taskWatch(w http.ResponseWriter, r *http.Request) {
	c, e := cs.authenticate(r)
	if e != nil {
		writeError(w, e)
		return
	}
	handle := r.URL.Query().Get("handle")
	if e := taskHandle(handle); e != nil {
		writeError(w, e)
		return
	}
	release, e := cs.acquireStream(c.p.Name)
	if e != nil {
		writeError(w, e)
		return
	}
	defer release()
	t, err := cs.c.BeginTask(c.ctx, core.OpTaskWatch, handle, core.Fields{TaskHandle: "handle"})
	if err != nil {
		fail := t.Fail(err)
		t.End(fail)
		writeError(w, fail)
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	err = t.Watch(ctx, func(st *core.TaskState) error {
		ev := taskEvent{Task: rowOf(st.Task), Result: st.Result}
		if len(st.Task.InputRequests) > 0 && !st.Task.Status.Terminal() {
			ev.Requests = inputRequestsOf(st.Task.InputRequests)
		}
		if st.Failure != nil {
			b := errorOf(st.Failure.Bounded())
			ev.Failure = &b
		}
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		if e := cs.c.CheckResponse(len(b)); e != nil {
			return e
		}
		if !cs.write(w, rc, "state", b) {
			return errGone
		}
		return nil
	})
	fail := t.Fail(err)
	t.End(fail)
	if fail != nil && err != errGone {
		if b, err := json.Marshal(errorOf(fail)); err == nil {
			cs.write(w, rc, "error", b)
		}
	}
}

// taskCancelRequest is the body of a cancel: the task's handle.
type taskCancelRequest struct {
	Handle string `json:"handle"`
}

// taskCancel is CancelTask (POST, with the CSRF token): the core's cancel
// operation, the task's state after.
func (cs *Console) taskCancel(c *caller, r *http.Request) (any, *core.Error) {
	if e := cs.checkCSRF(c, r); e != nil {
		return nil, e
	}
	var in taskCancelRequest
	if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, MaxFormBytes)).Decode(&in); err != nil {
		return nil, fieldError("body", "a JSON object {handle} of at most 16 KiB")
	}
	if e := taskHandle(in.Handle); e != nil {
		return nil, e
	}
	t, err := cs.c.BeginTask(c.ctx, core.OpTaskCancel, in.Handle, core.Fields{TaskHandle: "handle"})
	var out *core.Task
	if err == nil {
		out, err = t.Cancel(t.Context())
	}
	fail := t.Fail(err)
	t.End(fail)
	if fail != nil {
		return nil, fail
	}
	return rowOf(out), nil
}

// taskAnswerRequest answers a 2026-07-28 task's input requests: its
// handle, and the answers by request id (as a Playground round's).
type taskAnswerRequest struct {
	Handle    string                  `json:"handle"`
	Responses map[string]streamAnswer `json:"responses"`
}

// taskAnswer is UpdateTask (POST, with the CSRF token): the core's task
// update operation (BeginTask with OpTaskUpdate: the handle opened for
// the caller, another principal's refused, the tool authorized again, the
// rate limit, one audit line), the answers checked as a Playground round's
// and again by the core against what the task asks now; the task's state
// after.
func (cs *Console) taskAnswer(c *caller, r *http.Request) (any, *core.Error) {
	if e := cs.checkCSRF(c, r); e != nil {
		return nil, e
	}
	limit := cs.c.MaxRequestBytes()
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, int64(limit)+1))
	if err != nil || len(body) > limit {
		return nil, core.NewError(core.ResourceExhausted, core.ReasonRequestTooLarge,
			"the answers are larger than the request limit (--max-request-bytes)", nil)
	}
	var in taskAnswerRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fieldError("body", "a JSON object {handle, responses}")
	}
	if e := taskHandle(in.Handle); e != nil {
		return nil, e
	}
	if len(in.Responses) == 0 {
		return nil, fieldError("responses", "required: answers to the task's requests, by id")
	}
	t, err := cs.c.BeginTask(c.ctx, core.OpTaskUpdate, in.Handle, core.Fields{TaskHandle: "handle"})
	var out *core.Task
	if err == nil {
		// A bad answer is refused within the operation: audited like one
		// the core refuses.
		if responses, e := answers(in.Responses); e != nil {
			err = e
		} else {
			out, err = t.Update(t.Context(), responses)
		}
	}
	fail := t.Fail(err)
	t.End(fail)
	if fail != nil {
		return nil, fail
	}
	return rowOf(out), nil
}
