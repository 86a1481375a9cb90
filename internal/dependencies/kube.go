package dependencies

import (
	"time"

	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"

	"github.com/actorlet/actorlet/internal/version"
)

// kubeConfig reads the API server client configuration from a kubeconfig
// file, with the given rate budget.
func kubeConfig(path string, qps float32, burst int, contentType string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	return clientSettings(cfg, qps, burst, contentType), nil
}

// clientSettings sets the node's client settings on cfg: the rate budget,
// the user agent and the content types.
func clientSettings(cfg *rest.Config, qps float32, burst int, contentType string) *rest.Config {
	cfg.QPS, cfg.Burst = qps, burst
	cfg.UserAgent = version.UserAgent()
	setContentType(cfg, contentType)
	return cfg
}

// setContentType is upstream's setContentTypeForClient: contentType
// (--kube-api-content-type) is what requests are sent in; protobuf, the
// default, is smaller and cheaper to decode than JSON for pod and node
// objects, and answers are accepted in it with JSON as the fallback for
// the types that have no protobuf form. Any other type leaves the accepted
// types to client-go, and empty leaves both.
func setContentType(cfg *rest.Config, contentType string) {
	if contentType == "" {
		return
	}
	cfg.ContentType = contentType
	if contentType == runtime.ContentTypeProtobuf {
		cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
}

// eventConfig is the events client's configuration, the main client's
// with the events' own rate budget.
func eventConfig(base *rest.Config, qps float32, burst int) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = qps, burst
	return cfg
}

// heartbeatConfig is upstream's heartbeat client configuration, derived from
// the main client's: not throttled (a negative QPS disables client-go's rate
// limiter), so that no other traffic spends its budget, and each request
// bounded by the shorter of the node status update frequency and the lease
// duration, so that a hung request does not outlive the heartbeat it
// carries.
func heartbeatConfig(base *rest.Config, statusUpdateFrequency, leaseDuration time.Duration) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.QPS = -1
	cfg.Timeout = statusUpdateFrequency
	if leaseDuration > 0 && (cfg.Timeout <= 0 || cfg.Timeout > leaseDuration) {
		cfg.Timeout = leaseDuration
	}
	return cfg
}

// eventCorrelatorCache is the number of event keys client-go's correlator
// remembers (for aggregating similar events and for its spam filter) in
// each of its LRU caches. With client-go's default the heap grew with every
// pod's new keys for the whole of make bench-churn, and with a quarter of
// that size it still grew for most of the run. This size still holds the recent
// events of a full node (maxPods pods, a few events each over start and
// deletion).
const eventCorrelatorCache = 512

// eventRecorder returns a recorder of events sourced from this node: written
// to the API server when there is one (client-go's correlator bounds their
// volume), and logged at debug level in any case.
func eventRecorder(kube kubernetes.Interface, nodeName string, qps float32, burst int, log zerolog.Logger) (record.EventRecorder, func()) {
	broadcaster := record.NewBroadcasterWithCorrelatorOptions(record.CorrelatorOptions{QPS: qps, BurstSize: burst, LRUCacheSize: eventCorrelatorCache})
	broadcaster.StartEventWatcher(func(e *corev1.Event) {
		log.Debug().Str("object", e.InvolvedObject.Kind+" "+e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name).
			Str("type", e.Type).Str("reason", e.Reason).Msg(e.Message)
	})
	if kube != nil {
		broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	}
	source := eventSource
	source.Host = nodeName
	return broadcaster.NewRecorder(scheme.Scheme, source), broadcaster.Shutdown
}
