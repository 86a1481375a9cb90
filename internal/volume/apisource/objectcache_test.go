package apisource

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// watchClient is a fake clientset that reports each watch it opens and
// each list's field selector.
type watchClient struct {
	*fake.Clientset
	watches chan string // "resource ns fieldSelector"

	mu    sync.Mutex
	lists []string
}

func newWatchClient(objects ...runtime.Object) *watchClient {
	c := &watchClient{Clientset: fake.NewClientset(objects...), watches: make(chan string, 100)}
	c.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w := a.(k8stesting.WatchActionImpl)
		c.watches <- a.GetResource().Resource + " " + a.GetNamespace() + " " + w.WatchRestrictions.Fields.String()
		return false, nil, nil
	})
	c.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.ListActionImpl)
		c.mu.Lock()
		c.lists = append(c.lists, a.GetResource().Resource+" "+a.GetNamespace()+" "+l.ListRestrictions.Fields.String())
		c.mu.Unlock()
		return false, nil, nil
	})
	return c
}

// waitWatch waits for the watch of want ("secrets ns metadata.name=s").
func (c *watchClient) waitWatch(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-c.watches:
			if got == want {
				return
			}
		case <-timeout:
			t.Fatalf("no watch %q opened", want)
		}
	}
}

func podWith(uid, ns string, vols ...v1.Volume) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: ns, UID: k8stypes.UID("uid-" + uid)}, Spec: v1.PodSpec{Volumes: vols}}
}

func secretVol(name string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: name}}}
}

func configMapVol(name string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: name}}}}
}

func TestRegisterPodCountsReferences(t *testing.T) {
	c := newWatchClient()
	s := New(t.Context(), c, Options{})
	a := podWith("a", "ns", secretVol("s"))
	b := podWith("b", "ns", secretVol("s"), configMapVol("cm"))
	key := func(kind, name string) objectKey { return objectKey{kind, "ns", name} }
	check := func(step string, want map[objectKey]int) {
		t.Helper()
		got := s.objects.watching()
		if len(got) != len(want) {
			t.Errorf("%s: watching %v, want %v", step, got, want)
			return
		}
		for k, n := range want {
			if got[k] != n {
				t.Errorf("%s: watching %v, want %v", step, got, want)
				return
			}
		}
	}

	s.RegisterPod(a)
	c.waitWatch(t, "secrets ns metadata.name=s")
	s.RegisterPod(a) // again: no second reference
	s.RegisterPod(b)
	c.waitWatch(t, "configmaps ns metadata.name=cm")
	check("a and b registered", map[objectKey]int{key(KindSecret, "s"): 2, key(KindConfigMap, "cm"): 1})

	s.objects.mu.Lock()
	secretWatch := s.objects.items[key(KindSecret, "s")]
	s.objects.mu.Unlock()

	// An update of a that drops the secret and adds a config map.
	a2 := a.DeepCopy()
	a2.Spec.Volumes = []v1.Volume{configMapVol("cm")}
	s.RegisterPod(a2)
	check("a updated", map[objectKey]int{key(KindSecret, "s"): 1, key(KindConfigMap, "cm"): 2})

	s.UnregisterPod(b)
	check("b unregistered", map[objectKey]int{key(KindConfigMap, "cm"): 1})
	select {
	case <-secretWatch.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the secret's watch still runs after its last reference went")
	}
	s.UnregisterPod(a2)
	s.UnregisterPod(a2)
	check("all unregistered", map[objectKey]int{})

	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lists {
		if l != "secrets ns metadata.name=s" && l != "configmaps ns metadata.name=cm" {
			t.Errorf("a list not of one object by name: %q", l)
		}
	}
}

// changes records OnChange calls.
type changes chan string

func (ch changes) on(kind, ns, name string) { ch <- kind + " " + ns + "/" + name }

func (ch changes) expect(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Errorf("OnChange(%s), want OnChange(%s)", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no OnChange(%s)", want)
	}
}

