package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/test/env"
)

// nodeRun is one run of actorlet as the node: N pods through the API.
type nodeRun struct {
	N int `json:"n"`
	// Latencies: per pod that became Ready, the create call's start → the
	// informer seeing Ready=True, in seconds, sorted.
	Latencies []float64 `json:"latenciesSeconds"`
	Ready     int       `json:"ready"`
	// AllReady: the first create call → the last pod seen Ready.
	AllReady float64 `json:"allReadySeconds"`
	// GoneAPI: the first delete call → the last DELETED event. GoneCRI: the
	// first delete call → no ready sandbox of the run's namespace in CRI.
	GoneAPI float64 `json:"goneAPISeconds"`
	GoneCRI float64 `json:"goneCRISeconds"`
	// LeftInRuntime: what the runtime still holds of the run's pods once
	// they are gone from the API.
	LeftInRuntime runtimeObjects `json:"leftInRuntime"`
	// StartupSeconds: actorlet's start → its node Ready with its heartbeat.
	StartupSeconds float64 `json:"startupSeconds"`
	// IdleRSS: actorlet's VmRSS once Ready with no pods; IdleAnon and
	// IdleFile split it into anonymous memory and the mapped binary.
	IdleRSS  int64 `json:"idleRSSBytes"`
	IdleAnon int64 `json:"idleRSSAnonBytes"`
	IdleFile int64 `json:"idleRSSFileBytes"`
	// Actorlet and Containerd: from the first create call until all gone
	// (API and CRI), peak RSS reset at its start. CreateCPU is actorlet's
	// CPU until all were Ready.
	Actorlet   usage   `json:"actorlet"`
	Containerd usage   `json:"containerd"`
	CreateCPU  float64 `json:"actorletCreateCPUSeconds"`
	// ProbeHoldCPU (with -probes): actorlet's CPU seconds per second while
	// every pod stays Ready for probeHold, probed; ProbeHoldUpdates: the
	// pod events the API server sent meanwhile (status writes: none when
	// every probe keeps its result).
	ProbeHoldCPU     float64 `json:"probeHoldCPUPerSecond,omitempty"`
	ProbeHoldUpdates int     `json:"probeHoldUpdates,omitempty"`
	// Load1: the machine's 1-minute load average as the pods were created.
	Load1 float64 `json:"load1"`
	// QuietWait: how long the run waited, after the idle memory reading,
	// for the machine to be idle (waitQuiet) before its pods, in seconds.
	QuietWait float64  `json:"quietWaitSeconds"`
	Errors    []string `json:"errors,omitempty"`
}

// nodeBench runs actorlet as the environment's node.
type nodeBench struct {
	env       *env.Env
	admin     kubernetes.Interface // high QPS: the creates must not wait for the client
	rt        runtimeapi.RuntimeServiceClient
	binary    string
	agent     agentOptions
	container int    // containerd's PID
	logDir    string // actorlet's logs, one file per run
	logf      func(format string, args ...any)
}

// settle is how long a fresh actorlet runs with no pods before its idle
// RSS is read and the run starts: start-up work (informer lists, the first
// node status, the first relist) is over by then.
const settle = 3 * time.Second

// idleMemory lets a Ready actorlet idle for settle, then reads its memory.
func (n *node) idleMemory(ctx context.Context) (memory, error) {
	if err := sleep(ctx, settle); err != nil {
		return memory{}, err
	}
	return procMemory(n.pid())
}

