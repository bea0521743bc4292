package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// Tasks across a rolling restart: the tasks-rolling-restart
// fault starts about 100 tasks on the two task upstreams, a 2025-11-25
// TypeScript-SDK server over streamable HTTP (tests/node/tasks_server.mjs)
// and a 2026-07-28 Python one (tests/python/tasks_server.py, fastmcp-tasks),
// each followed by a watcher, and restarts the three replicas one by one
// meanwhile. A watch that breaks (its replica going away) resumes with the
// same handle on another replica; every task must end with its exact
// result, whichever replica created it and whichever watches it. The
// replicas share --state-key-file, so any of them opens any handle.
//
// The task upstreams are configured on every replica like the others (the
// quiet periods count them, the catalog watchers see their tools, the
// upstream faults and config changes hit them between task faults), but
// the load never calls them: it picks its tools from the twelve matrix
// servers only.

const (
	sdkTasksTS = "tasks-ts" // tests/node/tasks_server.mjs http PORT
	sdkTasksPy = "tasks-py" // tests/python/tasks_server.py PORT (.venv/tasks)

	// tasksPerFault is how many tasks one fault starts, in three batches:
	// batch k runs while replica k restarts.
	tasksPerFault = 100
	// taskBound is how long after its creation a task may take to be
	// watched to its end before it counts as lost: tasks run 2-8 s, so this
	// only keeps a stuck watch from holding the soak.
	taskBound = 3 * time.Minute
	// taskTTL is the lifetime asked for each task (2025-11-25 upstreams
	// take it), longer than the fault, so no result expires before it is read.
	taskTTL = 10 * time.Minute
)

// taskEras is the protocol version each task upstream runs its tasks at.
var taskEras = map[string]string{sdkTasksTS: "2025-11-25", sdkTasksPy: "2026-07-28"}

// faultTasksRollingRestart starts tasksPerFault tasks (both eras, 2-8 s
// each) in three batches; after each batch has been created it restarts
// the next replica (SIGTERM, then a new instance on the same ports: the
// replica-restart fault's mechanics, recorded as one each). Every task is
// followed by a watcher that resumes on another replica when its stream
// breaks, and must end COMPLETED with "slept <ms>".
func (s *soak) faultTasksRollingRestart(ctx context.Context) {
	// The fault itself explains no failure; its restarts are
	// replica-restart faults, which explain the load's.
	f := s.begin("tasks-rolling-restart", "", -2)
	defer s.finish(f)
	s.mu.Lock()
	s.taskFaults++
	seq := s.taskFaults
	s.mu.Unlock()
	// The fault runs to its end once started, also past the end of the
	// fault phase: a task left unwatched would prove nothing. Only the
	// run's end (a signal) stops it.
	ctx = s.runCtx
	var wg sync.WaitGroup
	n := 0
	for k, r := range s.replicas {
		size := (tasksPerFault - n) / (len(s.replicas) - k)
		created := make(chan struct{}, size)
		for i := range size {
			u := s.taskUps[(n+i)%len(s.taskUps)]
			ms := 2000 + s.intn(6001)
			id := fmt.Sprintf("t%d-%d", seq, n+i)
			first := s.replicas[s.intn(len(s.replicas))]
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.runTask(ctx, id, u, ms, first, created)
			}()
		}
		n += size
		// Restart replica k once its batch runs.
		for range size {
			select {
			case <-created:
			case <-ctx.Done():
				wg.Wait()
				return
			}
		}
		if s.verbose {
			s.logf("tasks-rolling-restart %d: %d tasks started, restarting replica%d", seq, n, r.idx)
		}
		s.faultReplicaRestart(r)
	}
	wg.Wait()
}

