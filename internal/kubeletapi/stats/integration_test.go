package stats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/internal/podruntime/logs"
	"github.com/actorlet/actorlet/test/env"
)

// TestStatsAgainstContainerd runs a pod whose container allocates memory
// and burns CPU in the environment's containerd, then reads it back
// through the summary (in-process and over HTTP) and /metrics/resource.
// The sandbox gets a cgroup parent under /kubepods, as actorlet's pods, so
// the pod's figures come from its cgroup.
func TestStatsAgainstContainerd(t *testing.T) {
	e := env.Require(t)
	env.HoldRuntime(t)
	rt, img := e.CRI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)

	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "stats-it-" + hex.EncodeToString(b)
	uid := name + "-uid"
	const ns = "stats-test"
	logsRoot := t.TempDir()
	logDir := logs.PodLogsDir(logsRoot, ns, name, types.UID(uid))
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{podruntime.LabelPodUID: uid, podruntime.LabelPodName: name, podruntime.LabelPodNamespace: ns}
	sbCfg := env.SandboxConfig(name, uid, ns, logDir, labels)
	podCgroup := "/kubepods/pod" + uid
	sbCfg.Linux.CgroupParent = podCgroup
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	t.Cleanup(func() { removePod(t, rt, sb.PodSandboxId, podCgroup) })

	// 8 MB held in a shell variable, a busy loop, then idle. The shell
	// must not exec its last command, which would free the 8 MB.
	script := `x=$(head -c 8000000 /dev/zero | tr '\0' a); i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo burnt ${#x}; sleep 3600; true`
	c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sb.PodSandboxId, SandboxConfig: sbCfg,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "burn"},
			Image:    &runtimeapi.ImageSpec{Image: e.BusyboxImage},
			Command:  []string{"sh", "-c", script},
			LogPath:  "burn/0.log",
			Labels:   map[string]string{podruntime.LabelPodUID: uid, podruntime.LabelPodName: name, podruntime.LabelPodNamespace: ns, podruntime.LabelContainerName: "burn"},
		},
	})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	waitForLog(t, filepath.Join(logDir, "burn", "0.log"), "burnt", time.Minute)

	p := &Provider{Runtime: rt, Images: img, NodeName: e.NodeName, RootDir: t.TempDir(), PodLogsDir: logsRoot, PodCgroupRoot: "/kubepods"}
	s, err := p.Summary(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	node := s.Node
	if node.NodeName != e.NodeName || val(node.CPU.UsageCoreNanoSeconds) == 0 || val(node.Memory.WorkingSetBytes) == 0 ||
		val(node.Memory.AvailableBytes) == 0 || val(node.Fs.CapacityBytes) == 0 || val(node.Runtime.ImageFs.UsedBytes) == 0 ||
		node.StartTime.IsZero() || node.Rlimit.MaxPID == nil {
		t.Errorf("node %s: cpu %+v memory %+v fs %+v imagefs %+v start %v rlimit %+v",
			node.NodeName, node.CPU, node.Memory, node.Fs, node.Runtime.ImageFs, node.StartTime, node.Rlimit)
	}
	pod := findPod(t, s, ns, name, uid)
	burn := findContainer(t, pod, "burn")
	if val(burn.CPU.UsageCoreNanoSeconds) == 0 || val(burn.Memory.WorkingSetBytes) < 4<<20 {
		t.Errorf("burn: cpu %d ns, working set %d bytes; want CPU used and the 8 MB in its working set", val(burn.CPU.UsageCoreNanoSeconds), val(burn.Memory.WorkingSetBytes))
	}
	if burn.Rootfs == nil || val(burn.Rootfs.CapacityBytes) == 0 || burn.Logs == nil || val(burn.Logs.UsedBytes) == 0 {
		t.Errorf("burn: rootfs %+v, logs %+v; want the writable layer's filesystem and the log file", burn.Rootfs, burn.Logs)
	}
	// From the pod cgroup, which holds burn and the sandbox's pause.
	if val(pod.CPU.UsageCoreNanoSeconds) < val(burn.CPU.UsageCoreNanoSeconds) || val(pod.Memory.WorkingSetBytes) == 0 {
		t.Errorf("pod: cpu %+v memory %+v; want at least burn's CPU", pod.CPU, pod.Memory)
	}
	if pod.Network == nil || pod.Network.Name != "eth0" || val(pod.Network.TxBytes) == 0 && val(pod.Network.RxBytes) == 0 {
		t.Errorf("pod network %+v: want the sandbox's eth0", pod.Network)
	}
	if pod.EphemeralStorage == nil || val(pod.EphemeralStorage.UsedBytes) == 0 {
		t.Errorf("pod ephemeral storage %+v", pod.EphemeralStorage)
	}

	// A second look over HTTP, more than a second later: rates now.
	time.Sleep(1100 * time.Millisecond)
	srv := httptest.NewServer(p.SummaryHandler(nil))
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/stats/summary?only_cpu_and_memory=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s2 statsapi.Summary
	if err := json.NewDecoder(resp.Body).Decode(&s2); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET summary: status %d, decode %v", resp.StatusCode, err)
	}
	pod2 := findPod(t, &s2, ns, name, uid)
	burn2 := findContainer(t, pod2, "burn")
	if s2.Node.CPU.UsageNanoCores == nil || pod2.CPU.UsageNanoCores == nil || burn2.CPU.UsageNanoCores == nil {
		t.Errorf("rates on the second request: node %v pod %v container %v",
			fmtPtr(s2.Node.CPU.UsageNanoCores), fmtPtr(pod2.CPU.UsageNanoCores), fmtPtr(burn2.CPU.UsageNanoCores))
	}

	families, _ := scrape(t, p.ResourceMetricsHandler())
	want := "container=burn,namespace=" + ns + ",pod=" + name + ": "
	for _, metric := range []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes", "container_start_time_seconds"} {
		found := false
		for _, s := range series(families[metric]) {
			if strings.HasPrefix(s, want) && !strings.HasPrefix(s, want+"0 ") {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no non-zero series for burn in %q", metric, series(families[metric]))
		}
	}
	for _, metric := range []string{"node_cpu_usage_seconds_total", "node_memory_working_set_bytes", "pod_cpu_usage_seconds_total", "pod_memory_working_set_bytes"} {
		if len(series(families[metric])) == 0 {
			t.Errorf("%s: no series", metric)
		}
	}
	if got := series(families["resource_scrape_error"]); len(got) != 1 || got[0] != ": 0" {
		t.Errorf("resource_scrape_error %q, want 0", got)
	}
}

