package downwardapi

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFieldValue(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1",
		Labels:      map[string]string{"b": "2", "a": "1"},
		Annotations: map[string]string{"x/y": `q"uote`}}}
	tests := []struct{ path, want, err string }{
		{path: "metadata.name", want: "p"},
		{path: "metadata.namespace", want: "ns"},
		{path: "metadata.uid", want: "u1"},
		{path: "metadata.labels", want: "a=\"1\"\nb=\"2\""},
		{path: "metadata.labels['a']", want: "1"},
		{path: "metadata.labels['missing']", want: ""},
		{path: "metadata.annotations['x/y']", want: `q"uote`},
		{path: "metadata.annotations", want: `x/y="q\"uote"`},
		{path: "metadata.labels['bad key!']", err: "invalid key subscript"},
		{path: "metadata.name['a']", err: "does not support subscript"},
		{path: "spec.restartPolicy", err: "unsupported fieldPath"},
	}
	for _, tt := range tests {
		got, err := FieldValue(pod, tt.path)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err %v, want %q", tt.path, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s = %q, %v; want %q", tt.path, got, err, tt.want)
		}
	}
}

func TestResourceValue(t *testing.T) {
	q := resource.MustParse
	pod := &v1.Pod{Spec: v1.PodSpec{
		Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: q("250m"), v1.ResourceMemory: q("32Mi")},
			Limits:   v1.ResourceList{v1.ResourceMemory: q("64Mi"), "hugepages-2Mi": q("4Mi")},
		}}},
		InitContainers: []v1.Container{{Name: "init"}},
	}}
	allocatable := v1.ResourceList{v1.ResourceCPU: q("2"), v1.ResourceMemory: q("1Gi"), v1.ResourceEphemeralStorage: q("10Gi")}
	tests := []struct {
		container, resource, divisor, want, err string
	}{
		{container: "c", resource: "limits.memory", want: "67108864"},
		{container: "c", resource: "limits.memory", divisor: "1Mi", want: "64"},
		{container: "c", resource: "requests.memory", divisor: "1Gi", want: "1"}, // rounded up
		{container: "c", resource: "requests.cpu", want: "1"},
		{container: "c", resource: "requests.cpu", divisor: "1m", want: "250"},
		{container: "c", resource: "limits.cpu", want: "2"}, // the node's allocatable
		{container: "c", resource: "limits.ephemeral-storage", divisor: "1Gi", want: "10"},
		{container: "c", resource: "limits.hugepages-2Mi", divisor: "1Mi", want: "4"},
		{container: "init", resource: "limits.memory", divisor: "1Mi", want: "1024"},
		{container: "gone", resource: "limits.memory", err: "container gone not found"},
		{container: "c", resource: "limits.gpu", err: "unsupported container resource"},
	}
	for _, tt := range tests {
		fs := &v1.ResourceFieldSelector{ContainerName: tt.container, Resource: tt.resource}
		if tt.divisor != "" {
			fs.Divisor = q(tt.divisor)
		}
		got, err := ResourceValue(fs, pod, allocatable)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s/%s: err %v, want %q", tt.container, tt.resource, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s/%s/%s = %q, %v; want %q", tt.container, tt.resource, tt.divisor, got, err, tt.want)
		}
	}
}
