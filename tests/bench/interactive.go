package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"path/filepath"
	"time"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
)

// The continuation phase (the goal: "a continued call costs no more
// than one extra call's latency"). toolsvc fronts two stdio children of
// tests/testserver -interactive: "old" pinned to 2025-11-25, whose ask_name
// asks mid-call (the request is parked on the replica until the retry), and
// "new" pinned to 2026-07-28, whose ask_name returns input_required (relayed:
// the retry is a second upstream call). A continued call is both rounds:
// the call, input_required, the retry with the answer, the result. It is
// measured interleaved with a plain call (echo) on the same upstream, and
// continuation_ratio = continued p50 / (2 × plain p50): at most 1 means the
// round trip for the answer costs no more than one more call.

var interactiveCalls = flag.Int("interactive-calls", 1000, "sequential calls per path per round in the continuation phase (a continued call is two rounds)")

// continuationPaths are the paths of the phase, on one toolsvc.
type continuationPaths struct {
	plainOld, parked, plainNew, relayed path
}

// startContinuation builds the test server (once) and starts toolsvc in
// front of its two children. round1, if set, is told each continued call's
// first round (by path name).
func startContinuation(ctx context.Context, e *env, round1 func(string, time.Duration)) (*toolsvcProc, continuationPaths, error) {
	if e.testserver == "" {
		e.testserver = filepath.Join(e.tmp, "testserver")
		if err := goBuild(e.root, e.testserver, "./tests/testserver"); err != nil {
			return nil, continuationPaths{}, err
		}
	}
	cfg := fmt.Sprintf(`{"refreshInterval": "1h", "mcpServers": {
		"old": {"command": %[1]q, "args": ["-mode", "stdio", "-interactive"], "protocolVersion": "2025-11-25"},
		"new": {"command": %[1]q, "args": ["-mode", "stdio", "-interactive"], "protocolVersion": "2026-07-28"}}}`, e.testserver)
	ts, err := startToolsvc(ctx, e, "continuation", cfg)
	if err != nil {
		return nil, continuationPaths{}, err
	}
	hook := func(name string) func(time.Duration) {
		if round1 == nil {
			return nil
		}
		return func(d time.Duration) { round1(name, d) }
	}
	const parked, relayed = "continued, parked (2025-11-25)", "continued, relayed (2026-07-28)"
	return ts, continuationPaths{
		plainOld: path{name: "plain 2025-11-25", call: toolsvcEcho(ts.client, "old")},
		parked:   path{name: parked, call: continuedCall(ts.client, "old", true, hook(parked))},
		plainNew: path{name: "plain 2026-07-28", call: toolsvcEcho(ts.client, "new")},
		relayed:  path{name: relayed, call: continuedCall(ts.client, "new", false, hook(relayed))},
	}, nil
}

// continuedCall calls <server>__ask_name offering form elicitation,
// answers the input_required it gets, and checks the greeting. round1, if
// set, is told how long the first round took.
func continuedCall(c toolsvcv1.ToolServiceClient, server string, parked bool, round1 func(time.Duration)) func(context.Context) error {
	name := server + "__ask_name"
	caps := &toolsvcv1.InputCapabilities{Elicitation: true}
	return func(ctx context.Context) error {
		t0 := time.Now()
		res, err := c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: name, InputCapabilities: caps})
		if err != nil {
			return err
		}
		if round1 != nil {
			round1(time.Since(t0))
		}
		ir := res.GetInputRequired()
		if len(ir.GetRequests()) != 1 || ir.GetReplicaBound() != parked {
			return fmt.Errorf("%s: want one question, replica_bound %v; got %v", name, parked, res)
		}
		res, err = c.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: name, InputCapabilities: caps, RequestState: ir.GetRequestState(),
			InputResponses: []*toolsvcv1.InputResponse{{Id: ir.GetRequests()[0].GetId(), Response: &toolsvcv1.InputResponse_Elicitation{
				Elicitation: &toolsvcv1.ElicitationResponse{Action: "accept", ContentJson: `{"name":"Ada"}`}}}}})
		if err != nil {
			return err
		}
		if len(res.GetContent()) != 1 || res.GetContent()[0].GetText().GetText() != "hello Ada" {
			return fmt.Errorf("%s: unexpected result %v", name, res)
		}
		return nil
	}
}

// benchContinuation measures the four paths interleaved, -rounds rounds of
// -interactive-calls calls each, and records continuation_ratio_parked and
// continuation_ratio_relayed (p50, with their spread over rounds; p99 too).
func benchContinuation(ctx context.Context, e *env, r *results) error {
	defer stopAll()
	ts, ps, err := startContinuation(ctx, e, nil)
	if err != nil {
		return err
	}
	defer ts.close()
	all := []path{ps.plainOld, ps.parked, ps.plainNew, ps.relayed}
	for _, p := range all {
		if _, err := sequential(ctx, p, *warmup); err != nil {
			return err
		}
	}
	log.Printf("continuation: %d rounds of %d sequential calls per path", *rounds, *interactiveCalls)
	samples := map[string][]time.Duration{}
	var perRound []map[string]float64
	for k := range *rounds {
		got := map[string]float64{}
		for i := range all {
			p := all[(i+k)%len(all)]
			lat, err := sequential(ctx, p, *interactiveCalls)
			if err != nil {
				return err
			}
			got[p.name+" p50"], got[p.name+" p99"] = us(pct(lat, 50)), us(pct(lat, 99))
			samples[p.name] = append(samples[p.name], lat...)
		}
		perRound = append(perRound, got)
	}
	for _, c := range []struct {
		key           string
		plain, contin path
	}{{"parked", ps.plainOld, ps.parked}, {"relayed", ps.plainNew, ps.relayed}} {
		var p50s, p99s []float64
		for _, got := range perRound {
			p50s = append(p50s, got[c.contin.name+" p50"]/(2*got[c.plain.name+" p50"]))
			p99s = append(p99s, got[c.contin.name+" p99"]/(2*got[c.plain.name+" p99"]))
		}
		plainP50, contP50 := us(pct(samples[c.plain.name], 50)), us(pct(samples[c.contin.name], 50))
		plainP99, contP99 := us(pct(samples[c.plain.name], 99)), us(pct(samples[c.contin.name], 99))
		ratio, ratio99 := round3(contP50/(2*plainP50)), round3(contP99/(2*plainP99))
		r.set("continuation_ratio_"+c.key, ratio)
		r.set("continuation_p99_ratio_"+c.key, ratio99)
		r.set("plain_"+c.key+"_p50_us", plainP50)
		r.set("continued_"+c.key+"_p50_us", contP50)
		r.row(c.key+": plain / continued call p50", fmt.Sprintf("%.0f / %.0f µs", plainP50, contP50), "")
		r.row(c.key+": continuation_ratio p50 (spread)", fmt.Sprintf("%v (%s)", ratio, r.setSpread("continuation_ratio_"+c.key, p50s)), "≤ 1: one extra call")
		r.row(c.key+": continuation_ratio p99 (spread)", fmt.Sprintf("%v (%s)", ratio99, r.setSpread("continuation_p99_ratio_"+c.key, p99s)), "")
	}
	return nil
}
