// Package metrics holds the end-to-end tests of /metrics/cadvisor and of
// the /var/log/containers links (issue #21): actorlet runs standalone on
// the environment's containerd with static pods; the tests scrape its
// metrics with the Prometheus text parser and hold them against the pods'
// cgroup files, and watch the log links come and go with the containers.
package metrics

import (
	"crypto/tls"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/internal/podruntime/logs"
	"github.com/actorlet/actorlet/test/agent"
)

// binary is actorlet, built once for the package.
var binary string

func TestMain(m *testing.M) { agent.MainWithBinary(m, &binary) }

const cgroupRoot = "/sys/fs/cgroup"

// scrape reads /metrics/cadvisor at url and parses it as Prometheus does.
func scrape(t *testing.T, client *http.Client, url string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := agent.Get(t, client, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	return agent.ParseMetrics(t, url, body)
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.Label {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// find is the samples of family name whose labels include want.
func find(families map[string]*dto.MetricFamily, name string, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range families[name].GetMetric() {
		got := labelsOf(m)
		match := true
		for k, v := range want {
			if got[k] != v {
				match = false
			}
		}
		if match {
			out = append(out, m)
		}
	}
	return out
}

// one is the single sample of family name with labels want.
func one(families map[string]*dto.MetricFamily, name string, want map[string]string) (*dto.Metric, error) {
	found := find(families, name, want)
	if len(found) != 1 {
		return nil, fmt.Errorf("%s%v: %d samples, want 1", name, want, len(found))
	}
	return found[0], nil
}

func value(m *dto.Metric) float64 {
	if m.Counter != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

func readCgroup(t *testing.T, controller, cgroup, file string) float64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cgroupRoot, controller, cgroup, file))
	if err != nil {
		t.Fatalf("cgroup file: %v", err)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(data)), 64)
	if err != nil {
		t.Fatalf("cgroup file %s%s/%s: %v", controller, cgroup, file, err)
	}
	return v
}

func within(got, want, slack float64) bool { return math.Abs(got-want) <= slack }

