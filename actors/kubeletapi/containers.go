package kubeletapi

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podref"
	"github.com/actorlet/actorlet/internal/podruntime"
)

// httpError is an error with the HTTP status it answers with.
type httpError struct {
	status int
	err    error
}

func (e *httpError) Error() string { return e.err.Error() }

func statusError(status int, format string, args ...any) error {
	return &httpError{status: status, err: fmt.Errorf(format, args...)}
}

// writeError answers err with its status (500 when it has none).
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	if he, ok := err.(*httpError); ok {
		status = he.status
	}
	http.Error(w, err.Error(), status)
}

// podByName finds a pod the pod-manager knows, as upstream's
// GetPodByName: the handlers act only on pods that are this node's. It
// reads the snapshot /pods answers from, so a flood of requests does not
// reach the pod-manager.
// A non-empty uid must match, so a request for a deleted pod's UID does not
// reach a new pod of the same name. A pod found without the non-empty
// container in its spec is looked for again in a younger snapshot, so an
// ephemeral container just added (and already running) is found.
func (a *Actor) podByName(ctx context.Context, namespace, name string, uid types.UID, container string) (*v1.Pod, error) {
	find := func(maxAge time.Duration) (*v1.Pod, error) {
		state, err := a.state.get(ctx, maxAge)
		if err != nil {
			return nil, err
		}
		if state.podsErr != nil {
			return nil, statusError(http.StatusServiceUnavailable, "find pod %s/%s: %v", namespace, name, state.podsErr)
		}
		for i := range state.pods.Pods {
			p := &state.pods.Pods[i]
			if p.Namespace == namespace && p.Name == name && (uid == "" || p.UID == uid) {
				return p.DeepCopy(), nil
			}
		}
		return nil, nil
	}
	// The snapshot first; a pod it does not hold may be newer than it, so
	// a miss looks again in a younger one.
	var found *v1.Pod
	for _, maxAge := range []time.Duration{snapshotMaxAge, missMaxAge} {
		p, err := find(maxAge)
		if err != nil {
			return nil, err
		}
		if p != nil {
			found = p
			if container == "" || podref.Container(p, container) != nil {
				return p, nil
			}
		}
	}
	if found != nil {
		return found, nil
	}
	return nil, statusError(http.StatusNotFound, "pod %s/%s does not exist on this node", namespace, name)
}

// podContainers lists the runtime's containers named container of pod,
// newest first (the current instance, then the previous one).
func (a *Actor) podContainers(ctx context.Context, pod *v1.Pod, container string) ([]*runtimeapi.Container, error) {
	resp, err := a.p.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{podruntime.LabelPodUID: string(pod.UID), podruntime.LabelContainerName: container},
	}})
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	cs := resp.Containers
	sort.Slice(cs, func(i, j int) bool {
		ri, rj := restartCount(cs[i]), restartCount(cs[j])
		if ri != rj {
			return ri > rj
		}
		return cs[i].CreatedAt > cs[j].CreatedAt
	})
	return cs, nil
}

func restartCount(c *runtimeapi.Container) int {
	n, _ := strconv.Atoi(c.Annotations[podruntime.AnnotationContainerRestartCount])
	return n
}

// runningContainer finds the running instance of container in pod, for
// exec and attach, as upstream: a container that is not running is an
// error the client sees.
func (a *Actor) runningContainer(ctx context.Context, pod *v1.Pod, container string) (*runtimeapi.Container, error) {
	if podref.Container(pod, container) == nil {
		return nil, statusError(http.StatusNotFound, "container %s is not valid for pod %s/%s", container, pod.Namespace, pod.Name)
	}
	cs, err := a.podContainers(ctx, pod, container)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return c, nil
		}
	}
	return nil, statusError(http.StatusBadRequest, "container %s of pod %s/%s is not running", container, pod.Namespace, pod.Name)
}

// readySandbox finds pod's ready sandbox, for port-forward.
func (a *Actor) readySandbox(ctx context.Context, pod *v1.Pod) (string, error) {
	resp, err := a.p.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{podruntime.LabelPodUID: string(pod.UID)},
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	}})
	if err != nil {
		return "", fmt.Errorf("list sandboxes of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	var newest *runtimeapi.PodSandbox
	for _, s := range resp.Items {
		if newest == nil || s.CreatedAt > newest.CreatedAt {
			newest = s
		}
	}
	if newest == nil {
		return "", statusError(http.StatusBadRequest, "pod %s/%s has no ready sandbox", pod.Namespace, pod.Name)
	}
	return newest.Id, nil
}
