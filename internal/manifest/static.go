package manifest

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"hash/fnv"
	"maps"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The annotations upstream's kubelet puts on the pods of its sources.
const (
	// ConfigHashAnnotation holds the pod's UID, which for a static pod is
	// the hash of its manifest.
	ConfigHashAnnotation = "kubernetes.io/config.hash"
	// ConfigSourceAnnotation names the source: file or http.
	ConfigSourceAnnotation = "kubernetes.io/config.source"
	// ConfigSeenAnnotation is when the kubelet first saw this version of
	// the pod, in RFC 3339 with nanoseconds.
	ConfigSeenAnnotation = "kubernetes.io/config.seen"
	// ConfigMirrorAnnotation marks a mirror pod, the API server's
	// reflection of a static pod, with the config hash of the static pod it
	// mirrors (upstream's ConfigMirrorAnnotationKey).
	ConfigMirrorAnnotation = "kubernetes.io/config.mirror"
)

// IsMirror tells a mirror pod: the reflection of a static pod in the API
// server, never a pod to run (upstream's IsMirrorPod).
func IsMirror(pod *v1.Pod) bool {
	_, ok := pod.Annotations[ConfigMirrorAnnotation]
	return ok
}

// ConfigHash is a static pod's config hash, which its mirror pod carries
// in ConfigMirrorAnnotation: its ConfigHashAnnotation, else its UID
// (upstream's getPodHash). MakeStatic sets the annotation to the UID.
func ConfigHash(pod *v1.Pod) string {
	if h, ok := pod.Annotations[ConfigHashAnnotation]; ok {
		return h
	}
	return string(pod.UID)
}

// Static pod sources, the values of ConfigSourceAnnotation (the same as
// messages.SourceFile and messages.SourceHTTP).
const (
	SourceFile = "file"
	SourceHTTP = "http"
)

// Origin is where a static pod came from: it enters the pod's UID, so that
// the same manifest at two paths gives two pods.
type Origin struct {
	Source   string // SourceFile or SourceHTTP
	Location string // the file's path or the URL
	NodeName string // this node's name
	// UserNamespacesHostNetwork is the UserNamespacesHostNetworkSupport
	// gate: a pod with hostUsers: false may have hostNetwork.
	UserNamespacesHostNetwork bool
}

// MakeStatic gives a decoded and defaulted pod its identity as a static pod
// of this node, as upstream's applyDefaults does, and stamps the config
// annotations the pod config adds:
//   - UID, when the manifest sets none: the hex of an FNV-128a hash over
//     the pod as decoded and the origin, so that it is stable across restarts
//     (pods are adopted, not recreated) and changes with the manifest;
//   - name suffixed with "-" and the lower-cased node name, namespace
//     "default" when empty, spec.nodeName this node;
//   - the config hash, source and seen annotations;
//   - for file pods, a toleration of every NoExecute taint, so that node
//     problems never evict them;
//   - status phase Pending.
//
// It fails, with a field error, when the pod has no name: a static pod's name is not generated.
func MakeStatic(pod *v1.Pod, o Origin, seen time.Time) error {
	if pod.Name == "" {
		return field.Required(field.NewPath("metadata", "name"), "static pods need a name (generateName is not used)")
	}
	if pod.UID == "" {
		h := fnv.New128a()
		writeJSON(h, pod)
		// Upstream hashes the node name into file pods only.
		if o.Source == SourceFile {
			fmt.Fprintf(h, "host:%s", o.NodeName)
			fmt.Fprintf(h, "file:%s", o.Location)
		} else {
			fmt.Fprintf(h, "url:%s", o.Location)
		}
		pod.UID = types.UID(hex.EncodeToString(h.Sum(nil)))
	}
	pod.Name = pod.Name + "-" + strings.ToLower(o.NodeName)
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = o.NodeName
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[ConfigHashAnnotation] = string(pod.UID)
	pod.Annotations[ConfigSourceAnnotation] = o.Source
	pod.Annotations[ConfigSeenAnnotation] = seen.Format(time.RFC3339Nano)
	if o.Source == SourceFile {
		addToleration(pod, v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})
	}
	pod.Status.Phase = v1.PodPending
	return nil
}

// addToleration adds t, replacing a toleration of the same key, operator,
// value and effect, as upstream's AddOrUpdateTolerationInPod does.
func addToleration(pod *v1.Pod, t v1.Toleration) {
	for i, have := range pod.Spec.Tolerations {
		if have.Key == t.Key && have.Operator == t.Operator && have.Value == t.Value && have.Effect == t.Effect {
			pod.Spec.Tolerations[i] = t
			return
		}
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, t)
}

// ContentHash is a hash of everything in pod but the seen annotation: two
// pods with the same UID and ContentHash are the same version of the pod,
// whenever they were read.
func ContentHash(pod *v1.Pod) string {
	cp := *pod
	cp.Annotations = maps.Clone(pod.Annotations)
	delete(cp.Annotations, ConfigSeenAnnotation)
	h := fnv.New128a()
	writeJSON(h, &cp)
	return hex.EncodeToString(h.Sum(nil))
}

// writeJSON hashes the JSON form of a pod: encoding/json sorts map keys, so
// the same pod always gives the same bytes.
func writeJSON(h hash.Hash, pod *v1.Pod) {
	// A v1.Pod always encodes: it holds no channels, funcs or cycles.
	if err := json.NewEncoder(h).Encode(pod); err != nil {
		panic(fmt.Sprintf("encode pod %s/%s: %v", pod.Namespace, pod.Name, err))
	}
}

// Version identifies the content of a manifest: readers keep the pods of
// an unchanged manifest (and their seen time) instead of parsing it again.
func Version(data []byte) string {
	h := fnv.New128a()
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}