// TestCadvisorMetrics scrapes /metrics/cadvisor for a running Guaranteed
// pod: upstream's families with their types, the labels of the
// container's, the pod cgroup's and the sandbox's series, and their
// figures held against the cgroup files.
func TestCadvisorMetrics(t *testing.T) {
	if _, err := os.Stat(filepath.Join(cgroupRoot, "memory")); err != nil {
		t.Skip("cgroup v1 memory hierarchy needed to check the figures:", err)
	}
	n := agent.NewNode(t, binary, agent.NamePrefix("metrics-"))
	n.Start()
	n.WriteManifest("metered.yaml", agent.Manifest("metered", fmt.Sprintf(`  containers:
  - name: app
    image: %s
    resources:
      limits: {cpu: 500m, memory: 64Mi}
    command: ["sh", "-c", "while true; do i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; sleep 1; done"]
`, n.Env.BusyboxImage)))
	pod := n.Running("metered", 90*time.Second)
	id := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the node's self-signed certificate
	readOnly := fmt.Sprintf("http://127.0.0.1:%d/metrics/cadvisor", n.ReadOnly)
	api := fmt.Sprintf("https://127.0.0.1:%d/metrics/cadvisor", n.Port)
	app := map[string]string{"container": "app", "pod": pod.Name, "namespace": pod.Namespace, "name": id}

	var families map[string]*dto.MetricFamily
	var appSeries *dto.Metric
	n.Eventually("the container's series with its cgroup", 30*time.Second, func() error {
		families = scrape(t, client, readOnly)
		m, err := one(families, "container_memory_working_set_bytes", app)
		if err != nil {
			return err
		}
		if labelsOf(m)["id"] == "" {
			return fmt.Errorf("container series without its cgroup: %v", labelsOf(m))
		}
		appSeries = m
		return nil
	})
	labels := labelsOf(appSeries)
	cgroup := labels["id"]
	t.Logf("container series labels: %v", labels)
	if !strings.HasSuffix(cgroup, "/"+id) || !strings.Contains(labels["image"], "busybox") {
		t.Errorf("container labels %v: want id ending in the container ID and a busybox image", labels)
	}

	// Upstream's families and types.
	for name, typ := range map[string]dto.MetricType{
		"container_cpu_usage_seconds_total": dto.MetricType_COUNTER, "container_cpu_user_seconds_total": dto.MetricType_COUNTER,
		"container_cpu_system_seconds_total": dto.MetricType_COUNTER, "container_memory_working_set_bytes": dto.MetricType_GAUGE,
		"container_memory_rss": dto.MetricType_GAUGE, "container_memory_usage_bytes": dto.MetricType_GAUGE,
		"container_memory_cache": dto.MetricType_GAUGE, "container_memory_failcnt": dto.MetricType_COUNTER,
		"container_fs_usage_bytes": dto.MetricType_GAUGE, "container_network_receive_bytes_total": dto.MetricType_COUNTER,
		"container_network_transmit_bytes_total": dto.MetricType_COUNTER, "container_start_time_seconds": dto.MetricType_GAUGE,
		"container_last_seen": dto.MetricType_GAUGE, "container_spec_memory_limit_bytes": dto.MetricType_GAUGE,
		"container_spec_cpu_shares": dto.MetricType_GAUGE, "container_spec_cpu_quota": dto.MetricType_GAUGE,
		"container_spec_cpu_period": dto.MetricType_GAUGE, "container_processes": dto.MetricType_GAUGE,
		"machine_cpu_cores": dto.MetricType_GAUGE, "machine_memory_bytes": dto.MetricType_GAUGE,
	} {
		if f := families[name]; f == nil || f.GetType() != typ {
			t.Errorf("family %s: %v, want type %v", name, f.GetType(), typ)
		}
	}

	// The figures against the cgroup files, read right after the scrape:
	// memory within a slack for what the shell allocates meanwhile, the
	// limits exactly.
	const memSlack = 4 << 20
	checks := []struct {
		metric           string
		controller, file string
		slack            float64
	}{
		{"container_memory_usage_bytes", "memory", "memory.usage_in_bytes", memSlack},
		{"container_spec_memory_limit_bytes", "memory", "memory.limit_in_bytes", 0},
		{"container_spec_cpu_shares", "cpu,cpuacct", "cpu.shares", 0},
		{"container_spec_cpu_quota", "cpu,cpuacct", "cpu.cfs_quota_us", 0},
		{"container_spec_cpu_period", "cpu,cpuacct", "cpu.cfs_period_us", 0},
	}
	for _, c := range checks {
		m, err := one(families, c.metric, app)
		if err != nil {
			t.Error(err)
			continue
		}
		if _, err := os.Stat(filepath.Join(cgroupRoot, c.controller)); err != nil {
			c.controller = "cpu"
		}
		if want := readCgroup(t, c.controller, cgroup, c.file); !within(value(m), want, c.slack) {
			t.Errorf("%s = %v, cgroup's %s %v (slack %v)", c.metric, value(m), c.file, want, c.slack)
		}
	}
	if m, err := one(families, "container_spec_memory_limit_bytes", app); err == nil && value(m) != 64<<20 {
		t.Errorf("memory limit %v, want 64Mi", value(m))
	}
	ws, _ := one(families, "container_memory_working_set_bytes", app)
	usage, _ := one(families, "container_memory_usage_bytes", app)
	if ws == nil || usage == nil || value(ws) <= 0 || value(ws) > value(usage) {
		t.Errorf("working set %v, usage %v: want 0 < working set <= usage", ws, usage)
	}

	// The pod's cgroup (container "") and its sandbox, which alone
	// carries the pod's network.
	podCgroup := filepath.Dir(cgroup)
	if m, err := one(families, "container_memory_usage_bytes",
		map[string]string{"container": "", "name": "", "pod": pod.Name, "namespace": pod.Namespace, "id": podCgroup}); err != nil {
		t.Errorf("the pod cgroup's series: %v", err)
	} else if want := readCgroup(t, "memory", podCgroup, "memory.usage_in_bytes"); !within(value(m), want, memSlack) {
		t.Errorf("pod cgroup memory usage %v, cgroup's %v", value(m), want)
	}
	var sandbox map[string]string
	for _, m := range find(families, "container_last_seen", map[string]string{"container": "", "pod": pod.Name}) {
		if l := labelsOf(m); l["name"] != "" {
			sandbox = l
		}
	}
	if sandbox == nil {
		t.Fatalf("no sandbox series of pod %s", pod.Name)
	}
	if !strings.Contains(sandbox["image"], "pause") || filepath.Dir(sandbox["id"]) != podCgroup {
		t.Errorf("sandbox labels %v: want the pause image and a cgroup in %s", sandbox, podCgroup)
	}
	if rx := find(families, "container_network_receive_bytes_total", map[string]string{"pod": pod.Name, "name": sandbox["name"], "interface": "eth0"}); len(rx) != 1 {
		t.Errorf("sandbox eth0 receive bytes: %d samples, want 1", len(rx))
	}
	if rx := find(families, "container_network_receive_bytes_total", app); len(rx) != 0 {
		t.Errorf("the app container has network series (%d); upstream reports the pod's on its sandbox only", len(rx))
	}

	// The machine.
	if m, err := one(families, "machine_cpu_cores", nil); err != nil || value(m) < 1 {
		t.Errorf("machine_cpu_cores: %v %v", m, err)
	}
	if m, err := one(families, "container_scrape_error", nil); err != nil || value(m) != 0 {
		t.Errorf("container_scrape_error: %v %v", m, err)
	}

	// CPU usage: stamped with when it was read, and growing.
	cpu := func(fs map[string]*dto.MetricFamily) (float64, time.Time) {
		m, err := one(fs, "container_cpu_usage_seconds_total", map[string]string{"name": id, "cpu": "total"})
		if err != nil {
			t.Fatal(err)
		}
		return value(m), time.UnixMilli(m.GetTimestampMs())
	}
	first, at := cpu(families)
	if d := time.Since(at); at.IsZero() || d < -time.Minute || d > time.Minute {
		t.Errorf("cpu sample stamped %v, %v ago", at, d)
	}
	n.Eventually("the container's CPU usage grows", 30*time.Second, func() error {
		// The authenticated port too (standalone: anonymous requests
		// are allowed).
		next, _ := cpu(scrape(t, client, api))
		if next < first {
			t.Fatalf("container_cpu_usage_seconds_total went down: %v then %v", first, next)
		}
		if next == first {
			return fmt.Errorf("cpu usage still %v", next)
		}
		return nil
	})
}

