package stats

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/actorlet/actorlet/internal/volume"
)

// TestNameVolume: each volume directory is named as upstream's summary
// names the volume, with its claim and whether it is local ephemeral.
func TestNameVolume(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "shm", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
		{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
		{Name: "token", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{}}},
		{Name: "inline", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "d"}}},
		{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-1"}}},
		{Name: "fast", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-2"}}},
		{Name: "eph", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}},
	}}}
	bound := map[string]string{"claim-1": "pv-1", "claim-2": "pv-2", "web-eph": "pv-3"}
	yes, no := ptrTo(true), ptrTo(false)
	dir := func(plugin, name string) volume.PodVolume { return volume.PodVolume{Plugin: plugin, Name: name} }
	for _, c := range []struct {
		what  string
		pod   *v1.Pod
		bound map[string]string
		dir   volume.PodVolume
		want  volumeRef
	}{
		{"emptyDir on disk", pod, bound, dir(volume.PluginEmptyDir, "scratch"), volumeRef{name: "scratch", ephemeral: yes}},
		{"emptyDir in memory", pod, bound, dir(volume.PluginEmptyDir, "shm"), volumeRef{name: "shm", ephemeral: no}},
		{"configMap", pod, bound, dir(volume.PluginConfigMap, "config"), volumeRef{name: "config", ephemeral: yes}},
		{"secret", pod, bound, dir(volume.PluginSecret, "token"), volumeRef{name: "token", ephemeral: no}},
		{"inline CSI", pod, bound, dir(volume.PluginCSI, "inline"), volumeRef{name: "inline", ephemeral: no}},
		{"CSI PV of a claim", pod, bound, dir(volume.PluginCSI, "pv-1"),
			volumeRef{name: "data", pvcRef: &statsapi.PVCReference{Name: "claim-1", Namespace: "ns"}, ephemeral: no}},
		{"local PV of a claim", pod, bound, dir(volume.PluginLocal, "pv-2"),
			volumeRef{name: "fast", pvcRef: &statsapi.PVCReference{Name: "claim-2", Namespace: "ns"}, ephemeral: no}},
		{"generic ephemeral: claim <pod>-<volume>", pod, bound, dir(volume.PluginCSI, "pv-3"),
			volumeRef{name: "eph", pvcRef: &statsapi.PVCReference{Name: "web-eph", Namespace: "ns"}, ephemeral: no}},
		{"claim unread: the directory's name", pod, nil, dir(volume.PluginCSI, "pv-1"), volumeRef{name: "pv-1"}},
		{"a PV's name in another plugin's directory", pod, bound, dir(volume.PluginEmptyDir, "pv-1"), volumeRef{name: "pv-1"}},
		{"a claim's volume name is not its directory", pod, bound, dir(volume.PluginCSI, "data"), volumeRef{name: "data"}},
		{"no such volume", pod, bound, dir(volume.PluginEmptyDir, "gone"), volumeRef{name: "gone"}},
		{"pod unknown", nil, bound, dir(volume.PluginCSI, "pv-1"), volumeRef{name: "pv-1"}},
	} {
		t.Run(c.what, func(t *testing.T) {
			if got := nameVolume(c.pod, c.bound, c.dir); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v (pvcRef %v, ephemeral %v), want %+v (pvcRef %v, ephemeral %v)",
					got, got.pvcRef, got.ephemeral, c.want, c.want.pvcRef, c.want.ephemeral)
			}
		})
	}
}

// fakeClaims answers claims from a map, counting reads.
type fakeClaims struct {
	bound map[string]string // namespace/name → PV
	reads atomic.Int32
}

func (f *fakeClaims) PersistentVolumeClaim(_ context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error) {
	f.reads.Add(1)
	pv, ok := f.bound[namespace+"/"+name]
	if !ok {
		return nil, errors.New("not found")
	}
	return &v1.PersistentVolumeClaim{Spec: v1.PersistentVolumeClaimSpec{VolumeName: pv}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}, nil
}

