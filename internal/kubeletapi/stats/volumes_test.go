package stats

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// TestSummaryPodVolumes checks the volumes of a pod in the summary: one
// entry per volume directory, by name, measured; the ephemeral ones in
// the pod's ephemeral storage; the figures reused for a period.
func TestSummaryPodVolumes(t *testing.T) {
	n := newTestNode(t)
	vols := filepath.Join(n.p.RootDir, "pods", "uid-a", "volumes")
	writeFile(t, filepath.Join(vols, "kubernetes.io~empty-dir", "scratch", "data"), strings.Repeat("x", 8192))
	writeFile(t, filepath.Join(vols, "kubernetes.io~secret", "token", "..data", "token"), "not counted")
	writeFile(t, filepath.Join(vols, "kubernetes.io~configmap", "config", "key"), "v")

	web := func() statsapi.PodStats { return summaryPod(t, n, nil, "uid-a") }
	byName := func(p statsapi.PodStats) map[string]statsapi.VolumeStats {
		m := map[string]statsapi.VolumeStats{}
		for _, v := range p.VolumeStats {
			m[v.Name] = v
		}
		return m
	}

	p := web()
	var names []string
	for _, v := range p.VolumeStats {
		names = append(names, v.Name)
	}
	if got := strings.Join(names, ","); got != "config,scratch,token" {
		t.Fatalf("volumes %s, want config,scratch,token", got)
	}
	v := byName(p)
	checks := []struct {
		what      string
		got, want any
	}{
		{"scratch inodes (directory, file)", val(v["scratch"].InodesUsed), uint64(2)},
		{"scratch used", val(v["scratch"].UsedBytes) >= 8192, true},
		{"scratch capacity", val(v["scratch"].CapacityBytes) > 0, true},
		{"scratch time", v["scratch"].Time.Time, timeAt(200)},
		{"token inodes (two directories, file)", val(v["token"].InodesUsed), uint64(3)},
		{"no PVC reference", v["scratch"].PVCRef, (*statsapi.PVCReference)(nil)},
	}
	for _, c := range checks {
		if !equal(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	// Ephemeral storage: the containers' layers and logs, etc-hosts, as
	// TestSummaryPods, plus the emptyDir and configMap volumes, not the
	// secret.
	if got, want := val(p.EphemeralStorage.InodesUsed), uint64(3+1+3+1+1)+2+2; got != want {
		t.Errorf("ephemeral inodes %d, want %d", got, want)
	}

	// Within the period the figures are reused; after it, measured again.
	writeFile(t, filepath.Join(vols, "kubernetes.io~empty-dir", "scratch", "more"), "y")
	n.clock.Advance(30 * time.Second)
	if got := val(byName(web())["scratch"].InodesUsed); got != 2 {
		t.Errorf("scratch inodes within the period %d, want the cached 2", got)
	}
	n.clock.Advance(defaultVolumeStatsPeriod)
	if got := val(byName(web())["scratch"].InodesUsed); got != 3 {
		t.Errorf("scratch inodes after the period %d, want 3", got)
	}
}

// summaryPod is the pod's entry in the node's summary with specs.
func summaryPod(t *testing.T, n *testNode, specs PodSpecs, uid string) statsapi.PodStats {
	t.Helper()
	s, err := n.p.SummaryFor(context.Background(), false, specs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Pods {
		if p.PodRef.UID == uid {
			return p
		}
	}
	t.Fatalf("no pod %s", uid)
	return statsapi.PodStats{}
}

func TestVolumeCacheForget(t *testing.T) {
	c := &volumeCache{samples: map[string]volumeSample{
		"old": {used: timeAt(10)},
		"new": {used: timeAt(100)},
	}}
	c.forget(timeAt(50))
	if _, ok := c.samples["old"]; ok {
		t.Error("a volume unread since the cutoff kept")
	}
	if _, ok := c.samples["new"]; !ok {
		t.Error("a volume read after the cutoff dropped")
	}
}