// TestContainerLogLinks follows /var/log/containers: a link per started
// container to its log file, kept for the dead instance upstream keeps,
// removed with the instances that are removed and with the pod, and a
// dangling link of a container the runtime does not know removed by
// container GC.
func TestContainerLogLinks(t *testing.T) {
	n := agent.NewNode(t, binary, agent.NamePrefix("loglinks-"))
	n.Start()
	n.WriteManifest("crasher.yaml", agent.Manifest("crasher", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "echo instance-line; sleep 2; exit 1"]
`, n.Env.BusyboxImage)))
	var pod *v1.Pod
	link := func(p *v1.Pod, containerID string) string {
		return podruntime.LogSymlink(podruntime.DefaultContainerLogsDir, p.Name, p.Namespace, "app", strings.TrimPrefix(containerID, "containerd://"))
	}
	var firstID string
	n.Eventually("the first instance started", 60*time.Second, func() error {
		p, err := n.Pod("crasher")
		if err != nil {
			return err
		}
		if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].ContainerID == "" {
			return fmt.Errorf("no container yet")
		}
		pod, firstID = p, p.Status.ContainerStatuses[0].ContainerID
		return nil
	})
	first := link(pod, firstID)
	n.Eventually("the first instance's log link", 30*time.Second, func() error {
		target, err := os.Readlink(first)
		if err != nil {
			return err
		}
		want := filepath.Join(logs.PodLogsDir("/var/log/pods", pod.Namespace, pod.Name, pod.UID), "app", "0.log")
		if target != want {
			t.Fatalf("link %s -> %s, want %s", first, target, want)
		}
		data, err := os.ReadFile(first)
		if err != nil || !strings.Contains(string(data), "instance-line") {
			return fmt.Errorf("log through the link: %q, %v", data, err)
		}
		return nil
	})

	// Two restarts: the second instance's link comes; the first
	// instance, dead and beyond the one upstream keeps, is removed with
	// its link.
	var ids []string
	n.Eventually("two restarts", 3*60*time.Second, func() error {
		p, err := n.Pod("crasher")
		if err != nil {
			return err
		}
		cs := p.Status.ContainerStatuses[0]
		if cs.ContainerID != "" && (len(ids) == 0 || ids[len(ids)-1] != cs.ContainerID) && cs.ContainerID != firstID {
			ids = append(ids, cs.ContainerID)
		}
		if cs.RestartCount < 2 || len(ids) < 2 {
			return fmt.Errorf("restart count %d, instances seen after the first %d", cs.RestartCount, len(ids))
		}
		return nil
	})
	n.Eventually("the first instance's link removed with it", 30*time.Second, func() error {
		if _, err := os.Lstat(first); !os.IsNotExist(err) {
			return fmt.Errorf("link %s still there: %v", first, err)
		}
		return nil
	})
	last := link(pod, ids[len(ids)-1])
	if _, err := os.Lstat(last); err != nil {
		t.Errorf("the running instance's link: %v", err)
	}

	// A dangling link of a container the runtime does not know: the next
	// container GC pass removes it. GC runs as the gc actor starts.
	stale := podruntime.LogSymlink(podruntime.DefaultContainerLogsDir, "gone", "default", "app", strings.Repeat("0f", 32))
	if err := os.Symlink("/var/log/pods/default_gone_0000/app/0.log", stale); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(stale) })
	n.InjectPanic("bootstrap/gc", "")
	n.Eventually("container GC removes the dangling link", 60*time.Second, func() error {
		if _, err := os.Lstat(stale); !os.IsNotExist(err) {
			return fmt.Errorf("dangling link %s still there: %v", stale, err)
		}
		return nil
	})

	// The pod's removal removes its containers and their links.
	n.RemoveManifest("crasher.yaml")
	n.Eventually("the pod's links removed with it", 60*time.Second, func() error {
		matches, _ := filepath.Glob(filepath.Join(podruntime.DefaultContainerLogsDir, pod.Name+"_"+pod.Namespace+"_*.log"))
		if len(matches) > 0 {
			return fmt.Errorf("links left: %v", matches)
		}
		return nil
	})
}
