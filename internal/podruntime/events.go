package podruntime

import (
	"strings"

	v1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/podref"
)

// podEvent records an event about the pod itself.
func (r *Runtime) podEvent(pod *v1.Pod, eventtype, reason, message string) {
	if r.Opts.Recorder == nil {
		return
	}
	r.Opts.Recorder.Event(objectRef(pod, ""), eventtype, reason, message)
}

// nodeEvent records an event about the Node, which upstream refers to
// with its name as UID.
func (r *Runtime) nodeEvent(eventtype, reason, message string) {
	if r.Opts.Recorder == nil || r.Opts.NodeName == "" {
		return
	}
	ref := &v1.ObjectReference{Kind: "Node", Name: r.Opts.NodeName, UID: types.UID(r.Opts.NodeName)}
	r.Opts.Recorder.Event(ref, eventtype, reason, message)
}

// containerEvent records an event about one of the pod's containers. As
// upstream's recordContainerEvent, the container's ID is replaced by its name
// in the message: runtime errors often quote the ID, which would make every
// restart's event distinct and defeat the events' aggregation.
func (r *Runtime) containerEvent(pod *v1.Pod, name, id, eventtype, reason, message string) {
	if r.Opts.Recorder == nil {
		return
	}
	if id != "" {
		message = strings.ReplaceAll(message, id, name)
	}
	r.Opts.Recorder.Event(objectRef(pod, podref.FieldPath(pod, name)), eventtype, reason, message)
}

// objectRef refers to the pod, or to a part of it with fieldPath, as client-go's
// GetPartialReference does.
func objectRef(pod *v1.Pod, fieldPath string) *v1.ObjectReference {
	return &v1.ObjectReference{
		Kind: "Pod", APIVersion: "v1",
		Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
		FieldPath: fieldPath,
	}
}

// metaPod is a pod known only by its identity (an orphan killed without its
// spec): its events refer to containers as upstream's do for pods it
// restored from container labels.
func metaPod(uid types.UID, name, namespace string) *v1.Pod {
	pod := &v1.Pod{}
	pod.UID, pod.Name, pod.Namespace = uid, name, namespace
	return pod
}