func (ch changes) none(t *testing.T) {
	t.Helper()
	select {
	case got := <-ch:
		t.Errorf("unexpected OnChange(%s)", got)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestWatchedObjectChanges(t *testing.T) {
	c := newWatchClient(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "ns"}})
	ch := make(changes, 10)
	s := New(t.Context(), c, Options{OnChange: ch.on})
	ctx := t.Context()
	s.RegisterPod(podWith("a", "ns", configMapVol("cm")))

	if _, err := s.ConfigMap(ctx, "ns", "cm"); !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap of a missing one: %v, want NotFound", err)
	}
	c.waitWatch(t, "configmaps ns metadata.name=cm")
	ch.none(t) // the first list is no change

	cms := c.CoreV1().ConfigMaps("ns")
	if _, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"k": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ch.expect(t, "ConfigMap ns/cm")
	if cm, err := s.ConfigMap(ctx, "ns", "cm"); err != nil || cm.Data["k"] != "1" {
		t.Fatalf("ConfigMap after create: %v, %v", cm, err)
	}
	if _, err := cms.Update(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"k": "2"}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ch.expect(t, "ConfigMap ns/cm")
	if cm, err := s.ConfigMap(ctx, "ns", "cm"); err != nil || cm.Data["k"] != "2" {
		t.Fatalf("ConfigMap after update: %v, %v", cm, err)
	}
	// The fake's watch is not filtered by name: another object's events
	// are not ours.
	if _, err := cms.Update(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "ns"}, Data: map[string]string{"x": "y"}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ch.none(t)
	if err := cms.Delete(ctx, "cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ch.expect(t, "ConfigMap ns/cm")
	if _, err := s.ConfigMap(ctx, "ns", "cm"); !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap after delete: %v, want NotFound", err)
	}
}

func TestWatchForbidden(t *testing.T) {
	c := newWatchClient(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}})
	c.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(v1.Resource("secrets"), "s", nil)
	})
	s := New(t.Context(), c, Options{})
	s.RegisterPod(podWith("a", "ns", secretVol("s")))
	if _, err := s.Secret(t.Context(), "ns", "s"); !apierrors.IsForbidden(err) {
		t.Fatalf("Secret the node may not list: %v, want Forbidden", err)
	}
}

func TestGetWaitsWithinContext(t *testing.T) {
	c := newWatchClient()
	block := make(chan struct{})
	defer close(block)
	c.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		<-block
		return true, nil, context.Canceled
	})
	s := New(t.Context(), c, Options{})
	s.RegisterPod(podWith("a", "ns", secretVol("s")))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Secret(ctx, "ns", "s"); err == nil || ctx.Err() == nil {
		t.Fatalf("Secret before the watch listed: %v, want the context's end", err)
	}
}

func TestImmutableStopsWatch(t *testing.T) {
	c := newWatchClient(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Immutable: ptr.To(true), Data: map[string][]byte{"k": []byte("v")}})
	s := New(t.Context(), c, Options{})
	s.RegisterPod(podWith("a", "ns", secretVol("s")))
	if sec, err := s.Secret(t.Context(), "ns", "s"); err != nil || string(sec.Data["k"]) != "v" {
		t.Fatalf("Secret: %v, %v", sec, err)
	}
	s.objects.mu.Lock()
	item := s.objects.items[objectKey{KindSecret, "ns", "s"}]
	s.objects.mu.Unlock()
	select {
	case <-item.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch of an immutable secret still runs once fetched")
	}
	if sec, err := s.Secret(t.Context(), "ns", "s"); err != nil || string(sec.Data["k"]) != "v" {
		t.Fatalf("Secret after its watch stopped: %v, %v", sec, err)
	}
}

func TestUnregisteredObjectIsRead(t *testing.T) {
	c := newWatchClient(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}})
	s := New(t.Context(), c, Options{})
	if _, err := s.Secret(t.Context(), "ns", "s"); err != nil {
		t.Fatalf("Secret not registered: %v", err)
	}
	if _, err := s.Secret(t.Context(), "ns", "missing"); !apierrors.IsNotFound(err) {
		t.Fatalf("Secret not registered and missing: %v, want NotFound", err)
	}
	if n := len(s.objects.watching()); n != 0 {
		t.Errorf("%d watches started by a read", n)
	}
}
