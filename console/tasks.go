package console

import (
	"net/http"
	"time"

	"github.com/toolsvc/toolsvc/service/core"
)

// taskRow is one of the caller's tasks as the Tasks page shows it.
type taskRow struct {
	Tool     string    `json:"tool"`
	Server   string    `json:"server"`
	TaskID   string    `json:"taskId"`
	Era      string    `json:"era"`
	Status   string    `json:"status"`
	Message  string    `json:"message,omitempty"`
	Created  time.Time `json:"created,omitzero"`
	Updated  time.Time `json:"updated,omitzero"`
	TTLSecs  float64   `json:"ttlSeconds,omitempty"`
	Waiting  int       `json:"waiting,omitempty"` // a 2026-07-28 task's input requests
	Terminal bool      `json:"terminal"`
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
		out = append(out, taskRow{Tool: t.Tool, Server: t.Server, TaskID: clip(t.ID, MaxCallValueBytes), Era: string(t.Era),
			Status: string(t.Status), Message: clip(t.StatusMessage, 1024), Created: t.Created, Updated: t.Updated,
			TTLSecs: t.TTL.Seconds(), Waiting: len(t.InputRequests), Terminal: t.Status.Terminal()})
	}
	return out, nil
}

func (cs *Console) tasks(c *caller, _ *http.Request) (any, *core.Error) {
	return cs.taskRows(c)
}
