package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// saToken, set by -sa-token, gives every actorlet pod the API server's
// default service-account volume (kube-api-access-*: a token, the CA and
// the namespace), as pods of real workloads have.
var saToken bool

// withProbes, set by -probes, gives every actorlet pod's container the
// three probes at periodSeconds 1 (startup and readiness httpGet,
// liveness tcpSocket) against a busybox httpd it runs: the issue's
// probe-heavy variant. The floor's pods have none.
var withProbes bool

// probedCommand serves a page for the probes on port 8080.
var probedCommand = []string{"sh", "-c", "mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 8080 -h /www"}

func benchProbes(c *v1.Container) {
	port := intstr.FromInt32(8080)
	httpGet := v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/", Port: port}}
	c.Command = probedCommand
	// Timeouts of 5 s: on two cores, 110 httpd forking for 330 probes a
	// second while pods start can take more than the default second to
	// answer, and a liveness kill would start the pod over.
	c.StartupProbe = &v1.Probe{ProbeHandler: httpGet, PeriodSeconds: 1, TimeoutSeconds: 5, FailureThreshold: 60}
	c.ReadinessProbe = &v1.Probe{ProbeHandler: httpGet, PeriodSeconds: 1, TimeoutSeconds: 5}
	c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: port}}, PeriodSeconds: 1, TimeoutSeconds: 5, FailureThreshold: 5}
}

// benchPod is the workload: busybox `sleep 3600`, never pulled,
// bound to the node, a grace period of 1 s and no service account token
// (unless -sa-token).
func benchPod(ns, name, nodeName, image string) *v1.Pod {
	grace := int64(1)
	automount := saToken
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.PodSpec{
			NodeName:                      nodeName,
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &automount,
			Containers: []v1.Container{{Name: "c", Image: image, ImagePullPolicy: v1.PullNever,
				Command: []string{"sh", "-c", "sleep 3600"}}},
		},
	}
	if withProbes {
		benchProbes(&p.Spec.Containers[0])
	}
	return p
}

// podTracker records, from an informer on one namespace, when each pod was
// first seen Ready=True and when it was deleted.
type podTracker struct {
	mu sync.Mutex
	// updates counts the pod events seen (adds and updates).
	updates int
	ready   map[string]time.Time
	deleted map[string]time.Time
	// changed has a value whenever the maps changed since the last wait.
	changed chan struct{}
	stop    chan struct{}
}

// trackPods starts an informer on the pods of ns and returns once its
// cache has synced.
func trackPods(ctx context.Context, cs kubernetes.Interface, ns string) (*podTracker, error) {
	t := &podTracker{
		ready: map[string]time.Time{}, deleted: map[string]time.Time{},
		changed: make(chan struct{}, 1), stop: make(chan struct{}),
	}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.seen(obj) },
		UpdateFunc: func(_, obj any) { t.seen(obj) },
		DeleteFunc: t.gone,
	})
	if err != nil {
		return nil, fmt.Errorf("pod informer on namespace %s: %w", ns, err)
	}
	f.Start(t.stop)
	synced := make(chan struct{})
	go func() {
		cache.WaitForCacheSync(t.stop, inf.HasSynced)
		close(synced)
	}()
	select {
	case <-synced:
		return t, nil
	case <-ctx.Done():
		close(t.stop)
		return nil, fmt.Errorf("pod informer on namespace %s: %w", ns, ctx.Err())
	}
}

func (t *podTracker) close() { close(t.stop) }

func (t *podTracker) seen(obj any) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.updates++
	p, ok := obj.(*v1.Pod)
	if !ok || !podReady(p) {
		return
	}
	if _, done := t.ready[p.Name]; !done {
		t.ready[p.Name] = now
		t.notify()
	}
}

// updateCount is how many pod events the tracker has seen.
func (t *podTracker) updateCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.updates
}

func (t *podTracker) gone(obj any) {
	now := time.Now()
	var name string
	switch o := obj.(type) {
	case *v1.Pod:
		name = o.Name
	case cache.DeletedFinalStateUnknown:
		_, name, _ = cache.SplitMetaNamespaceKey(o.Key)
	default:
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, done := t.deleted[name]; !done {
		t.deleted[name] = now
		t.notify()
	}
}

func (t *podTracker) notify() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// counts returns how many pods were seen Ready and deleted so far.
func (t *podTracker) counts() (ready, deleted int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.ready), len(t.deleted)
}

// snapshot copies the times recorded so far.
func (t *podTracker) snapshot() (ready, deleted map[string]time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ready, deleted = make(map[string]time.Time, len(t.ready)), make(map[string]time.Time, len(t.deleted))
	for k, v := range t.ready {
		ready[k] = v
	}
	for k, v := range t.deleted {
		deleted[k] = v
	}
	return ready, deleted
}

// waitFor waits until done() holds, re-checking on every informer event.
func (t *podTracker) waitFor(ctx context.Context, what string, within time.Duration, done func() bool) error {
	deadline := time.After(within)
	for !done() {
		select {
		case <-t.changed:
		case <-deadline:
			return fmt.Errorf("%s: not within %v", what, within)
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
	}
	return nil
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// createPods creates the pods by parallel calls and returns when each call
// started. Failed creates are returned joined; the pods that were created
// are in the map.
func createPods(ctx context.Context, cs kubernetes.Interface, pods []*v1.Pod) (map[string]time.Time, error) {
	var mu sync.Mutex
	at := make(map[string]time.Time, len(pods))
	var errs []error
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Go(func() {
			start := time.Now()
			_, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("create pod %s/%s: %w", p.Namespace, p.Name, err))
				return
			}
			at[p.Name] = start
		})
	}
	wg.Wait()
	return at, errors.Join(errs...)
}

// deletePods deletes the pods by parallel calls, with their own grace
// period, as `kubectl delete` does.
func deletePods(ctx context.Context, cs kubernetes.Interface, ns string, names []string) error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Go(func() {
			if err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("delete pod %s/%s: %w", ns, name, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// createNamespace creates a namespace for a run's pods and waits for its
// default ServiceAccount, without which the ServiceAccount admission
// refuses pods.
func createNamespace(ctx context.Context, cs kubernetes.Interface, prefix string) (string, error) {
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix + randSuffix()}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create namespace %s…: %w", prefix, err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		_, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return ns.Name, nil
		}
		if time.Now().After(deadline) {
			return ns.Name, fmt.Errorf("default ServiceAccount of namespace %s not created within 90s (kube-controller-manager down?): %w", ns.Name, err)
		}
		select {
		case <-ctx.Done():
			return ns.Name, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// deleteNamespace removes a run's namespace, its pods first with grace 0
// so that nothing waits for a kubelet that may be gone. It runs at cleanup,
// also after an interrupt, so it has its own context.
func deleteNamespace(cs kubernetes.Interface, ns string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	zero := int64(0)
	err1 := cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	err2 := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("delete namespace %s: %w", ns, err)
	}
	return nil
}
