package kubediscovery

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// syncBuffer is a log destination safe for the reflector's goroutine and
// the test's.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBackoffAfterOutage: a reflector built by addSource whose API server
// refuses connections (a real ECONNREFUSED from the kernel, dialling a
// closed port) retries with waits that grow from Backoff.Duration and never
// exceed Cap×(1+Jitter), however long the outage (client-go's default
// reaches 30–60 s); the source is failing from the first refusal, with the
// reason, logged once; once the server answers, the next retry (at most
// 1.5 s later) lists and the source is watching.
func TestBackoffAfterOutage(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	maxWait := time.Duration(float64(Backoff.Cap) * (1 + Backoff.Jitter))

	synctest.Test(t, func(t *testing.T) {
		var logs syncBuffer
		d := &Discovery{log: slog.New(slog.NewTextHandler(&logs, nil)), dirty: make(chan struct{}, 1)}
		var mu sync.Mutex
		down := true
		var attempts []time.Time
		lw := &cache.ListWatch{
			ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
				l := &unstructured.UnstructuredList{}
				l.SetResourceVersion("1")
				return l, nil
			},
			WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
				mu.Lock()
				attempts = append(attempts, time.Now())
				isDown := down
				mu.Unlock()
				if isDown {
					_, err := net.Dial("tcp", addr)
					if err == nil {
						t.Errorf("dialling the closed port %s succeeded", addr)
					}
					return nil, err
				}
				w := watch.NewFakeWithChanSize(1, false)
				if o.SendInitialEvents != nil && *o.SendInitialEvents {
					// The end of the streamed list (no objects).
					b := &unstructured.Unstructured{}
					b.SetResourceVersion("1")
					b.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
					w.Action(watch.Bookmark, b)
				}
				return w, nil
			},
		}
		d.addSource("mcpservers", lw, nil, &unstructured.Unstructured{}, 0)
		s := d.sources[0]
		start := time.Now()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.reflector.RunWithContext(ctx)
		}()

		time.Sleep(60 * time.Second) // a minute's outage
		synctest.Wait()
		st := d.Sources()[0]
		if st.State != StateFailing || !strings.Contains(st.Err, "connection refused") || !st.Since.Equal(start) || st.Synced {
			t.Fatalf("during the outage: %+v, want failing since %v with connection refused, not synced", st, start)
		}
		mu.Lock()
		gaps := make([]time.Duration, 0, len(attempts))
		for i := 1; i < len(attempts); i++ {
			gaps = append(gaps, attempts[i].Sub(attempts[i-1]))
		}
		down = false
		recovered := time.Now()
		mu.Unlock()
		if len(gaps) < 30 {
			t.Fatalf("%d retries in a minute (gaps %v), want at least one per %v", len(gaps), gaps, maxWait)
		}
		if gaps[0] < Backoff.Duration || gaps[0] > time.Duration(float64(Backoff.Duration)*(1+Backoff.Jitter)) {
			t.Errorf("first wait %v, want Backoff.Duration %v (jittered)", gaps[0], Backoff.Duration)
		}
		for i, g := range gaps {
			if g > maxWait {
				t.Fatalf("wait %d of the outage was %v, want at most %v (gaps %v)", i, g, maxWait, gaps)
			}
		}
		if n := strings.Count(logs.String(), "source failing"); n != 1 {
			t.Errorf("%d 'source failing' log lines for one outage, want 1:\n%s", n, logs.String())
		}

		time.Sleep(maxWait)
		synctest.Wait()
		st = d.Sources()[0]
		mu.Lock()
		last := attempts[len(attempts)-1]
		mu.Unlock()
		if st.State != StateWatching || st.Err != "" || !st.Synced || last.Sub(recovered) > maxWait {
			t.Fatalf("after the server is back: %+v (last attempt %v after), want watching and synced within %v", st, last.Sub(recovered), maxWait)
		}
		if !strings.Contains(logs.String(), "source watching") || !strings.Contains(logs.String(), "was=failing") {
			t.Errorf("no log line of the return to watching:\n%s", logs.String())
		}
		t.Logf("a minute's outage: %d retries, waits %v … %v; watching %v after the server answered", len(gaps), gaps[0], gaps[len(gaps)-1], st.Since.Sub(recovered))
		cancel()
		<-done
	})
}

func TestBoundErr(t *testing.T) {
	long := strings.Repeat("é", MaxErrBytes)
	got := boundErr(long)
	if len(got) > MaxErrBytes || !strings.HasSuffix(got, "…") || !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Errorf("boundErr: %d bytes, suffix %q", len(got), got[len(got)-8:])
	}
	if got := boundErr("short"); got != "short" {
		t.Errorf("boundErr(short) = %q", got)
	}
}