// TestSummaryVolumeNames: with the pods' specs, the summary names a local
// PV's directory by the pod's volume with its claim, lists it after the
// ephemeral volumes and leaves it out of the ephemeral storage; the claim
// is read once. /metrics gives the claim's volume stats series.
func TestSummaryVolumeNames(t *testing.T) {
	n := newTestNode(t)
	claims := &fakeClaims{bound: map[string]string{"default/claim-1": "pv-1"}}
	n.p.Claims = claims
	vols := filepath.Join(n.p.RootDir, "pods", "uid-a", "volumes")
	writeFile(t, filepath.Join(vols, volume.PluginEmptyDir, "scratch", "data"), "x")
	writeFile(t, filepath.Join(vols, volume.PluginLocal, "pv-1", "data"), strings.Repeat("x", 8192))
	pod := v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-a"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "claim-1"}}},
	}}}
	pods := func(context.Context) ([]v1.Pod, error) { return []v1.Pod{pod}, nil }

	web := func(specs PodSpecs) statsapi.PodStats { return summaryPod(t, n, specs, "uid-a") }
	names := func(p statsapi.PodStats) string {
		var out []string
		for _, v := range p.VolumeStats {
			s := v.Name
			if v.PVCRef != nil {
				s += "(" + v.PVCRef.Namespace + "/" + v.PVCRef.Name + ")"
			}
			out = append(out, s)
		}
		return strings.Join(out, ",")
	}
	if got, want := names(web(nil)), "scratch,pv-1"; got != want {
		t.Errorf("without specs: volumes %s, want %s", got, want)
	}
	p := web(n.p.podSpecs(context.Background(), pods))
	if got, want := names(p), "scratch,data(default/claim-1)"; got != want {
		t.Errorf("volumes %s, want %s", got, want)
	}
	// Ephemeral storage: as TestSummaryPodVolumes, with the emptyDir's
	// directory and file, not the PV's.
	if got, want := val(p.EphemeralStorage.InodesUsed), uint64(3+1+3+1+1)+2; got != want {
		t.Errorf("ephemeral inodes %d, want %d", got, want)
	}
	web(n.p.podSpecs(context.Background(), pods))
	if got := claims.reads.Load(); got != 1 {
		t.Errorf("claim read %d times, want once", got)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(n.p.VolumeStatsCollector(context.Background(), pods))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*dto.MetricFamily{}
	for _, f := range families {
		got[f.GetName()] = f
	}
	used := p.VolumeStats[1].UsedBytes
	for _, c := range []struct {
		name, help string
		want       float64
	}{
		{"kubelet_volume_stats_capacity_bytes", "[ALPHA] Capacity in bytes of the volume", float64(val(p.VolumeStats[1].CapacityBytes))},
		{"kubelet_volume_stats_available_bytes", "[ALPHA] Number of available bytes in the volume", -1},
		{"kubelet_volume_stats_used_bytes", "[ALPHA] Number of used bytes in the volume", float64(val(used))},
		{"kubelet_volume_stats_inodes", "[ALPHA] Maximum number of inodes in the volume", -1},
		{"kubelet_volume_stats_inodes_free", "[ALPHA] Number of free inodes in the volume", -1},
		{"kubelet_volume_stats_inodes_used", "[ALPHA] Number of used inodes in the volume", float64(val(p.VolumeStats[1].InodesUsed))},
	} {
		f := got[c.name]
		if f == nil || len(f.Metric) != 1 {
			t.Errorf("%s: %v, want one series", c.name, f)
			continue
		}
		m := f.Metric[0]
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		if f.GetHelp() != c.help || f.GetType() != dto.MetricType_GAUGE ||
			!reflect.DeepEqual(labels, map[string]string{"namespace": "default", "persistentvolumeclaim": "claim-1"}) {
			t.Errorf("%s: help %q type %v labels %v", c.name, f.GetHelp(), f.GetType(), labels)
		}
		if c.want >= 0 && m.GetGauge().GetValue() != c.want {
			t.Errorf("%s: %v, want %v", c.name, m.GetGauge().GetValue(), c.want)
		}
	}
}