// run starts a fresh actorlet (each run from an idle node), creates n pods
// through the API, waits for all Ready, deletes them and waits until they
// are gone from the API and from CRI.
func (b *nodeBench) run(ctx context.Context, n int, name string) (res nodeRun, err error) {
	res = nodeRun{N: n}
	defer func() {
		if err != nil {
			res.Errors = append(res.Errors, err.Error())
		}
	}()
	ns, err := createNamespace(ctx, b.admin, "bench-")
	if ns != "" {
		defer b.cleanupNamespace(ns)
	}
	if err != nil {
		return res, err
	}
	agent, err := startNode(b.binary, b.agent, b.env, filepath.Join(b.logDir, name+".log"), false)
	if err != nil {
		return res, err
	}
	defer func() {
		if err := agent.stop(); err != nil {
			b.logf("%v", err)
		}
	}()
	if err := agent.waitReady(ctx, b.admin, b.env.NodeName, time.Minute); err != nil {
		return res, err
	}
	res.StartupSeconds = time.Since(agent.started).Seconds()
	idle, err := agent.idleMemory(ctx)
	if err != nil {
		return res, err
	}
	res.IdleRSS, res.IdleAnon, res.IdleFile = idle.RSS, idle.Anon, idle.File
	waited, err := waitQuiet(ctx)
	res.QuietWait = waited.Seconds()
	if err != nil {
		return res, err
	}
	b.logf("%s: waited %.1fs for an idle machine", name, res.QuietWait)

	tracker, err := trackPods(ctx, b.admin, ns)
	if err != nil {
		return res, err
	}
	defer tracker.close()
	pods := make([]*v1.Pod, n)
	names := make([]string, n)
	for i := range pods {
		pods[i] = benchPod(ns, fmt.Sprintf("p%03d", i), b.env.NodeName, b.env.BusyboxImage)
		names[i] = pods[i].Name
	}
	aw, err := beginWindow(agent.pid())
	if err != nil {
		return res, err
	}
	cw, err := beginWindow(b.container)
	if err != nil {
		return res, err
	}
	cpu0 := aw.cpuStart
	res.Load1 = loadAverage()
	start := time.Now()
	created, err := createPods(ctx, b.admin, pods)
	if err != nil {
		return res, err
	}
	b.logf("%s: %d pods created in %.2fs", name, n, time.Since(start).Seconds())
	within := 2*time.Minute + time.Duration(n)*2*time.Second
	waitErr := tracker.waitFor(ctx, fmt.Sprintf("all %d pods Ready", n), within, func() bool {
		r, _ := tracker.counts()
		return r == n
	})
	if cpu, err := procCPU(agent.pid()); err == nil {
		res.CreateCPU = cpu - cpu0
	}
	ready, _ := tracker.snapshot()
	res.Ready = len(ready)
	for name, at := range ready {
		res.Latencies = append(res.Latencies, at.Sub(created[name]).Seconds())
		res.AllReady = max(res.AllReady, at.Sub(start).Seconds())
	}
	sort.Float64s(res.Latencies)
	if waitErr != nil {
		// The pods that became Ready are kept in the results; deleting
		// the rest still measures the deletion.
		res.Errors = append(res.Errors, fmt.Sprintf("%v (%d Ready)", waitErr, res.Ready))
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
	b.logf("%s: %d/%d Ready, last after %.2fs", name, res.Ready, n, res.AllReady)
	if withProbes && waitErr == nil {
		if res.ProbeHoldCPU, res.ProbeHoldUpdates, err = b.probeHold(ctx, agent.pid(), tracker); err != nil {
			return res, err
		}
		b.logf("%s: probed for %s: %.3f CPU-s/s, %d pod updates", name, probeHold, res.ProbeHoldCPU, res.ProbeHoldUpdates)
	}

	delStart := time.Now()
	criCtx, stopCRI := context.WithCancel(ctx)
	defer stopCRI()
	criGone := make(chan criOutcome, 1)
	go func() { criGone <- b.waitNoReadySandbox(criCtx, ns, within, delStart) }()
	if err := deletePods(ctx, b.admin, ns, names); err != nil {
		return res, err
	}
	if err := tracker.waitFor(ctx, fmt.Sprintf("all %d pods DELETED", n), within, func() bool {
		_, d := tracker.counts()
		return d == n
	}); err != nil {
		return res, err
	}
	_, deleted := tracker.snapshot()
	for _, at := range deleted {
		res.GoneAPI = max(res.GoneAPI, at.Sub(delStart).Seconds())
	}
	cri := <-criGone
	if cri.err != nil {
		return res, cri.err
	}
	res.GoneCRI = cri.seconds
	if res.Actorlet, err = aw.end(); err != nil {
		return res, err
	}
	if res.Containerd, err = cw.end(); err != nil {
		return res, err
	}
	if res.LeftInRuntime, err = countRuntime(ctx, b.rt, ns); err != nil {
		return res, err
	}
	if waitErr != nil {
		return res, waitErr
	}
	return res, nil
}

// probeHold is how long -probes holds every pod Ready, probed, before the
// deletes.
const probeHold = 20 * time.Second

// probeHold measures actorlet's CPU and the pod updates while the pods stay
// Ready and their probes run.
func (b *nodeBench) probeHold(ctx context.Context, pid int, tracker *podTracker) (float64, int, error) {
	cpu0, err := procCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	u0, start := tracker.updateCount(), time.Now()
	if err := sleep(ctx, probeHold); err != nil {
		return 0, 0, err
	}
	cpu1, err := procCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	return (cpu1 - cpu0) / time.Since(start).Seconds(), tracker.updateCount() - u0, nil
}

type criOutcome struct {
	seconds float64 // since the deletes started
	err     error
}

// waitNoReadySandbox polls CRI (containerd 1.6 has no container events)
// every 100 ms until no sandbox of ns is ready.
func (b *nodeBench) waitNoReadySandbox(ctx context.Context, ns string, within time.Duration, from time.Time) criOutcome {
	deadline := time.Now().Add(within)
	for {
		qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		count, err := readySandboxes(qctx, b.rt, ns)
		cancel()
		if err != nil {
			return criOutcome{err: err}
		}
		if count == 0 {
			return criOutcome{seconds: time.Since(from).Seconds()}
		}
		if time.Now().After(deadline) {
			return criOutcome{err: fmt.Errorf("%d sandboxes of namespace %s still ready %v after the deletes", count, ns, within)}
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return criOutcome{err: err}
		}
	}
}

// cleanupNamespace removes the namespace and, once actorlet is stopped,
// anything of it left in the runtime.
func (b *nodeBench) cleanupNamespace(ns string) {
	if err := deleteNamespace(b.admin, ns); err != nil {
		b.logf("cleanup: %v", err)
	}
	if err := removeSandboxes(b.rt, ns); err != nil {
		b.logf("cleanup: %v", err)
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
