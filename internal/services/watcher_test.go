package services

import (
	"context"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// listed returns "namespace/name=clusterIP:port,..." of what w holds,
// sorted.
func listed(w *Watcher) []string {
	var out []string
	for _, s := range w.List() {
		var ports []string
		for _, p := range s.Spec.Ports {
			ports = append(ports, p.Name+"/"+string(p.Protocol)+"/"+strconv.Itoa(int(p.Port)))
		}
		out = append(out, s.Namespace+"/"+s.Name+"="+s.Spec.ClusterIP+":"+strings.Join(ports, ","))
	}
	slices.Sort(out)
	return out
}

func waitList(t *testing.T, w *Watcher, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := listed(w)
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("List: got %v, want %v", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWatcher(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(svc("default", "kubernetes", "10.96.0.1", named("https", 443, v1.ProtocolTCP)))
	// The first list waits for the test, so that HasSynced is seen false
	// while the watcher runs.
	release := make(chan struct{})
	var once sync.Once
	client.PrependReactor("list", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		once.Do(func() { <-release })
		return false, nil, nil
	})
	w := New(client)
	if w.HasSynced() {
		t.Fatal("HasSynced before Run")
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(runCtx)
	}()
	time.Sleep(50 * time.Millisecond)
	if w.HasSynced() {
		t.Fatal("HasSynced before the first list answered")
	}
	close(release)
	if !cache.WaitForCacheSync(ctx.Done(), w.HasSynced) {
		t.Fatal("never synced")
	}
	waitList(t, w, "default/kubernetes=10.96.0.1:https/TCP/443")

	// Upstream's field selector: headless Services are not listed.
	var selectors []string
	for _, a := range client.Actions() {
		if l, ok := a.(k8stesting.ListAction); ok {
			selectors = append(selectors, l.GetListRestrictions().Fields.String())
		}
	}
	if !slices.Equal(selectors, []string{"spec.clusterIP!=None"}) {
		t.Errorf("list field selectors: %v", selectors)
	}

	svcs := client.CoreV1().Services("app")
	db := svc("app", "db", "10.96.0.5", tcp(5432))
	if _, err := svcs.Create(ctx, db, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitList(t, w, "app/db=10.96.0.5:/TCP/5432", "default/kubernetes=10.96.0.1:https/TCP/443")

	db.Spec.Ports = append(db.Spec.Ports, named("metrics", 9187, v1.ProtocolTCP))
	if _, err := svcs.Update(ctx, db, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitList(t, w, "app/db=10.96.0.5:/TCP/5432,metrics/TCP/9187", "default/kubernetes=10.96.0.1:https/TCP/443")

	if err := svcs.Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitList(t, w, "default/kubernetes=10.96.0.1:https/TCP/443")

	stop()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context was done")
	}
}

func TestStrip(t *testing.T) {
	full := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "app", ResourceVersion: "7", UID: "u",
			Labels:        map[string]string{"app": "web"},
			Annotations:   map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Spec: v1.ServiceSpec{
			ClusterIP:  "10.96.0.7",
			ClusterIPs: []string{"10.96.0.7"},
			Selector:   map[string]string{"app": "web"},
			Type:       v1.ServiceTypeNodePort,
			Ports: []v1.ServicePort{{
				Name: "http", Protocol: v1.ProtocolTCP, Port: 80,
				TargetPort: intstr.FromInt32(8080), NodePort: 30080,
			}},
		},
		Status: v1.ServiceStatus{LoadBalancer: v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "1.1.1.1"}}}},
	}
	want := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "app", ResourceVersion: "7"},
		Spec: v1.ServiceSpec{
			ClusterIP: "10.96.0.7",
			Ports:     []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}},
		},
	}
	tombstone := cache.DeletedFinalStateUnknown{Key: "app/web", Obj: full}
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"a Service keeps what the variables read", full, want},
		{"idempotent", want, want},
		{"no ports", svc("app", "headless", "None"), svc("app", "headless", "None")},
		{"a tombstone passes through", tombstone, tombstone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := strip(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("strip:\n got %#v\nwant %#v", got, tt.want)
			}
		})
	}
	// The variables of the stripped Service are the full one's.
	stripped, _ := strip(full)
	if a, b := FromServices([]*v1.Service{full}), FromServices([]*v1.Service{stripped.(*v1.Service)}); !slices.Equal(a, b) {
		t.Errorf("stripping changed the variables:\n%v\n%v", a, b)
	}
}
