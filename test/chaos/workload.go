package chaos

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/actorlet/actorlet/test/agent"
)

// Unthrottled is n with an admin client of its own that client-go does
// not rate-limit (its default is 5 requests a second): the workload
// helpers' creates, deletes and polls of many pods would otherwise wait on
// the test's side, and a loop's time would be the client's.
func Unthrottled(n *agent.APIPods) (*agent.APIPods, error) {
	cfg := rest.CopyConfig(n.Cfg)
	cfg.QPS, cfg.Burst = 200, 400
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cluster := *n.ClusterNode
	cluster.Admin = cs
	fast := *n
	fast.ClusterNode = &cluster
	return &fast, nil
}

// PodNames are PREFIX-0 … PREFIX-(count-1).
func PodNames(prefix string, count int) []string {
	names := make([]string, count)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return names
}

// CreateSleepers creates one pod per name in the node's namespace, each a
// busybox that only sleeps (grace period 1 s), as the admin. It stops at
// the first error.
func CreateSleepers(n *agent.APIPods, names []string) error {
	for _, name := range names {
		p := n.NewPod(name, nil, n.Sleeper("c"))
		if _, err := n.Admin.CoreV1().Pods(n.NS).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s/%s: %w", n.NS, name, err)
		}
	}
	return nil
}

// DeletePods deletes the pods of the node's namespace by name, with their
// own grace period, as the admin; pods already gone are not an error.
func DeletePods(n *agent.APIPods, names []string) error {
	for _, name := range names {
		err := n.Admin.CoreV1().Pods(n.NS).Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s/%s: %w", n.NS, name, err)
		}
	}
	return nil
}

// NotRunning returns the names, of those given, that the API does not show
// Running with every container running, with why for the first few; nil
// when all are.
func NotRunning(n *agent.APIPods, names []string) ([]string, error) {
	pods, err := n.Admin.CoreV1().Pods(n.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return names, err
	}
	byName := map[string]*v1.Pod{}
	for i := range pods.Items {
		byName[pods.Items[i].Name] = &pods.Items[i]
	}
	var out, why []string
	for _, name := range names {
		p, ok := byName[name]
		switch {
		case !ok:
			out, why = append(out, name), append(why, name+": not in the API")
		case p.DeletionTimestamp != nil:
			out, why = append(out, name), append(why, name+": terminating")
		default:
			if err := agent.PodRunning(p); err != nil || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
				if err == nil {
					err = fmt.Errorf("pod %s: %d container statuses", name, len(p.Status.ContainerStatuses))
				}
				out, why = append(out, name), append(why, err.Error())
			}
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	if len(why) > 3 {
		why = append(why[:3], fmt.Sprintf("and %d more", len(why)-3))
	}
	return out, fmt.Errorf("%d of %d pods not running: %s", len(out), len(names), strings.Join(why, "; "))
}

// StillPresent returns the names, of those given, that the API still has
// (a pod stays, Terminating, until its node agent has stopped it), sorted.
func StillPresent(n *agent.APIPods, names []string) ([]string, error) {
	pods, err := n.Admin.CoreV1().Pods(n.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return names, err
	}
	want := map[string]bool{}
	for _, name := range names {
		want[name] = true
	}
	var out []string
	for _, p := range pods.Items {
		if want[p.Name] {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// WaitFor polls check every 200 ms until it returns nil or within passes,
// and returns how long it took and check's last error (nil on success).
// It is Eventually for scenarios that record the time as a figure, or
// that go on after a miss to measure the rest.
func WaitFor(within time.Duration, check func() error) (time.Duration, error) {
	start := time.Now()
	for {
		err := check()
		if err == nil {
			return time.Since(start), nil
		}
		if time.Since(start) > within {
			return time.Since(start), err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ShortID is a container ID (with or without its runtime:// prefix) cut
// to 12 characters, for messages.
func ShortID(id string) string {
	if _, after, ok := strings.Cut(id, "://"); ok {
		id = after
	}
	return id[:min(12, len(id))]
}
