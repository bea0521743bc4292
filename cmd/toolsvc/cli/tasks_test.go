package cli

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

func withDetails(t *testing.T, c codes.Code, msg string, details ...*errdetails.ErrorInfo) error {
	t.Helper()
	st := status.New(c, msg)
	for _, d := range details {
		var err error
		if st, err = st.WithDetails(d); err != nil {
			t.Fatal(err)
		}
	}
	return st.Err()
}

// TestTaskWatchResumable: which ends of a WatchTask stream the CLI calls
// WatchTask again after.
func TestTaskWatchResumable(t *testing.T) {
	rateLimited, err := status.New(codes.ResourceExhausted, "slow down").WithDetails(
		&errdetails.ErrorInfo{Reason: "RATE_LIMITED"}, &errdetails.RetryInfo{RetryDelay: durationpb.New(2 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"shutting down", withDetails(t, codes.Unavailable, "draining", &errdetails.ErrorInfo{Reason: "SHUTTING_DOWN"}), true},
		{"broken connection", status.Error(codes.Unavailable, "connection refused"), true},
		{"ended before the task", errStreamEnded, true},
		{"rate limited with a delay", rateLimited.Err(), true},
		{"a size limit", status.Error(codes.ResourceExhausted, "too large"), false},
		{"forged handle", withDetails(t, codes.InvalidArgument, "handle", &errdetails.ErrorInfo{Reason: "TASK_HANDLE_INVALID"}), false},
		{"not yours", status.Error(codes.PermissionDenied, "no"), false},
		{"task gone", status.Error(codes.NotFound, "expired"), false},
		{"not a status", errors.New("stdin ended"), false},
	} {
		if got := resumable(tc.err); got != tc.want {
			t.Errorf("resumable(%s: %v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
	if d := retryDelay(rateLimited.Err()); d != 2*time.Second {
		t.Errorf("retryDelay(rate limited) = %v, want 2s", d)
	}
}

func TestTaskNames(t *testing.T) {
	for s, want := range map[toolsvcv1.TaskStatus]string{
		toolsvcv1.TaskStatus_TASK_STATUS_UNSPECIFIED:    "-",
		toolsvcv1.TaskStatus_TASK_STATUS_INPUT_REQUIRED: "input_required",
		toolsvcv1.TaskStatus_TASK_STATUS_CANCELLED:      "cancelled",
	} {
		if got := statusName(s); got != want {
			t.Errorf("statusName(%v) = %q, want %q", s, got, want)
		}
	}
	if got := shortHandle("t1.abcdefghijklmnopqrstuvwxyz"); got != "t1.abcdefghijkl" {
		t.Errorf("shortHandle = %q", got)
	}
	if got := shortHandle("t1.ab"); got != "t1.ab" {
		t.Errorf("shortHandle(short) = %q", got)
	}
}
