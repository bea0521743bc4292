package tests

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/authtest"
)

// bearerRecorder is a reverse proxy in front of an upstream that refuses
// a request without a bearer token (401) and records, for every JSON-RPC
// request, its method and the sub claim of the bearer JWT (decoded: the
// JWT is toolsvc's exchanged token, signed by the authorization server).
type bearerRecorder struct {
	mu      sync.Mutex
	seen    []methodSub
	refused int
}

type methodSub struct{ method, sub string }

func (br *bearerRecorder) start(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	rp.FlushInterval = -1 // SSE
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sub := jwtSub(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		if sub == "" {
			br.mu.Lock()
			br.refused++
			br.mu.Unlock()
			http.Error(w, "bearer token required", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				Method string `json:"method"`
			}
			if json.Unmarshal(body, &m) == nil && m.Method != "" {
				br.mu.Lock()
				br.seen = append(br.seen, methodSub{m.Method, sub})
				br.mu.Unlock()
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL + u.Path
}

// subs returns the subjects that sent method, in order.
func (br *bearerRecorder) subs(method string) []string {
	br.mu.Lock()
	defer br.mu.Unlock()
	var out []string
	for _, s := range br.seen {
		if s.method == method {
			out = append(out, s.sub)
		}
	}
	return out
}

// jwtSub is the sub claim of a JWT ("" if it is none).
func jwtSub(tok string) string {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var c struct {
		Sub string `json:"sub"`
	}
	_ = json.Unmarshal(raw, &c)
	return c.Sub
}

// TestTasksPerUser: tasks on per-user (tokenExchange) upstreams, the
// TypeScript task server (2025-11-25, HTTP) and the Python one
// (2026-07-28), each behind a proxy that refuses requests without a bearer
// token and records whose exchanged token each request carried. alice's
// task is created, watched to its end (the shared poll loop, which runs
// for no request, polls with alice's token), read with GetTask and
// cancelled: every tasks/* request reaches the upstream as alice. bob
// gets TASK_NOT_YOURS, and no request reached an upstream without a token.
func TestTasksPerUser(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	defer http.DefaultClient.CloseIdleConnections()
	asProc := startProcWith(t, exec.Command(helperBinary(t, "authserver"), "-access-ttl", "10m"), procOpts{checkExit: true})
	issuer := asProc.log.waitFor(t, urlLineRE, 30*time.Second)
	all := taskServers(t)
	rec := map[string]*bearerRecorder{"tsh": {}, "py": {}}
	creds := &credsCfg{Mode: "tokenExchange", Issuer: issuer, ClientID: authToolsvc.ID, ClientSecret: authToolsvc.Secret,
		Audience: "urn:test:upstream"}
	srvs := servers{}
	for name, r := range rec {
		u := all[name]
		u.URL = r.start(t, u.URL)
		u.Credentials = creds
		u.PingInterval = "1h"
		srvs[name] = u
	}
	p := startToolsvc(t, cfg{Auth: &authCfg{JWT: &jwtCfg{JWKSURL: jwksURI(t, issuer), Issuer: issuer, Audience: "toolsvc"},
		Admins: []string{"alice"}}, Servers: srvs})
	tokens := map[string]string{}
	for _, user := range []string{"alice", "bob"} {
		tok, err := authtest.Login(ctx, issuer, authAgent, user)
		if err != nil {
			t.Fatalf("login %s: %v", user, err)
		}
		tokens[user] = tok.AccessToken
	}
	alice := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tokens["alice"])
	bob := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tokens["bob"])
	c := p.client
	adminConn, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer adminConn.Close()
	if _, err := c.ListTools(alice, &toolsvcv1.ListToolsRequest{}); err != nil { // primes: alice's sessions list
		t.Fatal(err)
	}
	for _, server := range []string{"tsh", "py"} {
		t.Run(server, func(t *testing.T) {
			r := rec[server]
			task := startTask(t, alice, c, server+"__slow", `{"ms": 300}`)
			statuses, last := watchTask(t, alice, c, task.GetHandle())
			if last.GetTask().GetStatus() != toolsvcv1.TaskStatus_TASK_STATUS_COMPLETED || resultText(last.GetResult()) != "slept 300" {
				t.Fatalf("alice's watched task: statuses %v, last %v", statuses, last)
			}
			got, err := c.GetTask(alice, &toolsvcv1.GetTaskRequest{Handle: task.GetHandle()})
			if err != nil || got.GetTask().GetStatus() != toolsvcv1.TaskStatus_TASK_STATUS_COMPLETED {
				t.Errorf("alice's GetTask = %v, %v", got, err)
			}
			_, err = c.GetTask(bob, &toolsvcv1.GetTaskRequest{Handle: task.GetHandle()})
			wantStatus(t, err, codes.PermissionDenied, "TASK_NOT_YOURS", "", "")

			long, err := c.CallTool(alice, &toolsvcv1.CallToolRequest{Name: server + "__slow", ArgumentsJson: `{"ms": 30000}`,
				Task: &toolsvcv1.TaskOptions{Ttl: durationpb.New(time.Minute)}})
			if err != nil || long.GetTask() == nil {
				t.Fatalf("long task: %v, %v", long, err)
			}
			cres, err := c.CancelTask(alice, &toolsvcv1.CancelTaskRequest{Handle: long.GetTask().GetHandle()})
			if err != nil || cres.GetTask().GetStatus() != toolsvcv1.TaskStatus_TASK_STATUS_CANCELLED {
				t.Fatalf("alice's CancelTask = %v, %v", cres, err)
			}
			_, last = watchTask(t, alice, c, long.GetTask().GetHandle())
			if last.GetTask().GetStatus() != toolsvcv1.TaskStatus_TASK_STATUS_CANCELLED {
				t.Errorf("watch of the cancelled task ended %v", last.GetTask().GetStatus())
			}

			if server == "tsh" {
				// alice's session closes (an operator's reconnect closes the
				// idle per-principal sessions) while it owns a running
				// 2025-11-25 task: the upstream session is left open, and
				// the task is reached on it by its id, with alice's
				// credentials. It owns that one task only: the two above
				// were seen ending on it (a session that owns none is
				// deleted upstream when it closes).
				orphan := startTask(t, alice, c, server+"__slow", `{"ms": 30000}`)
				if _, err := toolsvcv1.NewAdminServiceClient(adminConn).ReconnectServer(alice, &toolsvcv1.ReconnectServerRequest{Name: server}); err != nil {
					t.Fatalf("ReconnectServer: %v", err)
				}
				p.log.waitFor(t, regexp.MustCompile(`per-principal session closed.*server=tsh principal=alice`), 30*time.Second)
				if n := p.log.waitFor(t, regexp.MustCompile(`leaving the upstream session open .*server=tsh.* tasks=(\d+)`), 30*time.Second); n != "1" {
					t.Errorf("alice's closed session owned %s tasks not seen finished, want 1 (the running one)", n)
				}
				got, err := c.GetTask(alice, &toolsvcv1.GetTaskRequest{Handle: orphan.GetHandle()})
				if err != nil || got.GetTask().GetStatus() != toolsvcv1.TaskStatus_TASK_STATUS_WORKING {
					t.Fatalf("GetTask of the task of alice's closed session = %v, %v", got, err)
				}
				cres, err := c.CancelTask(alice, &toolsvcv1.CancelTaskRequest{Handle: orphan.GetHandle()})
				if err != nil || cres.GetTask().GetStatus() != toolsvcv1.TaskStatus_TASK_STATUS_CANCELLED {
					t.Fatalf("CancelTask of the task of alice's closed session = %v, %v", cres, err)
				}
			}

			for _, m := range []string{"tasks/get", "tasks/cancel"} {
				subs := r.subs(m)
				if len(subs) == 0 {
					t.Errorf("no %s reached %s", m, server)
				}
				for _, s := range subs {
					if s != "alice" {
						t.Errorf("%s reached %s as %q, want alice (every one: %v)", m, server, s, subs)
						break
					}
				}
			}
			if n := len(r.subs("tasks/get")); n < 3 {
				t.Errorf("%d tasks/get reached %s; want the watch's polls and GetTask", n, server)
			}
			r.mu.Lock()
			refused := r.refused
			r.mu.Unlock()
			if refused != 0 {
				t.Errorf("%d requests reached %s without a bearer token", refused, server)
			}
		})
	}
}
