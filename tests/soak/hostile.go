package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// The hostile upstream: tests/hostileserver -mode soak, a
// go-sdk stdio server every replica runs beside the twelve matrix
// upstreams. It lists echo, selfref (an inputSchema that applies itself),
// doubling (a schema whose cost doubles per level), big{bytes}, a tool
// definition over 1 MiB and four unusable names; toolsvc must expose only
// hostileTools. It takes SIGKILL, SIGSTOP and config changes like the
// other stdio children, but none of the matrix load (it has no
// wait_cancel or progress) nor tool bursts (it has no add_tool).
//
// The hostile load operation sends one of hostileCases and checks the exact
// answer; anything else is a wrong result or a failure that only a fault
// on the hostile server (or its replica) explains.

const (
	sdkHostile  = "hostile"
	hostileName = "hostile"
)

// hostileTools are the tools toolsvc exposes of the hostile upstream (huge
// and the unusable names are skipped), and hostileSkipped how many
// ListServers warnings say so.
var hostileTools = []string{"big", "doubling", "echo", "selfref"}

const hostileSkipped = 5

// Limits the answers name: serve's default --max-response-bytes, and the
// upstream message limit derived from it (6 ×, at least 16 MiB).
const (
	maxResponseBytes = 4 << 20
	maxMessageBytes  = 6 * maxResponseBytes
)

var hostileCases = []string{"selfref", "doubling", "deep", "dupkey", "longname", "big", "list"}

// raceCases are the cases of a -race soak: big is left out. A race-built
// toolsvc on the shared box took 3-7 s over a big answer (its frame scan
// and JSON decoding run instrumented, byte by byte): past the 4 s deadline
// and toolsvc's 5 s callTimeout, and a 25 MiB line outlasted three 1 s
// ping probes, which ended the session. That measures the race detector,
// not the bound.
var raceCases = slices.DeleteFunc(slices.Clone(hostileCases), func(c string) bool { return c == "big" })

// callHostile runs one hostile case, chosen at random, on replica r.
func (s *soak) callHostile(ctx context.Context, r *replica, id string) {
	u := s.hostile
	cases := hostileCases
	if s.race {
		cases = raceCases
	}
	c := cases[s.intn(len(cases))]
	s.mu.Lock()
	s.hostileChecks[c]++
	s.mu.Unlock()
	h := &hostileCall{s: s, ctx: ctx, r: r, u: u, op: "hostile-" + c, start: time.Now()}
	switch c {
	case "selfref":
		h.selfref(id)
	case "doubling":
		h.doubling()
	case "deep":
		h.deep()
	case "dupkey":
		h.dupkey()
	case "longname":
		h.longname()
	case "big":
		h.big(id)
	case "list":
		s.checkHostileListing(ctx, r, h.op)
	}
}

// hostileCall is one hostile case on replica r: the operation its
// failures and wrong results are reported as, and since when.
type hostileCall struct {
	s     *soak
	ctx   context.Context
	r     *replica
	u     *upstream
	op    string
	start time.Time
}

// call sends req to the replica within deadline, timed as h.op.
func (h *hostileCall) call(req *toolsvcv1.CallToolRequest, deadline time.Duration) (*toolsvcv1.CallToolResponse, error) {
	var resp *toolsvcv1.CallToolResponse
	err, _ := h.s.timed(h.ctx, h.op, h.r, h.u, deadline, func(c context.Context) error {
		var err error
		resp, err = h.r.client.CallTool(c, req)
		return err
	})
	return resp, err
}

// refused checks a call that must fail with code and reason: a wrong
// refusal is a wrong result, a success too; any other status is a
// failure for the faults to explain.
func (h *hostileCall) refused(resp *toolsvcv1.CallToolResponse, err error, code codes.Code, reason string, check func(*status.Status, *errdetails.ErrorInfo) string) {
	s, r, u := h.s, h.r, h.u
	if h.ctx.Err() != nil {
		return
	}
	if err == nil {
		s.wrongResult(h.op, r, u, h.start, fmt.Sprintf("succeeded (is_error %v), want %s / %s", resp.GetIsError(), code, reason))
		return
	}
	gotCode, gotReason, _ := reasonOf(err)
	if gotCode != code {
		s.fail(h.op, r, u.name, h.start, err)
		return
	}
	st := status.Convert(err)
	var ei *errdetails.ErrorInfo
	for _, d := range st.Details() {
		if x, ok := d.(*errdetails.ErrorInfo); ok {
			ei = x
		}
	}
	what := ""
	if gotReason != reason {
		what = fmt.Sprintf("reason %q, want %q", gotReason, reason)
	} else if check != nil {
		what = check(st, ei)
	}
	if what != "" {
		s.wrongResult(h.op, r, u, h.start, fmt.Sprintf("%s: %s (%s)", code, what, clip(st.Message())))
	}
}

