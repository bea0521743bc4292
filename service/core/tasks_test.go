package core

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/toolsvc/toolsvc/mcpbridge"
)

// TestTaskHandles: a handle opens for its principal only, with every field
// it sealed; altered, truncated, foreign-key and non-handles are
// TASK_HANDLE_INVALID on the field handle; two seals of one task differ
// (a fresh nonce) and both open.
func TestTaskHandles(t *testing.T) {
	tc := newTaskCore([]byte("0123456789abcdef0123456789abcdef"), 0, 1)
	b := handleBody{Principal: "ann", Tool: "ts__slow", Created: 1,
		Ref: mcpbridge.TaskRef{Server: "ts", ID: "task-1", Era: mcpbridge.TaskEra2025, Session: "sess-secret"}}
	h := tc.seal(b)
	if strings.Contains(h, "sess-secret") || strings.Contains(h, "task-1") {
		t.Errorf("handle %q shows what it seals", h)
	}
	got, e := tc.open(h, "ann", "")
	if e != nil || got != b {
		t.Fatalf("open = %+v, %v; want %+v", got, e, b)
	}
	if h2 := tc.seal(b); h2 == h {
		t.Error("two seals of one task are equal: the nonce is not fresh")
	} else if _, e := tc.open(h2, "ann", ""); e != nil {
		t.Errorf("second seal: %v", e)
	}
	if _, e := tc.open(h, "bob", ""); e == nil || e.Reason != ReasonTaskNotYours || e.Code != PermissionDenied {
		t.Errorf("open as bob = %v, want TASK_NOT_YOURS", e)
	}
	other := newTaskCore([]byte("another key, also 32 bytes long!"), 0, 1)
	flip := []byte(h)
	flip[len(flip)/2] ^= 1
	for name, bad := range map[string]string{
		"empty": "", "other key": other.seal(b), "flipped": string(flip), "truncated": h[:len(h)-4],
		"no version": strings.TrimPrefix(h, "t1."), "state": "s1.e30.x", "too long": "t1." + strings.Repeat("A", maxHandleLen),
	} {
		_, e := tc.open(bad, "ann", "")
		if e == nil || e.Reason != ReasonTaskHandleInvalid || e.Code != InvalidArgument || len(e.Violations) != 1 || e.Violations[0].Field != "handle" {
			t.Errorf("%s: open = %v, want TASK_HANDLE_INVALID on handle", name, e)
		}
	}
}

// TestTaskPollSubject: the shared poll loop of a task polls with the
// watchers' JWT that expires last (the owner's credentials for a per-user
// upstream), forgets a watcher's token when it leaves, and has none left
// for watchers without a JWT.
func TestTaskPollSubject(t *testing.T) {
	tok := func(sub string, exp time.Time) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: sub, ExpiresAt: jwt.NewNumericDate(exp)}).
			SignedString([]byte("k"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	now := time.Now()
	early, late, later := tok("ann", now.Add(time.Minute)), tok("ann", now.Add(time.Hour)), tok("ann", now.Add(2*time.Hour))
	p := &taskPoll{}
	if got := p.subject(); got != "" {
		t.Errorf("no watcher: subject %q", got)
	}
	wNone := p.addSubject("") // a watcher without a JWT adds nothing
	wLate := p.addSubject(late)
	p.addSubject(early)
	if got := p.subject(); got != late {
		t.Errorf("subject = exp %d, want the later-expiring token", jwtExpiry(got))
	}
	wLater := p.addSubject(later)
	if got := p.subject(); got != later {
		t.Error("a newer watcher's later token is not used")
	}
	for _, w := range []int{wLater, wLate} {
		p.mu.Lock()
		delete(p.subjects, w)
		p.mu.Unlock()
	}
	if got := p.subject(); got != early {
		t.Error("after the others left, the remaining watcher's token is not used")
	}
	if jwtExpiry("not a jwt") != 0 || wNone == 0 {
		t.Error("an unreadable token has an expiry")
	}
}

// The watch bound counts per principal and frees a slot on leave; the
// refusal is RESOURCE_EXHAUSTED TOO_MANY_TASK_WATCHES naming the limit.
func TestTaskWatchesBound(t *testing.T) {
	w := taskWatches{max: 2, n: map[string]int{}}
	for range 2 {
		if e := w.enter("ann"); e != nil {
			t.Fatal(e)
		}
	}
	e := w.enter("ann")
	if e == nil || e.Code != ResourceExhausted || e.Reason != ReasonTooManyTaskWatches || e.Meta["limit"] != limitTaskWatchesPerPrincipal {
		t.Fatalf("third watch: %v", e)
	}
	if e := w.enter("bob"); e != nil {
		t.Fatalf("bob: %v", e)
	}
	w.leave("ann")
	if e := w.enter("ann"); e != nil {
		t.Fatalf("after a leave: %v", e)
	}
	w.leave("ann")
	w.leave("ann")
	w.leave("bob")
	if len(w.n) != 0 {
		t.Fatalf("counts left: %v", w.n)
	}
}

// claimStale picks at most n unfinished tasks older than fresh, the
// stalest first, and a second claim right after gets none of them.
func TestLedgerClaimStale(t *testing.T) {
	l := taskLedger{m: map[string][]*ledgerEntry{}}
	keys := map[string]bool{}
	for i := range 5 {
		b := handleBody{Principal: "ann", Tool: "s__slow", Ref: mcpbridge.TaskRef{Server: "s", ID: fmt.Sprint(i)}}
		st := mcpbridge.TaskWorking
		if i == 4 {
			st = mcpbridge.TaskCompleted
		}
		l.note(b, &Task{Task: mcpbridge.Task{Status: st}})
		keys[pollKey(b)] = true
	}
	if got := l.claimStale("ann", keys, time.Hour, 10); len(got) != 0 {
		t.Fatalf("fresh entries claimed: %v", got)
	}
	old := time.Now().Add(-time.Minute)
	for i, e := range l.m["ann"] {
		e.checked = old.Add(time.Duration(-i) * time.Second) // the later, the staler
	}
	got := l.claimStale("ann", keys, time.Second, 2)
	want := map[string]bool{l.m["ann"][3].key: true, l.m["ann"][2].key: true}
	if len(got) != 2 || !got[l.m["ann"][3].key] || !got[l.m["ann"][2].key] {
		t.Fatalf("claimed %v, want the two stalest unfinished %v", got, want)
	}
	if again := l.claimStale("ann", keys, time.Second, 10); len(again) != 2 || again[l.m["ann"][3].key] || again[l.m["ann"][4].key] {
		t.Fatalf("second claim %v: want the other two unfinished", again)
	}
}
