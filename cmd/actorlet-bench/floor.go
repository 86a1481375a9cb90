package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime"
)

// criCallTimeout bounds each CRI call of the floor, as actorlet's
// runtimeRequestTimeout (2 min) does its calls.
const criCallTimeout = 2 * time.Minute

// floorRun is one run of the floor: N pods straight through CRI.
type floorRun struct {
	N int `json:"n"`
	// Latencies: per pod, RunPodSandbox's call → StartContainer's return,
	// in seconds.
	Latencies []float64 `json:"latenciesSeconds"`
	// AllRunning: the first RunPodSandbox call → the last StartContainer
	// return. AllRemoved: the first StopContainer call → the last
	// RemovePodSandbox return.
	AllRunning float64 `json:"allRunningSeconds"`
	AllRemoved float64 `json:"allRemovedSeconds"`
	// Containerd over the whole run, creation and removal.
	Containerd usage `json:"containerd"`
	// Load1: the machine's 1-minute load average as the run started.
	Load1 float64 `json:"load1"`
	// QuietWait: how long the run waited for the machine to be idle
	// (waitQuiet) before its pods, in seconds.
	QuietWait float64  `json:"quietWaitSeconds"`
	Errors    []string `json:"errors,omitempty"`
}

// floor runs pods with the sandbox and container configurations actorlet
// itself sends: the pure functions of podruntime build them from the same
// pod spec the API run creates, so that the runtime does the same work for
// both and the difference is actorlet's.
type floor struct {
	rt        runtimeapi.RuntimeServiceClient
	img       runtimeapi.ImageServiceClient
	opts      podruntime.Options
	image     string // busybox, as the pod spec names it
	node      string
	container int // containerd's PID
	logf      func(format string, args ...any)
}

// floorNamespacePrefix marks the floor's sandboxes (label
// io.kubernetes.pod.namespace) for cleanup; no API namespace has it.
const floorNamespacePrefix = "bench-floor-"

type floorPod struct {
	pod     *v1.Pod
	sandbox *runtimeapi.PodSandboxConfig
	ctr     *runtimeapi.ContainerConfig

	sandboxID, containerID string
}

func (f *floor) run(ctx context.Context, n int) (floorRun, error) {
	ns := floorNamespacePrefix + randSuffix()
	res := floorRun{N: n}
	defer f.cleanup(ns)
	imageRef, err := f.imageRef(ctx)
	if err != nil {
		return res, err
	}
	// Configurations are built before the clock starts: the floor measures
	// the runtime, not the kubelet's work of building them.
	pods := make([]*floorPod, n)
	for i := range pods {
		p := benchPod(ns, fmt.Sprintf("p%03d", i), f.node, f.image)
		p.UID = types.UID(uuid.NewUUID())
		apiDefaults(p)
		sb, err := podruntime.SandboxConfig(p, 0, f.opts)
		if err != nil {
			return res, fmt.Errorf("floor: sandbox config of %s/%s: %w", ns, p.Name, err)
		}
		cc, err := podruntime.ContainerConfig(context.Background(), p, &p.Spec.Containers[0], 0, nil, imageRef, nil, f.opts)
		if err != nil {
			return res, fmt.Errorf("floor: container config of %s/%s: %w", ns, p.Name, err)
		}
		if err := os.MkdirAll(sb.LogDirectory, 0o755); err != nil {
			return res, fmt.Errorf("floor: log directory of %s/%s: %w", ns, p.Name, err)
		}
		pods[i] = &floorPod{pod: p, sandbox: sb, ctr: cc}
	}

	waited, err := waitQuiet(ctx)
	res.QuietWait = waited.Seconds()
	if err != nil {
		return res, err
	}
	f.logf("floor: waited %.1fs for an idle machine", res.QuietWait)
	res.Load1 = loadAverage()
	w, err := beginWindow(f.container)
	if err != nil {
		return res, err
	}
	res.Latencies = make([]float64, n)
	errs := make([]error, n)
	start := time.Now()
	ends := make([]time.Time, n)
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Go(func() {
			t0 := time.Now()
			errs[i] = f.start(ctx, p)
			ends[i] = time.Now()
			res.Latencies[i] = ends[i].Sub(t0).Seconds()
		})
	}
	wg.Wait()
	res.AllRunning = latest(ends).Sub(start).Seconds()
	for _, err := range errs {
		if err != nil {
			res.Errors = append(res.Errors, err.Error())
		}
	}
	if len(res.Errors) > 0 {
		return res, fmt.Errorf("floor N=%d: %d of %d pods failed to start, first: %s", n, len(res.Errors), n, res.Errors[0])
	}

	start = time.Now()
	for i, p := range pods {
		wg.Go(func() {
			errs[i] = f.remove(ctx, p)
			ends[i] = time.Now()
		})
	}
	wg.Wait()
	res.AllRemoved = latest(ends).Sub(start).Seconds()
	if res.Containerd, err = w.end(); err != nil {
		return res, err
	}
	for _, err := range errs {
		if err != nil {
			res.Errors = append(res.Errors, err.Error())
		}
	}
	if len(res.Errors) > 0 {
		return res, fmt.Errorf("floor N=%d: %d of %d pods failed to be removed, first: %s", n, len(res.Errors), n, res.Errors[0])
	}
	return res, nil
}

