package stats

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sampleOf finds the sample of family name whose labels include want; ok
// is false when none or more than one matches.
func sampleOf(families map[string]*dto.MetricFamily, name string, want map[string]string) (*dto.Metric, error) {
	f := families[name]
	if f == nil {
		return nil, fmt.Errorf("no family %s", name)
	}
	var found []*dto.Metric
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if got[k] != v {
				match = false
			}
		}
		if match {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("%s%v: %d samples match", name, want, len(found))
	}
	return found[0], nil
}

func value(m *dto.Metric) float64 {
	if m.Counter != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

func TestCadvisorMetrics(t *testing.T) {
	n := newTestNode(t)
	n.cri.images = []*runtimeapi.Image{{Id: "sha256:app", RepoTags: []string{"docker.io/library/app:1", "app:latest"}}}
	for _, c := range n.cri.containers {
		c.Image, c.ImageRef = &runtimeapi.ImageSpec{Image: "sha256:" + c.Metadata.Name}, "sha256:"+c.Metadata.Name
	}
	families, body := scrape(t, n.p.CadvisorMetricsHandler())

	appCgroup := "/kubepods/poduid-a/c-app"
	app := map[string]string{"container": "app", "pod": "web", "namespace": "default", "name": "c-app", "id": appCgroup, "image": "docker.io/library/app:1"}
	side := map[string]string{"container": "sidecar", "pod": "web", "namespace": "default", "name": "c-side", "id": "", "image": "sha256:sidecar"}
	podCgroup := map[string]string{"container": "", "pod": "web", "namespace": "default", "name": "", "id": "/kubepods/poduid-a", "image": ""}
	sandbox := map[string]string{"container": "", "pod": "web", "namespace": "default", "name": "sb-a", "image": "registry.k8s.io/pause:3.10"}
	root := map[string]string{"id": "/", "pod": "", "container": "", "name": ""}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
		stamp  int64 // ms; 0: none expected
	}{
		{"container_cpu_usage_seconds_total", with(app, "cpu", "total"), 2.5, n.clock.Now().UnixMilli()},
		{"container_cpu_user_seconds_total", app, 1.5, n.clock.Now().UnixMilli()},
		{"container_cpu_system_seconds_total", app, 0.5, n.clock.Now().UnixMilli()},
		{"container_cpu_cfs_throttled_periods_total", app, 2, n.clock.Now().UnixMilli()},
		{"container_cpu_cfs_throttled_seconds_total", app, 0.003, n.clock.Now().UnixMilli()},
		{"container_memory_usage_bytes", app, 12000000, n.clock.Now().UnixMilli()},
		{"container_memory_working_set_bytes", app, 9000000, n.clock.Now().UnixMilli()},
		{"container_memory_rss", app, 7000000, n.clock.Now().UnixMilli()},
		{"container_memory_cache", app, 5000000, n.clock.Now().UnixMilli()},
		{"container_memory_mapped_file", app, 200000, n.clock.Now().UnixMilli()},
		{"container_memory_swap", app, 4096, n.clock.Now().UnixMilli()},
		{"container_memory_failcnt", app, 3, n.clock.Now().UnixMilli()},
		{"container_memory_failures_total", with(app, "failure_type", "pgfault", "scope", "container"), 40, n.clock.Now().UnixMilli()},
		{"container_memory_failures_total", with(app, "failure_type", "pgmajfault", "scope", "hierarchy"), 5, n.clock.Now().UnixMilli()},
		{"container_spec_cpu_shares", app, 512, 0},
		{"container_spec_cpu_quota", app, 50000, 0},
		{"container_spec_cpu_period", app, 100000, 0},
		{"container_spec_memory_limit_bytes", app, 268435456, 0},
		{"container_spec_memory_swap_limit_bytes", app, 0, 0},
		{"container_processes", app, 2, n.clock.Now().UnixMilli()},
		{"container_threads", app, 3, n.clock.Now().UnixMilli()},
		{"container_threads_max", app, 0, n.clock.Now().UnixMilli()},
		{"container_fs_usage_bytes", app, 4096, n.clock.Now().UnixMilli()},
		{"container_last_seen", app, float64(n.clock.Now().Unix()), n.clock.Now().UnixMilli()},
		// Without a cgroup: the runtime's figures, at its time.
		{"container_cpu_usage_seconds_total", with(side, "cpu", "total"), 0.5, timeAt(200).UnixMilli()},
		{"container_memory_working_set_bytes", side, 300, timeAt(200).UnixMilli()},
		{"container_start_time_seconds", side, float64(timeAt(102).Unix()), 0},
		{"container_creation_time_seconds", side, float64(timeAt(102).Unix()), 0},
		// The pod's cgroup and its sandbox, which alone has the network.
		{"container_cpu_usage_seconds_total", with(podCgroup, "cpu", "total"), 2.5, n.clock.Now().UnixMilli()},
		{"container_memory_working_set_bytes", podCgroup, 40000000, n.clock.Now().UnixMilli()},
		{"container_network_receive_bytes_total", with(sandbox, "interface", "eth0"), 7000, n.clock.Now().UnixMilli()},
		{"container_network_receive_packets_total", with(sandbox, "interface", "eth0"), 70, n.clock.Now().UnixMilli()},
		{"container_network_receive_errors_total", with(sandbox, "interface", "eth0"), 1, n.clock.Now().UnixMilli()},
		{"container_network_transmit_bytes_total", with(sandbox, "interface", "eth0"), 9000, n.clock.Now().UnixMilli()},
		{"container_network_transmit_packets_total", with(sandbox, "interface", "eth0"), 90, n.clock.Now().UnixMilli()},
		{"container_network_transmit_errors_total", with(sandbox, "interface", "eth0"), 2, n.clock.Now().UnixMilli()},
		{"container_start_time_seconds", sandbox, float64(timeAt(100).Unix()), 0},
		// The machine.
		{"container_cpu_usage_seconds_total", with(root, "cpu", "total"), 5000, n.clock.Now().UnixMilli()},
		{"container_memory_working_set_bytes", root, 2000000000, n.clock.Now().UnixMilli()},
		{"machine_memory_bytes", nil, 8000000 * 1024, n.clock.Now().UnixMilli()},
		{"container_scrape_error", nil, 0, 0},
		{"machine_scrape_error", nil, 0, 0},
	}
	for _, tt := range tests {
		m, err := sampleOf(families, tt.name, tt.labels)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if got := value(m); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
		if got := m.GetTimestampMs(); got != tt.stamp {
			t.Errorf("%s%v stamped %d, want %d", tt.name, tt.labels, got, tt.stamp)
		}
	}

	absent := []struct {
		name   string
		labels map[string]string
	}{
		{"container_network_receive_bytes_total", app},                              // only on the sandbox
		{"container_network_receive_bytes_total", podCgroup},                        // nor on the pod's cgroup
		{"container_cpu_usage_seconds_total", map[string]string{"name": "c-old"}},   // a dead sandbox's
		{"container_cpu_usage_seconds_total", map[string]string{"name": "c-app-0"}}, // exited
		{"container_spec_cpu_quota", with(side)},                                    // no cgroup, no spec
	}
	for _, tt := range absent {
		if m, err := sampleOf(families, tt.name, tt.labels); err == nil {
			t.Errorf("%s%v present: %v", tt.name, tt.labels, m)
		}
	}
	if m, _ := sampleOf(families, "machine_cpu_cores", nil); m == nil || value(m) < 1 {
		t.Errorf("machine_cpu_cores: %v", m)
	}
	if m, err := sampleOf(families, "container_last_seen", map[string]string{"container": "", "pod": "idle", "name": "sb-c"}); err != nil {
		t.Errorf("a pod without running containers keeps its sandbox series: %v", err)
	} else if m.GetTimestampMs() == 0 {
		t.Error("sandbox sample without timestamp")
	}
	if families["container_cpu_usage_seconds_total"].GetHelp() != "Cumulative cpu time consumed in seconds." ||
		families["container_cpu_usage_seconds_total"].GetType() != dto.MetricType_COUNTER {
		t.Errorf("container_cpu_usage_seconds_total help/type: %v", families["container_cpu_usage_seconds_total"])
	}
	if t.Failed() {
		t.Log(body)
	}
}

