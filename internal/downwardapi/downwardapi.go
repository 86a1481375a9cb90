// Package downwardapi reads what the downward API exposes of a pod: its
// metadata fields and its containers' resources, as upstream's fieldpath
// and resource helpers do. Volumes (volume/) and env (podruntime/) both
// read them here, so that a field shows the same in a file as in a
// variable.
package downwardapi

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// FieldValue is upstream's fieldpath.ExtractFieldPathAsString for a pod:
// metadata name, namespace, uid, labels and annotations (whole, or one key
// as metadata.labels['KEY']).
func FieldValue(pod *v1.Pod, fieldPath string) (string, error) {
	if path, subscript, ok := splitSubscriptedPath(fieldPath); ok {
		switch path {
		case "metadata.annotations":
			if errs := validation.IsQualifiedName(strings.ToLower(subscript)); len(errs) != 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", fieldPath, strings.Join(errs, ";"))
			}
			return pod.Annotations[subscript], nil
		case "metadata.labels":
			if errs := validation.IsQualifiedName(subscript); len(errs) != 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", fieldPath, strings.Join(errs, ";"))
			}
			return pod.Labels[subscript], nil
		default:
			return "", fmt.Errorf("fieldPath %q does not support subscript", fieldPath)
		}
	}
	switch fieldPath {
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", fieldPath)
}

// formatMap is upstream's fieldpath.FormatMap: one key="value" line per
// key, sorted by key, the value quoted as Go does, no final newline.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var dst []byte
	for _, k := range keys {
		if len(dst) > 0 {
			dst = append(dst, '\n')
		}
		dst = append(dst, k...)
		dst = append(dst, '=')
		dst = strconv.AppendQuote(dst, m[k])
	}
	return string(dst)
}

// splitSubscriptedPath is upstream's SplitMaybeSubscriptedPath:
// "metadata.labels['k']" is ("metadata.labels", "k", true).
func splitSubscriptedPath(fieldPath string) (string, string, bool) {
	if !strings.HasSuffix(fieldPath, "']") {
		return fieldPath, "", false
	}
	parts := strings.SplitN(strings.TrimSuffix(fieldPath, "']"), "['", 2)
	if len(parts) < 2 || parts[0] == "" {
		return fieldPath, "", false
	}
	return parts[0], parts[1], true
}

// ResourceValue is upstream's
// ExtractResourceValueByContainerNameAndNodeAllocatable: the named
// container's request or limit, a limit it does not set (cpu, memory,
// ephemeral-storage) being the node's allocatable, divided by the divisor
// (1 when unset) and rounded up.
func ResourceValue(fs *v1.ResourceFieldSelector, pod *v1.Pod, nodeAllocatable v1.ResourceList) (string, error) {
	c, err := findContainer(pod, fs.ContainerName)
	if err != nil {
		return "", err
	}
	return ContainerResourceValue(fs, c, nodeAllocatable)
}

// ContainerResourceValue is ResourceValue for a container already found:
// upstream's ExtractContainerResourceValue on the container with its
// limits merged with nodeAllocatable.
func ContainerResourceValue(fs *v1.ResourceFieldSelector, c *v1.Container, nodeAllocatable v1.ResourceList) (string, error) {
	limits := mergeLimits(c.Resources.Limits, nodeAllocatable)
	requests := c.Resources.Requests

	divisor := fs.Divisor
	if divisor.Cmp(resource.Quantity{}) == 0 {
		divisor = resource.MustParse("1")
	}
	ceil := func(value, div int64) string {
		return strconv.FormatInt(int64(math.Ceil(float64(value)/float64(div))), 10)
	}
	switch fs.Resource {
	case "limits.cpu":
		return ceil(limits.Cpu().MilliValue(), divisor.MilliValue()), nil
	case "limits.memory":
		return ceil(limits.Memory().Value(), divisor.Value()), nil
	case "limits.ephemeral-storage":
		return ceil(limits.StorageEphemeral().Value(), divisor.Value()), nil
	case "requests.cpu":
		return ceil(requests.Cpu().MilliValue(), divisor.MilliValue()), nil
	case "requests.memory":
		return ceil(requests.Memory().Value(), divisor.Value()), nil
	case "requests.ephemeral-storage":
		return ceil(requests.StorageEphemeral().Value(), divisor.Value()), nil
	}
	// hugepages-<size>, which is never overcommitted: always a limit.
	for prefix, list := range map[string]v1.ResourceList{"requests.": requests, "limits.": limits} {
		if name, ok := strings.CutPrefix(fs.Resource, prefix); ok && strings.HasPrefix(name, v1.ResourceHugePagesPrefix) {
			return ceil(list.Name(v1.ResourceName(name), resource.BinarySI).Value(), divisor.Value()), nil
		}
	}
	return "", fmt.Errorf("unsupported container resource : %v", fs.Resource)
}

// findContainer is upstream's findContainerInPod: a container or an init
// container of that name.
func findContainer(pod *v1.Pod, name string) (*v1.Container, error) {
	for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i], nil
			}
		}
	}
	return nil, fmt.Errorf("container %s not found", name)
}

// mergeLimits is upstream's MergeContainerResourceLimits on a copy: cpu,
// memory and ephemeral-storage limits that are unset or zero become the
// node's allocatable.
func mergeLimits(limits, allocatable v1.ResourceList) v1.ResourceList {
	out := make(v1.ResourceList, len(limits)+3)
	for k, v := range limits {
		out[k] = v.DeepCopy()
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		if q, ok := out[name]; !ok || q.IsZero() {
			if a, ok := allocatable[name]; ok {
				out[name] = a.DeepCopy()
			}
		}
	}
	return out
}
