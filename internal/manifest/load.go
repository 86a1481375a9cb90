package manifest

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
)

// FromFile turns the content of a manifest file into the static pod it
// describes: decoded, defaulted, made static (MakeStatic) and validated.
// o.Location is the file's path; seen is when it was read.
func FromFile(data []byte, o Origin, seen time.Time) (*v1.Pod, error) {
	pod, err := Decode(data, o.Location)
	if err != nil {
		return nil, err
	}
	if err := finish(pod, o, seen); err != nil {
		return nil, fmt.Errorf("%s: %w", prefix(o.Location), err)
	}
	return pod, nil
}

// FromURL turns the body served at the manifest URL, one Pod or a PodList,
// into static pods. As upstream, one invalid pod rejects the whole body:
// the URL's content is one unit.
func FromURL(data []byte, o Origin, seen time.Time) ([]*v1.Pod, error) {
	pods, err := DecodeList(data, o.Location)
	if err != nil {
		return nil, err
	}
	for i, pod := range pods {
		if err := finish(pod, o, seen); err != nil {
			if len(pods) > 1 {
				return nil, fmt.Errorf("%s: items[%d]: %w", prefix(o.Location), i, err)
			}
			return nil, fmt.Errorf("%s: %w", prefix(o.Location), err)
		}
	}
	return pods, nil
}

func finish(pod *v1.Pod, o Origin, seen time.Time) error {
	if err := MakeStatic(pod, o, seen); err != nil {
		return err
	}
	if err := Validate(pod); err != nil {
		return err
	}
	if err := validateHostUsers(&pod.Spec, o.UserNamespacesHostNetwork); err != nil {
		return err
	}
	ref, err := apiReference(&pod.Spec)
	if err != nil {
		return err
	}
	if ref != "" {
		return fmt.Errorf("static pods may not reference %s", ref)
	}
	return nil
}
