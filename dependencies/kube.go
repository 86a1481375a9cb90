package dependencies

import (
	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"

	"github.com/actorlet/actorlet/version"
)

// kubeClient builds the API server client from a kubeconfig file.
func kubeClient(path string, qps float32, burst int) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = qps, burst
	cfg.UserAgent = version.UserAgent()
	// Protobuf is what upstream's kubelet speaks to the API server: smaller
	// and cheaper to decode than JSON for pod and node objects.
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return kubernetes.NewForConfig(cfg)
}

// eventCorrelatorCache is the number of event keys client-go's correlator
// remembers (for aggregating similar events and for its spam filter) in
// each of its LRU caches. With client-go's default, 4096, the heap grew
// with every pod's new keys for the whole of make bench-churn (RSS +7 MiB
// over its 400 pods, by a heap profile diff) and would until 4096 keys;
// with 1024 it still grew until about loop 15 (+11 %). 512 still hold the
// recent events of a full node (110 pods, 4 events each over start and
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