// start is what a kubelet does for a new pod whose image is present:
// RunPodSandbox (CNI included) → CreateContainer → StartContainer.
func (f *floor) start(ctx context.Context, p *floorPod) error {
	ctx, cancel := context.WithTimeout(ctx, criCallTimeout)
	defer cancel()
	name := p.pod.Namespace + "/" + p.pod.Name
	sb, err := f.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: p.sandbox})
	if err != nil {
		return fmt.Errorf("RunPodSandbox %s: %w", name, err)
	}
	p.sandboxID = sb.PodSandboxId
	c, err := f.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: p.sandboxID, Config: p.ctr, SandboxConfig: p.sandbox,
	})
	if err != nil {
		return fmt.Errorf("CreateContainer %s in sandbox %s: %w", name, p.sandboxID, err)
	}
	p.containerID = c.ContainerId
	if _, err := f.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: p.containerID}); err != nil {
		return fmt.Errorf("StartContainer %s (%s): %w", name, p.containerID, err)
	}
	return nil
}

// remove is a kubelet's kill with the pod's grace period (busybox's sh as
// PID 1 ignores SIGTERM, so the stop waits for it as actorlet's does), then
// the sandbox's removal, which removes its containers.
func (f *floor) remove(ctx context.Context, p *floorPod) error {
	ctx, cancel := context.WithTimeout(ctx, criCallTimeout)
	defer cancel()
	name := p.pod.Namespace + "/" + p.pod.Name
	grace := *p.pod.Spec.TerminationGracePeriodSeconds
	if _, err := f.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: p.containerID, Timeout: grace}); err != nil {
		return fmt.Errorf("StopContainer %s (%s): %w", name, p.containerID, err)
	}
	if _, err := f.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.sandboxID}); err != nil {
		return fmt.Errorf("StopPodSandbox %s (%s): %w", name, p.sandboxID, err)
	}
	if _, err := f.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.sandboxID}); err != nil {
		return fmt.Errorf("RemovePodSandbox %s (%s): %w", name, p.sandboxID, err)
	}
	return nil
}

// imageRef is the image ID the container is created from, as actorlet
// resolves it with ImageStatus before CreateContainer.
func (f *floor) imageRef(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, criCallTimeout)
	defer cancel()
	st, err := f.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: f.image}})
	if err != nil {
		return "", fmt.Errorf("floor: ImageStatus %s: %w", f.image, err)
	}
	if st.GetImage() == nil {
		return "", fmt.Errorf("floor: image %s is not in containerd (hack/node-env up imports it)", f.image)
	}
	return st.Image.Id, nil
}

// cleanup removes whatever is left of the floor's pods (after a failure or
// an interrupt) and their log directories.
func (f *floor) cleanup(ns string) {
	if err := removeSandboxes(f.rt, ns); err != nil {
		f.logf("cleanup of floor pods in %s: %v", ns, err)
	}
	dirs, _ := filepath.Glob(filepath.Join(f.opts.PodLogsDir, ns+"_*"))
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}

// apiDefaults sets the fields of benchPod that kube-apiserver's defaulting
// sets and that podruntime reads, so that the floor's configurations are
// those actorlet builds from the created pod.
func apiDefaults(p *v1.Pod) {
	p.Spec.DNSPolicy = v1.DNSClusterFirst
	p.Spec.SchedulerName = v1.DefaultSchedulerName
	p.Spec.SecurityContext = &v1.PodSecurityContext{}
	p.Spec.EnableServiceLinks = new(true)
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		c.TerminationMessagePath = v1.TerminationMessagePathDefault
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	p.CreationTimestamp = metav1.Now()
}

func latest(ts []time.Time) time.Time {
	var l time.Time
	for _, t := range ts {
		if t.After(l) {
			l = t
		}
	}
	return l
}
