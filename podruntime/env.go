package podruntime

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/volume"
)

// containerEnv is upstream's makeEnvironmentVariables without service links,
// envFrom and config map or secret references, which need the API server: a
// container using those fails with an error naming the variable.
func containerEnv(ctx context.Context, pod *v1.Pod, c *v1.Container, podIPs []string, vols map[string]volume.Mounted, opts Options) ([]*runtimeapi.KeyValue, error) {
	values := map[string]string{}
	lookup := func(name string) (string, bool) { v, ok := values[name]; return v, ok }
	var order []string
	for _, e := range c.Env {
		var value string
		switch {
		case e.ValueFrom == nil:
			// A value may refer to the variables defined before it.
			value = expand(e.Value, lookup)
		case e.ValueFrom.FieldRef != nil:
			v, err := fieldRefValue(pod, e.ValueFrom.FieldRef.FieldPath, podIPs, opts)
			if err != nil {
				return nil, fmt.Errorf("env %s of container %s of pod %s/%s: %w", e.Name, c.Name, pod.Namespace, pod.Name, err)
			}
			value = v
		case e.ValueFrom.ResourceFieldRef != nil:
			v, err := resourceFieldRefValue(pod, c, e.ValueFrom.ResourceFieldRef, opts)
			if err != nil {
				return nil, fmt.Errorf("env %s of container %s of pod %s/%s: %w", e.Name, c.Name, pod.Namespace, pod.Name, err)
			}
			value = v
		default:
			return nil, fmt.Errorf("env %s of container %s of pod %s/%s: only value, fieldRef and resourceFieldRef are supported", e.Name, c.Name, pod.Namespace, pod.Name)
		}
		if _, seen := values[e.Name]; !seen {
			order = append(order, e.Name)
		}
		values[e.Name] = value
	}
	if len(c.EnvFrom) > 0 {
		return nil, fmt.Errorf("envFrom of container %s of pod %s/%s is not supported", c.Name, pod.Namespace, pod.Name)
	}
	out := make([]*runtimeapi.KeyValue, 0, len(order))
	for _, k := range order {
		out = append(out, &runtimeapi.KeyValue{Key: k, Value: []byte(values[k])})
	}
	return out, nil
}

// fieldRefValue is upstream's podFieldSelectorRuntimeValue.
func fieldRefValue(pod *v1.Pod, path string, podIPs []string, opts Options) (string, error) {
	if k, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[k], nil
	}
	if k, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[k], nil
	}
	nodeIP := opts.NodeIP
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		if pod.Spec.NodeName != "" {
			return pod.Spec.NodeName, nil
		}
		return opts.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return nodeIP, nil
	case "status.podIP":
		if len(podIPs) > 0 {
			return podIPs[0], nil
		}
		return "", nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}

// subscript parses PREFIX['KEY'] (or PREFIX["KEY"]).
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"[")
	if !ok || !strings.HasSuffix(rest, "]") {
		return "", false
	}
	k := strings.TrimSuffix(rest, "]")
	if len(k) >= 2 && (k[0] == '\'' || k[0] == '"') && k[len(k)-1] == k[0] {
		return k[1 : len(k)-1], true
	}
	return "", false
}

// resourceFieldRefValue is upstream's ExtractContainerResourceValue: limits
// not set are the node's allocatable (NodeAllocatable), values are rounded
// up to whole divisors.
func resourceFieldRefValue(pod *v1.Pod, c *v1.Container, ref *v1.ResourceFieldSelector, opts Options) (string, error) {
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for i := range cs {
				if cs[i].Name == ref.ContainerName {
					return resourceFieldRefValue(pod, &cs[i], &v1.ResourceFieldSelector{Resource: ref.Resource, Divisor: ref.Divisor}, opts)
				}
			}
		}
		return "", fmt.Errorf("resourceFieldRef names unknown container %q", ref.ContainerName)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	limit := func(name v1.ResourceName) resource.Quantity {
		if q, ok := c.Resources.Limits[name]; ok && !q.IsZero() {
			return q
		}
		return opts.NodeAllocatable[name]
	}
	request := func(name v1.ResourceName) resource.Quantity { return c.Resources.Requests[name] }
	switch ref.Resource {
	case "limits.cpu":
		return ceilDiv(float64(ptr(limit(v1.ResourceCPU)).MilliValue()), float64(divisor.MilliValue())), nil
	case "requests.cpu":
		return ceilDiv(float64(ptr(request(v1.ResourceCPU)).MilliValue()), float64(divisor.MilliValue())), nil
	case "limits.memory":
		return ceilDiv(float64(ptr(limit(v1.ResourceMemory)).Value()), float64(divisor.Value())), nil
	case "requests.memory":
		return ceilDiv(float64(ptr(request(v1.ResourceMemory)).Value()), float64(divisor.Value())), nil
	case "limits.ephemeral-storage":
		return ceilDiv(float64(ptr(limit(v1.ResourceEphemeralStorage)).Value()), float64(divisor.Value())), nil
	case "requests.ephemeral-storage":
		return ceilDiv(float64(ptr(request(v1.ResourceEphemeralStorage)).Value()), float64(divisor.Value())), nil
	}
	return "", fmt.Errorf("unsupported resourceFieldRef %q", ref.Resource)
}

func ptr(q resource.Quantity) *resource.Quantity { return &q }

func ceilDiv(a, b float64) string {
	return strconv.FormatInt(int64(math.Ceil(a/b)), 10)
}