// runTask creates one task (retrying on another replica while the one it
// asks is away), signals created, and watches it to its end, resuming on
// another replica whenever the watch breaks.
func (s *soak) runTask(ctx context.Context, id string, u *upstream, ms int, r *replica, created chan<- struct{}) {
	signalled := false
	defer func() {
		if !signalled {
			created <- struct{}{}
		}
	}()
	start := time.Now()
	deadline := start.Add(taskBound)
	want := fmt.Sprintf("slept %d", ms)
	next := func(r *replica) *replica { return s.replicas[(r.idx+1)%len(s.replicas)] }
	var task *toolsvcv1.Task
	for task == nil {
		cctx, cancel := context.WithTimeout(ctx, callTimeout+5*time.Second)
		res, err := r.client.CallTool(cctx, &toolsvcv1.CallToolRequest{Name: u.name + "__slow",
			ArgumentsJson: fmt.Sprintf(`{"ms": %d}`, ms), Task: &toolsvcv1.TaskOptions{Ttl: durationpb.New(taskTTL)}})
		cancel()
		s.calls.Add(1)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err == nil && res.GetTask() == nil:
			s.taskLost(id, u, r, fmt.Sprintf("CallTool with task answered no task: %v", res))
			return
		case err == nil:
			task = res.GetTask()
		case resumable(err) && time.Now().Before(deadline):
			// Its replica is away (or its upstream not ready yet after a
			// restart): the caller tries another.
			r = next(r)
			time.Sleep(100 * time.Millisecond)
		default:
			s.taskLost(id, u, r, fmt.Sprintf("create: %v", err))
			return
		}
	}
	s.tasksStarted.Add(1)
	created <- struct{}{}
	signalled = true
	if v := task.GetProtocolVersion(); v != taskEras[u.sdk] {
		s.taskLost(id, u, r, fmt.Sprintf("task %s runs at protocol %q, want %q", task.GetTaskId(), v, taskEras[u.sdk]))
		return
	}
	// The watcher starts on a replica of its own.
	r = s.replicas[s.intn(len(s.replicas))]
	for resumes := 0; ; resumes++ {
		if resumes > 0 {
			s.taskResumes.Add(1)
		}
		wctx, cancel := context.WithDeadline(ctx, deadline)
		last, err := watchTaskOnce(wctx, r, task.GetHandle())
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			switch {
			case last == nil:
				s.taskLost(id, u, r, fmt.Sprintf("task %s: the watch ended OK with no message", task.GetTaskId()))
			case last.GetTask().GetStatus() != toolsvcv1.TaskStatus_TASK_STATUS_COMPLETED || last.GetResult() == nil:
				s.taskLost(id, u, r, fmt.Sprintf("task %s ended %s (result %v, error %v), want COMPLETED", task.GetTaskId(), last.GetTask().GetStatus(), last.GetResult(), last.GetError()))
			case last.GetResult().GetIsError() || resultText(last.GetResult()) != want:
				s.taskLost(id, u, r, fmt.Sprintf("task %s: result %q (is_error %v), want %q", task.GetTaskId(), resultText(last.GetResult()), last.GetResult().GetIsError(), want))
			default:
				s.tasksCompleted.Add(1)
			}
			return
		}
		if !resumable(err) || time.Now().After(deadline) {
			s.taskLost(id, u, r, fmt.Sprintf("task %s: watch after %d resumes: %v", task.GetTaskId(), resumes, err))
			return
		}
		r = next(r)
		time.Sleep(100 * time.Millisecond)
	}
}

// watchTaskOnce reads one WatchTask stream to its end: the last message,
// and nil when the stream ended OK after the terminal state.
func watchTaskOnce(ctx context.Context, r *replica, handle string) (*toolsvcv1.WatchTaskResponse, error) {
	st, err := r.client.WatchTask(ctx, &toolsvcv1.WatchTaskRequest{Handle: handle})
	if err != nil {
		return nil, err
	}
	var last *toolsvcv1.WatchTaskResponse
	for {
		m, err := st.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return last, nil
			}
			return last, err
		}
		last = m
	}
}

// resumable reports a failure that a replica going away (or not ready yet)
// explains, which the caller answers by calling again on another replica:
// UNAVAILABLE with any reason (SHUTTING_DOWN, UPSTREAM_UNAVAILABLE, gRPC's
// own status while the port is closed), or CANCELLED without ErrorInfo (a
// stream the stopping server reset), as the replica-restart fault allows.
func resumable(err error) bool {
	code, reason, _ := reasonOf(err)
	return code == codes.Unavailable || code == codes.Canceled && reason == ""
}

// taskLost records a task that did not end with its exact result.
func (s *soak) taskLost(id string, u *upstream, r *replica, what string) {
	d := fmt.Sprintf("task %s on %s (last replica%d) at %.1fs: %s", id, u.name, r.idx, time.Since(s.start).Seconds(), what)
	s.mu.Lock()
	s.tasksLost = append(s.tasksLost, d)
	s.mu.Unlock()
	s.logf("TASK LOST %s", d)
}
