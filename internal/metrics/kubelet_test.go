package metrics

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

var (
	defBuckets        = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	podStartBuckets   = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}
	runtimeOpsBuckets = []float64{.005, .0125, .03125, .078125, .1953125, .48828125, 1.220703125, 3.0517578125, 7.62939453125, 19.073486328125, 47.6837158203125, 119.20928955078125, 298.0232238769531, 745.0580596923828}
	// draBuckets are upstream's DRADurationBuckets, ExponentialBucketsRange(.1, 40, 15).
	draBuckets          = []float64{0.1, 0.1534127404634391, 0.23535468936502524, 0.36106407876409946, 0.5539182980610752, 0.849781240983936, 1.303672689737678, 1.9999999999999993, 3.0682548092687805, 4.7070937873005025, 7.221281575281985, 11.078365961221499, 16.995624819678714, 26.07345379475354, 39.99999999999997}
	gaugeT, counterT    = dto.MetricType_GAUGE, dto.MetricType_COUNTER
	histogramT, summary = dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY
)

// promised is the list of metrics actorlet serves at /metrics besides the
// Go runtime's and the process's: the kubelet's under upstream's names,
// types, labels and buckets, and the actors'.
var promised = []struct {
	name    string
	typ     dto.MetricType
	labels  []string
	buckets []float64
}{
	{"kubelet_node_name", gaugeT, []string{"node"}, nil},
	{"kubelet_running_pods", gaugeT, nil, nil},
	{"kubelet_running_containers", gaugeT, []string{"container_state"}, nil},
	{"kubelet_desired_pods", gaugeT, []string{"static"}, nil},
	{"kubelet_active_pods", gaugeT, []string{"static"}, nil},
	{"kubelet_pod_start_duration_seconds", histogramT, nil, podStartBuckets},
	{"kubelet_pod_worker_duration_seconds", histogramT, []string{"operation_type"}, defBuckets},
	{"kubelet_pleg_relist_duration_seconds", histogramT, nil, defBuckets},
	{"kubelet_pleg_relist_interval_seconds", histogramT, nil, defBuckets},
	{"kubelet_pleg_last_seen_seconds", gaugeT, nil, nil},
	{"kubelet_runtime_operations_total", counterT, []string{"operation_type"}, nil},
	{"kubelet_runtime_operations_errors_total", counterT, []string{"operation_type"}, nil},
	{"kubelet_runtime_operations_duration_seconds", histogramT, []string{"operation_type"}, runtimeOpsBuckets},
	{"kubelet_started_pods_total", counterT, nil, nil},
	{"kubelet_started_pods_errors_total", counterT, nil, nil},
	{"kubelet_started_user_namespaced_pods_total", counterT, nil, nil},
	{"kubelet_started_user_namespaced_pods_errors_total", counterT, nil, nil},
	{"dra_operations_duration_seconds", histogramT, []string{"is_error", "operation_name"}, draBuckets},
	{"dra_grpc_operations_duration_seconds", histogramT, []string{"driver_name", "grpc_status_code", "method_name"}, draBuckets},
	{"dra_node_prepare_skips_total", counterT, []string{"driver_name"}, nil},
	{"dra_node_unprepare_skips_total", counterT, []string{"driver_name"}, nil},
	{"dra_resource_claims_in_use", gaugeT, []string{"driver_name"}, nil},
	{"actorlet_actors", gaugeT, []string{"kind"}, nil},
	{"actorlet_actor_mailbox_depth", gaugeT, []string{"kind"}, nil},
	{"actorlet_actor_messages_processed_total", counterT, []string{"kind"}, nil},
	{"actorlet_actor_message_processing_seconds", summary, []string{"kind"}, nil},
	{"actorlet_actor_restarts_total", counterT, []string{"kind"}, nil},
}

func TestRegistryServesThePromisedMetrics(t *testing.T) {
	// A vector shows in a scrape once it has a series: give each one.
	SetNodeName("test-node")
	RunningContainers.WithLabelValues(ContainerStateRunning)
	DesiredPods.WithLabelValues(StaticTrue)
	ActivePods.WithLabelValues(StaticTrue)
	PodWorkerDuration.WithLabelValues(OperationSync)
	RuntimeOperations.WithLabelValues("version")
	RuntimeOperationsErrors.WithLabelValues("version")
	RuntimeOperationsDuration.WithLabelValues("version")
	DRAOperationsDuration.WithLabelValues(DRAPrepare, "false")
	DRAGRPCOperationsDuration.WithLabelValues("d.example.com", "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources", "OK")
	DRANodePrepareSkips.WithLabelValues("d.example.com")
	DRANodeUnprepareSkips.WithLabelValues("d.example.com")
	// The actor metrics show once there is an actor.
	tree := actors{{Path: "pleg", Kind: "pleg", Started: time.Now()}}
	RegisterActors(tree.list)
	defer RegisterActors(nil)

	mfs := gather(t, Registry)
	for _, p := range promised {
		mf, ok := mfs[p.name]
		if !ok {
			t.Errorf("%s is not served", p.name)
			continue
		}
		checkFamily(t, mf, p.typ, p.labels, p.buckets)
	}
	served := []string{"go_", "process_", "kubelet_", "actorlet_", "rest_client_", "kubernetes_", "dra_"}
	for name := range mfs {
		if !slices.ContainsFunc(served, func(prefix string) bool { return strings.HasPrefix(name, prefix) }) {
			t.Errorf("%s is served: every metric starts with one of %v", name, served)
		}
	}
}

func checkFamily(t *testing.T, mf *dto.MetricFamily, typ dto.MetricType, labels []string, buckets []float64) {
	t.Helper()
	if mf.GetType() != typ {
		t.Errorf("%s is a %s, want %s", mf.GetName(), mf.GetType(), typ)
	}
	if got := labelNames(mf); !slices.Equal(got, labels) {
		t.Errorf("%s has labels %v, want %v", mf.GetName(), got, labels)
	}
	if buckets == nil {
		return
	}
	var got []float64
	for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
		got = append(got, b.GetUpperBound())
	}
	if !reflect.DeepEqual(got, buckets) {
		t.Errorf("%s has buckets %v, want %v", mf.GetName(), got, buckets)
	}
}
