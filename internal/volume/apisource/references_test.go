package apisource

import (
	"maps"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReferences(t *testing.T) {
	env := func(envFrom []v1.EnvFromSource, env ...v1.EnvVar) v1.Container {
		return v1.Container{Name: "c", EnvFrom: envFrom, Env: env}
	}
	secretKey := func(name string) v1.EnvVar {
		return v1.EnvVar{Name: "E", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}}}}
	}
	cmKey := func(name string) v1.EnvVar {
		return v1.EnvVar{Name: "E", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}}}}
	}
	vol := func(src v1.VolumeSource) v1.Volume { return v1.Volume{Name: "v", VolumeSource: src} }
	for _, tc := range []struct {
		name string
		spec v1.PodSpec
		want []string
	}{
		{"nothing", v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}, nil},
		{"image pull secret", v1.PodSpec{ImagePullSecrets: []v1.LocalObjectReference{{Name: "pull"}, {Name: ""}}}, []string{"Secret/pull"}},
		{"env of every container kind", v1.PodSpec{
			InitContainers: []v1.Container{env(nil, secretKey("init-s"))},
			Containers:     []v1.Container{env(nil, cmKey("main-cm"), v1.EnvVar{Name: "plain", Value: "x"})},
			EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon(
				env([]v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "eph-cm"}}}}))}},
		}, []string{"ConfigMap/eph-cm", "ConfigMap/main-cm", "Secret/init-s"}},
		{"envFrom", v1.PodSpec{Containers: []v1.Container{env([]v1.EnvFromSource{
			{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "s"}}},
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}},
		})}}, []string{"ConfigMap/cm", "Secret/s"}},
		{"volumes", v1.PodSpec{Volumes: []v1.Volume{
			vol(v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}),
			vol(v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}),
			vol(v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "pcm"}}},
				{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "ps"}}},
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
				{DownwardAPI: &v1.DownwardAPIProjection{}},
			}}}),
			vol(v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &v1.LocalObjectReference{Name: "csi"}}}),
			vol(v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}),
		}}, []string{"ConfigMap/cm", "ConfigMap/pcm", "Secret/csi", "Secret/ps", "Secret/s"}},
		{"the same object twice counts once", v1.PodSpec{
			Containers: []v1.Container{env(nil, secretKey("s"), secretKey("s"))},
			Volumes:    []v1.Volume{vol(v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}})},
		}, []string{"Secret/s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: tc.spec}
			var got []string
			for k := range maps.Keys(references(pod)) {
				if k.namespace != "ns" {
					t.Errorf("%v: namespace %q, want the pod's", k, k.namespace)
				}
				got = append(got, k.kind+"/"+k.name)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("references = %v, want %v", got, tc.want)
			}
		})
	}
}