func TestCadvisorMetricsRuntimeDown(t *testing.T) {
	n := newTestNode(t)
	n.cri.fail = map[string]error{"ListContainers": errors.New("runtime down")}
	families, body := scrape(t, n.p.CadvisorMetricsHandler())
	if m, err := sampleOf(families, "container_scrape_error", nil); err != nil || value(m) != 1 {
		t.Errorf("container_scrape_error %v %v, want 1", m, err)
	}
	if _, err := sampleOf(families, "container_cpu_usage_seconds_total", map[string]string{"id": "/"}); err != nil {
		t.Errorf("the root cgroup is reported whatever the runtime: %v", err)
	}
	if strings.Contains(body, `pod="web"`) {
		t.Error("pods reported though the runtime failed")
	}
}

func TestWeightToShares(t *testing.T) {
	for _, tt := range []struct{ weight, shares uint64 }{{1, 2}, {100, 2597}, {10000, 262144}, {0, 0}, {10001, 0}} {
		if got := weightToShares(tt.weight); got != tt.shares {
			t.Errorf("weight %d: shares %d, want %d", tt.weight, got, tt.shares)
		}
	}
}

func TestCgroupDetail(t *testing.T) {
	unlimited := ^uint64(0)
	tests := []struct {
		name, host, cgroup string
		check              func(d cgroupDetail) []string
	}{
		{"v1 container", "testdata/v1", "/kubepods/poduid-a/c-app", func(d cgroupDetail) []string {
			return diffs(
				"cpu", d.cpuTotal, uint64(2500000000), "user", d.cpuUser, uint64(1500000000), "system", d.cpuSystem, uint64(500000000),
				"shares", d.shares, uint64(512), "quota", d.quota, uint64(50000), "period", d.period, uint64(100000),
				"throttled", d.throttledNanos, uint64(3000000), "cache", d.cache, uint64(5000000), "swap", d.swap, uint64(4096),
				"failcnt", d.failcnt, uint64(3), "limit", d.memoryLimit, uint64(268435456), "processes", d.processes, uint64(2),
				"threads", d.threads, uint64(3), "threads max", d.threadsMax, uint64(0))
		}},
		{"v1 pod without cpu, pids and failcnt files", "testdata/v1", "/kubepods/poduid-a", func(d cgroupDetail) []string {
			out := diffs("cpu", d.cpuTotal, uint64(2500000000), "usage", d.memory.usage, uint64(50000000))
			if d.hasCPUSpec || d.hasProcesses || d.hasFailcnt || d.hasCPUSplit {
				out = append(out, "parts without files reported")
			}
			return out
		}},
		{"v2 pod", "testdata/v2", "/kubepods/burstable/poduid-a", func(d cgroupDetail) []string {
			return diffs(
				"cpu", d.cpuTotal, uint64(1500000000), "user", d.cpuUser, uint64(1000000000), "system", d.cpuSystem, uint64(500000000),
				"shares (weight 100)", d.shares, uint64(2597), "quota", d.quota, uint64(50000), "period", d.period, uint64(100000),
				"cache (file)", d.cache, uint64(20000000), "swap", d.swap, uint64(1048576), "failcnt (events max)", d.failcnt, uint64(7),
				"limit", d.memoryLimit, unlimited, "swap limit", d.swapLimit, uint64(2097152),
				"processes", d.processes, uint64(1), "threads", d.threads, uint64(2), "threads max", d.threadsMax, uint64(1024))
		}},
	}
	for _, tt := range tests {
		d := newCgroups(tt.host).detail(tt.cgroup, timeAt(0))
		for _, diff := range tt.check(d) {
			t.Errorf("%s: %s", tt.name, diff)
		}
	}
}

