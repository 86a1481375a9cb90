package podruntime

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/manifest"
	"github.com/actorlet/actorlet/internal/testutil"
)

// fakeObjects serves ConfigMaps and Secrets from maps, counting reads.
type fakeObjects struct {
	configMaps map[string]map[string]string
	secrets    map[string]map[string]string
	reads      int
}

func (f *fakeObjects) ConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	f.reads++
	d, ok := f.configMaps[name]
	if !ok {
		return nil, apierrors.NewNotFound(v1.Resource("configmap"), name)
	}
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: d}, nil
}

func (f *fakeObjects) Secret(_ context.Context, ns, name string) (*v1.Secret, error) {
	f.reads++
	d, ok := f.secrets[name]
	if !ok {
		return nil, apierrors.NewNotFound(v1.Resource("secret"), name)
	}
	s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string][]byte{}}
	for k, v := range d {
		s.Data[k] = []byte(v)
	}
	return s, nil
}

type fakeServices struct {
	synced bool
	list   []*v1.Service
}

func (f *fakeServices) HasSynced() bool     { return f.synced }
func (f *fakeServices) List() []*v1.Service { return f.list }

func service(ns, name, ip string, port int32) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.ServiceSpec{ClusterIP: ip, Ports: []v1.ServicePort{{Port: port, Protocol: v1.ProtocolTCP}}}}
}

