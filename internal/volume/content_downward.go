package volume

import (
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/actorlet/actorlet/internal/downwardapi"
	"github.com/actorlet/actorlet/internal/volume/atomicwriter"
)

// downwardAPIPayload is upstream's downwardapi.CollectData: one file per
// item, its mode the item's or defaultMode, its content the pod's field or
// the container's resource. An item that cannot be read is an error, and
// the errors of all items are gathered into one.
func downwardAPIPayload(items []v1.DownwardAPIVolumeFile, pod *v1.Pod, nodeAllocatable v1.ResourceList, defaultMode *int32) (map[string]atomicwriter.FileProjection, error) {
	if defaultMode == nil {
		return nil, errNoDefaultMode
	}
	var errs []error
	data := make(map[string]atomicwriter.FileProjection, len(items))
	for _, item := range items {
		fp := atomicwriter.FileProjection{Mode: itemMode(item.Mode, defaultMode)}
		switch {
		case item.FieldRef != nil:
			if v, err := downwardapi.FieldValue(pod, item.FieldRef.FieldPath); err != nil {
				errs = append(errs, err)
			} else {
				fp.Data = []byte(v)
			}
		case item.ResourceFieldRef != nil:
			if v, err := downwardapi.ResourceValue(item.ResourceFieldRef, pod, nodeAllocatable); err != nil {
				errs = append(errs, err)
			} else {
				fp.Data = []byte(v)
			}
		}
		data[filepath.Clean(item.Path)] = fp
	}
	return data, utilerrors.NewAggregate(errs)
}