// echoed checks a call that must succeed with text want, not as a tool
// error; a failure is for the faults to explain.
func (h *hostileCall) echoed(resp *toolsvcv1.CallToolResponse, err error, want string) {
	if err == nil {
		if got := resultText(resp); got != want || resp.GetIsError() {
			h.s.wrongResult(h.op, h.r, h.u, h.start, fmt.Sprintf("got %q (is_error %v), want %q", clip(got), resp.GetIsError(), want))
		}
	} else if h.ctx.Err() == nil {
		h.s.fail(h.op, h.r, h.u.name, h.start, err)
	}
}

// selfref calls the tool whose inputSchema applies itself: never
// evaluated, forwarded as sent, answered by the upstream.
func (h *hostileCall) selfref(id string) {
	a := fmt.Sprintf(`{"id":%q}`, id)
	resp, err := h.call(&toolsvcv1.CallToolRequest{Name: h.u.name + "__selfref", ArgumentsJson: a}, 4*time.Second)
	h.echoed(resp, err, "selfref ok "+a)
}

// doubling sends 40 levels to the doubling schema: 2^40 schema
// applications, refused before validation.
func (h *hostileCall) doubling() {
	u := h.u
	a := `{"a": ` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`
	resp, err := h.call(&toolsvcv1.CallToolRequest{Name: u.name + "__doubling", ArgumentsJson: a}, 4*time.Second)
	h.refused(resp, err, codes.InvalidArgument, "ARGUMENTS_INVALID", func(_ *status.Status, ei *errdetails.ErrorInfo) string {
		m := ei.GetMetadata()
		if m["limit"] != "max_validation_steps" || m["server"] != u.name || m["tool"] != u.name+"__doubling" {
			return fmt.Sprintf("ErrorInfo metadata %v, want limit max_validation_steps, server and tool", m)
		}
		return fieldsWant(err, "arguments_json")
	})
}

// deep sends arguments 1,000 levels deep, past the 998 any upstream can
// decode: as arguments_json or as a Struct, by turns.
func (h *hostileCall) deep() {
	req := &toolsvcv1.CallToolRequest{Name: h.u.name + "__echo"}
	field := "arguments_json"
	if h.s.intn(2) == 0 {
		req.ArgumentsJson = strings.Repeat(`{"a":`, 999) + `{}` + strings.Repeat(`}`, 999)
	} else {
		field = "arguments"
		req.Arguments = deepStruct(1000)
	}
	resp, err := h.call(req, 4*time.Second)
	h.refused(resp, err, codes.InvalidArgument, "ARGUMENTS_INVALID", func(st *status.Status, _ *errdetails.ErrorInfo) string {
		if !strings.Contains(st.Message(), "998 levels") {
			return "the message does not name the 998-level limit"
		}
		return fieldsWant(err, field)
	})
}

// dupkey sends arguments_json that repeats a key.
func (h *hostileCall) dupkey() {
	resp, err := h.call(&toolsvcv1.CallToolRequest{Name: h.u.name + "__echo", ArgumentsJson: `{"text": 1, "text": "valid"}`}, 4*time.Second)
	h.refused(resp, err, codes.InvalidArgument, "ARGUMENTS_INVALID", func(*status.Status, *errdetails.ErrorInfo) string {
		return fieldsWant(err, "arguments_json.text")
	})
}

// longname calls a name longer than any exposed one: refused without
// echoing it.
func (h *hostileCall) longname() {
	name := h.u.name + "__" + strings.Repeat("z", 5000-len(h.u.name)-2)
	resp, err := h.call(&toolsvcv1.CallToolRequest{Name: name, ArgumentsJson: `{}`}, 4*time.Second)
	h.refused(resp, err, codes.InvalidArgument, "REQUEST_INVALID", func(st *status.Status, _ *errdetails.ErrorInfo) string {
		if n := len(st.Message()) + proto.Size(st.Proto()); n > 2048 || strings.Contains(st.Proto().String(), strings.Repeat("z", 64)) {
			return fmt.Sprintf("the status (%d bytes) echoes the name", n)
		}
		return fieldsWant(err, "name")
	})
}

// big asks for an answer over the response limit (toolsvc decodes it,
// then refuses it), or over the upstream message limit (discarded unread,
// the session kept): RESPONSE_TOO_LARGE naming the limit; then an echo on
// the same replica works.
func (h *hostileCall) big(id string) {
	n, limit := maxResponseBytes+64<<10, maxResponseBytes
	if h.s.intn(2) == 0 {
		n, limit = maxMessageBytes+1<<20, maxMessageBytes
	}
	resp, err := h.call(&toolsvcv1.CallToolRequest{Name: h.u.name + "__big", Arguments: args(map[string]any{"bytes": n})}, 4*time.Second)
	h.refused(resp, err, codes.ResourceExhausted, "RESPONSE_TOO_LARGE", func(_ *status.Status, ei *errdetails.ErrorInfo) string {
		if got := ei.GetMetadata()["limit_bytes"]; got != strconv.Itoa(limit) {
			return fmt.Sprintf("limit_bytes %q for %d bytes, want %d", got, n, limit)
		}
		return ""
	})
	if h.ctx.Err() != nil || status.Code(err) != codes.ResourceExhausted {
		return
	}
	h.start = time.Now()
	h.op = "hostile-big-then-echo"
	resp, err = h.call(&toolsvcv1.CallToolRequest{Name: h.u.name + "__echo", Arguments: args(map[string]any{"text": id})}, 4*time.Second)
	h.echoed(resp, err, id)
}

// checkHostileListing checks a replica's catalog holds no hostile tool but
// hostileTools (the skipped ones are absent), and, when the hostile server
// is READY, that ListServers counts the four and warns of the five skipped.
func (s *soak) checkHostileListing(ctx context.Context, r *replica, op string) {
	u := s.hostile
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s.calls.Add(1)
	sv, err := r.client.ListServers(cctx, &toolsvcv1.ListServersRequest{})
	if err != nil {
		if ctx.Err() == nil {
			s.fail(op, r, u.name, start, err)
		}
		return
	}
	tools, _, err := listAll(ctx, r, s.intn(2) == 0)
	if err != nil {
		if ctx.Err() == nil {
			s.fail(op, r, u.name, start, err)
		}
		return
	}
	var names []string
	for n := range tools {
		if t, ok := strings.CutPrefix(n, u.name+"__"); ok {
			names = append(names, t)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		if !slices.Contains(hostileTools, n) {
			s.wrongResult(op, r, u, start, fmt.Sprintf("ListTools exposes %q of the hostile upstream (%d tools: %q)", clip(n), len(names), names))
			return
		}
	}
	for _, st := range sv.GetServers() {
		if st.GetName() != u.name || st.GetState() != toolsvcv1.ServerState_SERVER_STATE_READY {
			continue
		}
		skipped := 0
		for _, w := range st.GetWarnings() {
			if strings.Contains(w, "skipped") {
				skipped++
			}
		}
		if st.GetToolCount() != int32(len(hostileTools)) || skipped != hostileSkipped {
			s.wrongResult(op, r, u, start, fmt.Sprintf("READY with %d tools and %d skipped-tool warnings, want %d and %d: %q",
				st.GetToolCount(), skipped, len(hostileTools), hostileSkipped, st.GetWarnings()))
		}
	}
}

// fieldsWant says how the BadRequest field violations of err differ from
// the one field wanted ("" when they do not).
func fieldsWant(err error, field string) string {
	var got []string
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				got = append(got, v.GetField())
			}
		}
	}
	if len(got) != 1 || got[0] != field {
		return fmt.Sprintf("field violations %q, want [%q]", got, field)
	}
	return ""
}

// deepStruct is an arguments Struct nested depth levels (itself level 1).
func deepStruct(depth int) *structpb.Struct {
	st := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for range depth - 1 {
		st = &structpb.Struct{Fields: map[string]*structpb.Value{"a": structpb.NewStructValue(st)}}
	}
	return st
}

func resultText(resp *toolsvcv1.CallToolResponse) string {
	var b strings.Builder
	for _, c := range resp.GetContent() {
		b.WriteString(c.GetText().GetText())
	}
	return b.String()
}

// clip cuts text for a failure line.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