func TestContainerEnv(t *testing.T) {
	yes, no := true, false
	objects := &fakeObjects{
		configMaps: map[string]map[string]string{
			"cm":    {"a": "from-cm", "b": "B", "c": "C"},
			"other": {"a": "from-other"},
		},
		secrets: map[string]map[string]string{"s": {"password": "hunter2", "a": "from-secret"}},
	}
	svcs := &fakeServices{synced: true, list: []*v1.Service{
		service("default", "kubernetes", "10.96.0.1", 443),
		service("ns", "web", "10.96.0.9", 80),
		service("elsewhere", "db", "10.96.0.7", 5432),
	}}
	cmKey := func(name, key string, optional *bool) *v1.EnvVarSource {
		return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: optional}}
	}
	secretKey := func(name, key string, optional *bool) *v1.EnvVarSource {
		return &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: optional}}
	}
	fromCM := func(name, prefix string, optional *bool) v1.EnvFromSource {
		return v1.EnvFromSource{Prefix: prefix, ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: name}, Optional: optional}}
	}
	fromSecret := func(name, prefix string) v1.EnvFromSource {
		return v1.EnvFromSource{Prefix: prefix, SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: name}}}
	}
	tests := []struct {
		name     string
		env      []v1.EnvVar
		envFrom  []v1.EnvFromSource
		links    *bool
		static   bool
		objects  Objects
		services Services
		want     map[string]string // nil: compare only the keys listed in want
		absent   []string
		err      string
	}{
		{name: "configMapKeyRef and secretKeyRef",
			env:  []v1.EnvVar{{Name: "X", ValueFrom: cmKey("cm", "b", nil)}, {Name: "P", ValueFrom: secretKey("s", "password", nil)}},
			want: map[string]string{"X": "B", "P": "hunter2"}},
		{name: "missing key", env: []v1.EnvVar{{Name: "X", ValueFrom: cmKey("cm", "nope", nil)}},
			err: "couldn't find key nope in ConfigMap ns/cm"},
		{name: "missing secret key", env: []v1.EnvVar{{Name: "X", ValueFrom: secretKey("s", "nope", &no)}},
			err: "couldn't find key nope in Secret ns/s"},
		{name: "missing configmap", env: []v1.EnvVar{{Name: "X", ValueFrom: cmKey("gone", "a", nil)}},
			err: `configmap "gone" not found`},
		{name: "optional missing key and object are left out",
			env:    []v1.EnvVar{{Name: "X", ValueFrom: cmKey("cm", "nope", &yes)}, {Name: "Y", ValueFrom: secretKey("gone", "a", &yes)}, {Name: "Z", Value: "z"}},
			want:   map[string]string{"Z": "z"},
			absent: []string{"X", "Y"}},
		{name: "envFrom with prefixes, later sources and env win",
			envFrom: []v1.EnvFromSource{fromCM("cm", "", nil), fromCM("other", "", nil), fromSecret("s", "S_")},
			env:     []v1.EnvVar{{Name: "b", Value: "env-b"}},
			want:    map[string]string{"a": "from-other", "b": "env-b", "c": "C", "S_password": "hunter2", "S_a": "from-secret"}},
		{name: "envFrom optional missing", envFrom: []v1.EnvFromSource{fromCM("gone", "", &yes)},
			env: []v1.EnvVar{{Name: "Z", Value: "z"}}, want: map[string]string{"Z": "z"}},
		{name: "envFrom missing", envFrom: []v1.EnvFromSource{fromCM("gone", "", nil)}, err: `configmap "gone" not found`},
		{name: "expansion sees envFrom, earlier env and services",
			envFrom: []v1.EnvFromSource{fromCM("cm", "", nil)},
			env: []v1.EnvVar{{Name: "E1", Value: "$(a)-$(LATER)"}, {Name: "LATER", Value: "l"}, {Name: "E2", Value: "$(LATER)$(WEB_SERVICE_HOST)$$(a)"},
				{Name: "E3", Value: "$(KUBERNETES_SERVICE_PORT)"}},
			want: map[string]string{"E1": "from-cm-$(LATER)", "E2": "l10.96.0.9$(a)", "E3": "443"}},
		{name: "service variables: own namespace and default/kubernetes",
			want:   map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "WEB_SERVICE_HOST": "10.96.0.9", "WEB_PORT": "tcp://10.96.0.9:80"},
			absent: []string{"DB_SERVICE_HOST"}},
		{name: "enableServiceLinks false keeps only the kubernetes service", links: &no,
			want:   map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"},
			absent: []string{"WEB_SERVICE_HOST"}},
		{name: "env overrides a service variable", env: []v1.EnvVar{{Name: "WEB_SERVICE_HOST", Value: "mine"}},
			want: map[string]string{"WEB_SERVICE_HOST": "mine"}},
		{name: "services not synced", services: &fakeServices{}, err: errServicesNotSynced.Error()},
		{name: "services not synced: a static pod goes on", static: true, services: &fakeServices{},
			env: []v1.EnvVar{{Name: "Z", Value: "z"}}, want: map[string]string{"Z": "z"}},
		{name: "no client", objects: Objects(nil), env: []v1.EnvVar{{Name: "X", ValueFrom: secretKey("s", "a", nil)}},
			err: "couldn't get secret ns/s, no kubeClient defined"},
		{name: "fieldRef and resourceFieldRef",
			env: []v1.EnvVar{
				{Name: "NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "LABEL", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
				{Name: "IPS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIPs"}}},
				{Name: "HOST", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
				{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
				{Name: "CPU", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			},
			want: map[string]string{"NAME": "p", "LABEL": "web", "IPS": "10.244.0.5,fd00::5", "HOST": "192.0.2.1", "MEM": "64", "CPU": "2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "web"}},
				Spec: v1.PodSpec{EnableServiceLinks: tt.links}}
			if tt.static {
				pod.Annotations = map[string]string{manifest.ConfigSourceAnnotation: manifest.SourceFile}
			}
			c := &v1.Container{Name: "c", Env: tt.env, EnvFrom: tt.envFrom,
				Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}}}
			opts := Options{Objects: objects, Services: svcs, NodeIP: "192.0.2.1",
				NodeAllocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi")}}
			if tt.objects != nil || strings.HasPrefix(tt.name, "no client") {
				opts.Objects = tt.objects
			}
			if tt.services != nil {
				opts.Services = tt.services
			}
			kvs, err := containerEnv(context.Background(), pod, c, []string{"10.244.0.5", "fd00::5"}, nil, opts)
			if testutil.WantErr(t, err, tt.err) {
				return
			}
			got := envMap(t, kvs)
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s=%q, want %q", k, got[k], v)
				}
			}
			for _, k := range tt.absent {
				if v, ok := got[k]; ok {
					t.Errorf("%s=%q, want it left out", k, v)
				}
			}
		})
	}
}

// envMap is the env as a map; a key defined twice fails the test, since
// a runtime would keep only one of them.
func envMap(t *testing.T, kvs []*runtimeapi.KeyValue) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, kv := range kvs {
		if _, dup := m[kv.Key]; dup {
			t.Errorf("%s defined twice", kv.Key)
		}
		m[kv.Key] = string(kv.Value)
	}
	return m
}

func TestContainerEnvReadsEachObjectOnce(t *testing.T) {
	objects := &fakeObjects{configMaps: map[string]map[string]string{"cm": {"a": "1", "b": "2"}}}
	sel := func(key string) *v1.EnvVarSource {
		return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Key: key}}
	}
	c := &v1.Container{Name: "c", Env: []v1.EnvVar{{Name: "A", ValueFrom: sel("a")}, {Name: "B", ValueFrom: sel("b")}},
		EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	if _, err := containerEnv(context.Background(), pod, c, nil, nil, Options{Objects: objects}); err != nil {
		t.Fatal(err)
	}
	if objects.reads != 1 {
		t.Errorf("%d reads of the ConfigMap, want 1", objects.reads)
	}
}
