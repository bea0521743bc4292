package console

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/toolsvc/toolsvc/service/core"
)

// callRequest is the Playground's call: a tool and its arguments object.
type callRequest struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// call runs one tool call from the Playground through the core's call
// pipeline, as every wire does (docs/architecture.md, Flow 1): the
// caller's authentication, rules, rate limit, the argument and response
// limits, the inputSchema check, metrics and the audit line. The answer is
// the MCP result as JSON, or the core's refusal (ARGUMENTS_INVALID names
// the fields at fault, as "arguments.<path>").
func (cs *Console) call(w http.ResponseWriter, r *http.Request) {
	c, e := cs.authenticate(r)
	if e == nil {
		e = cs.checkCSRF(c, r)
	}
	if e != nil {
		writeError(w, e)
		return
	}
	limit := cs.c.MaxRequestBytes()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(limit)+1))
	if err != nil || len(body) > limit {
		writeError(w, core.NewError(core.ResourceExhausted, core.ReasonRequestTooLarge,
			"the call is larger than the request limit (--max-request-bytes)", nil))
		return
	}
	var in callRequest
	if err := json.Unmarshal(body, &in); err != nil {
		writeError(w, fieldError("body", "a JSON object {name, arguments}"))
		return
	}
	if in.Name == "" {
		writeError(w, fieldError("name", "required: a tool's exposed name"))
		return
	}
	ci := core.CallInput{Name: in.Name, ArgumentsJSON: string(in.Arguments), Size: len(body),
		Fields: core.Fields{ArgumentsJSON: "arguments"}}
	call, err := cs.c.BeginCall(c.ctx, ci)
	var out []byte
	isError := false
	if err == nil {
		res, derr := call.Dispatch(call.Context(), nil)
		if err = derr; err == nil {
			isError = res.IsError
			if out, err = json.Marshal(res); err == nil {
				err = call.CheckResult(len(out))
			}
		}
	}
	fail := call.Fail(err)
	call.End(fail, isError, len(out))
	if fail != nil {
		writeError(w, fail)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
