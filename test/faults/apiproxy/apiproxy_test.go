package apiproxy

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/actorlet/actorlet/test/env"
)

func TestClass(t *testing.T) {
	for _, tc := range []struct{ method, url, want string }{
		{"GET", "/api/v1/nodes/n1", "GET nodes"},
		{"GET", "/api/v1/nodes?watch=true&resourceVersion=1", "WATCH nodes"},
		{"PATCH", "/api/v1/nodes/n1/status", "PATCH nodes/status"},
		{"PATCH", "/api/v1/namespaces/ns/pods/p/status", "PATCH pods/status"},
		{"GET", "/api/v1/namespaces/ns/pods?fieldSelector=spec.nodeName%3Dn&watch=1", "WATCH pods"},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", "PUT leases"},
		{"POST", "/api/v1/namespaces/ns/events", "POST events"},
		{"GET", "/api/v1/namespaces/ns", "GET namespaces"},
		{"GET", "/healthz", "GET /healthz"},
		{"GET", "/api", "GET /api"},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := Class(&http.Request{Method: tc.method, URL: u}); got != tc.want {
			t.Errorf("Class(%s %s) = %q, want %q", tc.method, tc.url, got, tc.want)
		}
	}
}

func TestRuleMatches(t *testing.T) {
	get := func(raw string) *http.Request {
		u, _ := url.Parse(raw)
		return &http.Request{Method: "GET", URL: u}
	}
	leases := regexp.MustCompile(`/leases/`)
	for _, tc := range []struct {
		name string
		rule Rule
		req  *http.Request
		want bool
	}{
		{"any", Rule{}, get("/api/v1/nodes"), true},
		{"method", Rule{Method: "PUT"}, get("/api/v1/nodes"), false},
		{"path", Rule{Path: leases}, get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n"), true},
		{"path miss", Rule{Path: leases}, get("/api/v1/nodes"), false},
		{"watch only", Rule{Watch: true}, get("/api/v1/pods?watch=true"), true},
		{"watch only, a get", Rule{Watch: true}, get("/api/v1/pods"), false},
		{"not watch, a watch", Rule{NotWatch: true}, get("/api/v1/pods?watch=1"), false},
	} {
		if got := tc.rule.matches(tc.req); got != tc.want {
			t.Errorf("%s: matches = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// setup starts a proxy in front of the environment's API server (as the
// admin) and returns it with a client through it and one straight to the
// API server.
func setup(t *testing.T) (p *Proxy, through, direct kubernetes.Interface) {
	t.Helper()
	e := env.Require(t, env.WithAPIServer())
	p, err := New(e.AdminKubeconfig, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	through, err = kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, through, e.AdminClient(t)
}

// namespace makes a namespace for the test, deleted at its end.
func namespace(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(),
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "apiproxy-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	return ns.Name
}

// anyVersion starts watches from the watch cache: a watch from "" waits
// for the cache to catch up with etcd and can time out (504) when it lags.
var anyVersion = metav1.ListOptions{ResourceVersion: "0"}

func getDefault(ctx context.Context, cs kubernetes.Interface, retries int) error {
	return cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default").MaxRetries(retries).Do(ctx).Error()
}

// expectEvent waits for a watch event of a ConfigMap named name.
func expectEvent(t *testing.T, w watch.Interface, name string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed before the event of %s", name)
			}
			if cm, ok := ev.Object.(*v1.ConfigMap); ok && cm.Name == name {
				return
			}
		case <-timeout:
			t.Fatalf("no watch event of %s within 10 s", name)
		}
	}
}

func TestForwards(t *testing.T) {
	p, through, direct := setup(t)
	ctx := context.Background()
	if _, err := through.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("GET through the proxy: %v", err)
	}
	ns := namespace(t, direct)
	w, err := through.CoreV1().ConfigMaps(ns).Watch(ctx, anyVersion)
	if err != nil {
		t.Fatalf("watch through the proxy: %v", err)
	}
	defer w.Stop()
	// The event is made straight at the API server: it can only come
	// through the proxy if the watch streams unbuffered.
	if _, err := direct.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, w, "a")
	s := p.Stats()
	if s.Requests["GET namespaces"] < 1 || s.Requests["WATCH configmaps"] != 1 {
		t.Errorf("stats: %s", s)
	}
}

func TestAnswers(t *testing.T) {
	p, through, _ := setup(t)
	ctx := context.Background()
	ns := regexp.MustCompile(`^/api/v1/namespaces/default$`)
	for _, tc := range []struct {
		status int
		is     func(error) bool
	}{
		{429, apierrors.IsTooManyRequests},
		{503, apierrors.IsServiceUnavailable},
		{500, apierrors.IsInternalError},
	} {
		r := p.Add(Rule{Method: "GET", Path: ns, Status: tc.status, RetryAfter: 1})
		err := getDefault(ctx, through, 0)
		if !tc.is(err) {
			t.Errorf("rule %d: client-go saw %v", tc.status, err)
		}
		var st apierrors.APIStatus
		if !errors.As(err, &st) || st.Status().Code != int32(tc.status) || st.Status().Details.RetryAfterSeconds != 1 {
			t.Errorf("rule %d: not its metav1.Status: %v", tc.status, err)
		}
		if r.Hits() != 1 {
			t.Errorf("rule %d: %d hits, want 1", tc.status, r.Hits())
		}
		p.Remove(r)
	}
	// With Retry-After, client-go retries on its own: the first two
	// answers are 429, the third is the API server's.
	r := p.Add(Rule{Method: "GET", Path: ns, Status: 429, RetryAfter: 1, First: 2})
	start := time.Now()
	if err := getDefault(ctx, through, 10); err != nil {
		t.Errorf("GET after two 429s: %v", err)
	}
	if r.Hits() != 2 || time.Since(start) < 2*time.Second {
		t.Errorf("429 ×2 with Retry-After 1: %d hits, %v", r.Hits(), time.Since(start))
	}
	p.Clear()
	// Drop: the request gets no answer at all.
	r = p.Add(Rule{Method: "GET", Path: ns, Drop: true, First: 1})
	if err := getDefault(ctx, through, 0); err == nil || apierrors.ReasonForError(err) != metav1.StatusReasonUnknown {
		t.Errorf("dropped GET: %v", err)
	}
	if err := getDefault(ctx, through, 0); err != nil || r.Hits() != 1 {
		t.Errorf("GET after the drop: %v (%d hits)", err, r.Hits())
	}
}

func TestDelay(t *testing.T) {
	p, through, _ := setup(t)
	ctx := context.Background()
	r := p.Add(Rule{Method: "GET", Path: regexp.MustCompile(`/namespaces/default$`), Delay: 1500 * time.Millisecond})
	start := time.Now()
	if err := getDefault(ctx, through, 0); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 1500*time.Millisecond || took > 10*time.Second || r.Hits() != 1 {
		t.Errorf("delayed GET took %v (%d hits), want ≥ 1.5 s", took, r.Hits())
	}
	p.Remove(r)
	start = time.Now()
	if err := getDefault(ctx, through, 0); err != nil || time.Since(start) > time.Second {
		t.Errorf("GET after the rule's removal: %v in %v", err, time.Since(start))
	}
}

func TestUnreachable(t *testing.T) {
	p, through, direct := setup(t)
	ctx := context.Background()
	ns := namespace(t, direct)
	w, err := through.CoreV1().ConfigMaps(ns).Watch(ctx, anyVersion)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	p.SetUnreachable(true)
	t.Cleanup(func() { p.SetUnreachable(false) })
	// The open watch is cut at once.
	select {
	case _, ok := <-w.ResultChan():
		for ok {
			_, ok = <-w.ResultChan()
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the open watch was not cut within 5 s")
	}
	// New requests get nowhere.
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	err = getDefault(cctx, through, 0)
	cancel()
	if err == nil {
		t.Fatal("GET while unreachable succeeded")
	}
	s := p.Stats()
	if s.Cut < 1 || s.Refused < 1 {
		t.Errorf("while unreachable: %s", s)
	}
	p.SetUnreachable(false)
	if err := getDefault(ctx, through, 0); err != nil {
		t.Fatalf("GET after recovery: %v", err)
	}
	w2, err := through.CoreV1().ConfigMaps(ns).Watch(ctx, anyVersion)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	if _, err := direct.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, w2, "b")
}