func findPod(t *testing.T, s *statsapi.Summary, ns, name, uid string) statsapi.PodStats {
	t.Helper()
	for _, p := range s.Pods {
		if p.PodRef == (statsapi.PodReference{Namespace: ns, Name: name, UID: uid}) {
			return p
		}
	}
	t.Fatalf("pod %s/%s (%s) not in the summary's %d pods", ns, name, uid, len(s.Pods))
	return statsapi.PodStats{}
}

func findContainer(t *testing.T, p statsapi.PodStats, name string) statsapi.ContainerStats {
	t.Helper()
	for _, c := range p.Containers {
		if c.Name == name {
			if c.CPU == nil || c.Memory == nil {
				t.Fatalf("container %s: cpu %v memory %v", name, c.CPU, c.Memory)
			}
			return c
		}
	}
	t.Fatalf("container %s not in pod %s's %d containers", name, p.PodRef.Name, len(p.Containers))
	return statsapi.ContainerStats{}
}

func waitForLog(t *testing.T, path, text string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		data, _ := os.ReadFile(path)
		if strings.Contains(string(data), text) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q not in %s after %s: %q", text, path, timeout, data)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// removePod stops and removes the sandbox and its containers, then the
// pod cgroup runc made for the cgroup parent and left behind.
func removePod(t *testing.T, rt runtimeapi.RuntimeServiceClient, sandboxID, podCgroup string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: sandboxID}})
	if err == nil {
		for _, c := range r.Containers {
			_, _ = rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: c.Id, Timeout: 1})
			_, _ = rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.Id})
		}
	}
	_, _ = rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sandboxID})
	if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sandboxID}); err != nil {
		t.Errorf("RemovePodSandbox %s: %v", sandboxID, err)
	}
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", podCgroup))
	if unified := filepath.Join("/sys/fs/cgroup", podCgroup); dirExists(unified) {
		dirs = append(dirs, unified)
	}
	for _, d := range dirs {
		if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
			t.Logf("remove cgroup %s: %v", d, err)
		}
	}
}

func dirExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
