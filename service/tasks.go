package service

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/service/core"
)

// The gRPC face of tasks (core/tasks.go): CallToolRequest.task in, a Task
// out, and the task RPCs, each one operation of the core's engine.

// taskOptions is the core's view of CallToolRequest.task.
func taskOptions(t *toolsvcv1.TaskOptions) (*core.TaskOptions, *core.Error) {
	d := t.GetTtl()
	if d == nil {
		return &core.TaskOptions{}, nil
	}
	ttl := d.AsDuration() // saturated: one over the bound stays over it
	if d.CheckValid() != nil {
		ttl = -1
	}
	return core.TaskTTL(ttl)
}

var taskStatuses = map[core.TaskStatus]toolsvcv1.TaskStatus{
	core.TaskWorking:       toolsvcv1.TaskStatus_TASK_STATUS_WORKING,
	core.TaskInputRequired: toolsvcv1.TaskStatus_TASK_STATUS_INPUT_REQUIRED,
	core.TaskCompleted:     toolsvcv1.TaskStatus_TASK_STATUS_COMPLETED,
	core.TaskFailed:        toolsvcv1.TaskStatus_TASK_STATUS_FAILED,
	core.TaskCancelled:     toolsvcv1.TaskStatus_TASK_STATUS_CANCELLED,
}

func (s *Server) taskToProto(t *core.Task) *toolsvcv1.Task {
	out := &toolsvcv1.Task{Handle: t.Handle, Tool: t.Tool, Server: t.Server, TaskId: t.ID, Status: taskStatuses[t.Status],
		StatusMessage: t.StatusMessage, ProtocolVersion: string(t.Era)}
	if !t.Created.IsZero() {
		out.CreateTime = timestamppb.New(t.Created)
	}
	if !t.Updated.IsZero() {
		out.UpdateTime = timestamppb.New(t.Updated)
	}
	if t.TTL > 0 {
		out.Ttl = durationpb.New(t.TTL)
	}
	if t.PollInterval > 0 {
		out.PollInterval = durationpb.New(t.PollInterval)
	}
	if t.Status == core.TaskInputRequired && len(t.InputRequests) > 0 {
		// The handle names the task: no request state, no expiry.
		out.InputRequired = s.inputRequiredToProto(t.InputRequests, "")
	}
	return out
}

func taskErrorToProto(e *core.Error) *toolsvcv1.TaskError {
	if e == nil {
		return nil
	}
	b := e.Bounded()
	return &toolsvcv1.TaskError{Code: int32(b.Code), Reason: b.Reason, Message: b.Message, Metadata: b.Meta}
}

// taskStateToProto is a task state's three parts: the task, the result
// and the error.
func (s *Server) taskStateToProto(st *core.TaskState) (*toolsvcv1.Task, *toolsvcv1.CallToolResponse, *toolsvcv1.TaskError) {
	var res *toolsvcv1.CallToolResponse
	if st.Result != nil {
		res = resultToProto(st.Result, s.log)
	}
	return s.taskToProto(st.Task), res, taskErrorToProto(st.Failure)
}

// taskRPC runs one unary task operation through the engine.
func taskRPC[R any](s *Server, ctx context.Context, kind core.OpKind, handle string, do func(t *core.TaskOp) (R, error)) (R, error) {
	t, err := s.core.BeginTask(rpcContext(ctx), kind, handle, grpcFields)
	var out R
	if err == nil {
		out, err = do(t)
	}
	fail := t.Fail(err)
	t.End(fail)
	if fail != nil {
		var zero R
		return zero, grpcStatus(fail).Err()
	}
	return out, nil
}

// GetTask implements toolsvc.v1.ToolService.
func (s *Server) GetTask(ctx context.Context, req *toolsvcv1.GetTaskRequest) (*toolsvcv1.GetTaskResponse, error) {
	return taskRPC(s, ctx, core.OpTaskGet, req.GetHandle(), func(t *core.TaskOp) (*toolsvcv1.GetTaskResponse, error) {
		st, err := t.Get(t.Context())
		if err != nil {
			return nil, err
		}
		task, res, terr := s.taskStateToProto(st)
		out := &toolsvcv1.GetTaskResponse{Task: task, Result: res, Error: terr}
		if e := s.core.CheckResponse(proto.Size(out)); e != nil {
			return nil, e
		}
		return out, nil
	})
}

// CancelTask implements toolsvc.v1.ToolService.
func (s *Server) CancelTask(ctx context.Context, req *toolsvcv1.CancelTaskRequest) (*toolsvcv1.CancelTaskResponse, error) {
	return taskRPC(s, ctx, core.OpTaskCancel, req.GetHandle(), func(t *core.TaskOp) (*toolsvcv1.CancelTaskResponse, error) {
		task, err := t.Cancel(t.Context())
		if err != nil {
			return nil, err
		}
		return &toolsvcv1.CancelTaskResponse{Task: s.taskToProto(task)}, nil
	})
}

// UpdateTask implements toolsvc.v1.ToolService.
func (s *Server) UpdateTask(ctx context.Context, req *toolsvcv1.UpdateTaskRequest) (*toolsvcv1.UpdateTaskResponse, error) {
	return taskRPC(s, ctx, core.OpTaskUpdate, req.GetHandle(), func(t *core.TaskOp) (*toolsvcv1.UpdateTaskResponse, error) {
		responses, bad := inputResponses(req.GetInputResponses())
		if bad != nil {
			return nil, bad
		}
		task, err := t.Update(t.Context(), responses)
		if err != nil {
			return nil, err
		}
		return &toolsvcv1.UpdateTaskResponse{Task: s.taskToProto(task)}, nil
	})
}

// ListTasks implements toolsvc.v1.ToolService.
func (s *Server) ListTasks(ctx context.Context, req *toolsvcv1.ListTasksRequest) (*toolsvcv1.ListTasksResponse, error) {
	ts, fail := s.core.ListTasks(rpcContext(ctx), req.GetServer())
	if fail != nil {
		return nil, grpcStatus(fail).Err()
	}
	out := &toolsvcv1.ListTasksResponse{Tasks: make([]*toolsvcv1.Task, len(ts))}
	for i, t := range ts {
		out.Tasks[i] = s.taskToProto(t)
	}
	return out, nil
}

// WatchTask implements toolsvc.v1.ToolService. The stream ends OK after
// the terminal state; with SHUTTING_DOWN when this server stops (the
// client calls again, on any replica, with the same handle).
func (s *Server) WatchTask(req *toolsvcv1.WatchTaskRequest, stream grpc.ServerStreamingServer[toolsvcv1.WatchTaskResponse]) error {
	t, err := s.core.BeginTask(rpcContext(stream.Context()), core.OpTaskWatch, req.GetHandle(), grpcFields)
	if err == nil {
		ctx, cancel := context.WithCancel(t.Context())
		go func() { // ends with the watch (cancel below)
			select {
			case <-s.shutdown:
				cancel()
			case <-ctx.Done():
			}
		}()
		err = t.Watch(ctx, func(st *core.TaskState) error {
			task, res, terr := s.taskStateToProto(st)
			m := &toolsvcv1.WatchTaskResponse{Task: task, Result: res, Error: terr}
			if e := s.core.CheckResponse(proto.Size(m)); e != nil {
				return e
			}
			return stream.Send(m)
		})
		cancel()
		if err != nil && t.Context().Err() == nil && isShutdown(s.shutdown) {
			err = core.ErrClosed
		}
	}
	fail := t.Fail(err)
	t.End(fail)
	if fail != nil {
		return grpcStatus(fail).Err()
	}
	return nil
}

func isShutdown(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