// diffs compares (what, got, want) triples.
func diffs(triples ...any) []string {
	var out []string
	for i := 0; i+2 < len(triples); i += 3 {
		if triples[i+1] != triples[i+2] {
			out = append(out, fmt.Sprintf("%s %v, want %v", triples[i], triples[i+1], triples[i+2]))
		}
	}
	return out
}

// TestCadvisorTwoReadySandboxes: a pod whose sandbox is being replaced has
// two ready sandboxes and one cgroup: one series for the cgroup, one per
// sandbox, and a scrape without error.
func TestCadvisorTwoReadySandboxes(t *testing.T) {
	n := newTestNode(t)
	n.cri.sandboxes = append(n.cri.sandboxes, &runtimeapi.PodSandbox{Id: "sb-a-new", State: runtimeapi.PodSandboxState_SANDBOX_READY,
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-a"}, CreatedAt: timeAt(150).UnixNano()})
	reg := prometheus.NewRegistry()
	reg.MustRegister(cadvisorCollector{ctx: context.Background(), p: n.p})
	if _, err := reg.Gather(); err != nil {
		t.Errorf("gather: %v", err)
	}
	families, _ := scrape(t, n.p.CadvisorMetricsHandler())
	if _, err := sampleOf(families, "container_last_seen", map[string]string{"id": "/kubepods/poduid-a", "name": ""}); err != nil {
		t.Error(err)
	}
	for _, sb := range []string{"sb-a", "sb-a-new"} {
		if _, err := sampleOf(families, "container_last_seen", map[string]string{"pod": "web", "name": sb}); err != nil {
			t.Error(err)
		}
	}
}
