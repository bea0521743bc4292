// Package kubetest runs a real Kubernetes API server (kube-apiserver and
// etcd, built by scripts/kube-bins.sh into .bin/) for tests, through
// controller-runtime's envtest, with the SIG MCPServer CRD applied from a
// pinned copy (kubediscovery/testdata). Test code only: the toolsvc binary
// never links it.
//
// A test skips when the binaries are missing, unless TOOLSVC_KUBE_TESTS=1
// (scripts/test.sh sets it after building them): then it fails.
package kubetest

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

var quietOnce sync.Once

// Env is a running API server with etcd.
type Env struct {
	env    *envtest.Environment
	Config *rest.Config // the admin (system:masters)
	Kube   kubernetes.Interface
	Dyn    dynamic.Interface
}

// root is the repository's root (this file is internal/kubetest/kubetest.go).
func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// BinDir is where scripts/kube-bins.sh puts kube-apiserver and etcd.
func BinDir() string { return filepath.Join(root(), ".bin") }

// Available reports whether the binaries are there; when not, the reason.
func Available() (bool, string) {
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(BinDir(), b)); err != nil {
			return false, "no " + b + " in .bin/ (scripts/kube-bins.sh builds it)"
		}
	}
	return true, ""
}

// SkipIfUnavailable skips t without the binaries, unless CI asked for the
// tests (TOOLSVC_KUBE_TESTS=1), where it fails.
func SkipIfUnavailable(t testing.TB) {
	t.Helper()
	if ok, why := Available(); !ok {
		if os.Getenv("TOOLSVC_KUBE_TESTS") == "1" {
			t.Fatalf("TOOLSVC_KUBE_TESTS=1 but %s", why)
		}
		t.Skipf("%s; set TOOLSVC_KUBE_TESTS=1 to require it", why)
	}
}

// Start runs an API server (RBAC authorization) with the MCPServer CRD
// and stops it when t ends.
func Start(t testing.TB) *Env {
	t.Helper()
	SkipIfUnavailable(t)
	quietOnce.Do(func() { ctrllog.SetLogger(logr.Discard()) }) // envtest's own progress lines
	env := &envtest.Environment{
		BinaryAssetsDirectory:    BinDir(),
		CRDDirectoryPaths:        []string{filepath.Join(root(), "kubediscovery", "testdata")},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	// A fixed certificate directory: a restarted API server (Restart) keeps
	// its serving certificate and port, so clients reconnect as to a real one.
	env.ControlPlane.GetAPIServer().CertDir = t.TempDir()
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start the API server: %v", err)
	}
	e := &Env{env: env, Config: cfg}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop the API server: %v", err)
		}
	})
	e.Kube = kubernetes.NewForConfigOrDie(cfg)
	e.Dyn = dynamic.NewForConfigOrDie(cfg)
	e.warmWatch(t)
	return e
}

// mcpServers is the CRD's resource (kubediscovery.MCPServerResource; not
// imported: kubediscovery's own tests import this package).
var mcpServers = schema.GroupVersionResource{Group: "mcp.x-k8s.io", Version: "v1beta1", Resource: "mcpservers"}

// warmWatch waits until a watch on MCPServers from a list's resource
// version delivers a new object. The CRD was installed a moment ago, and
// until the API server's watch cache for it has caught up, a watch from a
// fresh list can be held back (a client retries after a backoff): an
// installation where the CRD has existed for long does not see that, so
// the tests' deadlines start from a warm API server.
func (e *Env) warmWatch(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res := e.Dyn.Resource(mcpServers).Namespace("default")
	for ctx.Err() == nil {
		list, err := res.List(ctx, metav1.ListOptions{})
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		probe := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "mcp.x-k8s.io/v1beta1", "kind": "MCPServer",
			"metadata": map[string]any{"generateName": "warm-"}, "spec": map[string]any{}}}
		created, err := res.Create(ctx, probe, metav1.CreateOptions{})
		if err != nil {
			w.Stop()
			t.Fatalf("warm-up MCPServer: %v", err)
		}
		seen := false
		timer := time.NewTimer(5 * time.Second)
	wait:
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					break wait
				}
				if o, isObj := ev.Object.(*unstructured.Unstructured); isObj && o.GetName() == created.GetName() {
					seen = true
					break wait
				}
			case <-timer.C:
				break wait
			}
		}
		timer.Stop()
		w.Stop()
		_ = res.Delete(ctx, created.GetName(), metav1.DeleteOptions{})
		if seen {
			return
		}
	}
	t.Fatalf("the API server never delivered an MCPServer watch event")
}

// StopAPIServer stops kube-apiserver (etcd keeps running): SIGTERM, then
// SIGKILL after 2 s (with watches open it drains far longer), as an
// outage looks to its clients.
func (e *Env) StopAPIServer(t testing.TB) {
	t.Helper()
	as := e.env.ControlPlane.APIServer
	stopTimeout := as.StopTimeout
	as.StopTimeout = 2 * time.Second
	defer func() { as.StopTimeout = stopTimeout }()
	if err := as.Stop(); err != nil && !strings.Contains(err.Error(), "timeout waiting for process") {
		t.Fatalf("stop kube-apiserver: %v", err)
	}
}

// StartAPIServer starts kube-apiserver again on the same port and
// certificates.
func (e *Env) StartAPIServer(t testing.TB) {
	t.Helper()
	if err := e.env.ControlPlane.APIServer.Start(); err != nil {
		t.Fatalf("restart kube-apiserver: %v", err)
	}
}

// User provisions a user (client certificate) with no permissions of its
// own and returns its configuration and a kubeconfig file for it.
func (e *Env) User(t testing.TB, name string) (*rest.Config, string) {
	t.Helper()
	u, err := e.env.AddUser(envtest.User{Name: name}, &rest.Config{QPS: 1000, Burst: 2000})
	if err != nil {
		t.Fatalf("add user %s: %v", name, err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		t.Fatalf("kubeconfig of %s: %v", name, err)
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	return u.Config(), path
}

// Grant gives user list and watch on resources of group, cluster-wide
// (the ClusterRole of the Helm chart's all-namespaces mode).
func (e *Env) Grant(t testing.TB, user, group string, resources ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := "toolsvc-test-" + user + "-" + group
	if group == "" {
		name += "core"
	}
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: resources, Verbs: []string{"list", "watch"}}}}
	if _, err := e.Kube.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ClusterRole: %v", err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
	if _, err := e.Kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ClusterRoleBinding: %v", err)
	}
}
