package metrics

import (
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

func TestNodeStartupTracker(t *testing.T) {
	boot := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	start := boot.Add(30 * time.Second)
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	type call struct {
		what   string // attempt, registered, ready
		at     int
		ok     bool
		wantDs NodeStartupDurations
	}
	for _, tc := range []struct {
		name  string
		boot  time.Time
		calls []call
	}{
		{name: "created, then Ready", boot: boot, calls: []call{
			{what: "attempt", at: 2},
			{what: "attempt", at: 3},
			{what: "registered", at: 5, ok: true, wantDs: NodeStartupDurations{PreKubelet: 30 * time.Second, PreRegistration: 2 * time.Second, Registration: 3 * time.Second}},
			{what: "registered", at: 6},
			{what: "ready", at: 9, ok: true, wantDs: NodeStartupDurations{PostRegistration: 4 * time.Second, Total: 39 * time.Second}},
			{what: "ready", at: 20},
		}},
		{name: "no attempt: a created Node is not counted, nor its Ready", boot: boot, calls: []call{
			{what: "registered", at: 5},
			{what: "ready", at: 9},
		}},
		{name: "boot time unknown", calls: []call{
			{what: "attempt", at: 1},
			{what: "registered", at: 2, ok: true, wantDs: NodeStartupDurations{PreRegistration: time.Second, Registration: time.Second}},
			{what: "ready", at: 4, ok: true, wantDs: NodeStartupDurations{PostRegistration: 2 * time.Second}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &NodeStartupTracker{Boot: tc.boot, Start: start}
			for i, c := range tc.calls {
				var d NodeStartupDurations
				var ok bool
				switch c.what {
				case "attempt":
					tr.Attempt(at(c.at))
					continue
				case "registered":
					d, ok = tr.Registered(at(c.at))
				case "ready":
					d, ok = tr.Ready(at(c.at))
				}
				if ok != c.ok || d != c.wantDs {
					t.Errorf("call %d (%s at %d): %+v %t, want %+v %t", i, c.what, c.at, d, ok, c.wantDs, c.ok)
				}
			}
		})
	}
}

func TestFirstNetworkPodStart(t *testing.T) {
	ObserveFirstNetworkPodStart(true, time.Second)
	if got := write(t, FirstNetworkPodStartSLIDuration).GetGauge().GetValue(); got != 0 {
		t.Fatalf("a host-network pod set it to %v", got)
	}
	ObserveFirstNetworkPodStart(false, 2*time.Second)
	ObserveFirstNetworkPodStart(false, 3*time.Second)
	if got := write(t, FirstNetworkPodStartSLIDuration).GetGauge().GetValue(); got != 2 {
		t.Fatalf("got %v, want the first network pod's 2", got)
	}
}

// The node and resource manager families, with upstream's names, types,
// labels, buckets and stability.
func TestNodeAndResourceFamilies(t *testing.T) {
	SetMetricsProvider(ProviderCRI)
	SetMetricsProvider(ProviderCadvisor)
	topologyBuckets := []float64{.05, .1, .2, .4, .8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6, 819.2}
	mfs := gather(t, Registry)
	for _, p := range []struct {
		name      string
		typ       dto.MetricType
		labels    []string
		buckets   []float64
		stability string
	}{
		{"kubelet_node_startup_pre_kubelet_duration_seconds", gaugeT, nil, nil, "[ALPHA]"},
		{"kubelet_node_startup_pre_registration_duration_seconds", gaugeT, nil, nil, "[ALPHA]"},
		{"kubelet_node_startup_registration_duration_seconds", gaugeT, nil, nil, "[ALPHA]"},
		{"kubelet_node_startup_post_registration_duration_seconds", gaugeT, nil, nil, "[ALPHA]"},
		{"kubelet_node_startup_duration_seconds", gaugeT, nil, nil, "[ALPHA]"},
		{"kubelet_cgroup_version", gaugeT, nil, nil, "[ALPHA]"},
		{"kubelet_metrics_provider", gaugeT, []string{"provider"}, nil, "[ALPHA]"},
		{"kubelet_first_network_pod_start_sli_duration_seconds", gaugeT, nil, nil, "[INTERNAL]"},
		{"kubelet_managed_ephemeral_containers", gaugeT, nil, nil, "[ALPHA]"},
		{"kubelet_lifecycle_handler_http_fallbacks_total", counterT, nil, nil, "[ALPHA]"},
		{"kubelet_cpu_manager_pinning_requests_total", counterT, nil, nil, "[ALPHA]"},
		{"kubelet_cpu_manager_pinning_errors_total", counterT, nil, nil, "[ALPHA]"},
		{"kubelet_cpu_manager_shared_pool_size_millicores", gaugeT, nil, nil, "[ALPHA]"},
		{"kubelet_cpu_manager_exclusive_cpu_allocation_count", gaugeT, nil, nil, "[ALPHA]"},
		{"kubelet_memory_manager_pinning_requests_total", counterT, nil, nil, "[ALPHA]"},
		{"kubelet_memory_manager_pinning_errors_total", counterT, nil, nil, "[ALPHA]"},
		{"kubelet_topology_manager_admission_requests_total", counterT, nil, nil, "[ALPHA]"},
		{"kubelet_topology_manager_admission_errors_total", counterT, nil, nil, "[ALPHA]"},
		{"kubelet_topology_manager_admission_duration_ms", histogramT, nil, topologyBuckets, "[ALPHA]"},
	} {
		mf, ok := mfs[p.name]
		if !ok {
			t.Errorf("%s is not served", p.name)
			continue
		}
		checkFamily(t, mf, p.typ, p.labels, p.buckets)
		if !strings.HasPrefix(mf.GetHelp(), p.stability+" ") {
			t.Errorf("%s's help %q does not start with %s", p.name, mf.GetHelp(), p.stability)
		}
	}
	if m := find(mfs["kubelet_metrics_provider"], nil); m == nil || len(mfs["kubelet_metrics_provider"].GetMetric()) != 1 ||
		m.GetLabel()[0].GetValue() != ProviderCadvisor {
		t.Errorf("kubelet_metrics_provider: %v, want cadvisor alone", mfs["kubelet_metrics_provider"].GetMetric())
	}
}
