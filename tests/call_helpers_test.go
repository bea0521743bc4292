package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// callTransports are the upstream servers startCallFixture configures: the
// go-sdk test server over stdio ("s") and over streamable HTTP ("h").
var callTransports = []struct{ name, server string }{{"stdio", "s"}, {"http", "h"}}

// startCallFixture runs one HTTP test upstream and a toolsvc with it and a
// stdio test upstream ("s" and "h"); extra are more upstreams, extraArgs go
// to serve.
func startCallFixture(t *testing.T, extra servers, extraArgs ...string) *toolsvcProc {
	t.Helper()
	ss := servers{"s": goStdio(upstream{}), "h": goHTTP(startHTTPUpstream(t), upstream{})}
	for name, u := range extra {
		ss[name] = u
	}
	return startToolsvc(t, cfg{Servers: ss}, extraArgs...)
}

// upstreamCalls asks a test upstream how many tools/call requests it has
// received for each tool.
func upstreamCalls(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient, server string) map[string]float64 {
	t.Helper()
	res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__call_stats"})
	if err != nil {
		t.Fatalf("%s__call_stats: %v", server, err)
	}
	out := map[string]float64{}
	for k, v := range res.GetStructuredContent().AsMap() {
		out[k], _ = v.(float64)
	}
	return out
}

// errorInfo returns the status's ErrorInfo, failing the test without one.
func errorInfo(t *testing.T, err error) *errdetails.ErrorInfo {
	t.Helper()
	for _, d := range status.Convert(err).Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			if ei.GetDomain() != "toolsvc.dev" {
				t.Errorf("ErrorInfo domain = %q, want toolsvc.dev", ei.GetDomain())
			}
			return ei
		}
	}
	t.Fatalf("error %v carries no google.rpc.ErrorInfo", err)
	return nil
}

// wantStatus checks the code, the ErrorInfo reason and its server and tool
// metadata.
func wantStatus(t *testing.T, err error, code codes.Code, reason, server, tool string) *errdetails.ErrorInfo {
	t.Helper()
	if got := status.Code(err); got != code {
		t.Fatalf("error = %v, want code %v", err, code)
	}
	ei := errorInfo(t, err)
	if ei.GetReason() != reason {
		t.Errorf("ErrorInfo reason = %q, want %q (error %v)", ei.GetReason(), reason, err)
	}
	if server != "" && ei.GetMetadata()["server"] != server {
		t.Errorf("ErrorInfo server = %q, want %q", ei.GetMetadata()["server"], server)
	}
	if tool != "" && ei.GetMetadata()["tool"] != tool {
		t.Errorf("ErrorInfo tool = %q, want %q", ei.GetMetadata()["tool"], tool)
	}
	return ei
}

// fieldViolations returns the BadRequest field names of an error.
func fieldViolations(err error) []string {
	var out []string
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				out = append(out, v.GetField())
			}
		}
	}
	return out
}

// cancelRecord is tests/testserver's record of a wait_cancel call.
type cancelRecord struct {
	started, cancelled time.Time
	finished           bool
}

// waitCancelRecord polls the upstream until the wait_cancel call with id
// has ended (cancelled or finished) and returns its record.
func waitCancelRecord(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient, server, id string, timeout time.Duration) cancelRecord {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		rec, ok := cancelRecordOf(t, ctx, c, server, id)
		if ok && (!rec.cancelled.IsZero() || rec.finished) {
			return rec
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upstream did not record the end of wait_cancel %q within %s", id, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func cancelRecordOf(t *testing.T, ctx context.Context, c toolsvcv1.ToolServiceClient, server, id string) (cancelRecord, bool) {
	t.Helper()
	res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: server + "__cancel_record", ArgumentsJson: fmt.Sprintf(`{"id": %q}`, id)})
	if err != nil {
		t.Fatalf("cancel_record: %v", err)
	}
	if res.GetIsError() {
		return cancelRecord{}, false
	}
	m := res.GetStructuredContent().AsMap()
	ns := func(k string) time.Time {
		if v, ok := m[k].(float64); ok && v > 0 {
			return time.Unix(0, int64(v))
		}
		return time.Time{}
	}
	fin, _ := m["finished"].(bool)
	return cancelRecord{started: ns("started_unix_nanos"), cancelled: ns("cancelled_unix_nanos"), finished: fin}, true
}
