package metrics

import (
	"maps"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// The DRA manager's metrics, upstream's dra_* (pkg/kubelet/metrics), under
// its names, labels and buckets.

// Values of dra_operations_duration_seconds' operation_name label.
const (
	DRAPrepare   = "PrepareResources"
	DRAUnprepare = "UnprepareResources"
)

// DRAClaimsAnyDriver is the driver_name of dra_resource_claims_in_use that
// counts every claim in use, whatever its drivers.
const DRAClaimsAnyDriver = "<any>"

// draFamily is upstream's dra_* metrics.
var draFamily = family{subsystem: "dra", upstream: true}

// draDurationBuckets are upstream's DRADurationBuckets: 0.1 s to 40 s.
var draDurationBuckets = prometheus.ExponentialBucketsRange(.1, 40, 15)

var (
	// DRAOperationsDuration is how long preparing or unpreparing a pod's
	// claims took, by operation and whether it failed.
	DRAOperationsDuration = draFamily.histogramVec("operations_duration_seconds", "Latency histogram in seconds for the duration of handling all ResourceClaims referenced by a pod when the pod starts or stops. Identified by the name of the operation (PrepareResources or UnprepareResources) and separated by the success of the operation. The number of failed operations is provided through the histogram's overall count.",
		draDurationBuckets, "operation_name", "is_error")

	// DRAGRPCOperationsDuration is how long each call of a DRA driver's
	// DRAPlugin service took, by driver, full gRPC method and status code.
	DRAGRPCOperationsDuration = draFamily.histogramVec("grpc_operations_duration_seconds", "Duration in seconds of the DRA gRPC operations",
		draDurationBuckets, "driver_name", "method_name", "grpc_status_code")

	// DRANodePrepareSkips and DRANodeUnprepareSkips count the claims
	// whose driver's allocation says to skip the node's call.
	DRANodePrepareSkips   = draFamily.counterVec("node_prepare_skips_total", "Cumulative number of times NodePrepareResources gRPC calls were skipped due to SkipNodeOperations.", "driver_name")
	DRANodeUnprepareSkips = draFamily.counterVec("node_unprepare_skips_total", "Cumulative number of times NodeUnprepareResources gRPC calls were skipped due to SkipNodeOperations.", "driver_name")

	draClaimsInUseDesc = prometheus.NewDesc("dra_resource_claims_in_use",
		"[ALPHA] The number of ResourceClaims that are currently in use on the node, by driver name (driver_name label value) and across all drivers (special value <any> for driver_name). Note that the sum of all by-driver counts is not the total number of in-use ResourceClaims because the same ResourceClaim might use devices from different drivers. Instead, use the count for the <any> driver_name.",
		[]string{"driver_name"}, nil)
	draClaimsInUse atomic.Pointer[map[string]int]
)

// SetDRAClaimsInUse records the prepared claims by driver, with their
// total under DRAClaimsAnyDriver. Only the drivers named are served, as
// upstream lists only the drivers its cache knows.
func SetDRAClaimsInUse(counts map[string]int) {
	c := maps.Clone(counts)
	draClaimsInUse.Store(&c)
}

// claimsInUseCollector serves dra_resource_claims_in_use from the last
// counts the dra-manager set.
type claimsInUseCollector struct{}

func (claimsInUseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- draClaimsInUseDesc }

func (claimsInUseCollector) Collect(ch chan<- prometheus.Metric) {
	for driver, n := range *draClaimsInUse.Load() {
		ch <- prometheus.MustNewConstMetric(draClaimsInUseDesc, prometheus.GaugeValue, float64(n), driver)
	}
}

func init() {
	// Upstream's DRA manager serves the total from its start, nothing prepared.
	SetDRAClaimsInUse(map[string]int{DRAClaimsAnyDriver: 0})
	Registry.MustRegister(DRAOperationsDuration, DRAGRPCOperationsDuration, DRANodePrepareSkips, DRANodeUnprepareSkips, claimsInUseCollector{})
}
